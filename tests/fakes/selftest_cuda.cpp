// Self-test of the fake libcuda.so.1. Run with FAKEGPU_CAPACITY=67108864
// FAKEGPU_DEVICES=2. `selftest_cuda interposed` additionally expects
// libfake_interposer.so in LD_PRELOAD; `selftest_cuda reserve` runs only the
// address-reservation check, with FAKEGPU_CAPACITY=137438953472.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "selftest_check.h"

extern "C" int fakegpu_write_ledger(const char* path);
extern "C" unsigned long long fakegpu_cuda_live_bytes(int device);

namespace {

constexpr uint64_t kCap = 64ull << 20;
constexpr uint64_t kDev0 = 0x100000000000ull;

bool in_dev(CUdeviceptr p, int d) {
  const uint64_t base = kDev0 + (static_cast<uint64_t>(d) << 40);
  return p >= base && p < base + (1ull << 34);  // the used part of the device range
}

void* libcuda() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(h != nullptr);
  return h;
}

void test_basics() {
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  int v = 0, n = 0;
  CHECK_EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
  CHECK_EQ(v, 13000);
  CHECK_EQ(cuDriverGetVersion(nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  CHECK_EQ(n, 2);
  CUdevice d = -1;
  CHECK_EQ(cuDeviceGet(&d, 1), CUDA_SUCCESS);
  CHECK_EQ(d, 1);
  CHECK_EQ(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
  char name[32];
  CHECK_EQ(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
  CHECK(strcmp(name, "Fake GPU 1") == 0);
  CHECK_EQ(cuDeviceGetName(nullptr, 10, 0), CUDA_ERROR_INVALID_VALUE);
  size_t total = 0;
  CHECK_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  CHECK_EQ(total, kCap);
  const char* s = nullptr;
  CHECK_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  CHECK(s && strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
  CHECK_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  CHECK(s && strcmp(s, "out of memory") == 0);
  CHECK_EQ(cuGetErrorName(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
  CHECK(s == nullptr);
  const void* table = &s;
  CUuuid id{};
  CHECK_EQ(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
  CHECK(table == nullptr);
  CUstream st = nullptr;
  CHECK_EQ(cuStreamCreate(&st, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamDestroy(st), CUDA_SUCCESS);
  CHECK_EQ(cuStreamDestroy(st), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

// The head of device 0's range is reserved at load time: the host cannot map there.
void test_head_is_reserved() {
#if defined(__SANITIZE_THREAD__)
  return;  // the fake does not reserve address space under TSan
#endif
  void* want = reinterpret_cast<void*>(static_cast<uintptr_t>(kDev0 + (4 << 20)));
  void* r = mmap(want, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  CHECK(r != want);
  if (r != MAP_FAILED) munmap(r, 4096);
}

// `selftest_cuda reserve` (FAKEGPU_CAPACITY=128 GiB): a host mapping placed
// beyond the pre-reserved 64 GiB, where the next device addresses would go;
// the fake must skip that 256 MiB granule instead of handing out aliasing
// pointers.
int run_reserve_mode() {
#if defined(__SANITIZE_THREAD__)
  return selftest_finish("selftest_cuda(reserve, skipped under TSan)");
#endif
  const uint64_t head = 64ull << 30;
  void* want = reinterpret_cast<void*>(static_cast<uintptr_t>(kDev0 + head + (4 << 20)));
  void* r = mmap(want, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  CHECK(r == want);
  if (r != want) return selftest_finish("selftest_cuda(reserve)");
  CUdeviceptr big = 0, p = 0;
  CHECK_EQ(cuMemAlloc(&big, head), CUDA_SUCCESS);
  CHECK_EQ(big, kDev0);
  CHECK_EQ(cuMemAlloc(&p, 8 << 20), CUDA_SUCCESS);
  CHECK_EQ(p, kDev0 + head + (256 << 20));  // the granule holding the host page is skipped
  CHECK_EQ(cuMemFree(p), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree(big), CUDA_SUCCESS);
  munmap(want, 4096);
  return selftest_finish("selftest_cuda(reserve)");
}

void test_alloc_rules() {
  CUdeviceptr a = 1, b = 0, c = 0;
  CHECK_EQ(cuMemAlloc(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemAlloc(&a, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(a, 0);
  CHECK_EQ(cuMemAlloc(&a, 1000), CUDA_SUCCESS);
  CHECK_EQ(cuMemAlloc(&b, 1), CUDA_SUCCESS);
  CHECK(in_dev(a, 0) && in_dev(b, 0));
  CHECK_EQ(a % 256, 0);
  CHECK_EQ(b % 256, 0);
  CHECK(b >= a + 1000 || a >= b + 1);
  CHECK_EQ(fakegpu_cuda_live_bytes(0), 1001);
  size_t fr = 0, tot = 0;
  CHECK_EQ(cuMemGetInfo(&fr, &tot), CUDA_SUCCESS);
  CHECK_EQ(tot, kCap);
  CHECK_EQ(fr, kCap - 1001);
  CHECK_EQ(cuMemGetInfo(nullptr, &tot), CUDA_ERROR_INVALID_VALUE);
  // Capacity is exact: used + size > capacity -> OOM, pointer zeroed.
  c = 7;
  CHECK_EQ(cuMemAlloc(&c, kCap - 1000), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_EQ(c, 0);
  CHECK_EQ(cuMemAlloc(&c, kCap - 1001), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree(c), CUDA_SUCCESS);
  // First fit: a freed range is reused.
  CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);
  CUdeviceptr a2 = 0;
  CHECK_EQ(cuMemAlloc(&a2, 512), CUDA_SUCCESS);
  CHECK_EQ(a2, a);
  // Frees.
  CHECK_EQ(cuMemFree(0), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree(a2), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree(a2), CUDA_ERROR_INVALID_VALUE);        // double free
  CHECK_EQ(cuMemFree(b + 256), CUDA_ERROR_INVALID_VALUE);   // not a start address
  CHECK_EQ(cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);    // unknown
  CHECK_EQ(cuMemFree(b), CUDA_SUCCESS);
  CHECK_EQ(fakegpu_cuda_live_bytes(0), 0);

  // Pitch.
  size_t pitch = 0;
  CHECK_EQ(cuMemAllocPitch(&a, &pitch, 1000, 10, 4), CUDA_SUCCESS);
  CHECK_EQ(pitch, 1024);
  CHECK_EQ(fakegpu_cuda_live_bytes(0), 10240);
  CHECK_EQ(cuMemAllocPitch(&b, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemAllocPitch(&b, nullptr, 1000, 10, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);

  // Managed.
  CHECK_EQ(cuMemAllocManaged(&a, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  CHECK(in_dev(a, 0));
  CHECK_EQ(cuMemAllocManaged(&b, 4096, 0), CUDA_ERROR_INVALID_VALUE);
  const char* path = "selftest_cuda_ledger.json";
  CHECK_EQ(fakegpu_write_ledger(path), 0);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  char want[128];
  snprintf(want, sizeof want, "{\"address\":%llu,\"size\":4096,\"device\":0,\"kind\":\"managed\"}",
           static_cast<unsigned long long>(a));
  CHECK(text.find(want) != std::string::npos);
  CHECK(text.find("\"live_bytes_by_device\":{\"0\":4096,\"1\":0}") != std::string::npos);
  remove(path);
  CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);

  // Legacy 32-bit ABI.
  void* h = libcuda();
  using V1Alloc = CUresult (*)(unsigned int*, unsigned int);
  using V1Free = CUresult (*)(unsigned int);
  auto v1alloc = reinterpret_cast<V1Alloc>(dlsym(h, "cuMemAlloc"));
  auto v1free = reinterpret_cast<V1Free>(dlsym(h, "cuMemFree"));
  CHECK(v1alloc != nullptr && v1free != nullptr);
  if (v1alloc && v1free) {
    unsigned int p32 = 0, q32 = 0;
    CHECK_EQ(v1alloc(&p32, 4096), CUDA_SUCCESS);
    CHECK_EQ(v1alloc(&q32, 4096), CUDA_SUCCESS);
    CHECK(p32 != 0 && q32 != 0 && p32 != q32);
    CHECK_EQ(p32 % 256, 0);
    CHECK_EQ(fakegpu_cuda_live_bytes(0), 8192);
    CHECK_EQ(v1free(p32), CUDA_SUCCESS);
    CHECK_EQ(v1free(q32), CUDA_SUCCESS);
    CHECK_EQ(v1free(q32), CUDA_ERROR_INVALID_VALUE);
  }
  CHECK_EQ(fakegpu_cuda_live_bytes(0), 0);
}

void test_devices_and_pools() {
  CUcontext ctx0 = nullptr, ctx1 = nullptr, cur = nullptr;
  CHECK_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  CHECK(cur == nullptr);
  CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx0, 0), CUDA_SUCCESS);
  CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
  CHECK(ctx0 != ctx1);
  CHECK_EQ(cuCtxSetCurrent(ctx1), CUDA_SUCCESS);
  CHECK_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  CHECK(cur == ctx1);
  CUdevice d = -1;
  CHECK_EQ(cuCtxGetDevice(&d), CUDA_SUCCESS);
  CHECK_EQ(d, 1);
  CUdeviceptr p = 0;
  CHECK_EQ(cuMemAlloc(&p, 1 << 20), CUDA_SUCCESS);
  CHECK(in_dev(p, 1));
  CHECK_EQ(fakegpu_cuda_live_bytes(1), 1 << 20);
  CHECK_EQ(fakegpu_cuda_live_bytes(0), 0);
  size_t fr = 0, tot = 0;
  CHECK_EQ(cuMemGetInfo(&fr, &tot), CUDA_SUCCESS);
  CHECK_EQ(fr, kCap - (1 << 20));
  // Capacity is per device: device 1 is full, device 0 is not.
  CUdeviceptr q = 0;
  CHECK_EQ(cuMemAlloc(&q, kCap - (1 << 20) + 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_EQ(cuCtxSetCurrent(ctx0), CUDA_SUCCESS);
  CHECK_EQ(cuMemAlloc(&q, kCap - (1 << 20) + 1), CUDA_SUCCESS);
  CHECK(in_dev(q, 0));
  CHECK_EQ(cuMemFree(q), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree(p), CUDA_SUCCESS);  // a pointer of another device can be freed
  CHECK_EQ(cuCtxSetCurrent(reinterpret_cast<CUcontext>(0x10)), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);

  // Pools.
  CUmemoryPool def0 = nullptr, def1 = nullptr, mine = nullptr;
  CHECK_EQ(cuDeviceGetDefaultMemPool(&def0, 0), CUDA_SUCCESS);
  CHECK_EQ(cuDeviceGetDefaultMemPool(&def1, 1), CUDA_SUCCESS);
  CHECK(def0 != nullptr && def1 != nullptr && def0 != def1);
  CHECK_EQ(cuMemAllocFromPoolAsync(&p, 4096, def1, nullptr), CUDA_SUCCESS);
  CHECK(in_dev(p, 1));
  CHECK_EQ(cuMemFreeAsync(p, nullptr), CUDA_SUCCESS);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  CHECK_EQ(cuMemPoolCreate(&mine, &props), CUDA_SUCCESS);
  CHECK_EQ(cuMemAllocFromPoolAsync(&p, 4096, mine, nullptr), CUDA_SUCCESS);
  CHECK(in_dev(p, 1));
  CHECK_EQ(cuMemFreeAsync(p, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuMemPoolDestroy(mine), CUDA_SUCCESS);
  CHECK_EQ(cuMemAllocFromPoolAsync(&p, 4096, mine, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemPoolDestroy(def0), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemAllocAsync(&p, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemAllocAsync(&p, kCap + 1, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_EQ(p, 0);
}

void test_vmm() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  size_t gran = 0;
  CHECK_EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  CHECK_EQ(gran, 2u << 20);
  CUmemGenericAllocationHandle h = 0, h2 = 0;
  CHECK_EQ(cuMemCreate(&h, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemCreate(&h, 2 * gran, &prop, 0), CUDA_SUCCESS);
  CHECK(h != 0);
  CHECK_EQ(fakegpu_cuda_live_bytes(1), 2 * gran);
  CHECK_EQ(cuMemCreate(&h2, kCap, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  prop.location.id = 5;
  CHECK_EQ(cuMemCreate(&h2, gran, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  prop.location.id = 1;
  CUdeviceptr va = 0;
  CHECK_EQ(cuMemAddressReserve(&va, 8 * gran, 0, 0, 0), CUDA_SUCCESS);
  CHECK(va != 0 && va % gran == 0);
  CHECK_EQ(fakegpu_cuda_live_bytes(1), 2 * gran);  // VA is not counted
  CHECK_EQ(cuMemMap(va, 2 * gran, 0, h, 0), CUDA_SUCCESS);
  CHECK_EQ(cuMemMap(va + gran, 2 * gran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // overlaps
  CHECK_EQ(cuMemMap(va + 2 * gran, 4 * gran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // beyond handle
  CUmemAccessDesc acc{};
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = 1;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_EQ(cuMemSetAccess(va, 2 * gran, &acc, 1), CUDA_SUCCESS);
  CHECK_EQ(cuMemSetAccess(va, 3 * gran, &acc, 1), CUDA_ERROR_INVALID_VALUE);  // partly unmapped
  CHECK_EQ(cuMemUnmap(va + 4 * gran, gran), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemUnmap(va, 2 * gran), CUDA_SUCCESS);
  CHECK_EQ(cuMemRelease(h), CUDA_SUCCESS);
  CHECK_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(fakegpu_cuda_live_bytes(1), 0);
  CHECK_EQ(cuMemAddressFree(va, gran), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemAddressFree(va, 8 * gran), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
}

struct ProcCase {
  const char* symbol;
  int version;
  cuuint64_t flags;
  const char* expect;  // exported name, or nullptr when the lookup must fail
  CUresult rc;
  CUdriverProcAddressQueryResult status;
};

void test_proc_address() {
  void* h = libcuda();
  const ProcCase cases[] = {
      {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAlloc", 12000, 1, "cuMemAlloc_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAlloc", 2000, 0, "cuMemAlloc", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemFree", 3020, 0, "cuMemFree_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemFree", 2000, 0, "cuMemFree", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocPitch", 2000, 0, nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
      {"cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuDeviceTotalMem", 3020, 0, "cuDeviceTotalMem_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocAsync", 11020, 1, "cuMemAllocAsync", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocAsync", 11000, 0, nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
      {"cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemFreeAsync", 12000, 0, "cuMemFreeAsync", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz", CUDA_SUCCESS,
       CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuGetProcAddress", 11030, 0, "cuGetProcAddress", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2", CUDA_SUCCESS,
       CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuInit", 2000, 0, "cuInit", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuInit", 12000, 2, "cuInit", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemCreate", 10020, 0, "cuMemCreate", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemCreate", 10010, 0, nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
      {"cuMemAllocManaged", 6000, 0, "cuMemAllocManaged", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuGetExportTable", 3000, 0, "cuGetExportTable", CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS},
      {"cuMemAlloc_v2", 12000, 0, nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
      {"cuNoSuchFunction", 12000, 0, nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
      {"fakegpu_write_ledger", 12000, 0, nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
  };
  for (const ProcCase& c : cases) {
    void* p = reinterpret_cast<void*>(0x1);
    CUdriverProcAddressQueryResult st = static_cast<CUdriverProcAddressQueryResult>(99);
    const CUresult r = cuGetProcAddress_v2(c.symbol, &p, c.version, c.flags, &st);
    if (r != c.rc || st != c.status) {
      fprintf(stderr, "proc %s/%d/%llu: rc %d status %d, want %d/%d\n", c.symbol, c.version,
              static_cast<unsigned long long>(c.flags), r, st, c.rc, c.status);
      ++g_selftest_failures;
    }
    void* want = c.expect ? dlsym(h, c.expect) : nullptr;
    if (c.expect) CHECK(want != nullptr);
    if (p != want) {
      fprintf(stderr, "proc %s/%d/%llu: pointer %p, want dlsym(%s) = %p\n", c.symbol, c.version,
              static_cast<unsigned long long>(c.flags), p, c.expect ? c.expect : "-", want);
      ++g_selftest_failures;
    }
    // The v1 entry point resolves identically (without a status).
    using Gpa1 = CUresult (*)(const char*, void**, int, cuuint64_t);
    auto gpa1 = reinterpret_cast<Gpa1>(dlsym(h, "cuGetProcAddress"));
    void* q = reinterpret_cast<void*>(0x1);
    CHECK(gpa1 != nullptr);
    if (gpa1) {
      CHECK_EQ(gpa1(c.symbol, &q, c.version, c.flags), c.rc);
      CHECK(q == want);
    }
  }
  void* p = nullptr;
  CHECK_EQ(cuGetProcAddress_v2("cuInit", nullptr, 12000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuGetProcAddress_v2(nullptr, &p, 12000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuGetProcAddress_v2("cuInit", &p, 12000, 0, nullptr), CUDA_SUCCESS);  // NULL status is fine
  CHECK(p == dlsym(h, "cuInit"));
  CHECK_EQ(cuGetProcAddress_v2("cuInit", &p, 12000, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// With libfake_interposer.so preloaded: the global cuMemAlloc_v2 is the
// interposer's, yet the driver's table and dlsym on its handle give the
// driver's own function, and calls through it bypass the interposer.
void test_interposed() {
  using Calls = int (*)();
  auto calls = reinterpret_cast<Calls>(dlsym(RTLD_DEFAULT, "fake_interposer_calls"));
  CHECK(calls != nullptr);
  if (!calls) return;
  void* h = libcuda();
  void* own = dlsym(h, "cuMemAlloc_v2");
  void* global = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
  CHECK(own != nullptr && global != nullptr && own != global);
  void* p = nullptr;
  CHECK_EQ(cuGetProcAddress_v2("cuMemAlloc", &p, 3020, 0, nullptr), CUDA_SUCCESS);
  CHECK(p == own);
  const int before = calls();
  CUdeviceptr d = 0;
  CHECK_EQ(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(p)(&d, 256), CUDA_SUCCESS);
  CHECK_EQ(calls(), before);  // table pointer bypasses the interposer
  CHECK_EQ(cuMemFree(d), CUDA_SUCCESS);
  CHECK_EQ(cuMemAlloc(&d, 256), CUDA_SUCCESS);  // the program's PLT call is interposed
  CHECK_EQ(calls(), before + 1);
  CHECK_EQ(cuMemFree(d), CUDA_SUCCESS);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "reserve") == 0) return run_reserve_mode();
  const bool interposed = argc > 1 && strcmp(argv[1], "interposed") == 0;
  test_basics();
  test_head_is_reserved();
  test_alloc_rules();
  test_devices_and_pools();
  test_vmm();
  test_proc_address();
  if (interposed) test_interposed();
  CHECK_EQ(fakegpu_cuda_live_bytes(0), 0);
  CHECK_EQ(fakegpu_cuda_live_bytes(1), 0);
  return selftest_finish(interposed ? "selftest_cuda(interposed)" : "selftest_cuda");
}
