#include "shim/dump/capture/freeze.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "shim/base/clock.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

struct Region {
  void* base = nullptr;
  size_t bytes = 0;
  size_t touched = 0;  // high-water mark of this freeze, for freeze_done
};

// What a freeze handed over instead of copying: the window of seqs before
// the cut `end`. [.., split) was copied on the failing thread (it lived in
// the buffer that became live); [split, end) stays in the buffers of
// `pinned` until the writer copies it (freeze_collect); `copied` events of
// it are in the events region already.
struct Handover {
  Recorder* r = nullptr;
  uint64_t split = 0, end = 0;
  uint64_t copied = 0;
  unsigned pinned = 0;  // a bit per ring buffer
  int made_live = -1;   // the spare made live (its pages faulted in by the writer)
  bool pending = false;
};

struct Set {
  Region events, live;
  Handover hand;
  Recorder* held = nullptr;  // the live tables are held for this set (copied by freeze_collect)
  bool holds_peak = false;  // the peak keeper is held for this set's bundle (peak_keeper.h)
  std::atomic<bool> taken{false};
};
Set g_sets[kFreezeSets];

// The ring's buffers as the freezes see them. A pinned buffer holds events
// of a window a writer has not copied yet: it is never made live (its slots
// would be overwritten under the writer). g_retired_end: the cut at which a
// buffer stopped being live (0: never was), to pick the least recently live
// one and to know when none of its events can be in a window any more.
// g_swap_lock serialises the choice, the pins taken and the swap (failing
// threads and the writer's trim; never the hot path).
std::atomic<int> g_pins[Ring::kMaxBuffers];
uint64_t g_retired_end[Ring::kMaxBuffers];
bool g_dirty[Ring::kMaxBuffers];  // pages touched since the last trim
std::atomic<bool> g_swap_lock{false};

bool swap_lock_try() { return !g_swap_lock.exchange(true, std::memory_order_acquire); }
void swap_lock() {
  while (!swap_lock_try()) sched_yield();  // held for a few hundred ns by another freeze
}
void swap_unlock() { g_swap_lock.store(false, std::memory_order_release); }

// Faults the pages of [base, base+bytes) in with one system call
// (MADV_POPULATE_WRITE, Linux 5.14) instead of one fault per page during the
// copy; without it (older kernels) the copy faults them in as before.
// Populating never changes what the pages hold.
void populate(void* base, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (base && bytes) madvise(base, (bytes + 4095) & ~size_t(4095), MADV_POPULATE_WRITE);
#else
  (void)base, (void)bytes;
#endif
}

void* map_reserved(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

bool reserve(Region* r, size_t bytes) {
  r->base = map_reserved(bytes);
  r->bytes = r->base ? bytes : 0;
  return r->base != nullptr;
}

// The live region in transparent huge pages where the kernel gives them
// (madvise mode, the default of most distributions): populating 5 MiB of
// fresh memory (100k live entries) at a first freeze takes ~1,200 page
// faults of 4 KiB, 2-18 ms on a busy 2-core VM, against ~0.3 ms for three
// of 2 MiB (docs/performance.md, "The failing call"). The region starts on
// a 2 MiB boundary so that all of it can be huge. A hint only: without huge
// pages the copy is the same, only slower. The pages go back as before
// (freeze_trim: MADV_DONTNEED).
constexpr size_t kHugePage = size_t(2) << 20;

void* map_huge_aligned(size_t bytes) {
  const size_t span = bytes + kHugePage;
  auto* p = static_cast<char*>(map_reserved(span));
  if (!p) return nullptr;
  char* start = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1));
  if (start > p) munmap(p, size_t(start - p));
  if (start + bytes < p + span) munmap(start + bytes, size_t(p + span - (start + bytes)));
#ifdef MADV_HUGEPAGE
  madvise(start, bytes, MADV_HUGEPAGE);
#endif
  return start;
}

// Room for `bytes` in the live region: a larger region when it is too small
// (nothing in it is kept between freezes, so the old one just goes).
bool ensure(Region* r, size_t bytes) {
  if (bytes <= r->bytes) return true;
  const size_t want = (bytes + bytes / 4 + kHugePage - 1) & ~(kHugePage - 1);
  void* p = map_huge_aligned(want);
  if (!p) return false;
  if (r->base) munmap(r->base, r->bytes);
  r->base = p;
  r->bytes = want;
  r->touched = 0;
  return true;
}

// The live tables, home by home, into the live region; the table may grow
// between sizing and copying: then once more, larger.
bool copy_live(Recorder* r, Region& live, FrozenState* out) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t want = r->live.count() + r->handles.count() + 1024 + (uint64_t(attempt) << 14);
    if (!ensure(&live, want * sizeof(LiveEntry))) return false;
    populate(live.base, (want - 1024) * sizeof(LiveEntry));
    auto* dst = static_cast<LiveEntry*>(live.base);
    const uint64_t a = r->live.snapshot_into(dst, want);
    if (a == UINT64_MAX) continue;
    const uint64_t b = r->handles.snapshot_into(dst + a, want - a);
    if (b == UINT64_MAX) continue;
    out->live = dst;
    out->live_count = a + b;
    live.touched = std::max(live.touched, size_t(a + b) * sizeof(LiveEntry));
    return true;
  }
  return false;
}

// The failure's freeze: the live tables held, not copied (live_table.h,
// "The hold"); false when a hold is pending already (the other pooled set's,
// not collected yet) or its logs cannot be mapped: then the caller copies.
bool hold_live(Recorder* r) {
  if (!r->live.hold()) return false;
  if (r->handles.hold()) return true;
  r->live.drop_hold();
  return false;
}

// The writer's side of the hold: the tables as they were at the freeze into
// the live region (populated in one call: its first use faults ~5 MiB in).
bool collect_live(Recorder* r, Region& live, FrozenState* out) {
  const uint64_t a_cap = r->live.held_bound(), b_cap = r->handles.held_bound();
  const bool room = ensure(&live, (a_cap + b_cap) * sizeof(LiveEntry));
  auto* dst = static_cast<LiveEntry*>(live.base);
  if (!room) {  // the host would not map the copy: the hold ends, the bundle lists nothing live
    r->live.drop_hold();
    r->handles.drop_hold();
    out->live = dst;
    out->live_count = 0;
    return false;
  }
  populate(live.base, (a_cap - LiveTable::kLogSlots + b_cap - LiveTable::kLogSlots) * sizeof(LiveEntry));
  const uint64_t lost = r->live.held_lost() + r->handles.held_lost();
  const uint64_t a = r->live.collect_held(dst, a_cap);
  const uint64_t b = r->handles.collect_held(dst + a, b_cap);
  out->live_after_freeze = r->live.held_lost() + r->handles.held_lost() != lost;
  out->live = dst;
  out->live_count = a + b;
  live.touched = std::max(live.touched, size_t(a_cap + b_cap) * sizeof(LiveEntry));
  return true;
}

uint64_t window_first(const Ring& ring, uint64_t end) {
  return end > ring.capacity() + 1 ? end - ring.capacity() : 1;
}

// Events [lo, hi) of a window, in seq order, appended at
// dst[n]; holes left out. A slot another thread is writing (take_slot done,
// publish not) is waited for, briefly (2 ms per call in all: a writer
// preempted inside its few stores); after that it is a hole. A slot not
// written yet is a hole at once: most are the unused seqs of the threads'
// blocks (ring.h, "Blocks"), which may never be written; the others are
// events claimed but not yet being written at the copy (a thread between
// its claim and its publish: filling the record, the live-table insert).
// Returns the new count.
// `lost` (may be null) counts the seqs a newer event overwrote or that no
// remembered generation covers any more.
uint64_t copy_events(const Ring& ring, uint64_t lo, uint64_t hi, Event* dst, uint64_t n, uint64_t* lost = nullptr) {
  Ring::Segment segs[Ring::kGens / 2];
  const int k = ring.segments(lo, hi, segs, int(Ring::kGens / 2));
  populate(dst + n, (hi - lo) * sizeof(Event));
  if (lost && hi > lo) *lost += k == 0 ? hi - lo : segs[k - 1].from - lo;
  uint64_t wait_deadline = 0;
  for (int i = k - 1; i >= 0; --i) {  // newest segment first in segs
    for (uint64_t s = segs[i].from; s < segs[i].to; ++s) {
      bool got = ring.read_in(segs[i].buffer, s, &dst[n]);
      while (!got && ring.writing_in(segs[i].buffer, s)) {
        const uint64_t now = monotonic_ns();
        if (wait_deadline == 0) wait_deadline = now + 2000000ull;
        if (now >= wait_deadline) break;
        sched_yield();
        got = ring.read_in(segs[i].buffer, s, &dst[n]);
      }
      if (got) ++n;
      // Overwritten, or still being written after the wait (its event will
      // not be read again): lost to this reader.
      else if (lost && (ring.overwritten_in(segs[i].buffer, s) || ring.writing_in(segs[i].buffer, s))) ++*lost;
    }
  }
  return n;
}

// The buffer to make live: not live, not pinned, the least recently live.
// -1: none (each other buffer holds a window a writer has not copied yet).
int pick_spare(const Ring& ring) {
  const int live = ring.live_buffer();
  int best = -1;
  for (int b = 0; b < ring.buffers(); ++b) {
    if (b == live || g_pins[b].load(std::memory_order_acquire) != 0) continue;
    if (best < 0 || g_retired_end[b] < g_retired_end[best]) best = b;
  }
  return best;
}

// Under the swap lock: makes a spare buffer live (when `can_swap` and one is
// free; else the live buffer stays live and the caller copies the whole
// window, as before the hand-over existed) and pins every buffer the
// window's events are in, so that no later freeze makes one of them live
// before they are copied. The spare's own older events that the window may
// still need (only when several freezes came within one ring of events)
// are copied first, while nobody writes into it: from the cut on the
// program's calls overwrite them. Returns the spare made live, or -1.
int hand_over(Ring& ring, bool can_swap, Event* dst, Handover* h) {
  const int spare = can_swap ? pick_spare(ring) : -1;
  uint64_t pre_to = 0;
  if (spare >= 0) {
    const uint64_t now = ring.end();
    pre_to = std::max(window_first(ring, now), g_retired_end[spare]);
    h->copied = copy_events(ring, window_first(ring, now), pre_to, dst, 0);
    const int old = ring.live_buffer();
    h->end = ring.swap_to(spare);
    g_retired_end[old] = h->end;
    g_dirty[spare] = true;
  } else {
    h->end = ring.end();
  }
  const uint64_t lo = window_first(ring, h->end);
  uint64_t gone = 0;  // copied before the cut was known, and out of the window at the cut
  while (gone < h->copied && dst[gone].seq < lo) ++gone;
  if (gone) std::memmove(dst, dst + gone, size_t(h->copied - gone) * sizeof(Event));
  h->copied -= gone;
  h->split = std::max(lo, pre_to);
  Ring::Segment segs[Ring::kGens / 2];
  const int k = ring.segments(h->split, h->end, segs, int(Ring::kGens / 2));
  for (int i = 0; i < k; ++i) h->pinned |= 1u << segs[i].buffer;
  for (int b = 0; b < Ring::kMaxBuffers; ++b)
    if (h->pinned & (1u << b)) g_pins[b].fetch_add(1, std::memory_order_acq_rel);
  return spare;
}

void unpin(Handover* h) {
  for (int b = 0; b < Ring::kMaxBuffers; ++b)
    if (h->pinned & (1u << b)) g_pins[b].fetch_sub(1, std::memory_order_acq_rel);
  h->pinned = 0;
  h->pending = false;
}

void drop_pages(Set& set) {
  for (Region* r : {&set.events, &set.live}) {
    if (r->base && r->touched) madvise(r->base, r->touched, MADV_DONTNEED);
    r->touched = 0;
  }
}

Ring* g_ring = nullptr;

// Buffers whose events no window can hold any more (retired more than one
// ring of events ago), not pinned, not live: their pages go back.
void trim_ring_buffers() {
  if (!g_ring || !swap_lock_try()) return;
  const uint64_t end = g_ring->end();
  const int live = g_ring->live_buffer();
  const size_t bytes = size_t(g_ring->capacity()) * sizeof(Event);
  for (int b = 0; b < g_ring->buffers(); ++b) {
    if (b == live || !g_dirty[b] || g_pins[b].load(std::memory_order_acquire) != 0) continue;
    if (g_retired_end[b] + g_ring->capacity() > end) continue;
    madvise(g_ring->buffer(b), bytes, MADV_DONTNEED);
    g_dirty[b] = false;
  }
  swap_unlock();
}

// The frozen events as the bundle sees them: the first `n` of the set's
// events region.
void expose(Set& s, FrozenState* out, uint64_t n) {
  out->events = static_cast<Event*>(s.events.base);
  out->event_count = n;
  s.events.touched = std::max(s.events.touched, size_t(n) * sizeof(Event));
}

}  // namespace

uint64_t copy_ring_events(const Ring& ring, uint64_t lo, uint64_t hi, Event* dst, uint64_t* lost) {
  return copy_events(ring, lo, hi, dst, 0, lost);
}

bool freeze_init(Ring* ring) {
  const size_t bytes = size_t(ring->capacity()) * sizeof(Event);
  for (Set& set : g_sets)
    if (!reserve(&set.events, bytes) || !ensure(&set.live, size_t(kLiveReserve) * sizeof(LiveEntry))) return false;
  // The spare buffers: address space only until one is made live.
  swap_lock();
  while (ring->buffers() < kRingBuffers && ring->add_buffer(map_reserved(bytes)) >= 0) {
  }
  g_dirty[0] = true;
  g_ring = ring;
  swap_unlock();
  return true;
}

int freeze_acquire() {
  for (int i = 0; i < kPooledSets; ++i) {
    bool expected = false;
    if (g_sets[i].events.base && g_sets[i].taken.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
      return i;
  }
  return -1;
}

bool freeze(Recorder* r, int set, FrozenState* out, const char** why) {
  if (set < 0 || set >= kFreezeSets || !g_sets[set].events.base) {
    *why = "no memory was reserved for it at start-up";
    return false;
  }
  Set& s = g_sets[set];
  // Before the cut: the keeper's copy, taken by the bundle, is then of a
  // moment before it.
  if (!s.holds_peak) peak_keeper_hold();
  s.holds_peak = true;
  // A failure's set holds the live tables for its writer; a signal or exit
  // dump (written here, now) and a failure while another's hold is pending
  // copy them.
  s.held = set != kInlineSet && hold_live(r) ? r : nullptr;
  if (!s.held && !copy_live(r, s.live, out)) {
    *why = "the host would not map memory for the copy of the live table";
    return false;
  }
  // The cut after the live tables: see reconciler.h. A signal or exit dump
  // copies on its own thread at once (nothing to hand over), and only tries
  // the lock: the thread it interrupted may hold it.
  s.hand = Handover{};
  s.hand.r = r;
  s.hand.pending = true;
  auto* dst = static_cast<Event*>(s.events.base);
  const bool locked = set == kInlineSet ? swap_lock_try() : (swap_lock(), true);
  const int spare = hand_over(r->ring, locked && set != kInlineSet, dst, &s.hand);
  s.hand.made_live = spare;
  if (locked) swap_unlock();
  out->cut_ns = monotonic_ns();
  out->end_seq = s.hand.end;
  out->first_seq = window_first(r->ring, s.hand.end);
  out->event_room = r->ring.capacity();
  out->wall_offset_ns = int64_t(realtime_ns()) - int64_t(monotonic_ns());
  // Read now: the marks of this window are overwritten two rings of claims on.
  out->complete_from_ns = r->ring.complete_from(out->first_seq);
  if (spare < 0) freeze_collect(set, out);  // no spare: the whole window now, as before the hand-over
  else expose(s, out, s.hand.copied);
  return true;
}

void freeze_collect(int set, FrozenState* out) {
  if (set < 0 || set >= kFreezeSets) return;
  Set& s = g_sets[set];
  if (s.held) {
    out->live_unavailable = !collect_live(s.held, s.live, out);
    s.held = nullptr;
  }
  if (!s.hand.pending) return;
  Handover& h = s.hand;
  auto* dst = static_cast<Event*>(s.events.base);
  expose(s, out, copy_events(h.r->ring, h.split, h.end, dst, h.copied));
  unpin(&h);
}

void freeze_done(int set) {
  if (set < 0 || set >= kFreezeSets) return;
  if (g_sets[set].holds_peak) peak_keeper_release();
  g_sets[set].holds_peak = false;
  if (Recorder* r = g_sets[set].held) {  // a job given up before its copy
    r->live.drop_hold();
    r->handles.drop_hold();
    g_sets[set].held = nullptr;
  }
  Handover& h = g_sets[set].hand;
  if (h.pending) unpin(&h);  // a job given up before its events were copied
  // The buffer made live is touched by the program's calls from the cut on;
  // a page touched for the first time costs a fault (on a VM, the
  // hypervisor's first touch too: docs/performance-log.md), which each call
  // would pay in turn. The writer takes them, here, all at once, once the
  // bundle is written; populating never changes a page's contents, so the
  // calls writing meanwhile are not disturbed.
  if (h.made_live >= 0) populate(h.r->ring.buffer(h.made_live), size_t(h.r->ring.capacity()) * sizeof(Event));
  h.made_live = -1;
  // The pooled sets keep their pages for the next freeze (a program that
  // recovers from an out-of-memory every step would otherwise fault 4 MiB
  // in at every failure); freeze_trim gives them back once quiet. Signal and
  // exit dumps are rare: their set's pages go back at once.
  if (set == kInlineSet) drop_pages(g_sets[set]);
  g_sets[set].taken.store(false, std::memory_order_release);
}

void freeze_trim() {
  for (int i = 0; i < kPooledSets; ++i) {
    bool expected = false;
    if (!g_sets[i].taken.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
    drop_pages(g_sets[i]);
    g_sets[i].taken.store(false, std::memory_order_release);
  }
  trim_ring_buffers();
  if (Recorder* r = g_ring ? recorder() : nullptr) {  // the live tables' hold logs (live_table_hold.cpp)
    r->live.trim_hold_logs();
    r->handles.trim_hold_logs();
  }
}

void freeze_atfork_child() {
  // The parent's writer is not here: its handed-over windows are nobody's.
  for (Set& set : g_sets) {
    set.holds_peak = false;  // peak_keeper_atfork_child starts with no hold
    set.held = nullptr;      // the tables forgot their hold (recorder_atfork_child)
    drop_pages(set);
    set.hand = Handover{};
    set.taken.store(false, std::memory_order_relaxed);
  }
  for (auto& p : g_pins) p.store(0, std::memory_order_relaxed);
  // Another thread held the swap lock at the fork: it may have swapped
  // without noting which buffer it retired. Every buffer then counts as
  // retired just now, so the next freeze copies any part of its window
  // that sits in the buffer it makes live (more than needed, never less).
  if (g_swap_lock.load(std::memory_order_relaxed) && g_ring) {
    for (uint64_t& e : g_retired_end) e = g_ring->end();
    g_swap_lock.store(false, std::memory_order_relaxed);  // its holder is not in this process
  }
}

}  // namespace gpumemrec
