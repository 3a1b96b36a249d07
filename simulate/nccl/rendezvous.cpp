#include "nccl/rendezvous.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/process_alive.h"

namespace sim::nccl {
namespace {

constexpr uint64_t kTableMagic = 0x314e5652534d4347ull;

enum SlotState : int32_t { kEmpty = 0, kWriting = 1, kJoined = 2 };

struct Slot {
  std::atomic<int32_t> state;
  int32_t pid;
  int32_t device;
  int32_t color;
  int32_t key;
  int32_t pad;
  uint64_t start_time;
};

struct Table {
  std::atomic<uint64_t> magic;
  std::atomic<int32_t> nranks;
  std::atomic<int32_t> joined;
  std::atomic<int32_t> left;
  int32_t pad;
  Slot slots[kMaxRanks];
};
static_assert(std::atomic<int32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the table is shared between processes");

std::string prefix() { return "gpumemrec-nccl-" + std::to_string(getuid()) + "-"; }

uint64_t random64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof v)) return v;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return (static_cast<uint64_t>(ts.tv_nsec) << 20) ^ static_cast<uint64_t>(ts.tv_sec) ^
         (static_cast<uint64_t>(getpid()) << 40);
}

// Opens (creating) the table file and maps it.
Table* open_table(const std::string& name, std::string* why) {
  const std::string path = "/dev/shm/" + name;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *why = "cannot open " + path + ": " + strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_uid != getuid() ||
      (st.st_size != 0 && st.st_size != static_cast<off_t>(sizeof(Table))) ||
      (st.st_size == 0 && ftruncate(fd, sizeof(Table)) != 0)) {
    close(fd);
    *why = path + " is not a rendezvous table of this user";
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *why = "cannot map " + path;
    return nullptr;
  }
  auto* t = static_cast<Table*>(p);
  uint64_t zero = 0;
  if (!t->magic.compare_exchange_strong(zero, kTableMagic) && zero != kTableMagic) {
    munmap(p, sizeof(Table));
    *why = path + " is not a rendezvous table";
    return nullptr;
  }
  return t;
}

// Writes `me` into its slot. False (and *out set) for a wrong nranks or a
// rank taken twice.
bool take_slot(Table* t, int nranks, const Member& me, Outcome* out) {
  int32_t expected = 0;
  if (!t->nranks.compare_exchange_strong(expected, nranks) && expected != nranks) {
    out->rc = ncclInvalidArgument;
    out->why = "rank " + std::to_string(me.rank) + " was told nranks " + std::to_string(nranks) +
               ", another rank of the same unique id " + std::to_string(expected);
    return false;
  }
  Slot& s = t->slots[me.rank];
  int32_t empty = kEmpty;
  if (!s.state.compare_exchange_strong(empty, kWriting)) {
    out->rc = ncclInvalidUsage;
    out->why = "rank " + std::to_string(me.rank) + " joined twice (pid " + std::to_string(s.pid) + " and pid " +
               std::to_string(getpid()) + ")";
    return false;
  }
  s.pid = getpid();
  s.start_time = process_start_time(getpid());
  s.device = me.device;
  s.color = me.color;
  s.key = me.key;
  s.state.store(kJoined, std::memory_order_release);
  t->joined.fetch_add(1);
  return true;
}

// Why the wait cannot end, or "" while it may.
std::string dead_peer(const Table* t, int nranks, uint32_t creator, uint64_t creator_start) {
  for (int r = 0; r < nranks; ++r) {
    const Slot& s = t->slots[r];
    if (s.state.load(std::memory_order_acquire) == kJoined && !process_alive(s.pid, s.start_time))
      return "rank " + std::to_string(r) + " (pid " + std::to_string(s.pid) +
             ") exited before every rank had joined the communicator";
  }
  if (!process_alive(static_cast<pid_t>(creator), creator_start))
    return "the process that made the unique id (pid " + std::to_string(creator) +
           ") exited before every rank had joined the communicator";
  return "";
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// The last rank out removes the table; so does a rank whose wait failed
// because a rank died (the rendezvous can no longer complete).
void leave(Table* t, const std::string& name, bool doomed) {
  if (t->left.fetch_add(1) + 1 == t->nranks.load() || doomed) unlink(("/dev/shm/" + name).c_str());
  munmap(t, sizeof(Table));
}

}  // namespace

ncclUniqueId make_unique_id() {
  ncclUniqueId id{};
  IdFields f{kIdMagic, random64(), static_cast<uint32_t>(getpid()), 0, process_start_time(getpid())};
  memcpy(id.internal, &f, sizeof f);
  return id;
}

bool read_unique_id(const ncclUniqueId& id, IdFields* out) {
  memcpy(out, id.internal, sizeof *out);
  return out->magic == kIdMagic && out->creator != 0;
}

std::string table_name(const IdFields& id, uint64_t seq) {
  char buf[96];
  snprintf(buf, sizeof buf, "%" PRIu32 "-%016" PRIx64, id.creator, id.random);
  std::string name = prefix() + buf;
  if (seq != 0) name += "-s" + std::to_string(seq);
  return name;
}

Outcome meet(const std::string& name, uint32_t creator, uint64_t creator_start, int nranks, const Member& me,
             const std::atomic<bool>* abort) {
  Outcome out;
  if (nranks < 1 || nranks > kMaxRanks || me.rank < 0 || me.rank >= nranks) {
    out.rc = ncclInvalidArgument;
    out.why = "rank " + std::to_string(me.rank) + " of " + std::to_string(nranks) +
              " (the simulation meets at most " + std::to_string(kMaxRanks) + " ranks)";
    return out;
  }
  Table* t = open_table(name, &out.why);
  if (t == nullptr) {
    out.rc = ncclSystemError;
    return out;
  }
  if (!take_slot(t, nranks, me, &out)) {
    munmap(t, sizeof(Table));
    return out;
  }
  for (int waited = 0; t->joined.load() < nranks; ++waited) {
    if (abort != nullptr && abort->load()) {
      out.rc = ncclInternalError;
      out.why = "the communicator was aborted while its ranks were meeting";
      break;
    }
    if (waited % 50 == 49) {
      out.why = dead_peer(t, nranks, creator, creator_start);
      if (!out.why.empty()) {
        out.rc = ncclRemoteError;
        break;
      }
    }
    sleep_ms(waited < 100 ? 1 : 10);
  }
  if (out.rc == ncclSuccess) {
    out.members.resize(nranks);
    for (int r = 0; r < nranks; ++r) {
      const Slot& s = t->slots[r];
      out.members[r] = Member{r, s.device, s.color, s.key, s.pid};
    }
  }
  leave(t, name, out.rc == ncclRemoteError);
  return out;
}

void prune_stale_tables() {
  const std::string pre = prefix();
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (strncmp(e->d_name, pre.c_str(), pre.size()) != 0) continue;
    const long pid = strtol(e->d_name + pre.size(), nullptr, 10);
    if (pid > 0 && !process_alive(static_cast<pid_t>(pid), 0)) unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

}  // namespace sim::nccl
