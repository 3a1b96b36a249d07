// A destroyed primary context (device_reset.h): every allocation, handle and
// mapping of its device leaves the tables, each with an event of the
// destroying call, at the device's next allocation or any bundle but the
// exit bundle; other devices and later allocations stay. Uses devices no
// other test of this program records on (30-34).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shim/base/clock.h"
#include "shim/record/device_reset.h"
#include "shim/record/recorder.h"

using namespace gpumemrec;

namespace {

constexpr int kReset = 30, kOther = 31;

// The events of `device` and `api` dated `from_ns` or later. The whole ring
// is read: a thread's seqs come from its own block (ring.h), below the
// counter's end().
std::vector<Event> events_of(int device, HookId api, uint64_t from_ns) {
  Recorder* r = recorder();
  std::vector<Event> out;
  const uint64_t end = r->ring.end(), cap = r->cfg.ring_events;
  for (uint64_t s = end > cap ? end - cap : 1; s < end; ++s) {
    Event e;
    if (r->ring.read(s, &e) && event_device(e) == device && e.api == uint8_t(api) && e.time_ns >= from_ns)
      out.push_back(e);
  }
  return out;
}

uint64_t entries_of(LiveTable& t, int device) {
  std::vector<LiveEntry> all;
  t.snapshot(&all);
  uint64_t n = 0;
  for (const LiveEntry& e : all) n += e.device == device;
  return n;
}

// As the allocation wrapper does (hooks/wrap.h, run_alloc): a destroyed
// context's release first, then the record.
void alloc(HookId api, int device, uint64_t address, uint64_t size, MemoryType type = MemoryType::kDevice) {
  apply_device_resets_before_alloc(device);
  record_alloc(api, device, address, size, 0, type, monotonic_ns(), 0);
}

// A thread's churn until `stop`: 4 KiB allocations at `slots` addresses
// from `base` on `dev`, each freed `slots` allocations later.
void churn(const std::atomic<bool>& stop, int dev, uint64_t base, uint64_t slots) {
  for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
    const uint64_t a = base + ((i % slots) << 12);
    if (i >= slots) {
      PendingFree p = begin_free(a, MemoryType::kDevice);
      end_free(HookId::cudaFree, p, a, dev, 0, MemoryType::kDevice, monotonic_ns(), 0);
    }
    alloc(HookId::cudaMalloc, dev, a, 4096);
  }
}

}  // namespace

// The reset comes from one thread; the device's next allocation, on
// another, releases the context's entries with the reset's api and stack,
// as events of its own thread dated when released (each thread's seqs
// stay in time order).
TEST(DeviceReset, TheNextAllocationOnTheDeviceReleasesEverythingTheContextHeld) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  alloc(HookId::cudaMalloc, kReset, 0x7e1000000000ull, 1 << 20);
  alloc(HookId::cudaMallocAsync, kReset, 0x7e1000200000ull, 2 << 20);  // pooled
  alloc(HookId::cudaMallocManaged, kReset, 0x7e1000600000ull, 4 << 20, MemoryType::kManaged);
  alloc(HookId::cuMemCreate, kReset, 0x5e0000001000ull, 2 << 20, MemoryType::kPhysical);
  record_mapping(HookId::cuMemMap, true, kReset, 0x7e2000000000ull, 2 << 20, monotonic_ns(), 0);
  alloc(HookId::cudaMalloc, kOther, 0x7e3000000000ull, 8 << 20);
  ASSERT_EQ(device_live_bytes(kReset), uint64_t(9) << 20);
  ASSERT_EQ(device_pooled_bytes(kReset), uint64_t(2) << 20);

  const uint64_t t0 = monotonic_ns();
  std::thread([&] { record_device_reset(HookId::cudaDeviceReset, kReset, t0); }).join();
  EXPECT_EQ(entries_of(r->live, kReset), 3u);  // pending: nothing released yet
  const uint64_t t_use = monotonic_ns();
  alloc(HookId::cudaMalloc, kReset, 0x7e1000a00000ull, 1 << 20);  // the device used again

  EXPECT_EQ(entries_of(r->live, kReset), 1u);  // the new one
  EXPECT_EQ(entries_of(r->handles, kReset), 0u);
  EXPECT_EQ(entries_of(r->mappings, kReset), 0u);
  EXPECT_EQ(device_live_bytes(kReset), uint64_t(1) << 20);
  EXPECT_EQ(device_pooled_bytes(kReset), 0u);
  EXPECT_EQ(entries_of(r->live, kOther), 1u);
  EXPECT_EQ(device_live_bytes(kOther), uint64_t(8) << 20);

  const std::vector<Event> ev = events_of(kReset, HookId::cudaDeviceReset, t0);
  ASSERT_EQ(ev.size(), 5u);
  uint64_t freed = 0, unmaps = 0;
  for (const Event& e : ev) {
    EXPECT_EQ(e.tid, current_tid() & 0xFFFFFF);
    EXPECT_GE(e.time_ns, t_use);
    EXPECT_EQ(e.result, 0);
    if (event_kind(e) == EventKind::kUnmap) {
      ++unmaps;
      EXPECT_EQ(event_memory_type(e), MemoryType::kMapping);
    } else {
      EXPECT_EQ(event_kind(e), EventKind::kFree);
      freed += e.size;
    }
  }
  EXPECT_EQ(unmaps, 1u);
  EXPECT_EQ(freed, uint64_t(9) << 20);
  for (int d : {kReset, kOther}) {
    record_device_reset(HookId::cudaDeviceReset, d, monotonic_ns());
    apply_device_resets(d);
    EXPECT_EQ(device_live_bytes(d), 0u);
  }
}

// Until the device is used again or a bundle other than the exit bundle is
// taken, what the context held stays listed: an exit bundle is "what the
// program never freed", and runtimes destroy their contexts while the
// process exits, before that bundle is written.
TEST(DeviceReset, StaysListedUntilTheDeviceIsUsedAgain) {
  Recorder* r = recorder();
  alloc(HookId::cudaMalloc, kReset, 0x7e4000000000ull, 1 << 20);
  record_device_reset(HookId::cuDevicePrimaryCtxRelease_v2, kReset, monotonic_ns());
  alloc(HookId::cudaMalloc, kOther, 0x7e4000100000ull, 1 << 20);  // another device: not this one's cue
  LiveEntry e;
  EXPECT_TRUE(r->live.find(0x7e4000000000ull, &e));
  EXPECT_EQ(g_resets_pending.count.load(), 1u);
  EXPECT_EQ(apply_device_resets(-1), 1u);  // what a bundle does first
  EXPECT_FALSE(r->live.find(0x7e4000000000ull, &e));
  EXPECT_EQ(g_resets_pending.count.load(), 0u);
  EXPECT_EQ(apply_device_resets(-1), 0u);
  record_device_reset(HookId::cudaDeviceReset, kOther, monotonic_ns());
  apply_device_resets(kOther);
}

// An allocation made after the reset began (another thread allocating on
// the device meanwhile: the program's race) is not the context's: kept.
TEST(DeviceReset, KeepsWhatWasAllocatedAfterTheCallBegan) {
  Recorder* r = recorder();
  alloc(HookId::cudaMalloc, kReset, 0x7e4000000000ull, 1 << 20);
  const uint64_t t0 = monotonic_ns();
  record_alloc(HookId::cudaMalloc, kReset, 0x7e4000100000ull, 1 << 20, 0, MemoryType::kDevice, t0, 0);
  record_device_reset(HookId::cuDevicePrimaryCtxReset_v2, kReset, t0);
  EXPECT_EQ(apply_device_resets(kReset), 1u);
  LiveEntry e;
  EXPECT_FALSE(r->live.find(0x7e4000000000ull, &e));
  EXPECT_TRUE(r->live.find(0x7e4000100000ull, &e));
  EXPECT_EQ(device_live_bytes(kReset), uint64_t(1) << 20);
  record_device_reset(HookId::cudaDeviceReset, kReset, monotonic_ns());
  apply_device_resets(kReset);
  EXPECT_EQ(device_live_bytes(kReset), 0u);
}

// Two destructions before the device is used: the first one's entries go
// with the first call, at the second.
TEST(DeviceReset, ASecondResetReleasesTheFirstOnesEntriesUnderTheFirstCall) {
  alloc(HookId::cudaMalloc, kReset, 0x7e7000000000ull, 1 << 20);
  const uint64_t t1 = monotonic_ns();
  record_device_reset(HookId::cuDevicePrimaryCtxRelease_v2, kReset, t1);
  record_device_reset(HookId::cudaDeviceReset, kReset, monotonic_ns());
  const std::vector<Event> ev = events_of(kReset, HookId::cuDevicePrimaryCtxRelease_v2, t1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].address, 0x7e7000000000ull);
  EXPECT_EQ(apply_device_resets(kReset), 0u);  // nothing older than the second
}

// Threads allocating and freeing on other devices while one is reset and
// released: the release takes only its device's entries, theirs stay exact.
TEST(DeviceReset, OtherDevicesKeepRecordingMeanwhile) {
  Recorder* r = recorder();
  for (uint64_t i = 0; i < 2000; ++i) alloc(HookId::cudaMalloc, kReset, 0x7e5000000000ull + (i << 12), 4096);
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int k = 0; k < 3; ++k)
    th.emplace_back([&, k] { churn(stop, 32 + (k % 2), 0x7e6000000000ull + (uint64_t(k) << 32), 64); });
  record_device_reset(HookId::cudaDeviceReset, kReset, monotonic_ns());
  const uint64_t n = apply_device_resets(kReset);
  stop.store(true);
  for (auto& t : th) t.join();
  EXPECT_EQ(n, 2000u);
  EXPECT_EQ(entries_of(r->live, kReset), 0u);
  EXPECT_EQ(device_live_bytes(kReset), 0u);
  for (int dev : {32, 33}) {
    EXPECT_EQ(device_live_bytes(dev), entries_of(r->live, dev) * 4096) << dev;
    record_device_reset(HookId::cudaDeviceReset, dev, monotonic_ns());
    apply_device_resets(dev);
  }
}

// Hostile: threads reset the device while others allocate and free on it
// (the program's race, but ours must stay whole). Whatever each reset took,
// the device's count ends equal to what its table lists, and a free of an
// entry a reset took is a free of something unknown, not a double count.
TEST(DeviceReset, ResetsRacingAllocationsKeepTheCountEqualToTheTable) {
  Recorder* r = recorder();
  constexpr int kDev = 34;
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int k = 0; k < 2; ++k)
    th.emplace_back([&, k] { churn(stop, kDev, 0x7e8000000000ull + (uint64_t(k) << 32), 32); });
  for (int k = 0; k < 2; ++k)
    th.emplace_back([&, k] {
      for (int i = 0; i < 200; ++i) {
        record_device_reset(k ? HookId::cudaDeviceReset : HookId::cuDevicePrimaryCtxReset_v2, kDev, monotonic_ns());
        if (i % 3 == 0) apply_device_resets(kDev);
        std::this_thread::yield();
      }
    });
  for (size_t i = 2; i < th.size(); ++i) th[i].join();
  stop.store(true);
  th[0].join();
  th[1].join();
  apply_device_resets(kDev);
  EXPECT_EQ(device_live_bytes(kDev), entries_of(r->live, kDev) * 4096);
  record_device_reset(HookId::cudaDeviceReset, kDev, monotonic_ns());
  apply_device_resets(kDev);
  EXPECT_EQ(entries_of(r->live, kDev), 0u);
  EXPECT_EQ(device_live_bytes(kDev), 0u);
  EXPECT_EQ(g_resets_pending.count.load(), 0u);
}

// A created context destroyed (cuCtxDestroy): the driver is asked about each
// older entry of the device, and only those it no longer knows go, with the
// destroy's api; VMM handles and mappings, HIP's memory and what it still
// knows (another context's, a pool's) stay.
namespace {
std::atomic<uint64_t> g_gone_lo{0}, g_gone_hi{0};  // [lo, hi): what the "driver" freed
bool held_unless_gone(uint64_t a) { return !(a >= g_gone_lo.load() && a < g_gone_hi.load()); }
}  // namespace

TEST(DeviceReset, ACreatedContextTakesOnlyWhatTheDriverNoLongerKnows) {
  Recorder* r = recorder();
  g_gone_lo = 0x7e8000000000ull;
  g_gone_hi = 0x7e8000400000ull;
  alloc(HookId::cuMemAlloc_v2, kReset, 0x7e8000000000ull, 1 << 20);    // the context's
  alloc(HookId::cuMemAlloc_v2, kReset, 0x7e8000200000ull, 1 << 20);    // the context's
  alloc(HookId::cuMemAlloc_v2, kReset, 0x7e8000800000ull, 4 << 20);    // the primary context's
  alloc(HookId::cudaMallocAsync, kReset, 0x7e8001000000ull, 2 << 20);  // a pool's, still known
  alloc(HookId::hipMalloc, kReset, 0x7e8000300000ull, 1 << 20);        // HIP's: never asked
  alloc(HookId::cuMemCreate, kReset, 0x7e8000100000ull, 2 << 20, MemoryType::kPhysical);  // a handle
  const uint64_t t0 = monotonic_ns();
  record_context_destroy(HookId::cuCtxDestroy_v2, kReset, t0, held_unless_gone);
  EXPECT_EQ(g_resets_pending.count.load(), 1u);
  EXPECT_EQ(apply_device_resets(kReset), 2u);
  LiveEntry e;
  EXPECT_FALSE(r->live.find(0x7e8000000000ull, &e));
  EXPECT_FALSE(r->live.find(0x7e8000200000ull, &e));
  EXPECT_TRUE(r->live.find(0x7e8000800000ull, &e));
  EXPECT_TRUE(r->live.find(0x7e8001000000ull, &e));
  EXPECT_TRUE(r->live.find(0x7e8000300000ull, &e));
  EXPECT_TRUE(r->handles.find(0x7e8000100000ull, &e));
  const std::vector<Event> ev = events_of(kReset, HookId::cuCtxDestroy_v2, t0);
  ASSERT_EQ(ev.size(), 2u);
  for (const Event& x : ev) EXPECT_EQ(event_kind(x), EventKind::kFree);
  EXPECT_EQ(device_live_bytes(kReset), uint64_t(4 + 2 + 1 + 2) << 20);
  // Leave the device empty for the next test.
  record_device_reset(HookId::cudaDeviceReset, kReset, monotonic_ns());
  apply_device_resets(kReset);
  EXPECT_EQ(device_live_bytes(kReset), 0u);
}
