#include "shim/dump/capture/peak_keeper.h"

#include <time.h>

#include <algorithm>
#include <new>

#include "shim/base/asan_build.h"
#include "shim/base/background_thread.h"
#include "shim/base/clock.h"
#include "shim/base/spinlock.h"
#include "shim/dump/capture/event_order.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/capture/history.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

// Notes end() at `now` (a later note with the same end replaces the moment:
// the later, the later the horizon it allows).
void note_end(PeakTail* t, uint64_t now, uint64_t end) {
  if (t->seen_count && t->seen[t->seen_count - 1].end == end) {
    t->seen[t->seen_count - 1].mono_ns = now;
    return;
  }
  if (t->seen_count == PeakTail::kSeen) {  // the oldest goes: the horizon only moves later
    std::move(t->seen + 1, t->seen + PeakTail::kSeen, t->seen);
    --t->seen_count;
  }
  t->seen[t->seen_count++] = PeakTail::Seen{now, end};
}

// The newest noted moment whose unread events are all later (see the header).
uint64_t horizon_from_notes(PeakTail* t, uint64_t block) {
  int use = -1;
  for (int i = 0; i < t->seen_count; ++i)
    if (t->seen[i].end + block <= t->kept.cursor + 1) use = i;
  if (use < 0) return t->kept.horizon_ns;
  const uint64_t m = t->seen[use].mono_ns;
  std::move(t->seen + use + 1, t->seen + t->seen_count, t->seen);
  t->seen_count -= use + 1;
  const uint64_t h = m > kSlackNs ? m - kSlackNs : 0;
  return std::max(h, t->kept.horizon_ns);
}

// Appends `n` events to pending, keeping it in time order: sorted on their
// own, then merged only where they overlap what waits (a thread's events
// come in order, so most batches start after the last one waiting).
void add_pending(PeakKept& k, Event* events, size_t n) {
  if (n == 0) return;
  order_events(events, n, 0, UINT64_MAX, 0);
  const size_t old = k.pending.size();
  k.pending.insert(k.pending.end(), events, events + n);
  if (old == k.pending_from || earlier(k.pending[old - 1], k.pending[old])) return;
  auto by_time = [](const Event& a, const Event& b) { return earlier(a, b); };
  auto first = std::upper_bound(k.pending.begin() + ptrdiff_t(k.pending_from), k.pending.begin() + ptrdiff_t(old),
                                k.pending[old], by_time);
  std::inplace_merge(first, k.pending.begin() + ptrdiff_t(old), k.pending.end(), by_time);
}

// Reads [cursor, to) into pending; an event the horizon has passed already
// is replayed at once (late). A seq lost opens a gap (see Gaps).
uint64_t read_settled(const Ring& ring, PeakTail* t, uint64_t to) {
  PeakKept& k = t->kept;
  if (to <= k.cursor) return 0;
  const uint64_t cap = ring.capacity();
  const uint64_t lost_before = k.lost;
  if (to - k.cursor > cap) k.lost += to - cap - k.cursor;  // those slots were reused already
  const uint64_t from = to - k.cursor > cap ? to - cap : k.cursor;
  t->scratch.resize(size_t(to - from));
  const uint64_t n = copy_ring_events(ring, from, to, t->scratch.data(), &k.lost);
  const uint64_t read = to - k.cursor;
  k.cursor = to;
  if (k.lost != lost_before) {  // nothing of this read is replayed
    peak_open_gap(&k);
    return read;
  }
  size_t kept = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const Event& e = t->scratch[i];
    if (k.horizon_ns != 0 && e.time_ns <= k.horizon_ns && !k.resuming()) {
      const bool in_gap = k.gaps != 0 && e.time_ns < k.after.from_ns;
      if (!in_gap && event_memory_change(e) != 0) ++(k.gaps ? k.after.late : k.late);
      peak_apply(&k, e);
    } else {
      t->scratch[kept++] = e;
    }
  }
  add_pending(k, t->scratch.data(), kept);
  return read;
}

// Replays pending events up to `horizon` (time order), and the oldest past
// it while more than `max_pending` wait; the new horizon.
// Never past `now` (the moment the pass began: see the holds in the header).
// The replayed ones are dropped in bulk, once they are half of the vector.
uint64_t replay_pending(PeakKept& k, uint64_t horizon, size_t max_pending, uint64_t now) {
  const size_t n = k.pending.size();
  size_t& done = k.pending_from;
  while (done < n && (k.pending[done].time_ns <= horizon || (n - done > max_pending && k.pending[done].time_ns < now))) {
    horizon = std::max(horizon, k.pending[done].time_ns);
    peak_apply(&k, k.pending[done++]);
  }
  if (done > 4096 && done * 2 > n) {
    k.pending.erase(k.pending.begin(), k.pending.begin() + ptrdiff_t(done));
    done = 0;
  }
  return horizon;
}

// After a gap, until T is known: T from the ring's marks, or nothing yet
// (then pending only grows; past its bound the gap starts again from the
// cursor). True when the pass may replay.
bool try_resume(const Ring& ring, PeakKept& k, size_t max_pending) {
  if (!k.resuming()) return true;
  const uint64_t from_ns = ring.complete_from(k.after.from_seq);
  if (from_ns != 0) {
    peak_resume_at(&k, from_ns);
    return true;
  }
  if (k.pending.size() - k.pending_from > max_pending) peak_open_gap(&k);
  return false;
}

}  // namespace

void peak_open_gap(PeakKept* k, const char* why) {
  if (why && !k->broken) k->broken = why;
  ++k->gaps;
  k->after = PeakAfterGap{};
  k->after.from_seq = k->cursor;
  k->pending.clear();
  k->pending_from = 0;
}

void peak_resume_at(PeakKept* k, uint64_t from_ns) {
  k->after.from_ns = from_ns;
  k->after.replay = PeakReplay::anchored(from_ns);
  // Pending is in time order: what is older than T is its head.
  while (k->pending_from < k->pending.size() && k->pending[k->pending_from].time_ns < from_ns) ++k->pending_from;
}

void peak_apply(PeakKept* k, const Event& e) {
  if (k->gaps == 0) {
    k->replay.apply(e);
  } else if (k->after.from_ns != 0 && e.time_ns >= k->after.from_ns) {
    k->after.replay.apply(e);
  }
}

uint64_t peak_tail_step(const Ring& ring, PeakTail* t, uint64_t now_ns, bool hold) {
  PeakKept& k = t->kept;
  const size_t max_pending = size_t(kPendingPerRing * ring.capacity());
  if (hold && k.pending.size() - k.pending_from >= max_pending) return 0;  // held too long: the ring may wrap past it
  note_end(t, now_ns, ring.end());
  const uint64_t floor = std::min(ring.floor(), ring.end());
  const uint64_t read = read_settled(ring, t, floor);
  if (!try_resume(ring, k, max_pending)) return read;
  if (hold) return read;  // the horizon stays before the freeze's cut
  const uint64_t horizon = horizon_from_notes(t, ring.block_size());
  if (horizon == k.horizon_ns && read == 0) return 0;
  k.horizon_ns = replay_pending(k, horizon, max_pending, now_ns);
  return read;
}

uint64_t peak_keeper_period(uint64_t capacity, uint64_t read, uint64_t elapsed_ns, uint64_t last_period_ns) {
  if (read == 0 || elapsed_ns == 0)  // idle: back off, doubling, to kIdlePeriodNs
    return std::min(kIdlePeriodNs, std::max(kMaxPeriodNs, last_period_ns * 2));
  // An eighth of the ring at the rate seen.
  const double ns = double(capacity / 8) * double(elapsed_ns) / double(read);
  return ns < double(kMinPeriodNs) ? kMinPeriodNs : ns > double(kMaxPeriodNs) ? kMaxPeriodNs : uint64_t(ns);
}

namespace {

SpinLock g_lock;  // around a pass and a bundle's copy
PeakTail* g_tail = nullptr;
Recorder* g_recorder = nullptr;
std::atomic<int> g_holds{0};
std::atomic<bool> g_running{false};
std::atomic<bool> g_in_pass{false};  // for the fork child: a pass was cut in two

std::atomic<bool> g_thread_started{false};  // keeper_main began (peak_keeper_atfork_prepare)
PeakPassHooks g_hooks;  // set before the thread starts

void* keeper_main(void*) {
  g_thread_started.store(true, std::memory_order_release);
  uint64_t last = monotonic_ns();
  uint64_t period = kMaxPeriodNs;
  for (;;) {
    const uint64_t now = monotonic_ns();
    uint64_t read = 0;
    {
      SpinGuard g(g_lock);
      // Read after `now`: a freeze that holds the keeper later has its cut
      // after `now`, and the horizon stays before `now` (see Holds).
      const bool hold = g_holds.load(std::memory_order_seq_cst) != 0;
      g_in_pass.store(true, std::memory_order_relaxed);
      try {
        read = peak_tail_step(g_recorder->ring, g_tail, now, hold);
      } catch (...) {  // out of memory: the events of this pass are lost to it
        peak_open_gap(&g_tail->kept, "the peak keeper ran out of memory");
      }
      g_in_pass.store(false, std::memory_order_relaxed);
      if (g_hooks.locked) g_hooks.locked(g_tail->kept, now);
    }
    if (g_hooks.after) g_hooks.after(now);
    period = peak_keeper_period(g_recorder->ring.capacity(), read, now - last, period);
    last = now;
    timespec ts{time_t(period / 1000000000ull), long(period % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  return nullptr;
}

}  // namespace

void peak_keeper_set_pass_hooks(PeakPassHooks hooks) { g_hooks = hooks; }

bool peak_keeper_start(Recorder* r) {
  if (!r || !r->ring.ready()) return false;
  if (!g_tail) g_tail = new (std::nothrow) PeakTail();
  if (!g_tail) return false;
  g_recorder = r;
  const bool ok = start_background_thread(keeper_main, "gpumemrec-peak");
  g_running.store(ok, std::memory_order_release);
  return ok;
}

bool peak_keeper_running() { return g_running.load(std::memory_order_acquire); }

void peak_keeper_hold() { g_holds.fetch_add(1, std::memory_order_seq_cst); }
void peak_keeper_release() { g_holds.fetch_sub(1, std::memory_order_acq_rel); }

bool peak_keeper_copy(PeakKept* out) {
  if (!peak_keeper_running()) return false;
  SpinGuard g(g_lock);
  *out = g_tail->kept;
  out->pending.erase(out->pending.begin(), out->pending.begin() + ptrdiff_t(out->pending_from));
  out->pending_from = 0;
  return true;
}

constexpr bool kForkWaitsForThePass = kAsanBuild;

// The thread's own start (the sanitizer's per-thread set-up allocates before
// keeper_main runs) is waited for too, a second at most.
void peak_keeper_atfork_prepare() {
  if (!kForkWaitsForThePass || !peak_keeper_running()) return;
  for (int i = 0; i < 1000 && !g_thread_started.load(std::memory_order_acquire); ++i) {
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  g_lock.lock();
}

void peak_keeper_atfork_parent() {
  if (kForkWaitsForThePass && peak_keeper_running()) g_lock.unlock();
}

void peak_keeper_atfork_child() {
  if (!peak_keeper_running()) return;
  new (&g_lock) SpinLock();  // its holder, the keeper or a bundle's copy, is not here
  g_holds.store(0, std::memory_order_relaxed);
  if (g_in_pass.load(std::memory_order_relaxed)) peak_open_gap(&g_tail->kept, "forked while the keeper was replaying");
  g_in_pass.store(false, std::memory_order_relaxed);
  g_thread_started.store(false, std::memory_order_relaxed);
  g_running.store(start_background_thread(keeper_main, "gpumemrec-peak"), std::memory_order_release);
}

}  // namespace gpumemrec
