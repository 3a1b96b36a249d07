#include "shim/dump/status/status_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/status_dir.h"

namespace gpumemrec {

namespace {

// What the removal needs, saved when the file is published (no allocation
// at removal: it may run in _exit from a signal handler).
char g_dir[256];
char g_name[64];
dev_t g_dev = 0;
ino_t g_ino = 0;
std::atomic<int> g_published{0};  // 1: there is a file to remove; 0: none (or removed)

void copy_text(char* dst, size_t cap, const std::string& src) {
  const size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

bool fill_identity(status::Region* reg, const StatusIdentity& id, std::string* why) {
  std::memcpy(reg->magic, status::kMagic, sizeof status::kMagic);
  reg->version = status::kVersion;
  reg->size = sizeof(status::Region);
  reg->uid = uint32_t(geteuid());
  reg->pid = getpid();
  reg->pid_ns = status::own_pid_namespace();
  if (!status::process_start_ticks(reg->pid, &reg->start_ticks)) {
    *why = "cannot read /proc/self/stat";
    return false;
  }
  status::read_boot_id(reg->boot_id);
  reg->rank = id.rank;
  reg->world_size = id.world_size;
  reg->dump_signal = id.dump_signal;
  copy_text(reg->command, sizeof reg->command, id.command);
  copy_text(reg->dump_dir, sizeof reg->dump_dir, id.dump_dir);
  return true;
}

// The mapped file under `tmp`, filled; null when a step failed.
status::Region* make_file(int dfd, const char* tmp, const StatusIdentity& id,
                          const std::function<void(status::Region*)>& first, struct stat* st, std::string* why) {
  unlinkat(dfd, tmp, 0);  // left by a process of this pid that died while making it
  const int fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = std::string("cannot create it: ") + std::strerror(errno);
    return nullptr;
  }
  void* map = MAP_FAILED;
  if (ftruncate(fd, sizeof(status::Region)) == 0 && fstat(fd, st) == 0)
    map = mmap(nullptr, sizeof(status::Region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) *why = std::string("cannot map it: ") + std::strerror(errno);
  close(fd);
  if (map == MAP_FAILED) {
    unlinkat(dfd, tmp, 0);
    return nullptr;
  }
  auto* reg = static_cast<status::Region*>(map);
  if (!fill_identity(reg, id, why)) {
    munmap(map, sizeof(status::Region));
    unlinkat(dfd, tmp, 0);
    return nullptr;
  }
  first(reg);
  return reg;
}

}  // namespace

status::Region* status_file_create(const std::string& dir, const StatusIdentity& id,
                                   const std::function<void(status::Region*)>& first, std::string* why) {
  if (dir.size() >= sizeof g_dir) {
    *why = "the directory's path is too long";
    return nullptr;
  }
  const int dfd = status::open_dir(dir.c_str(), true, why);
  if (dfd < 0) return nullptr;
  uint64_t ticks = 0;
  if (!status::process_start_ticks(getpid(), &ticks)) {
    close(dfd);
    *why = "cannot read /proc/self/stat";
    return nullptr;
  }
  const std::string name = status::file_name(getpid(), ticks);
  const std::string tmp = "." + name + ".tmp";
  struct stat st {};
  status::Region* reg = make_file(dfd, tmp.c_str(), id, first, &st, why);
  if (reg && renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
    *why = std::string("cannot name it: ") + std::strerror(errno);
    munmap(reg, sizeof(status::Region));
    unlinkat(dfd, tmp.c_str(), 0);
    reg = nullptr;
  }
  close(dfd);
  if (!reg) return nullptr;
  copy_text(g_dir, sizeof g_dir, dir);
  copy_text(g_name, sizeof g_name, name);
  g_dev = st.st_dev;
  g_ino = st.st_ino;
  g_published.store(1, std::memory_order_release);
  return reg;
}

void status_file_remove() {
  if (g_published.exchange(0, std::memory_order_acq_rel) != 1) return;
  const int saved = errno;
  const int dfd = open(g_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd >= 0) {
    struct stat st;
    if (fstatat(dfd, g_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == g_dev && st.st_ino == g_ino)
      unlinkat(dfd, g_name, 0);
    close(dfd);
  }
  errno = saved;
}

void status_file_forget(status::Region* parent_region) {
  g_published.store(0, std::memory_order_relaxed);
  if (parent_region) munmap(parent_region, sizeof(status::Region));
}

std::string status_command_line() {
  std::string out;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[status::kCommandBytes];
  ssize_t n = 0;
  while (size_t(n) < sizeof buf) {
    const ssize_t r = read(fd, buf + n, sizeof buf - size_t(n));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += r;
  }
  close(fd);
  for (ssize_t i = 0; i < n; ++i) out.push_back(buf[i] == '\0' ? ' ' : buf[i]);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace gpumemrec
