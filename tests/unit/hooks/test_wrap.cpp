// The generic wrapper (shim/hooks/wrap.h), through the CUDA families' real
// wrappers (cuda_driver.cpp, cuda_runtime.cpp) in front of the stub library:
// the program sees exactly what the library returned (code, out-parameter,
// errno), and each allocation is recorded once, by its outermost hooked call.
// Headers of the shim before cuda.h: cuda.h renames cuGetProcAddress.
#include "shim/hooks/wrap.h"
#include "tests/unit/hooks/stub.h"
#include "tests/unit/unit_files.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

using namespace gpumemrec;

namespace {

// Our wrappers, as a program gets them: dlsym on the library's handle.
class Wrap : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(stub::handle(), nullptr) << dlerror();
    Recorder* r = recorder();
    ASSERT_NE(r, nullptr);
    r->cfg.dir = unit_files::make_tmpdir();  // out-of-memory bundles go there
    alloc = reinterpret_cast<decltype(alloc)>(dlsym(stub::handle(), "cuMemAlloc_v2"));
    free_ = reinterpret_cast<decltype(free_)>(dlsym(stub::handle(), "cuMemFree_v2"));
    ASSERT_EQ(reinterpret_cast<void*>(alloc), reinterpret_cast<void*>(&::cuMemAlloc_v2));
    ASSERT_EQ(reinterpret_cast<void*>(free_), reinterpret_cast<void*>(&::cuMemFree_v2));
    stub::behave(0, 0);
  }
  void TearDown() override { stub::behave(0, 0); }

  CUresult (*alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*free_)(CUdeviceptr) = nullptr;
};

std::vector<Event> events_of(const std::vector<Event>& all, HookId id) {
  std::vector<Event> out;
  for (const Event& e : all)
    if (e.api == uint8_t(id)) out.push_back(e);
  return out;
}

}  // namespace

TEST_F(Wrap, SuccessHandsBackTheLibrarysAddressAndRecordsIt) {
  const int calls = stub::calls();
  const uint64_t from = stub::mark();
  CUdeviceptr p = 0;
  ASSERT_EQ(alloc(&p, 4096), CUDA_SUCCESS);
  EXPECT_NE(p, 0u);
  EXPECT_EQ(stub::calls(), calls + 1);
  auto ev = events_of(stub::events_since(from), HookId::cuMemAlloc_v2);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(event_kind(ev[0]), EventKind::kAlloc);
  EXPECT_EQ(ev[0].address, p);
  EXPECT_EQ(ev[0].size, 4096u);
  EXPECT_EQ(ev[0].result, 0);
  LiveEntry live;
  EXPECT_TRUE(recorder()->live.find(p, &live));

  ASSERT_EQ(free_(p), CUDA_SUCCESS);
  auto freed = events_of(stub::events_since(from), HookId::cuMemFree_v2);
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(event_kind(freed[0]), EventKind::kFree);
  EXPECT_EQ(freed[0].size, 4096u);  // from the live entry
  EXPECT_FALSE(recorder()->live.find(p, &live));
}

TEST_F(Wrap, FailureLeavesOutParameterAndErrnoAsTheLibraryLeftThem) {
  const uint64_t from = stub::mark();
  stub::behave(CUDA_ERROR_INVALID_VALUE, 0);  // the stub leaves errno alone
  CUdeviceptr p = 0xdeadbeef;
  errno = 77;
  EXPECT_EQ(alloc(&p, 512), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(errno, 77);
  EXPECT_EQ(p, 0xdeadbeefu);
  auto ev = events_of(stub::events_since(from), HookId::cuMemAlloc_v2);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(event_kind(ev[0]), EventKind::kAllocFailed);
  EXPECT_EQ(ev[0].result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(ev[0].size, 512u);
}

TEST_F(Wrap, OutOfMemoryKeepsTheLibrarysErrnoThoughABundleIsStarted) {
  const uint64_t from = stub::mark();
  stub::behave(CUDA_ERROR_OUT_OF_MEMORY, ENOMEM);
  CUdeviceptr p = 0x1111;
  EXPECT_EQ(alloc(&p, 1ull << 40), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(errno, ENOMEM);  // the freeze and the writer's wake-up set nothing the program sees
  EXPECT_EQ(p, 0x1111u);
  auto ev = events_of(stub::events_since(from), HookId::cuMemAlloc_v2);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(event_kind(ev[0]), EventKind::kOom);
  EXPECT_EQ(ev[0].result, CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_F(Wrap, SuccessKeepsAnErrnoTheLibrarySet) {
  stub::behave(0, 1234);
  CUdeviceptr p = 0;
  errno = 0;
  ASSERT_EQ(alloc(&p, 64), CUDA_SUCCESS);
  EXPECT_EQ(errno, 1234);
  stub::behave(0, 0);
  errno = 55;
  ASSERT_EQ(free_(p), CUDA_SUCCESS);
  EXPECT_EQ(errno, 55);  // untouched by the library: untouched by us
}

TEST_F(Wrap, NullOutParameterIsTheLibrarysErrorNotOurCrash) {
  const uint64_t from = stub::mark();
  EXPECT_EQ(alloc(nullptr, 64), CUDA_ERROR_INVALID_VALUE);
  auto ev = events_of(stub::events_since(from), HookId::cuMemAlloc_v2);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(event_kind(ev[0]), EventKind::kAllocFailed);
  EXPECT_EQ(ev[0].address, 0u);
}

// The shared runtime's cudaMalloc calls the driver through a pointer that is
// our wrapper: the inner call reaches the driver but is not recorded.
TEST_F(Wrap, NestedHookedCallIsRecordedOnceByTheOutermost) {
  auto set_inner = stub::own<void (*)(void*)>("stub_set_inner");
  set_inner(reinterpret_cast<void*>(alloc));
  auto rt_malloc = reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(stub::handle(), "cudaMalloc"));
  ASSERT_EQ(reinterpret_cast<void*>(rt_malloc), reinterpret_cast<void*>(&::cudaMalloc));
  const int calls = stub::calls();
  const uint64_t from = stub::mark();
  void* p = nullptr;
  ASSERT_EQ(rt_malloc(&p, 1 << 20), cudaSuccess);
  EXPECT_EQ(stub::calls(), calls + 2);  // the runtime and the driver both ran
  auto all = stub::events_since(from);
  auto outer = events_of(all, HookId::cudaMalloc);
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(outer[0].address, reinterpret_cast<uint64_t>(p));
  EXPECT_EQ(outer[0].size, uint64_t(1) << 20);
  EXPECT_TRUE(events_of(all, HookId::cuMemAlloc_v2).empty());
  // The guard is per call: the same thread's next direct driver call records.
  CUdeviceptr d = 0;
  ASSERT_EQ(alloc(&d, 256), CUDA_SUCCESS);
  EXPECT_EQ(events_of(stub::events_since(from), HookId::cuMemAlloc_v2).size(), 1u);
  set_inner(nullptr);
}

TEST_F(Wrap, MissingRealFunctionAnswersNotInitializedAndRecordsNothing) {
  const uint64_t from = stub::mark();
  CUdeviceptr p = 0x42;
  // The stub has no cuMemAllocManaged and no CUDA library is loaded.
  EXPECT_EQ(cuMemAllocManaged(&p, 64, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(p, 0x42u);
  EXPECT_TRUE(events_of(stub::events_since(from), HookId::cuMemAllocManaged).empty());
}

TEST_F(Wrap, ThreadsRacingEachRecordTheirOwnCalls) {
  constexpr int kThreads = 8, kPairs = 200;
  const uint64_t live_before = recorder()->live.count();
  const uint64_t from = stub::mark();
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < kPairs; ++i) {
        CUdeviceptr p = 0;
        if (alloc(&p, 4096) != CUDA_SUCCESS || p == 0 || free_(p) != CUDA_SUCCESS) bad.fetch_add(1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  auto all = stub::events_since(from);
  EXPECT_EQ(events_of(all, HookId::cuMemAlloc_v2).size(), size_t(kThreads * kPairs));
  auto frees = events_of(all, HookId::cuMemFree_v2);
  ASSERT_EQ(frees.size(), size_t(kThreads * kPairs));
  for (const Event& e : frees) EXPECT_EQ(e.size, 4096u);  // each free found its own allocation
  EXPECT_EQ(recorder()->live.count(), live_before);
}

// run_alloc's refusal (GPUMEMREC_LIMIT): the library is never asked, the
// program gets the library's out-of-memory result and errno as refuse()
// left them, and the reserved bytes are given back.
namespace {
struct RefusingTraits {
  using Result = int;
  static constexpr Result kNotInitialized = 3;
  static constexpr int kOom = 2;
  static int current_device() { return 5; }
  static Result refuse() {
    errno = 4321;
    return kOom;
  }
};
}  // namespace

TEST_F(Wrap, LimitRefusesWithoutCallingTheLibrary) {
  Recorder* r = recorder();
  const bool had_limit = r->cfg.has_limit;
  r->cfg.has_limit = true;
  r->cfg.limit_bytes[5] = 1000;
  const uint64_t from = stub::mark();
  bool called = false;
  const int rc = run_alloc<RefusingTraits>(
      HookId::cudaMalloc, MemoryType::kDevice, 5, 4096, 0, [&] { called = true; return 0; },
      [] { return Held{0x1000, 4096}; });
  EXPECT_EQ(rc, 2);
  EXPECT_FALSE(called);
  EXPECT_EQ(errno, 4321);
  EXPECT_EQ(device_live_bytes(5), 0u);
  auto ev = events_of(stub::events_since(from), HookId::cudaMalloc);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(event_kind(ev[0]), EventKind::kOom);
  EXPECT_EQ(event_device(ev[0]), 5);
  // Under the limit: the call runs and its bytes stay reserved as held.
  const int ok = run_alloc<RefusingTraits>(
      HookId::cudaMalloc, MemoryType::kDevice, 5, 600, 0, [&] { called = true; return 0; },
      [] { return Held{0x2000, 600}; });
  EXPECT_EQ(ok, 0);
  EXPECT_TRUE(called);
  EXPECT_EQ(device_live_bytes(5), 600u);
  const PendingFree pf = begin_free(0x2000, MemoryType::kDevice);
  end_free(HookId::cudaFree, pf, 0x2000, 5, 0, MemoryType::kDevice, 0, 0);
  EXPECT_EQ(device_live_bytes(5), 0u);
  r->cfg.has_limit = had_limit;
}

// GPUMEMREC_FAIL_AFTER through the real wrappers. The driver keeps no error
// state: it is never asked. The runtime keeps a last error
// (cudaGetLastError): it is asked for an impossible size, so that its state
// is what a real out-of-memory leaves; that inner call is not recorded.
TEST_F(Wrap, FailAfterRefusesLikeTheLibraryWould) {
  Recorder* r = recorder();
  auto set_inner = stub::own<void (*)(void*)>("stub_set_inner");
  auto last_size = stub::own<uint64_t (*)()>("stub_last_size");
  set_inner(stub::own<void* (*)()>("stub_internal_alloc")());  // the runtime calls the driver's own entry
  auto rt_malloc = reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(stub::handle(), "cudaMalloc"));
  ASSERT_EQ(reinterpret_cast<void*>(rt_malloc), reinterpret_cast<void*>(&::cudaMalloc));

  uint64_t from = stub::mark();
  int calls = stub::calls();
  r->cfg.fail_after = r->alloc_calls.load() + 1;  // the next allocation
  CUdeviceptr d = 0x77;
  EXPECT_EQ(alloc(&d, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(d, 0x77u);
  EXPECT_EQ(stub::calls(), calls);  // the driver was not asked
  auto ev = events_of(stub::events_since(from), HookId::cuMemAlloc_v2);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(event_kind(ev[0]), EventKind::kOom);

  from = stub::mark();
  calls = stub::calls();
  r->cfg.fail_after = r->alloc_calls.load() + 1;
  void* p = reinterpret_cast<void*>(0x88);
  EXPECT_EQ(rt_malloc(&p, 4096), cudaErrorMemoryAllocation);
  EXPECT_EQ(p, reinterpret_cast<void*>(0x88));
  EXPECT_EQ(stub::calls(), calls + 2);  // the runtime and its driver, for the impossible size
  EXPECT_EQ(last_size(), uint64_t(1) << 62);
  auto all = stub::events_since(from);
  auto rt = events_of(all, HookId::cudaMalloc);
  ASSERT_EQ(rt.size(), 1u);  // the refusal, not the inner call
  EXPECT_EQ(event_kind(rt[0]), EventKind::kOom);
  EXPECT_EQ(rt[0].size, 4096u);
  r->cfg.fail_after = 0;
  set_inner(nullptr);
}
