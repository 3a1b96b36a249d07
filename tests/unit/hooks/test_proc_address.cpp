// Entry points handed out by cuGetProcAddress and hipGetProcAddress
// (shim/hooks/proc_address.cpp): our wrapper for exactly the ABIs we wrap,
// the library's own address for everything else.
#include "shim/hooks/proc_address.h"

#include "shim/base/hook_table.h"
#include "shim/hooks/wrappers.h"
#include "tests/unit/hooks/stub.h"

#include <cuda.h>
#include <gtest/gtest.h>

#undef cuGetProcAddress

using namespace gpumemrec;

namespace {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

class ProcAddress : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(stub::handle(), nullptr) << dlerror();
    ASSERT_NE(recorder(), nullptr);
    get_proc = reinterpret_cast<GetProc>(dlsym(stub::handle(), "cuGetProcAddress_v2"));
    ASSERT_EQ(reinterpret_cast<void*>(get_proc), wrapper_of(HookId::cuGetProcAddress_v2));
    set_mode = stub::own<void (*)(int)>("stub_set_proc_mode");
    internal = stub::own<void* (*)()>("stub_internal_alloc")();
    exported = stub::own<void*>("cuMemAlloc_v2");
    set_mode(0);
  }
  void TearDown() override { set_mode(0); }

  void* ask(const char* symbol, int version, uint64_t flags = 0, CUresult* rc_out = nullptr) {
    void* pfn = reinterpret_cast<void*>(0x1);
    CUdriverProcAddressQueryResult status;
    const CUresult rc = get_proc(symbol, &pfn, version, flags, &status);
    if (rc_out) *rc_out = rc;
    return pfn;
  }

  GetProc get_proc = nullptr;
  void (*set_mode)(int) = nullptr;
  void* internal = nullptr;
  void* exported = nullptr;
};

// A function of the test program itself: inside "our" module (the shim's
// objects are linked into this program), so never adopted as a real one.
void not_a_driver_function() {}

}  // namespace

TEST_F(ProcAddress, TheExportedFunctionBecomesOurWrapper) {
  EXPECT_EQ(ask("cuMemAlloc", 12000), wrapper_of(HookId::cuMemAlloc_v2));
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), exported);
  // Whatever version and flags were asked: the address is what decides.
  EXPECT_EQ(ask("cuMemAlloc", 3020, 2), wrapper_of(HookId::cuMemAlloc_v2));
  EXPECT_EQ(ask("cuMemFree", 12000), wrapper_of(HookId::cuMemFree_v2));
}

TEST_F(ProcAddress, AnInternalEntryIsWrappedOnlyForAKnownAbi) {
  set_mode(1);
  // Newer than any ABI we know (a future _v3 must not get a _v2 wrapper),
  // or older than the _v2 ABI: the driver's address, untouched.
  EXPECT_EQ(ask("cuMemAlloc", 13100), internal);
  EXPECT_EQ(ask("cuMemAlloc", 3000), internal);
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), nullptr);  // nothing adopted
  // A known ABI: wrapped, and the internal entry is the real one from now on.
  EXPECT_EQ(ask("cuMemAlloc", 12000), wrapper_of(HookId::cuMemAlloc_v2));
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), internal);
  // Then the address decides, whatever the version: it is the real one.
  EXPECT_EQ(ask("cuMemAlloc", 13100), wrapper_of(HookId::cuMemAlloc_v2));
}

TEST_F(ProcAddress, UnknownSymbolPassesThroughWithTheDriversAnswer) {
  CUresult rc = CUDA_SUCCESS;
  EXPECT_EQ(ask("cuMemsetD8", 12000, 0, &rc), nullptr);
  EXPECT_EQ(rc, CUDA_ERROR_NOT_FOUND);
}

TEST_F(ProcAddress, PerThreadFlagChoosesThePtszAbi) {
  // Two internal entries (any addresses outside the shim will do).
  void* legacy = stub::own<void*>("stub_calls");
  EXPECT_EQ(swap_driver_proc("cuMemAllocAsync", internal, 12000, 2), wrapper_of(HookId::cuMemAllocAsync_ptsz));
  EXPECT_EQ(swap_driver_proc("cuMemAllocAsync", legacy, 12000, 0), wrapper_of(HookId::cuMemAllocAsync));
  EXPECT_EQ(real_function(HookId::cuMemAllocAsync_ptsz), internal);
  EXPECT_EQ(real_function(HookId::cuMemAllocAsync), legacy);
  // Before CUDA 11.2 there was no stream-ordered allocator to wrap.
  EXPECT_EQ(swap_driver_proc("cuMemFreeAsync", internal, 11010, 0), internal);
}

TEST_F(ProcAddress, NamesArePrefixesOnlyUpToASuffix) {
  // cuMemAllocPitch is not a variant of cuMemAlloc: the exported cuMemAlloc_v2
  // handed out for it is not answered with the cuMemAlloc_v2 wrapper.
  ASSERT_EQ(ask("cuMemAlloc", 12000), wrapper_of(HookId::cuMemAlloc_v2));
  ASSERT_EQ(real_function(HookId::cuMemAlloc_v2), exported);
  EXPECT_NE(swap_driver_proc("cuMemAllocPitch", exported, 12000, 0), wrapper_of(HookId::cuMemAlloc_v2));
  // cuMemFree_v2 is a variant of cuMemFree: once it is the known real one,
  // the exported address asked as "cuMemFree" gets its wrapper.
  void* exported_free = stub::own<void*>("cuMemFree_v2");
  ASSERT_EQ(ask("cuMemFree", 12000), wrapper_of(HookId::cuMemFree_v2));
  ASSERT_EQ(real_function(HookId::cuMemFree_v2), exported_free);
  EXPECT_EQ(swap_driver_proc("cuMemFree", exported_free, 12000, 0), wrapper_of(HookId::cuMemFree_v2));
}

TEST_F(ProcAddress, AddressInsideTheShimIsNeverAdopted) {
  void* self = reinterpret_cast<void*>(&not_a_driver_function);
  EXPECT_EQ(swap_driver_proc("cuMemCreate", self, 12000, 0), self);
  EXPECT_EQ(real_function(HookId::cuMemCreate), nullptr);
  EXPECT_EQ(swap_hip_proc("hipMemCreate", self), self);
}

TEST_F(ProcAddress, RejectsWhatIsNotItsFamily) {
  EXPECT_EQ(swap_driver_proc(nullptr, internal, 12000, 0), internal);
  EXPECT_EQ(swap_driver_proc("cuMemAlloc", nullptr, 12000, 0), nullptr);
  EXPECT_EQ(swap_driver_proc("hipMalloc", internal, 12000, 0), internal);
  EXPECT_EQ(swap_hip_proc("cuMemAlloc_v2", internal), internal);
  EXPECT_EQ(swap_hip_proc("hipMemcpy", internal), internal);  // not hooked
  EXPECT_EQ(swap_hip_proc(nullptr, internal), internal);
}

TEST_F(ProcAddress, HipEntryBecomesOurWrapperOnlyIfItIsTheRealOne) {
  void* first = internal;
  EXPECT_EQ(swap_hip_proc("hipMalloc", first), wrapper_of(HookId::hipMalloc));
  EXPECT_EQ(real_function(HookId::hipMalloc), first);
  // Another address for the same name once the real one is known: handed
  // back untouched (our wrapper would call the first one).
  EXPECT_EQ(swap_hip_proc("hipMalloc", exported), exported);
}
