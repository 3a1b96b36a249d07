// The wrapper table (shim/hooks/wrappers.cpp): one exported wrapper per
// hook of THE list (shim/base/hook_list.h), each family's part in its place.
#include "shim/hooks/wrappers.h"

#include "shim/base/hook_table.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace gpumemrec;

TEST(Wrappers, EveryHookHasItsOwnWrapper) {
  std::set<void*> seen;
  for (int i = 0; i < kHookCount; ++i) {
    void* w = wrapper_of(HookId(i));
    ASSERT_NE(w, nullptr) << hook_name(HookId(i));
    EXPECT_TRUE(seen.insert(w).second) << hook_name(HookId(i)) << " shares a wrapper";
  }
  EXPECT_EQ(wrapper_of(HookId::kCount), nullptr);
}

TEST(Wrappers, EachIdIsTheFunctionOfItsName) {
  EXPECT_EQ(wrapper_of(HookId::cudaMalloc), reinterpret_cast<void*>(&::cudaMalloc));
  EXPECT_EQ(wrapper_of(HookId::cudaFree), reinterpret_cast<void*>(&::cudaFree));
  EXPECT_EQ(wrapper_of(HookId::cudaMalloc3D), reinterpret_cast<void*>(&::cudaMalloc3D));
  EXPECT_EQ(wrapper_of(HookId::cuMemAlloc_v2), reinterpret_cast<void*>(&::cuMemAlloc_v2));
  EXPECT_EQ(wrapper_of(HookId::cuMemUnmap), reinterpret_cast<void*>(&::cuMemUnmap));
  EXPECT_EQ(wrapper_of(HookId::cuGetProcAddress_v2), reinterpret_cast<void*>(&::cuGetProcAddress_v2));
}

TEST(Wrappers, FamiliesAreContiguousAndNamesRoundTrip) {
  EXPECT_EQ(kCudartHookCount + kCudaHookCount + kHipHookCount, kHookCount);
  for (int i = 0; i < kHookCount; ++i) {
    const HookId id = HookId(i);
    const Library expect = i < kCudartHookCount ? Library::CUDART
                           : i < kCudartHookCount + kCudaHookCount ? Library::CUDA
                                                                   : Library::HIP;
    EXPECT_EQ(int(hook_info(id).library), int(expect)) << hook_name(id);
    HookId back;
    ASSERT_TRUE(find_hook(hook_name(id), &back)) << hook_name(id);
    EXPECT_EQ(int(back), i);
  }
  HookId unused;
  EXPECT_FALSE(find_hook("cuMemAlloc", &unused));  // the v1 ABI is not hooked
  EXPECT_FALSE(find_hook("cudaMallocHost", &unused));
  EXPECT_FALSE(find_hook(nullptr, &unused));
}
