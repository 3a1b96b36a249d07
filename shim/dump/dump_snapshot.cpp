#include "shim/dump/dump_snapshot.h"

#include <sched.h>

#include <algorithm>
#include <new>

#include "shim/base/clock.h"
#include "shim/dump/history.h"
#include "shim/dump/reconciler.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

// The live tables, copied shard by shard. Reserved up front: one
// allocation, not a doubling series (the host may be short of memory).
std::vector<LiveEntry> copy_live_tables(Recorder* r) {
  std::vector<LiveEntry> live;
  live.reserve(size_t(r->live.count() + r->handles.count()) + 256);
  r->live.snapshot(&live);
  r->handles.snapshot(&live);
  return live;
}

// Room for the newest `want` events; when the host cannot give that much
// (a dump with memory short), for the newest part that fits (the bundle then
// starts later, as if the ring were smaller). Returns how many fit.
uint64_t reserve_events(std::vector<Event>* out, uint64_t want) {
  for (;;) {
    try {
      out->reserve(size_t(want));
      return want;
    } catch (const std::bad_alloc&) {
      if (want <= 1024) throw;
      want /= 2;
    }
  }
}

// The events [first, end) still in the ring. A slot claimed before the cut
// but still being filled is waited for, briefly (20 ms per dump in all);
// after that it is a hole.
void copy_ring(Recorder* r, uint64_t end_seq, std::vector<Event>* out) {
  const uint64_t cap = r->ring.capacity();
  uint64_t first_seq = end_seq > cap + 1 ? end_seq - cap : 1;
  first_seq = end_seq - reserve_events(out, end_seq - first_seq);
  uint64_t wait_deadline = 0;
  Event e;
  for (uint64_t s = first_seq; s < end_seq; ++s) {
    bool got = r->ring.read(s, &e);
    while (!got) {
      const uint64_t now = monotonic_ns();
      if (wait_deadline == 0) wait_deadline = now + 20000000ull;
      if (now >= wait_deadline) break;
      sched_yield();
      got = r->ring.read(s, &e);
    }
    if (got) out->push_back(e);
  }
}

void add_totals_and_stacks(const FailureInfo* f, DumpSnapshot* s) {
  for (const Event& e : s->events)
    if (e.stack_id) s->stack_ids.push_back(e.stack_id);
  for (const LiveEntry& a : s->live) {
    if (MemoryType(a.memory_type) == MemoryType::kMapping) continue;
    s->live_by_device[a.device] += a.size;
    s->live_bytes += a.size;
    ++s->live_count;
    if (a.stack_id) s->stack_ids.push_back(a.stack_id);
  }
  if (f && f->stack_id) s->stack_ids.push_back(f->stack_id);
  std::sort(s->stack_ids.begin(), s->stack_ids.end());
  s->stack_ids.erase(std::unique(s->stack_ids.begin(), s->stack_ids.end()), s->stack_ids.end());
}

}  // namespace

void take_snapshot(Recorder* r, const FailureInfo* failure, DumpSnapshot* out) {
  Reconciler reconciler(copy_live_tables(r));
  out->end_seq = r->ring.end();  // after the live tables: see reconciler.h
  copy_ring(r, out->end_seq, &out->events);
  for (const Event& e : out->events) reconciler.apply(e);
  out->live = reconciler.finish();
  make_history_consistent(&out->events, out->live);
  add_totals_and_stacks(failure, out);
}

}  // namespace gpumemrec
