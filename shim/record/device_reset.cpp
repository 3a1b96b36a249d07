#include "shim/record/device_reset.h"

#include <sys/mman.h>

#include <new>

#include "common/config.h"
#include "shim/base/log.h"
#include "shim/base/spinlock.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

ResetsPending g_resets_pending;

namespace {

// The destroying call of a device, until its entries are released.
struct Pending {
  uint64_t t0 = 0;  // its start (CLOCK_MONOTONIC); 0: nothing pending
  uint32_t stack = 0;
  HookId api = HookId::cudaDeviceReset;
  StillHeld still_held = nullptr;  // a created context's: ask per address; nullptr: everything went
};

// What a created context's destruction may have freed: the CUDA runtime's
// and driver's memory (the driver is asked about each; a stream-ordered
// pool's allocation that outlives the context is still known to it), not
// HIP's.
bool context_may_hold(const LiveEntry& e) {
  return e.api < kHookCount && hook_info(HookId(e.api)).library != Library::HIP;
}

// Guards g_pending (a few stores; never held while walking a table).
SpinLock g_lock;
Pending g_pending[kMaxDevices];

bool take(int device, Pending* out) {
  SpinGuard g(g_lock);
  if (g_pending[device].t0 == 0) return false;
  *out = g_pending[device];
  g_pending[device] = Pending{};
  g_resets_pending.count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

// Marks `device` unless a newer destruction marked it meanwhile.
void put(int device, const Pending& p) {
  SpinGuard g(g_lock);
  if (g_pending[device].t0 >= p.t0) return;
  if (g_pending[device].t0 == 0) g_resets_pending.count.fetch_add(1, std::memory_order_relaxed);
  g_pending[device] = p;
}

// One table's entries of `device` older than the destroying call. The
// snapshot names them (in memory from mmap: this may run on the
// out-of-memory path, where malloc can fail); each is then removed by key
// and put back if the key holds a newer allocation by then (allocating on a
// device while it is reset is the program's race, CUDA says, but not ours
// to corrupt). UINT64_MAX: no memory for the snapshot.
uint64_t release_from(LiveTable& table, int device, const Pending& p) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t cap = table.count() + 1024;
    const size_t bytes = size_t(cap) * sizeof(LiveEntry);
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return UINT64_MAX;
    auto* seen = static_cast<LiveEntry*>(m);
    const uint64_t n = table.snapshot_into(seen, cap);
    uint64_t released = 0;
    for (uint64_t i = 0; n != UINT64_MAX && i < n; ++i) {
      if (seen[i].device != device || seen[i].time_ns >= p.t0) continue;
      if (p.still_held && (!context_may_hold(seen[i]) || p.still_held(seen[i].key))) continue;
      LiveEntry le;
      if (!table.remove(seen[i].key, &le)) continue;  // freed meanwhile
      if (le.device != device || le.time_ns >= p.t0) {
        table.insert(le);
        continue;
      }
      record_released_entry(p.api, le, p.stack);
      ++released;
    }
    munmap(m, bytes);
    if (n != UINT64_MAX) return released;  // else the table grew past `cap`: again
  }
  return UINT64_MAX;
}

uint64_t apply_one(Recorder* r, int device) {
  Pending p;
  if (!take(device, &p)) return 0;
  uint64_t n = 0;
  for (LiveTable* t : {&r->mappings, &r->handles, &r->live}) {
    if (p.still_held && t != &r->live) continue;  // VMM handles and mappings are not a context's
    const uint64_t k = release_from(*t, device, p);
    if (k == UINT64_MAX) {
      GM_WARN("no memory to release device {}'s entries after {}; they stay listed for now", device,
              hook_name(p.api));
      put(device, p);
      return n;
    }
    n += k;
  }
  if (n) GM_INFO("{}: a context of device {} was destroyed; {} allocations released with it", hook_name(p.api),
                 device, n);
  return n;
}

}  // namespace

namespace {
void record_destruction(HookId api, int device, uint64_t t0_ns, StillHeld still_held) {
  Recorder* r = recorder();
  if (!r || device < 0 || device >= kMaxDevices) return;
  apply_one(r, device);  // an earlier destruction's entries are older still
  Pending p;
  p.t0 = t0_ns;
  p.stack = capture_stack_id(r);
  p.api = api;
  p.still_held = still_held;
  put(device, p);
}
}  // namespace

void record_device_reset(HookId api, int device, uint64_t t0_ns) { record_destruction(api, device, t0_ns, nullptr); }

void record_context_destroy(HookId api, int device, uint64_t t0_ns, StillHeld still_held) {
  if (still_held) record_destruction(api, device, t0_ns, still_held);
}

uint64_t apply_device_resets(int device) {
  Recorder* r = recorder();
  if (!r || g_resets_pending.count.load(std::memory_order_relaxed) == 0) return 0;
  if (device >= 0) return device < kMaxDevices ? apply_one(r, device) : 0;
  uint64_t n = 0;
  for (int d = 0; d < kMaxDevices; ++d) n += apply_one(r, d);
  return n;
}

void device_resets_after_fork() { new (&g_lock) SpinLock(); }

}  // namespace gpumemrec
