// ring_floor: what the machine itself charges for the recorder's ring
// writes, without the recorder: each "call" takes a 64-byte slot the way
// shim/record/ring.h does (a load and a compare-and-swap of the slot's first
// word, then the other seven words and a release store of the first) in a
// ring of --events slots (default 65536, GPUMEMREC_RING_EVENTS' default), in
// blocks of 64 consecutive slots.
//
//   ring_floor [--threads T] [--pairs N] [--warmup W] [--events E] [--private] [--nt]
//     shared (default): each block is the next of the whole ring (one
//       fetch_add per 64 slots, as the recorder's seq blocks): a slot's line
//       was last written, a lap ago, by whichever thread held its block
//       then, so with T > 1 most lines come from another core's cache.
//     --private: each thread cycles through its own 1/T of the ring: no line
//       ever moves between cores. The machine's own scaling with T (clock,
//       shared caches, a sibling hyperthread) shows here.
//     --nt: a design not in the recorder, measured for the next step: the
//       slot's busy/seq word in a separate array (eight slots per line), the
//       64-byte record written with non-temporal stores (no read of the
//       line first), then a store fence and the seq's release store.
//   Prints: RESULT mode=ring threads=T private=0|1 nt=0|1 pairs=N
//           cpu_ns_per_pair=<thread CPU time / N, mean over threads; 2 slots per pair>
//
// run_bench.py prints both beside the null-driver rows: the shim's added
// cost per call at T threads against 1 is read against these two ratios.
#include <emmintrin.h>
#include <time.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint64_t kBlock = 64;
constexpr uint64_t kBusy = uint64_t(1) << 63;

struct alignas(64) Slot {
  uint64_t w[8];
};

struct Options {
  int threads = 1;
  uint64_t pairs = 1000000;
  uint64_t warmup = 0;  // 0: one lap of the thread's share of the ring
  uint64_t events = 65536;
  bool private_ring = false;
  bool nt = false;
};

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

struct Ring {
  Slot* slots = nullptr;
  uint64_t* state = nullptr;  // --nt: the busy/seq word of each slot
  uint64_t capacity = 0;
  alignas(128) std::atomic<uint64_t> next{0};  // next block's first seq
};

// One thread's walk: `seq` is the next slot to write, `end` its block's end.
struct Cursor {
  uint64_t seq = 0, end = 0, base = 0, span = 0;  // private: [base, base + span)
  uint64_t lap = 0;
};

inline void take_and_fill(Slot& s, uint64_t seq) {
  uint64_t cur = __atomic_load_n(&s.w[0], __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&s.w[0], &cur, kBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
  }
  for (int i = 1; i < 8; ++i) __atomic_store_n(&s.w[i], seq * 31 + uint64_t(i), __ATOMIC_RELAXED);
  __atomic_store_n(&s.w[0], seq, __ATOMIC_RELEASE);
}

// --nt: the busy mark on the state array, the record streamed past the
// caches, the seq published after a store fence.
inline void take_and_stream(uint64_t& state, Slot& s, uint64_t seq) {
  uint64_t cur = __atomic_load_n(&state, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&state, &cur, kBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
  }
  auto* w = reinterpret_cast<long long*>(s.w);
  for (int i = 0; i < 8; ++i) _mm_stream_si64(w + i, (long long)(seq * 31 + uint64_t(i)));
  _mm_sfence();
  __atomic_store_n(&state, seq, __ATOMIC_RELEASE);
}

__attribute__((noinline)) void write_slots(Ring& r, Cursor& c, bool priv, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (c.seq == c.end) {
      if (priv) {
        c.seq = c.base + (c.lap * kBlock) % c.span;
        ++c.lap;
      } else {
        c.seq = r.next.fetch_add(kBlock, std::memory_order_relaxed);
      }
      c.end = c.seq + kBlock;
    }
    const uint64_t seq = c.seq++;
    if (r.state) take_and_stream(r.state[seq % r.capacity], r.slots[seq % r.capacity], seq);
    else take_and_fill(r.slots[seq % r.capacity], seq);
  }
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](uint64_t* out) {
      if (i + 1 >= argc) return false;
      *out = std::strtoull(argv[++i], nullptr, 10);
      return true;
    };
    uint64_t t = 0;
    if (a == "--threads" && value(&t)) o->threads = int(t);
    else if (a == "--pairs" && value(&o->pairs)) continue;
    else if (a == "--warmup" && value(&o->warmup)) continue;
    else if (a == "--events" && value(&o->events)) continue;
    else if (a == "--private") o->private_ring = true;
    else if (a == "--nt") o->nt = true;
    else return false;
  }
  return o->threads > 0 && o->events >= kBlock * uint64_t(o->threads) && o->pairs > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: ring_floor [--threads T] [--pairs N] [--warmup W] [--events E] [--private] [--nt]\n");
    return 2;
  }
  Ring r;
  r.capacity = o.events / kBlock * kBlock;
  r.slots = static_cast<Slot*>(std::aligned_alloc(64, r.capacity * sizeof(Slot)));
  if (!r.slots) return 1;
  std::memset(r.slots, 0, r.capacity * sizeof(Slot));
  if (o.nt) {
    r.state = static_cast<uint64_t*>(std::aligned_alloc(64, r.capacity * sizeof(uint64_t)));
    if (!r.state) return 1;
    std::memset(r.state, 0, r.capacity * sizeof(uint64_t));
  }
  const uint64_t share = r.capacity / uint64_t(o.threads) / kBlock * kBlock;
  const uint64_t warm = o.warmup ? o.warmup : share;
  std::vector<uint64_t> cpu(size_t(o.threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> th;
  for (int k = 0; k < o.threads; ++k)
    th.emplace_back([&, k] {
      Cursor c;
      c.base = share * uint64_t(k);
      c.span = share;
      write_slots(r, c, o.private_ring, warm);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const uint64_t t0 = thread_cpu_ns();
      write_slots(r, c, o.private_ring, 2 * o.pairs);
      cpu[size_t(k)] = thread_cpu_ns() - t0;
    });
  while (ready.load() < o.threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& t : th) t.join();
  uint64_t sum = 0;
  for (uint64_t c : cpu) sum += c;
  std::printf("RESULT mode=ring threads=%d private=%d nt=%d pairs=%" PRIu64 " cpu_ns_per_pair=%.1f\n", o.threads,
              o.private_ring ? 1 : 0, o.nt ? 1 : 0, o.pairs, double(sum) / double(o.threads) / double(o.pairs));
  std::free(r.slots);
  std::free(r.state);
  return 0;
}
