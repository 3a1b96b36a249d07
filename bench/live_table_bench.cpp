// Live-table cost: nanoseconds per insert+remove pair with 1k,
// 100k and 1M allocations live, single thread, stacks off (the table alone,
// no shim around it), and the longest single insert while the table grows
// from empty to 1M (a shard resize under its lock is a stall for every other
// thread that needs the shard). Thread CPU time. Printed figures only; docs/performance-log.md
// keeps the table. Run: build/bench/live_table_bench [repeats]
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "shim/record/live_table.h"

using gpumemrec::LiveEntry;
using gpumemrec::LiveTable;

namespace {

// CPU time of this thread: the machine the figures come from is shared, and
// time spent descheduled is not the table's.
uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Device-like addresses: 512-byte aligned, increasing with gaps, as a
// driver hands them out.
struct Addresses {
  uint64_t next = 0x7f0000000000ull;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  uint64_t random() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  }
  uint64_t take() {
    next += 512 * (1 + (random() & 63));
    return next;
  }
};

LiveEntry entry(uint64_t key) {
  LiveEntry e;
  e.key = key;
  e.size = 4096;
  e.device = 0;
  return e;
}

// Steady state: `live` entries held; each step frees the oldest one and
// allocates a new one (the churn of a caching allocator's misses). The keys
// are kept in a ring walked in order, so the benchmark's own bookkeeping
// stays in cache and the figure is the table's.
// `live` new entries in `t`; their keys.
std::vector<uint64_t> fill(LiveTable& t, Addresses& a, size_t live) {
  std::vector<uint64_t> keys(live);
  for (auto& k : keys) {
    k = a.take();
    t.insert(entry(k));
  }
  return keys;
}

double churn_ns(size_t live, size_t steps) {
  LiveTable t;
  Addresses a;
  std::vector<uint64_t> keys = fill(t, a, live);
  // Warm-up: as many steps as entries, so tombstones (if any) build up.
  size_t warm = std::min<size_t>(live, 2000000);
  uint64_t t0 = 0;
  LiveEntry out;
  for (size_t i = 0; i < warm + steps; ++i) {
    if (i == warm) t0 = now_ns();
    size_t v = i % live;
    t.remove(keys[v], &out);
    keys[v] = a.take();
    t.insert(entry(keys[v]));
  }
  return double(now_ns() - t0) / double(steps);
}

// The same churn while the table is held (an out-of-memory bundle's writer
// has not copied it yet: every update logs a record, removals leave
// tombstones; shim/record/live_table_hold.cpp) against the same rounds not
// held: rounds of 4,000 pairs (8,000 updates, inside one home's log), the
// writer's collect after each round untimed.
double held_churn_ns(size_t live, bool held, int rounds) {
  LiveTable t;
  Addresses a;
  std::vector<uint64_t> keys = fill(t, a, live);
  std::vector<LiveEntry> out;
  constexpr size_t kPairs = 4000;
  uint64_t total = 0;
  LiveEntry gone;
  for (int r = 0; r < rounds; ++r) {
    if (held) t.hold();
    const uint64_t t0 = now_ns();
    for (size_t i = 0; i < kPairs; ++i) {
      const size_t v = (size_t(r) * kPairs + i) % live;
      t.remove(keys[v], &gone);
      keys[v] = a.take();
      t.insert(entry(keys[v]));
    }
    total += now_ns() - t0;
    if (held) {
      out.resize(t.held_bound());
      t.collect_held(out.data(), out.size());
    }
  }
  return double(total) / double(size_t(rounds) * kPairs);
}

// The writer's collect of a held table of `live` entries (one home), as
// freeze_collect runs it, into a destination already touched (the live
// region is populated first): milliseconds of this thread's CPU.
double collect_ms(size_t live) {
  LiveTable t;
  Addresses a;
  fill(t, a, live);
  t.hold();
  std::vector<LiveEntry> out(t.held_bound());
  const uint64_t t0 = now_ns();
  t.collect_held(out.data(), out.size());
  return double(now_ns() - t0) / 1e6;
}

// Growth from empty to `n`: mean insert (timed as a whole), then again with
// each insert timed: the worst one and how many took over 20 us (a shard
// resized under its lock; everything else is well under 1 us).
void growth(size_t n, double* mean_ns, double* worst_ns, size_t* over_20us) {
  {
    LiveTable t;
    Addresses a;
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < n; ++i) t.insert(entry(a.take()));
    *mean_ns = double(now_ns() - t0) / double(n);
  }
  LiveTable t;
  Addresses a;
  uint64_t worst = 0;
  *over_20us = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t s = now_ns();
    t.insert(entry(a.take()));
    uint64_t d = now_ns() - s;
    worst = std::max(worst, d);
    if (d > 20000) ++*over_20us;
  }
  *worst_ns = double(worst);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::max(1, atoi(argv[1])) : 3;
  std::printf("live-table cost, single thread, ns per insert+remove pair (median of %d)\n", repeats);
  for (size_t live : {size_t(1000), size_t(100000), size_t(1000000)}) {
    std::vector<double> r;
    for (int i = 0; i < repeats; ++i) r.push_back(churn_ns(live, 2000000));
    std::sort(r.begin(), r.end());
    std::printf("  live=%-8zu %7.1f ns  (min %.1f, max %.1f)\n", live, r[r.size() / 2], r.front(), r.back());
  }
  std::printf("while held for an out-of-memory bundle, ns per pair, same rounds not held beside (median of %d)\n",
              repeats);
  for (size_t live : {size_t(1000), size_t(100000)}) {
    std::vector<double> held, plain;
    for (int i = 0; i < repeats; ++i) {
      held.push_back(held_churn_ns(live, true, 50));
      plain.push_back(held_churn_ns(live, false, 50));
    }
    std::sort(held.begin(), held.end());
    std::sort(plain.begin(), plain.end());
    std::printf("  live=%-8zu held %7.1f ns  not held %7.1f ns\n", live, held[held.size() / 2], plain[plain.size() / 2]);
  }
  std::printf("the writer's copy of a held table (collect_held), ms (median of %d)\n", repeats);
  for (size_t live : {size_t(100000), size_t(1000000)}) {
    std::vector<double> r;
    for (int i = 0; i < repeats; ++i) r.push_back(collect_ms(live));
    std::sort(r.begin(), r.end());
    std::printf("  live=%-8zu %7.2f ms  (min %.2f, max %.2f)\n", live, r[r.size() / 2], r.front(), r.back());
  }
  double mean = 0, worst = 0;
  size_t slow = 0;
  growth(1000000, &mean, &worst, &slow);
  std::printf("growth 0 -> 1M live: mean insert %.1f ns, worst single insert %.1f us, %zu inserts over 20 us\n",
              mean, worst / 1000.0, slow);
  return 0;
}
