// Self-test of the fake libamdhip64.so.6. Run with FAKEGPU_CAPACITY=67108864
// FAKEGPU_DEVICES=2.
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <cstring>

#include "selftest_check.h"

typedef enum hipDriverProcAddressQueryResult {
  HIP_GET_PROC_ADDRESS_SUCCESS = 0,
  HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} hipDriverProcAddressQueryResult;
extern "C" hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                        hipDriverProcAddressQueryResult* symbolStatus);
extern "C" unsigned long long fakegpu_hip_live_bytes(int device);

namespace {
constexpr uint64_t kCap = 64ull << 20;
bool in_dev(const void* p, int d) {
  const uint64_t a = reinterpret_cast<uintptr_t>(p);
  const uint64_t base = 0x100000000000ull + (static_cast<uint64_t>(d) << 40);
  return a >= base && a < base + (1ull << 34);  // the used part of the device range
}
}  // namespace

int main() {
  void* lib = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != nullptr);
  if (lib) CHECK(dlsym(lib, "fakegpu_hip_live_bytes") != nullptr);  // ours, not Debian's libamdhip64.so.5

  int n = 0, v = 0;
  CHECK_EQ(hipGetDeviceCount(&n), hipSuccess);
  CHECK_EQ(n, 2);
  CHECK_EQ(hipRuntimeGetVersion(&v), hipSuccess);
  CHECK_EQ(v, 60200000);
  char name[32];
  CHECK_EQ(hipDeviceGetName(name, sizeof name, 1), hipSuccess);
  CHECK(strcmp(name, "Fake GPU 1") == 0);

  void* p = reinterpret_cast<void*>(0x1);
  CHECK_EQ(hipMalloc(&p, 0), hipSuccess);
  CHECK(p == nullptr);
  CHECK_EQ(hipMalloc(nullptr, 16), hipErrorInvalidValue);
  CHECK_EQ(hipGetLastError(), hipErrorInvalidValue);
  CHECK_EQ(hipGetLastError(), hipSuccess);
  void* a = nullptr;
  CHECK_EQ(hipMalloc(&a, 1000), hipSuccess);
  CHECK(in_dev(a, 0));
  CHECK_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0);
  CHECK_EQ(fakegpu_hip_live_bytes(0), 1000);
  p = reinterpret_cast<void*>(0x1);
  CHECK_EQ(hipMalloc(&p, kCap), hipErrorOutOfMemory);
  CHECK(p == nullptr);
  CHECK_EQ(hipPeekAtLastError(), hipErrorOutOfMemory);
  CHECK_EQ(hipGetLastError(), hipErrorOutOfMemory);
  CHECK(strcmp(hipGetErrorName(hipErrorOutOfMemory), "hipErrorOutOfMemory") == 0);
  size_t fr = 0, tot = 0;
  CHECK_EQ(hipMemGetInfo(&fr, &tot), hipSuccess);
  CHECK_EQ(tot, kCap);
  CHECK_EQ(fr, kCap - 1000);
  CHECK_EQ(hipFree(a), hipSuccess);
  CHECK_EQ(hipFree(a), hipErrorInvalidValue);
  CHECK_EQ(hipFree(nullptr), hipSuccess);

  CHECK_EQ(hipExtMallocWithFlags(&a, 512, hipDeviceMallocFinegrained), hipSuccess);
  CHECK_EQ(hipFree(a), hipSuccess);
  CHECK_EQ(hipMallocManaged(&a, 512, hipMemAttachGlobal), hipSuccess);
  CHECK_EQ(hipFree(a), hipSuccess);
  size_t pitch = 0;
  CHECK_EQ(hipMallocPitch(&a, &pitch, 1000, 3), hipSuccess);
  CHECK_EQ(pitch, 1024);
  CHECK_EQ(fakegpu_hip_live_bytes(0), 3072);
  CHECK_EQ(hipFree(a), hipSuccess);
  hipStream_t s = nullptr;
  CHECK_EQ(hipStreamCreate(&s), hipSuccess);
  CHECK_EQ(hipMallocAsync(&a, 512, s), hipSuccess);
  CHECK_EQ(hipFreeAsync(a, s), hipSuccess);
  hipMemPool_t pool = nullptr;
  CHECK_EQ(hipDeviceGetDefaultMemPool(&pool, 1), hipSuccess);
  CHECK_EQ(hipMallocFromPoolAsync(&a, 512, pool, s), hipSuccess);
  CHECK(in_dev(a, 1));
  CHECK_EQ(hipFreeAsync(a, s), hipSuccess);
  CHECK_EQ(hipStreamDestroy(s), hipSuccess);

  void* h = nullptr;
  CHECK_EQ(hipHostMalloc(&h, 4096, 0), hipSuccess);
  CHECK_EQ(fakegpu_hip_live_bytes(0), 0);
  CHECK_EQ(hipHostFree(h), hipSuccess);

  CHECK_EQ(hipSetDevice(1), hipSuccess);
  CHECK_EQ(hipMalloc(&a, 512), hipSuccess);
  CHECK(in_dev(a, 1));
  CHECK_EQ(hipFree(a), hipSuccess);
  CHECK_EQ(hipSetDevice(2), hipErrorInvalidDevice);
  CHECK_EQ(hipSetDevice(0), hipSuccess);

  // VMM.
  hipMemAllocationProp prop{};
  prop.type = hipMemAllocationTypePinned;
  prop.location.type = hipMemLocationTypeDevice;
  prop.location.id = 0;
  size_t gran = 0;
  CHECK_EQ(hipMemGetAllocationGranularity(&gran, &prop, hipMemAllocationGranularityMinimum), hipSuccess);
  CHECK_EQ(gran, 2u << 20);
  hipMemGenericAllocationHandle_t mh = nullptr;
  CHECK_EQ(hipMemCreate(&mh, gran, &prop, 0), hipSuccess);
  CHECK_EQ(fakegpu_hip_live_bytes(0), gran);
  void* va = nullptr;
  CHECK_EQ(hipMemAddressReserve(&va, 4 * gran, 0, nullptr, 0), hipSuccess);
  CHECK_EQ(hipMemMap(va, gran, 0, mh, 0), hipSuccess);
  hipMemAccessDesc acc{};
  acc.location.type = hipMemLocationTypeDevice;
  acc.location.id = 0;
  acc.flags = hipMemAccessFlagsProtReadWrite;
  CHECK_EQ(hipMemSetAccess(va, gran, &acc, 1), hipSuccess);
  CHECK_EQ(hipMemUnmap(va, gran), hipSuccess);
  CHECK_EQ(hipMemRelease(mh), hipSuccess);
  CHECK_EQ(hipMemRelease(mh), hipErrorInvalidValue);
  CHECK_EQ(hipMemAddressFree(va, 4 * gran), hipSuccess);
  CHECK_EQ(hipMemCreate(&mh, kCap + gran, &prop, 0), hipErrorOutOfMemory);

  // hipGetProcAddress hands out the exported addresses.
  for (const char* sym : {"hipMalloc", "hipFree", "hipMemCreate", "hipGetProcAddress", "hipMallocAsync"}) {
    void* fn = nullptr;
    hipDriverProcAddressQueryResult st = HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    CHECK_EQ(hipGetProcAddress(sym, &fn, 60200000, 0, &st), hipSuccess);
    CHECK_EQ(st, HIP_GET_PROC_ADDRESS_SUCCESS);
    CHECK(fn != nullptr && lib != nullptr && fn == dlsym(lib, sym));
  }
  void* fn = reinterpret_cast<void*>(0x1);
  hipDriverProcAddressQueryResult st = HIP_GET_PROC_ADDRESS_SUCCESS;
  CHECK_EQ(hipGetProcAddress("hipNoSuchThing", &fn, 60200000, 0, &st), hipErrorNotFound);
  CHECK_EQ(st, HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(fn == nullptr);
  CHECK_EQ(hipGetProcAddress("hipMalloc", nullptr, 60200000, 0, &st), hipErrorInvalidValue);

  CHECK_EQ(fakegpu_hip_live_bytes(0), 0);
  CHECK_EQ(fakegpu_hip_live_bytes(1), 0);
  return selftest_finish("selftest_hip");
}
