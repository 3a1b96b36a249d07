#include "core/shared_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "core/process_alive.h"

namespace sim::shared {
namespace {

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the table is shared between processes");

std::string prefix() { return "gpumemrec-sim-" + std::to_string(getuid()) + "-"; }

Table* map_fd(int fd) {
  void* p = mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<Table*>(p);
}

// A table whose maker and every process are gone (one its maker has not
// finished: only when it is a minute old).
bool stale(const Table* t, time_t age) {
  if (t->magic.load() != kTableMagic) return age > 60;
  if (process_alive(t->creator, t->creator_start)) return false;
  for (const Slot& s : t->slots)
    if (s.state.load() != kSlotFree && process_alive(s.pid, s.start_time)) return false;
  return true;
}

// A table another process of the run has just made is empty until its
// ftruncate: two ranks started together (torchrun) meet in that window.
// Waits up to a second for it to take its size, as wait_published waits for
// its magic.
void wait_sized(int fd, struct stat* st) {
  for (int i = 0; i < 1000; ++i) {
    if (fstat(fd, st) != 0 || st->st_size != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

std::string table_path(const std::string& run) { return "/dev/shm/" + prefix() + run; }

Table* open_table(const std::string& path, bool create, bool* made) {
  *made = false;
  int fd = -1;
  if (create) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      if (ftruncate(fd, sizeof(Table)) != 0) {
        close(fd);
        unlink(path.c_str());
        return nullptr;
      }
      *made = true;
    } else if (errno != EEXIST) {
      return nullptr;
    }
  }
  if (fd < 0) fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (!*made) wait_sized(fd, &st);
  if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (!*made && st.st_size != static_cast<off_t>(sizeof(Table)))) {
    close(fd);
    return nullptr;
  }
  Table* t = map_fd(fd);
  close(fd);
  return t;
}

void publish_table(Table* t) { t->magic.store(kTableMagic, std::memory_order_release); }

bool wait_published(const Table* t) {
  for (int i = 0; i < 1000; ++i) {
    if (t->magic.load(std::memory_order_acquire) == kTableMagic) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

void prune_stale_tables(const std::string& keep_run) {
  const std::string pre = prefix();
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (strncmp(e->d_name, pre.c_str(), pre.size()) != 0 || keep_run == e->d_name + pre.size()) continue;
    const std::string path = std::string("/dev/shm/") + e->d_name;
    struct stat st {};
    bool made = false;
    if (stat(path.c_str(), &st) != 0) continue;
    Table* t = open_table(path, false, &made);
    if (t == nullptr) continue;
    const bool gone = stale(t, time(nullptr) - st.st_mtime);
    munmap(t, sizeof(Table));
    if (gone) unlink(path.c_str());
  }
  closedir(d);
}

void init_robust_mutex(pthread_mutex_t* m) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
}

void lock_robust_mutex(pthread_mutex_t* m) {
  if (pthread_mutex_lock(m) == EOWNERDEAD) pthread_mutex_consistent(m);
}

}  // namespace sim::shared
