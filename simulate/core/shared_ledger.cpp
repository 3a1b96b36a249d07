#include "core/shared_ledger.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/process_alive.h"
#include "core/shared_table.h"

namespace sim::shared {
namespace {

Table* g_table = nullptr;  // null: not shared
Slot* g_slot = nullptr;    // this process's (null in a library that only reads: NVML)
pid_t g_slot_pid = 0;      // the process the slot was taken for (a forked child takes its own)
// A plain array: at_exit runs from the driver's destructor, after C++ static
// destructors (a std::string would be gone).
char g_path[256] = "";
std::once_flag g_observe_once;

void say(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
}

bool simulating() { return config().profile != nullptr && !config().bad_spec; }

// The run id: inherited, or made here and exported for the processes this
// one starts (at load, before the program runs: no other thread reads the
// environment yet).
std::string run_id(bool make) {
  const char* v = getenv("GPUMEMREC_SIM_RUN");
  if (v != nullptr && *v != '\0' && strlen(v) <= 64 && strchr(v, '/') == nullptr) return v;
  if (!make) return "";
  uint64_t r[2] = {};
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    r[0] = (static_cast<uint64_t>(getpid()) << 32) ^ process_start_time(getpid());
    r[1] = reinterpret_cast<uintptr_t>(&r);
  }
  char buf[40];
  snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, r[0], r[1]);
  setenv("GPUMEMREC_SIM_RUN", buf, 1);
  return buf;
}

void describe(Table* t) {
  const Config& c = config();
  snprintf(t->profile, sizeof t->profile, "%s", c.profile->id);
  t->devices = c.devices;
  t->capacity = c.capacity;
  t->creator = getpid();
  t->creator_start = process_start_time(getpid());
  for (pthread_mutex_t& m : t->locks) init_robust_mutex(&m);
}

bool same_card(const Table* t) {
  const Config& c = config();
  return strncmp(t->profile, c.profile->id, sizeof t->profile) == 0 && t->devices == c.devices &&
         t->capacity == c.capacity;
}

void say_other_card(const Table* t) {
  say("gpumemrec simulate: this process simulates %s:%d, the other processes of its run %.32s:%d (pid %d made "
      "the run's devices); its devices are its own, not shared with theirs: give every process the same "
      "GPUMEMREC_SIMULATE\n",
      config().profile->id, config().devices, t->profile, t->devices, static_cast<int>(t->creator));
}

// A slot of its own: the one this process had before an exec, a free one,
// else one whose process is gone.
Slot* take_slot(Table* t) {
  const pid_t me = getpid();
  const uint64_t start = process_start_time(me);
  for (int pass = 0; pass < 3; ++pass) {
    for (Slot& s : t->slots) {
      int32_t expected = pass == 1 ? kSlotFree : kSlotLive;
      if (pass == 0 && (s.state.load() != kSlotLive || s.pid != me || s.start_time != start)) continue;
      if (pass == 2 && (s.state.load() != kSlotLive || process_alive(s.pid, s.start_time))) continue;
      if (!s.state.compare_exchange_strong(expected, kSlotClaiming)) continue;
      for (auto& b : s.bytes) b.store(0);
      s.pid = me;
      s.start_time = start;
      s.state.store(kSlotLive, std::memory_order_release);
      return &s;
    }
  }
  return nullptr;
}

// LOCAL_RANK beyond the simulated devices: PyTorch's cudaSetDevice(LOCAL_RANK)
// will fail; say why first.
void check_local_rank() {
  const char* v = getenv("LOCAL_RANK");
  if (v == nullptr) return;
  char* end = nullptr;
  const long r = strtol(v, &end, 10);
  if (end == v || *end != '\0' || r < config().devices) return;
  say("gpumemrec simulate: LOCAL_RANK=%ld but GPUMEMREC_SIMULATE=%.64s presents %d device(s): this process's "
      "device does not exist (simulate at least as many devices as processes per node)\n",
      r, getenv("GPUMEMREC_SIMULATE"), config().devices);
}

// The run's table, made or joined; nullptr when this process cannot share.
Table* join(const std::string& run, bool create) {
  snprintf(g_path, sizeof g_path, "%s", table_path(run).c_str());
  bool made = false;
  Table* t = open_table(g_path, create, &made);
  if (t == nullptr) return nullptr;
  if (made) {
    describe(t);
    publish_table(t);
    return t;
  }
  if (wait_published(t) && same_card(t)) return t;
  if (t->magic.load() == kTableMagic && create) say_other_card(t);
  munmap(t, sizeof(Table));
  return nullptr;
}

// A library that reads the table without holding memory (NVML) joins lazily.
void observe() {
  std::call_once(g_observe_once, [] {
    if (g_table != nullptr || !simulating()) return;
    const std::string run = run_id(false);
    if (!run.empty()) g_table = join(run, false);
  });
}

uint64_t sum_others(int device, bool verify) {
  const pid_t me = getpid();
  uint64_t total = 0;
  for (Slot& s : g_table->slots) {
    if (s.state.load(std::memory_order_acquire) != kSlotLive || s.pid == me) continue;
    if (verify && !process_alive(s.pid, s.start_time)) {
      int32_t live = kSlotLive;
      if (s.state.compare_exchange_strong(live, kSlotFree)) continue;  // its share is free now
    }
    total += s.bytes[device].load(std::memory_order_relaxed);
  }
  return total;
}

bool readable(int device) {
  if (g_table == nullptr) observe();
  return g_table != nullptr && device >= 0 && device < kMaxDevices;
}

bool writable(int device) {
  if (g_table == nullptr || g_slot == nullptr || device < 0 || device >= kMaxDevices) return false;
  if (g_slot_pid != getpid()) {  // a forked child: the parent's slot is not its own
    g_slot = take_slot(g_table);
    g_slot_pid = getpid();
  }
  return g_slot != nullptr;
}

}  // namespace

void at_load() {
  if (!simulating()) return;
  check_local_rank();
  const std::string run = run_id(true);
  prune_stale_tables(run);
  Table* t = join(run, true);
  if (t == nullptr) return;
  g_slot = take_slot(t);
  g_slot_pid = getpid();
  if (g_slot == nullptr) {
    say("gpumemrec simulate: the run's %d process slots are taken: this process's devices are its own\n", kMaxSlots);
    munmap(t, sizeof(Table));
    return;
  }
  g_table = t;
}

void at_exit() {
  if (g_slot == nullptr || g_slot_pid != getpid()) return;
  for (auto& b : g_slot->bytes) b.store(0);
  g_slot->state.store(kSlotFree);
  // The run's maker (the same pid after an exec), or the last process out,
  // removes the table; processes still running keep their mapping.
  bool last = true;
  for (const Slot& s : g_table->slots)
    if (s.state.load() != kSlotFree && s.pid != getpid() && process_alive(s.pid, s.start_time)) last = false;
  if (last || (g_table->creator == getpid() && g_table->creator_start == process_start_time(getpid())))
    unlink(g_path);
}

bool active() { return g_table != nullptr && g_slot != nullptr; }

DeviceLock::DeviceLock(int device) : device_(device) {
  if (!writable(device)) return;
  lock_robust_mutex(&g_table->locks[device]);
  locked_ = true;
}

DeviceLock::~DeviceLock() {
  if (locked_) pthread_mutex_unlock(&g_table->locks[device_]);
}

uint64_t DeviceLock::others(bool verify) { return locked_ ? sum_others(device_, verify) : 0; }

void publish(int device, uint64_t bytes) {
  if (writable(device)) g_slot->bytes[device].store(bytes, std::memory_order_relaxed);
}

uint64_t others_bytes(int device) { return readable(device) ? sum_others(device, true) : 0; }

std::vector<Peer> peers(int device) {
  std::vector<Peer> out;
  if (!readable(device)) return out;
  sum_others(device, true);  // frees the shares of processes that died
  const pid_t me = getpid();
  for (Slot& s : g_table->slots) {
    if (s.state.load(std::memory_order_acquire) != kSlotLive || s.pid == me) continue;
    const uint64_t b = s.bytes[device].load(std::memory_order_relaxed);
    if (b != 0) out.push_back(Peer{s.pid, b});
  }
  return out;
}

}  // namespace sim::shared
