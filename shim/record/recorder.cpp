#include "shim/record/recorder.h"

#include "shim/base/tls.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "shim/base/clock.h"
#include "shim/base/log.h"
#include "shim/base/privilege.h"
#include "shim/record/device_reset.h"
#include "shim/record/python_stack.h"
#include "shim/record/stack_capture.h"

namespace gpumemrec {

namespace {

GM_TLS int t_depth = 0;
GM_TLS uint32_t t_tid = 0;
GM_TLS bool t_in_init = false;
// This thread's block of ring seqs (ring.h, "Blocks"). A forked child's
// thread keeps it (its seqs are its own in the child's ring).
GM_TLS Ring::Block t_block;

// A seq and its slot, taken (busy) at once: from here to commit() the event
// is "in flight" and a dump copying the window waits for it (ring.h). Call
// it after the event's time was read (claim_marks.h, rule 2).
struct Claim {
  uint64_t seq;
  uint64_t* slot;
};
inline Claim claim_slot(Recorder* r) {
  const Ring::Ticket t = r->ring.claim(&t_block);
  return Claim{t.seq, r->ring.take_slot(t.seq, t.gen)};
}

enum InitState : int { kUninit = 0, kIniting = 1, kReady = 2, kDisabled = 3 };
std::atomic<int> g_init_state{kUninit};
Recorder* g_recorder = nullptr;

constexpr uint32_t kMaxStacks = 1u << 20;
constexpr uint64_t kStackArenaBytes = 256ull << 20;

void do_init() {
  // setuid/setgid/capabilities: never record, never write files as the
  // program's owner. Checked here, not only in the constructor: a hook can
  // run (and initialise us) before our constructor does.
  if (process_is_privileged()) {
    g_init_state.store(kDisabled, std::memory_order_release);
    return;
  }
  std::vector<std::string> warnings;
  Config cfg = parse_config_from_environment(&warnings);
  log_init(cfg.log_level);
  for (auto& w : warnings) GM_WARN("{}", w);
  if (cfg.disable) {
    GM_INFO("GPUMEMREC_DISABLE is set: pass-through only");
    g_init_state.store(kDisabled, std::memory_order_release);
    return;
  }
  // Never freed: hooks may run during and after static destruction.
  auto* r = new (std::nothrow) Recorder();
  void* ring_mem = nullptr;
  if (r) {
    ring_mem = mmap(nullptr, cfg.ring_events * sizeof(Event), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring_mem == MAP_FAILED) ring_mem = nullptr;
  }
  if (!r || !ring_mem) {
    GM_ERROR("cannot allocate the event ring ({} events); recording is off", cfg.ring_events);
    delete r;
    g_init_state.store(kDisabled, std::memory_order_release);
    return;
  }
  r->cfg = cfg;
  r->ring.init(ring_mem, cfg.ring_events);
  r->start_ns = realtime_ns();
  // Stacks: nothing is mapped until the first stack is interned, and nothing
  // at all when both kinds of stacks are off (docs/performance.md, memory).
  r->stacks_enabled = (cfg.stack_depth > 0 || cfg.python_stacks) && r->stacks.init(kMaxStacks, kStackArenaBytes);
  g_recorder = r;
  g_init_state.store(kReady, std::memory_order_release);
}

// Lifetime hazard: init may be entered from any hook on any thread, possibly
// before our constructor; it must not call dlopen (the thread holding the
// loader lock may be waiting for us). The constructor does the loader work.
Recorder* ensure_init() {
  int s = g_init_state.load(std::memory_order_acquire);
  if (s == kReady) return g_recorder;
  if (s == kDisabled || t_in_init) return nullptr;
  int expected = kUninit;
  if (g_init_state.compare_exchange_strong(expected, kIniting, std::memory_order_acq_rel)) {
    int saved = errno;
    t_in_init = true;
    do_init();
    t_in_init = false;
    errno = saved;
  } else {
    while (g_init_state.load(std::memory_order_acquire) == kIniting) sched_yield();
  }
  return g_init_state.load(std::memory_order_acquire) == kReady ? g_recorder : nullptr;
}

// A device with a limit counts in its exact shared counter (admit reserves
// there), every other device in this thread's slab (live_bytes.h).
inline bool limited(const Recorder* r, int device) {
  return r->cfg.has_limit && device >= 0 && device < kMaxDevices && r->cfg.limit_bytes[device] != 0;
}

inline void add_live(Recorder* r, int device, int64_t delta) {
  if (delta == 0) return;
  if (limited(r, device)) r->live_bytes.add_exact(device, delta);
  else r->live_bytes.add(device, delta);
}

inline uint32_t saturate32(uint64_t v) { return v > 0xFFFFFFFFull ? 0xFFFFFFFFu : uint32_t(v); }

// `at`: the event's time (CLOCK_MONOTONIC; converted to wall time at the
// dump, dump_snapshot.h), by which a bundle orders events across threads:
// when the real call returned for an allocation (the address is ours only
// from then on), when it was entered for a free or an unmap (the driver may
// hand the address to another thread from then on). So an address reused
// across threads is always freed before it is allocated again in time order.
inline void fill(Event& e, HookId api, EventKind kind, MemoryType type, int device, uint64_t addr, uint64_t size,
                 uint64_t stream, uint64_t t0, uint64_t t1, uint64_t at, int result, uint32_t stack) {
  e.time_ns = at;
  e.address = addr;
  e.size = size;
  e.stream = stream;
  e.stack_id = stack;
  e.tid = current_tid() & 0xFFFFFF;
  e.device1 = uint8_t(device >= 0 && device < 255 ? device + 1 : 0);
  e.duration_ns = saturate32(t1 > t0 ? t1 - t0 : 0);
  e.result = int16_t(result);
  e.api = uint8_t(api);
  e.kind_type = pack_kind_type(kind, type);
  e.live_after = 0;  // derived at the dump (history.h): no shared total is read per call; freed_stack shares it
}

}  // namespace

const char* dump_reason_name(DumpReason r) {
  switch (r) {
    case DumpReason::kOom: return "oom";
    case DumpReason::kLimit: return "limit";
    case DumpReason::kFailAfter: return "fail_after";
    case DumpReason::kSignal: return "signal";
    case DumpReason::kExit: return "exit";
    case DumpReason::kFrameworkOom: return "framework_oom";
    case DumpReason::kNone: break;
  }
  return "none";
}

Recorder* recorder() { return ensure_init(); }

void recorder_atfork_prepare() {
  if (!g_recorder) return;
  stack_capture_before_fork();
  g_recorder->live.lock_all();
  g_recorder->handles.lock_all();
  g_recorder->mappings.lock_all();
}
void recorder_atfork_parent() {
  if (!g_recorder) return;
  g_recorder->mappings.unlock_all();
  g_recorder->handles.unlock_all();
  g_recorder->live.unlock_all();
  stack_capture_after_fork_parent();
}
void recorder_atfork_child() {
  t_tid = 0;  // the child's only thread has a new id
  if (!g_recorder) return;
  g_recorder->mappings.unlock_all();
  g_recorder->handles.unlock_all();
  g_recorder->live.unlock_all();
  // A hold (live_table.h) belongs to the parent's writer, which is not here.
  g_recorder->live.forget_hold();
  g_recorder->handles.forget_hold();
  // A slot another thread was publishing at the fork would stay busy for
  // ever in the child (that thread does not exist here): a new fork epoch
  // lets the child's next writer on it take it over (ring.h).
  g_recorder->ring.after_fork_in_child();
  stack_capture_after_fork();
  device_resets_after_fork();
}
bool recorder_enabled() { return ensure_init() != nullptr; }

HookScope::HookScope() : record_(t_depth++ == 0 && ensure_init() != nullptr) {}
HookScope::~HookScope() { --t_depth; }

uint32_t current_tid() {
  if (__builtin_expect(t_tid == 0, 0)) t_tid = uint32_t(syscall(SYS_gettid));
  return t_tid;
}

uint32_t capture_stack_id(Recorder* r) {
  if (!r->stacks_enabled) return 0;
  // capture_native_stack writes at most kMaxStackDepth frames (the config
  // never asks for more), capture_python_frames at most kMaxPythonFrames + 1.
  uint64_t frames[kMaxStackDepth + kMaxPythonFrames + 1];
  static_assert(sizeof frames <= 8 * 1024, "stack buffers live on the program's stack, inside its GPU call");
  uint32_t n = capture_native_stack(frames, r->cfg.stack_depth);
  n += capture_python_frames(frames + n, kMaxPythonFrames + 1);
  return r->stacks.intern(frames, n);
}

Admission admit(HookId, int device, uint64_t size) {
  Admission a;
  Recorder* r = g_recorder;
  if (!r) return a;
  if (r->cfg.fail_after != 0) {
    uint64_t n = r->alloc_calls.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n == r->cfg.fail_after) {
      a.refused = DumpReason::kFailAfter;
      return a;
    }
  }
  if (r->cfg.has_limit && device >= 0 && device < kMaxDevices && r->cfg.limit_bytes[device] != 0) {
    // Check and reserve in one step: two threads can never both see room
    // that only one of them fits in.
    const uint64_t limit = r->cfg.limit_bytes[device];
    std::atomic<int64_t>& live = r->live_bytes.exact(device);
    int64_t cur = live.load(std::memory_order_relaxed);
    do {
      const uint64_t held = cur < 0 ? 0 : uint64_t(cur);
      if (size > limit || held > limit - size) {
        a.refused = DumpReason::kLimit;
        return a;
      }
    } while (!live.compare_exchange_weak(cur, cur + int64_t(size), std::memory_order_relaxed));
    a.reserved = size;
  }
  return a;
}

uint64_t device_live_bytes(int device) {
  Recorder* r = g_recorder;
  return r ? r->live_bytes.read(device) : 0;
}

uint64_t device_pooled_bytes(int device) {
  Recorder* r = g_recorder;
  return r ? r->live_bytes.read_pooled(device) : 0;
}

void record_alloc(HookId api, int device, uint64_t address, uint64_t size, uint64_t stream, MemoryType type,
                  uint64_t t0_ns, int result, uint64_t reserved) {
  Recorder* r = g_recorder;
  uint64_t t1 = monotonic_ns();
  uint32_t stack = capture_stack_id(r);
  Event e;
  const Claim c = claim_slot(r);
  e.seq = c.seq;
  fill(e, api, EventKind::kAlloc, type, device, address, size, stream, t0_ns, t1, t1, result, stack);
  const LiveEntry le = live_entry_from_event(e);
  if (address != 0) {  // cudaMalloc(p, 0) succeeds with NULL: nothing is held
    LiveTable& table = type == MemoryType::kPhysical ? r->handles : r->live;
    if (!table.insert(le)) GM_WARN("live table out of memory; allocation at {:#x} is not tracked", address);
    add_live(r, device, int64_t(size) - int64_t(reserved));
    if (hook_stream_ordered(api)) r->live_bytes.add_pooled(device, int64_t(size));
  } else {
    add_live(r, device, -int64_t(reserved));
  }
  r->ring.commit(c.slot, e);
}

bool record_alloc_failure(HookId api, int device, uint64_t size, uint64_t stream, MemoryType type, uint64_t t0_ns,
                          int result, bool oom, DumpReason reason, FailureInfo* failure, uint64_t reserved) {
  Recorder* r = g_recorder;
  if (reserved) add_live(r, device, -int64_t(reserved));  // the reservation was not used
  uint64_t t1 = monotonic_ns();
  uint32_t stack = capture_stack_id(r);
  Event e;
  const Claim c = claim_slot(r);
  e.seq = c.seq;
  fill(e, api, oom ? EventKind::kOom : EventKind::kAllocFailed, type, device, 0, size, stream, t0_ns, t1, t1, result,
       stack);
  r->ring.commit(c.slot, e);
  if (!oom) return false;
  {
    FailureInfo& f = *failure;
    f.api = api;
    f.device = device;
    f.size = size;
    f.result = result;
    f.seq = e.seq;
    f.stack_id = stack;
    f.tid = current_tid();
    // Wall time (episodes, metadata), dated back to the event's own t1 (when
    // the driver returned): read now, after the stack was taken, it was
    // milliseconds late when the thread was preempted in between on a busy
    // machine, and the bundle's failure then matched no event of its own time
    // (e2e.episode_threads under scripts/under-load.sh).
    const uint64_t mono_now = monotonic_ns();
    f.time_ns = realtime_ns() - (mono_now > t1 ? mono_now - t1 : 0);
    f.reason = reason;
  }
  return true;
}

PendingFree begin_free(uint64_t key, MemoryType type) {
  PendingFree p;
  Recorder* r = g_recorder;
  if (key != 0) {
    LiveTable& table = type == MemoryType::kPhysical ? r->handles : r->live;
    p.known = table.remove(key, &p.entry);
  }
  return p;
}

void end_free(HookId api, const PendingFree& pending, uint64_t key, int device_hint, uint64_t stream,
              MemoryType type, uint64_t t0_ns, int result) {
  Recorder* r = g_recorder;
  uint64_t t1 = monotonic_ns();
  uint32_t stack = capture_stack_id(r);
  int device = pending.known ? pending.entry.device : device_hint;
  MemoryType mt = pending.known ? MemoryType(pending.entry.memory_type) : type;
  uint64_t size = pending.known ? pending.entry.size : 0;
  Event e;
  if (result != 0 && pending.known) {
    // The driver refused: the allocation is still held.
    LiveTable& table = mt == MemoryType::kPhysical ? r->handles : r->live;
    table.insert(pending.entry);
  }
  const Claim c = claim_slot(r);
  e.seq = c.seq;
  fill(e, api, result == 0 ? EventKind::kFree : EventKind::kFreeFailed, mt, device, key, size, stream, t0_ns, t1,
       t0_ns, result, stack);
  if (pending.known) e.freed_stack = pending.entry.stack_id;  // a store into the event being filled
  if (result == 0 && pending.known) {
    add_live(r, device, -int64_t(size));
    if (hook_stream_ordered(HookId(pending.entry.api))) r->live_bytes.add_pooled(device, -int64_t(size));
  }
  r->ring.commit(c.slot, e);
}

PendingUnmap begin_unmap(uint64_t address) {
  PendingUnmap p;
  Recorder* r = g_recorder;
  if (address != 0 && r->mappings.remove(address, &p.entry)) {
    p.known = true;
    p.device = p.entry.device;
  }
  return p;
}

void record_mapping(HookId api, bool map, int device, uint64_t address, uint64_t size, uint64_t t0_ns, int result,
                    const PendingUnmap& pending) {
  Recorder* r = g_recorder;
  uint64_t t1 = monotonic_ns();
  uint32_t stack = capture_stack_id(r);
  Event e;
  const Claim c = claim_slot(r);
  e.seq = c.seq;
  if (map && result == 0 && address != 0) {
    LiveEntry m;
    m.key = address;
    m.size = size;
    m.time_ns = t1;
    m.seq = e.seq;
    m.device = int16_t(device);
    m.api = uint8_t(api);
    m.memory_type = uint8_t(MemoryType::kMapping);
    r->mappings.insert(m);
  } else if (!map && result != 0 && pending.known) {
    r->mappings.insert(pending.entry);  // the driver refused: still mapped
  }
  fill(e, api, map ? EventKind::kMap : EventKind::kUnmap, MemoryType::kMapping, device, address, size, 0, t0_ns, t1,
       map ? t1 : t0_ns, result, stack);
  r->ring.commit(c.slot, e);
}

void record_released_entry(HookId api, const LiveEntry& le, uint32_t stack) {
  Recorder* r = g_recorder;
  const MemoryType mt = MemoryType(le.memory_type);
  const bool mapping = mt == MemoryType::kMapping;
  const uint64_t now = monotonic_ns();
  Event e;
  const Claim c = claim_slot(r);
  e.seq = c.seq;
  fill(e, api, mapping ? EventKind::kUnmap : EventKind::kFree, mt, le.device, le.key, le.size, 0, now, now, now, 0,
       stack);
  e.freed_stack = le.stack_id;
  if (!mapping) {  // a mapping's bytes are its handle's
    add_live(r, le.device, -int64_t(le.size));
    if (hook_stream_ordered(HookId(le.api))) r->live_bytes.add_pooled(le.device, -int64_t(le.size));
  }
  r->ring.commit(c.slot, e);
}

int device_of_handle(uint64_t handle) {
  Recorder* r = g_recorder;
  LiveEntry e;
  if (r && r->handles.find(handle, &e)) return e.device;
  return kUnknownDevice;
}

}  // namespace gpumemrec
