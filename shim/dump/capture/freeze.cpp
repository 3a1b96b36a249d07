#include "shim/dump/capture/freeze.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>

#include "shim/base/clock.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

struct Region {
  void* base = nullptr;
  size_t bytes = 0;
  size_t touched = 0;  // high-water mark of this freeze, for freeze_done
};

struct Set {
  Region events, live;
  std::atomic<bool> taken{false};
};
Set g_sets[kFreezeSets];

// Faults the pages of [base, base+bytes) in with one system call
// (MADV_POPULATE_WRITE, Linux 5.14) instead of one fault per page during the
// copy; without it (older kernels) the copy faults them in as before.
void populate(void* base, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (base && bytes) madvise(base, (bytes + 4095) & ~size_t(4095), MADV_POPULATE_WRITE);
#else
  (void)base, (void)bytes;
#endif
}

bool reserve(Region* r, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  r->base = p;
  r->bytes = bytes;
  return true;
}

// Room for `bytes` in the live region: mremap when it is too small (the
// mapping may move; nothing points into it between freezes).
bool ensure(Region* r, size_t bytes) {
  if (bytes <= r->bytes) return true;
  const size_t want = bytes + bytes / 4;
  void* p = r->base ? mremap(r->base, r->bytes, want, MREMAP_MAYMOVE)
                    : mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  r->base = p;
  r->bytes = want;
  return true;
}

// The live tables, shard by shard, into the live region; the table may grow
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

// The events [end - capacity, end) still in the ring. A slot claimed before
// the cut but still being filled is waited for, briefly (2 ms per freeze in
// all: a writer preempted inside its few stores); after that it is a hole.
void copy_ring(Recorder* r, Region& events, FrozenState* out) {
  const uint64_t cap = r->ring.capacity();
  const uint64_t end = out->end_seq;
  const uint64_t first = end > cap + 1 ? end - cap : 1;
  auto* dst = static_cast<Event*>(events.base);
  populate(dst, (end - first) * sizeof(Event));
  uint64_t n = 0, wait_deadline = 0;
  for (uint64_t s = first; s < end; ++s) {
    bool got = r->ring.read(s, &dst[n]);
    while (!got && s + 4096 > end) {  // only the newest slots can still be in flight
      const uint64_t now = monotonic_ns();
      if (wait_deadline == 0) wait_deadline = now + 2000000ull;
      if (now >= wait_deadline) break;
      sched_yield();
      got = r->ring.read(s, &dst[n]);
    }
    if (got) ++n;
  }
  out->events = dst;
  out->event_count = n;
  events.touched = std::max(events.touched, size_t(n) * sizeof(Event));
}

}  // namespace

bool freeze_init(uint64_t ring_capacity) {
  for (Set& set : g_sets)
    if (!reserve(&set.events, size_t(ring_capacity) * sizeof(Event)) ||
        !reserve(&set.live, size_t(kLiveReserve) * sizeof(LiveEntry)))
      return false;
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
  if (!copy_live(r, g_sets[set].live, out)) {
    *why = "the host would not map memory for the copy of the live table";
    return false;
  }
  out->end_seq = r->ring.end();  // after the live tables: see reconciler.h
  copy_ring(r, g_sets[set].events, out);
  return true;
}

void drop_pages(Set& set) {
  for (Region* r : {&set.events, &set.live}) {
    if (r->base && r->touched) madvise(r->base, r->touched, MADV_DONTNEED);
    r->touched = 0;
  }
}

void freeze_done(int set) {
  if (set < 0 || set >= kFreezeSets) return;
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
}

void freeze_atfork_child() {
  for (Set& set : g_sets) {
    drop_pages(set);
    set.taken.store(false, std::memory_order_relaxed);
  }
}

}  // namespace gpumemrec
