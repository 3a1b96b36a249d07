// fidelity_calls: calls EVERY function libgpumemrec.so hooks (shim/hook_list.h)
// through the fake runtime, driver and HIP, the way a program would: each
// symbol from dlsym on the library's own handle (what PyTorch, CuPy and JAX
// do), the proc-address tables, and dlsym(RTLD_DEFAULT). One line per call:
//
//   <api> <case> rc=<code> out=<out-param> errno=<errno> [last=<last error>]
//
// errno is set to 4242 before every call; out-params are pre-set to a marker
// so "left alone" and "set to 0" differ. Device addresses from the fakes are
// deterministic, so two runs (with and without LD_PRELOAD) must print the same
// lines; the e2e test (test_hardening.py fidelity_all) diffs them.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#undef cuGetProcAddress
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemAllocPitch

namespace {

void* g_rt = nullptr;
void* g_drv = nullptr;
const uint64_t kMarker = 0x5a5a5a5a5a5a5a5aull;
const size_t kSmall = 1 << 20;
const size_t kHuge = size_t(1) << 40;  // more than any fake capacity

template <typename Fn>
Fn sym(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

// Whether dlsym(RTLD_DEFAULT) agrees with the library's own handle.
void print_resolution(void* lib, const char* name) {
  void* own = dlsym(lib, name);
  void* def = dlsym(RTLD_DEFAULT, name);
  printf("%s resolve own=%s default=%s\n", name, own ? "set" : "null",
         !def ? "null" : (def == own ? "same" : "other"));
}

int last_rt() {
  auto f = sym<cudaError_t (*)()>(g_rt, "cudaGetLastError");
  return f ? int(f()) : -1;
}

void line(const char* api, const char* what, int rc, uint64_t out, int err, int last = -999) {
  if (last == -999) printf("%s %s rc=%d out=0x%" PRIx64 " errno=%d\n", api, what, rc, out, err);
  else printf("%s %s rc=%d out=0x%" PRIx64 " errno=%d last=%d\n", api, what, rc, out, err, last);
}

#define CALL(api, what, outvar, expr, lastfn)          \
  do {                                                 \
    errno = 4242;                                      \
    int rc_ = int(expr);                               \
    int e_ = errno;                                    \
    line(api, what, rc_, uint64_t(outvar), e_, lastfn); \
  } while (0)

#define NOLAST -999

// ---------------------------------------------------------------- runtime
void runtime_free_cases(const char* fname, void* dev) {
  // dev: a live allocation to free; then double free, unknown, NULL.
  cudaStream_t s = nullptr;
  bool async = std::strstr(fname, "Async") != nullptr;
  auto ffree = sym<cudaError_t (*)(void*)>(g_rt, fname);
  auto fasync = sym<cudaError_t (*)(void*, cudaStream_t)>(g_rt, fname);
  print_resolution(g_rt, fname);
  if (!ffree) return;
  auto call = [&](void* p) { return async ? fasync(p, s) : ffree(p); };
  CALL(fname, "free", 0, call(dev), last_rt());
  CALL(fname, "double_free", 0, call(dev), last_rt());
  CALL(fname, "unknown_ptr", 0, call(reinterpret_cast<void*>(0x12345600)), last_rt());
  CALL(fname, "null", 0, call(nullptr), last_rt());
}

template <typename AllocFn>
void runtime_alloc_cases(const char* api, const char* free_api, AllocFn alloc) {
  void* p = reinterpret_cast<void*>(kMarker);
  CALL(api, "ok", uintptr_t(p), alloc(&p, kSmall), last_rt());
  void* keep = p;
  void* z = reinterpret_cast<void*>(kMarker);
  CALL(api, "size0", uintptr_t(z), alloc(&z, 0), last_rt());
  CALL(api, "null_out", 0, alloc(nullptr, kSmall), last_rt());
  void* o = reinterpret_cast<void*>(kMarker);
  CALL(api, "oom", uintptr_t(o), alloc(&o, kHuge), last_rt());
  runtime_free_cases(free_api, keep);
}

void runtime() {
  g_rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!g_rt) {
    printf("runtime missing\n");
    return;
  }
  cudaStream_t stream = nullptr;
  for (const char* name : {"cudaMalloc", "cudaMallocAsync", "cudaMallocAsync_ptsz", "cudaMallocFromPoolAsync",
                           "cudaMallocFromPoolAsync_ptsz", "cudaMallocManaged", "cudaFree", "cudaFreeAsync",
                           "cudaFreeAsync_ptsz"}) {
    print_resolution(g_rt, name);
  }
  if (auto f = sym<cudaError_t (*)(void**, size_t)>(g_rt, "cudaMalloc"))
    runtime_alloc_cases("cudaMalloc", "cudaFree", [&](void** p, size_t n) { return f(p, n); });
  for (const char* name : {"cudaMallocAsync", "cudaMallocAsync_ptsz"}) {
    auto f = sym<cudaError_t (*)(void**, size_t, cudaStream_t)>(g_rt, name);
    if (!f) continue;
    bool ptsz = std::strstr(name, "_ptsz") != nullptr;
    runtime_alloc_cases(name, ptsz ? "cudaFreeAsync_ptsz" : "cudaFreeAsync",
                        [&](void** p, size_t n) { return f(p, n, stream); });
  }
  cudaMemPool_t pool = nullptr;
  if (auto getpool = sym<cudaError_t (*)(cudaMemPool_t*, int)>(g_rt, "cudaDeviceGetDefaultMemPool"))
    getpool(&pool, 0);
  for (const char* name : {"cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_ptsz"}) {
    auto f = sym<cudaError_t (*)(void**, size_t, cudaMemPool_t, cudaStream_t)>(g_rt, name);
    if (!f) continue;
    runtime_alloc_cases(name, "cudaFreeAsync", [&](void** p, size_t n) { return f(p, n, pool, stream); });
  }
  if (auto f = sym<cudaError_t (*)(void**, size_t, unsigned)>(g_rt, "cudaMallocManaged")) {
    runtime_alloc_cases("cudaMallocManaged", "cudaFree", [&](void** p, size_t n) { return f(p, n, 1); });
    void* p = reinterpret_cast<void*>(kMarker);
    CALL("cudaMallocManaged", "bad_flags", uintptr_t(p), f(&p, kSmall, 0x7777), last_rt());
  }
  print_resolution(g_rt, "cudaMallocPitch");
  if (auto f = sym<cudaError_t (*)(void**, size_t*, size_t, size_t)>(g_rt, "cudaMallocPitch")) {
    size_t pitch = kMarker;
    void* p = reinterpret_cast<void*>(kMarker);
    CALL("cudaMallocPitch", "ok", uintptr_t(p), f(&p, &pitch, 1000, 64), last_rt());
    printf("cudaMallocPitch ok pitch=%zu\n", pitch);
    void* keep = p;
    pitch = kMarker;
    CALL("cudaMallocPitch", "null_pitch", uintptr_t(p), f(&p, nullptr, 1000, 64), last_rt());
    CALL("cudaMallocPitch", "null_out", pitch, f(nullptr, &pitch, 1000, 64), last_rt());
    void* z = reinterpret_cast<void*>(kMarker);
    CALL("cudaMallocPitch", "size0", uintptr_t(z), f(&z, &pitch, 0, 0), last_rt());
    void* o = reinterpret_cast<void*>(kMarker);
    CALL("cudaMallocPitch", "oom", uintptr_t(o), f(&o, &pitch, 1 << 20, 1 << 20), last_rt());
    runtime_free_cases("cudaFree", keep);
  }
  print_resolution(g_rt, "cudaMalloc3D");
  if (auto f = sym<cudaError_t (*)(cudaPitchedPtr*, cudaExtent)>(g_rt, "cudaMalloc3D")) {
    cudaPitchedPtr pp;
    std::memset(&pp, 0x5a, sizeof pp);
    CALL("cudaMalloc3D", "ok", uintptr_t(pp.ptr), f(&pp, cudaExtent{1000, 16, 4}), last_rt());
    printf("cudaMalloc3D ok pitch=%zu xsize=%zu ysize=%zu\n", pp.pitch, pp.xsize, pp.ysize);
    void* keep = pp.ptr;
    CALL("cudaMalloc3D", "null_out", 0, f(nullptr, cudaExtent{1000, 16, 4}), last_rt());
    std::memset(&pp, 0x5a, sizeof pp);
    CALL("cudaMalloc3D", "size0", uintptr_t(pp.ptr), f(&pp, cudaExtent{0, 0, 0}), last_rt());
    std::memset(&pp, 0x5a, sizeof pp);
    CALL("cudaMalloc3D", "oom", uintptr_t(pp.ptr), f(&pp, cudaExtent{1 << 20, 1 << 10, 1 << 10}), last_rt());
    runtime_free_cases("cudaFree", keep);
  }
}

// ---------------------------------------------------------------- driver
void driver_free_cases(const char* fname, CUdeviceptr dev) {
  bool async = std::strstr(fname, "Async") != nullptr;
  auto ffree = sym<CUresult (*)(CUdeviceptr)>(g_drv, fname);
  auto fasync = sym<CUresult (*)(CUdeviceptr, CUstream)>(g_drv, fname);
  print_resolution(g_drv, fname);
  if (!ffree) return;
  auto call = [&](CUdeviceptr p) { return async ? fasync(p, nullptr) : ffree(p); };
  CALL(fname, "free", 0, call(dev), NOLAST);
  CALL(fname, "double_free", 0, call(dev), NOLAST);
  CALL(fname, "unknown_ptr", 0, call(CUdeviceptr(0x12345600)), NOLAST);
  CALL(fname, "null", 0, call(0), NOLAST);
}

template <typename AllocFn>
void driver_alloc_cases(const char* api, const char* free_api, AllocFn alloc) {
  CUdeviceptr p = kMarker;
  CALL(api, "ok", p, alloc(&p, kSmall), NOLAST);
  CUdeviceptr keep = p;
  CUdeviceptr z = kMarker;
  CALL(api, "size0", z, alloc(&z, 0), NOLAST);
  CALL(api, "null_out", 0, alloc(nullptr, kSmall), NOLAST);
  CUdeviceptr o = kMarker;
  CALL(api, "oom", o, alloc(&o, kHuge), NOLAST);
  driver_free_cases(free_api, keep);
}

using GpaV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GpaV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

void driver_through_pfn(const char* via, void* alloc_pfn, void* free_pfn) {
  if (!alloc_pfn || !free_pfn) return;
  auto a = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(alloc_pfn);
  auto f = reinterpret_cast<CUresult (*)(CUdeviceptr)>(free_pfn);
  CUdeviceptr p = kMarker;
  char what[64];
  std::snprintf(what, sizeof what, "%s_alloc", via);
  CALL("pfn", what, p, a(&p, kSmall), NOLAST);
  std::snprintf(what, sizeof what, "%s_oom", via);
  CUdeviceptr o = kMarker;
  CALL("pfn", what, o, a(&o, kHuge), NOLAST);
  std::snprintf(what, sizeof what, "%s_free", via);
  CALL("pfn", what, 0, f(p), NOLAST);
  std::snprintf(what, sizeof what, "%s_double_free", via);
  CALL("pfn", what, 0, f(p), NOLAST);
}

void proc_address() {
  for (const char* name : {"cuGetProcAddress", "cuGetProcAddress_v2"}) print_resolution(g_drv, name);
  auto v2 = sym<GpaV2>(g_drv, "cuGetProcAddress_v2");
  auto v1 = sym<GpaV1>(g_drv, "cuGetProcAddress");
  struct Q {
    const char* symbol;
    int version;
    cuuint64_t flags;
  } qs[] = {{"cuMemAlloc", 12000, 0},       {"cuMemFree", 12000, 0},        {"cuMemAllocAsync", 12000, 2},
            {"cuMemAlloc", 3000, 0},        {"cuMemAllocAsync", 11000, 0},  {"cuNoSuchFunction", 12000, 0},
            {"cuMemAlloc", 12000, 0x100},   {"cuGetProcAddress", 12000, 0}, {"cuMemCreate", 12000, 0}};
  if (v2) {
    for (auto& q : qs) {
      void* pfn = reinterpret_cast<void*>(kMarker);
      CUdriverProcAddressQueryResult st = CUdriverProcAddressQueryResult(77);
      errno = 4242;
      int rc = int(v2(q.symbol, &pfn, q.version, q.flags, &st));
      int e = errno;
      printf("cuGetProcAddress_v2 %s/%d/%llu rc=%d pfn=%s status=%d errno=%d\n", q.symbol, q.version,
             (unsigned long long)q.flags, rc, pfn == reinterpret_cast<void*>(kMarker) ? "untouched" : pfn ? "set" : "null",
             int(st), e);
    }
    CALL("cuGetProcAddress_v2", "null_pfn", 0, v2("cuMemAlloc", nullptr, 12000, 0, nullptr), NOLAST);
    CALL("cuGetProcAddress_v2", "null_symbol", 0, v2(nullptr, nullptr, 12000, 0, nullptr), NOLAST);
    void* pa = nullptr;
    void* pf = nullptr;
    v2("cuMemAlloc", &pa, 12000, 0, nullptr);
    v2("cuMemFree", &pf, 12000, 0, nullptr);
    driver_through_pfn("v2", pa, pf);
    // The table's own cuGetProcAddress, then the v1 ABI through it.
    void* gpa = nullptr;
    v2("cuGetProcAddress", &gpa, 12000, 0, nullptr);
    if (gpa) {
      void* pa2 = nullptr;
      void* pf2 = nullptr;
      reinterpret_cast<GpaV2>(gpa)("cuMemAlloc", &pa2, 12000, 0, nullptr);
      reinterpret_cast<GpaV2>(gpa)("cuMemFree", &pf2, 12000, 0, nullptr);
      driver_through_pfn("gpa", pa2, pf2);
    }
  }
  if (v1) {
    for (auto& q : qs) {
      void* pfn = reinterpret_cast<void*>(kMarker);
      errno = 4242;
      int rc = int(v1(q.symbol, &pfn, q.version, q.flags));
      int e = errno;
      printf("cuGetProcAddress %s/%d/%llu rc=%d pfn=%s errno=%d\n", q.symbol, q.version,
             (unsigned long long)q.flags, rc, pfn == reinterpret_cast<void*>(kMarker) ? "untouched" : pfn ? "set" : "null", e);
    }
    void* pa = nullptr;
    void* pf = nullptr;
    v1("cuMemAlloc", &pa, 12000, 0);
    v1("cuMemFree", &pf, 12000, 0);
    driver_through_pfn("v1", pa, pf);
  }
}

void vmm() {
  for (const char* name : {"cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap"}) print_resolution(g_drv, name);
  auto create = sym<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                 unsigned long long)>(g_drv, "cuMemCreate");
  auto release = sym<CUresult (*)(CUmemGenericAllocationHandle)>(g_drv, "cuMemRelease");
  auto map = sym<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)>(
      g_drv, "cuMemMap");
  auto unmap = sym<CUresult (*)(CUdeviceptr, size_t)>(g_drv, "cuMemUnmap");
  auto reserve = sym<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
      g_drv, "cuMemAddressReserve");
  if (!create || !release || !map || !unmap || !reserve) return;
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  const size_t g = 2 << 20;
  CUmemGenericAllocationHandle h = kMarker;
  CALL("cuMemCreate", "ok", h, create(&h, g, &prop, 0), NOLAST);
  CUmemGenericAllocationHandle keep = h;
  h = kMarker;
  CALL("cuMemCreate", "size0", h, create(&h, 0, &prop, 0), NOLAST);
  h = kMarker;
  CALL("cuMemCreate", "unaligned", h, create(&h, g + 1, &prop, 0), NOLAST);
  CALL("cuMemCreate", "null_out", 0, create(nullptr, g, &prop, 0), NOLAST);
  h = kMarker;
  CALL("cuMemCreate", "null_prop", h, create(&h, g, nullptr, 0), NOLAST);
  h = kMarker;
  CALL("cuMemCreate", "oom", h, create(&h, kHuge, &prop, 0), NOLAST);
  CUdeviceptr va = 0;
  reserve(&va, 4 * g, 0, 0, 0);
  CALL("cuMemMap", "ok", 0, map(va, g, 0, keep, 0), NOLAST);
  CALL("cuMemMap", "again", 0, map(va, g, 0, keep, 0), NOLAST);
  CALL("cuMemMap", "unknown_handle", 0, map(va + g, g, 0, CUmemGenericAllocationHandle(0x999), 0), NOLAST);
  CALL("cuMemUnmap", "ok", 0, unmap(va, g), NOLAST);
  CALL("cuMemUnmap", "again", 0, unmap(va, g), NOLAST);
  CALL("cuMemUnmap", "null", 0, unmap(0, g), NOLAST);
  CALL("cuMemRelease", "ok", 0, release(keep), NOLAST);
  CALL("cuMemRelease", "double", 0, release(keep), NOLAST);
  CALL("cuMemRelease", "unknown", 0, release(CUmemGenericAllocationHandle(0x999)), NOLAST);
  CALL("cuMemRelease", "zero", 0, release(0), NOLAST);
}

void driver() {
  g_drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!g_drv) {
    printf("driver missing\n");
    return;
  }
  if (auto init = sym<CUresult (*)(unsigned)>(g_drv, "cuInit")) init(0);
  for (const char* name : {"cuMemAlloc_v2", "cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",
                           "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocPitch_v2"})
    print_resolution(g_drv, name);
  if (auto f = sym<CUresult (*)(CUdeviceptr*, size_t)>(g_drv, "cuMemAlloc_v2"))
    driver_alloc_cases("cuMemAlloc_v2", "cuMemFree_v2", [&](CUdeviceptr* p, size_t n) { return f(p, n); });
  if (auto f = sym<CUresult (*)(CUdeviceptr*, size_t, unsigned)>(g_drv, "cuMemAllocManaged"))
    driver_alloc_cases("cuMemAllocManaged", "cuMemFree_v2",
                       [&](CUdeviceptr* p, size_t n) { return f(p, n, CU_MEM_ATTACH_GLOBAL); });
  for (const char* name : {"cuMemAllocAsync", "cuMemAllocAsync_ptsz"}) {
    auto f = sym<CUresult (*)(CUdeviceptr*, size_t, CUstream)>(g_drv, name);
    if (!f) continue;
    bool ptsz = std::strstr(name, "_ptsz") != nullptr;
    driver_alloc_cases(name, ptsz ? "cuMemFreeAsync_ptsz" : "cuMemFreeAsync",
                       [&](CUdeviceptr* p, size_t n) { return f(p, n, nullptr); });
  }
  CUmemoryPool pool = nullptr;
  if (auto getpool = sym<CUresult (*)(CUmemoryPool*, CUdevice)>(g_drv, "cuDeviceGetDefaultMemPool")) getpool(&pool, 0);
  for (const char* name : {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"}) {
    auto f = sym<CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream)>(g_drv, name);
    if (!f) continue;
    driver_alloc_cases(name, "cuMemFree_v2", [&](CUdeviceptr* p, size_t n) { return f(p, n, pool, nullptr); });
  }
  if (auto f = sym<CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned)>(g_drv, "cuMemAllocPitch_v2")) {
    CUdeviceptr p = kMarker;
    size_t pitch = kMarker;
    CALL("cuMemAllocPitch_v2", "ok", p, f(&p, &pitch, 1000, 64, 4), NOLAST);
    printf("cuMemAllocPitch_v2 ok pitch=%zu\n", pitch);
    CUdeviceptr keep = p;
    CALL("cuMemAllocPitch_v2", "null_pitch", p, f(&p, nullptr, 1000, 64, 4), NOLAST);
    CALL("cuMemAllocPitch_v2", "null_out", pitch, f(nullptr, &pitch, 1000, 64, 4), NOLAST);
    CUdeviceptr z = kMarker;
    CALL("cuMemAllocPitch_v2", "size0", z, f(&z, &pitch, 0, 0, 4), NOLAST);
    CUdeviceptr bad = kMarker;
    CALL("cuMemAllocPitch_v2", "bad_element", bad, f(&bad, &pitch, 1000, 64, 3), NOLAST);
    CUdeviceptr o = kMarker;
    CALL("cuMemAllocPitch_v2", "oom", o, f(&o, &pitch, 1 << 20, 1 << 20, 4), NOLAST);
    driver_free_cases("cuMemFree_v2", keep);
  }
  vmm();
  proc_address();
}

// Last (they free everything of device 0): the calls that destroy a primary
// context. A pointer freed after one is unknown to the driver, with and
// without the shim; a release that leaves a reference frees nothing.
void runtime_reset() {
  auto alloc = sym<cudaError_t (*)(void**, size_t)>(g_rt, "cudaMalloc");
  auto rfree = sym<cudaError_t (*)(void*)>(g_rt, "cudaFree");
  auto reset = sym<cudaError_t (*)()>(g_rt, "cudaDeviceReset");
  print_resolution(g_rt, "cudaDeviceReset");
  if (!alloc || !rfree || !reset) return;
  void* p = reinterpret_cast<void*>(kMarker);
  CALL("cudaMalloc", "before_reset", uintptr_t(p), alloc(&p, kSmall), last_rt());
  CALL("cudaDeviceReset", "ok", 0, reset(), last_rt());
  CALL("cudaFree", "after_reset", 0, rfree(p), last_rt());
}

// A context made with cuCtxCreate_v2 (as CUDA 11/12 headers name it) and
// destroyed by each ABI: what was allocated in it is unknown to the driver
// afterwards, the primary context's allocation is not; a second destroy and
// a null context fail alike with and without the shim.
void created_contexts() {
  using Create = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  using Destroy = CUresult (*)(CUcontext);
  for (const char* name : {"cuCtxDestroy", "cuCtxDestroy_v2"}) print_resolution(g_drv, name);
  auto create = sym<Create>(g_drv, "cuCtxCreate_v2");
  auto alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(g_drv, "cuMemAlloc_v2");
  auto dfree = sym<CUresult (*)(CUdeviceptr)>(g_drv, "cuMemFree_v2");
  if (!create || !alloc || !dfree) return;
  for (const char* name : {"cuCtxDestroy", "cuCtxDestroy_v2"}) {
    auto destroy = sym<Destroy>(g_drv, name);
    if (!destroy) continue;
    CUcontext ctx = nullptr;
    CUdeviceptr outside = kMarker, inside = kMarker;
    CALL("cuMemAlloc_v2", "outside_ctx", outside, alloc(&outside, kSmall), NOLAST);
    CALL("cuCtxCreate_v2", "ok", 0, create(&ctx, 0, 0), NOLAST);
    CALL("cuMemAlloc_v2", "inside_ctx", inside, alloc(&inside, kSmall), NOLAST);
    CALL(name, "ok", 0, destroy(ctx), NOLAST);
    CALL(name, "again", 0, destroy(ctx), NOLAST);
    CALL(name, "null", 0, destroy(nullptr), NOLAST);
    CALL("cuMemFree_v2", "after_destroy", 0, dfree(inside), NOLAST);
    CALL("cuMemFree_v2", "outside_after_destroy", 0, dfree(outside), NOLAST);
  }
  // cuCtxDetach destroys only at the last use (PyCUDA's Context.detach).
  auto detach = sym<Destroy>(g_drv, "cuCtxDetach");
  auto attach = sym<CUresult (*)(CUcontext*, unsigned int)>(g_drv, "cuCtxAttach");
  print_resolution(g_drv, "cuCtxDetach");
  if (!detach || !attach) return;
  CUcontext ctx = nullptr, again = nullptr;
  CUdeviceptr kept = kMarker, gone = kMarker;
  CALL("cuCtxCreate_v2", "for_detach", 0, create(&ctx, 0, 0), NOLAST);
  CALL("cuCtxAttach", "second_use", 0, attach(&again, 0), NOLAST);
  CALL("cuMemAlloc_v2", "before_detach", kept, alloc(&kept, kSmall), NOLAST);
  CALL("cuCtxDetach", "one_of_two", 0, detach(ctx), NOLAST);
  CALL("cuMemFree_v2", "after_one_detach", 0, dfree(kept), NOLAST);
  CALL("cuMemAlloc_v2", "before_last_detach", gone, alloc(&gone, kSmall), NOLAST);
  CALL("cuCtxDetach", "last", 0, detach(ctx), NOLAST);
  CALL("cuCtxDetach", "again", 0, detach(ctx), NOLAST);
  CALL("cuMemFree_v2", "after_last_detach", 0, dfree(gone), NOLAST);
}

void driver_resets() {
  using Dev = CUresult (*)(CUdevice);
  for (const char* name : {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxRelease",
                           "cuDevicePrimaryCtxRelease_v2"})
    print_resolution(g_drv, name);
  auto alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(g_drv, "cuMemAlloc_v2");
  auto dfree = sym<CUresult (*)(CUdeviceptr)>(g_drv, "cuMemFree_v2");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(g_drv, "cuDevicePrimaryCtxRetain");
  if (!alloc || !dfree || !retain) return;
  CUcontext ctx = nullptr;
  for (const char* name : {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2"}) {
    auto reset = sym<Dev>(g_drv, name);
    if (!reset) continue;
    CUdeviceptr p = kMarker;
    CALL("cuMemAlloc_v2", "before_reset", p, alloc(&p, kSmall), NOLAST);
    CALL(name, "ok", 0, reset(0), NOLAST);
    CALL(name, "bad_device", 0, reset(99), NOLAST);
    CALL("cuMemFree_v2", "after_reset", 0, dfree(p), NOLAST);
  }
  // The runtime's first call retained the context and cudaDeviceReset kept
  // that reference: dropping it (the context is inactive since the reset of
  // the loop above, so nothing is freed) leaves the loops below every one.
  if (auto release = sym<Dev>(g_drv, "cuDevicePrimaryCtxRelease_v2"))
    CALL("cuDevicePrimaryCtxRelease_v2", "runtime_ref", 0, release(0), NOLAST);
  for (const char* name : {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"}) {
    auto release = sym<Dev>(g_drv, name);
    if (!release) continue;
    CUdeviceptr kept = kMarker, gone = kMarker;
    CALL("cuDevicePrimaryCtxRetain", "first", 0, retain(&ctx, 0), NOLAST);
    CALL("cuDevicePrimaryCtxRetain", "second", 0, retain(&ctx, 0), NOLAST);
    CALL("cuMemAlloc_v2", "before_release", kept, alloc(&kept, kSmall), NOLAST);
    CALL(name, "one_of_two", 0, release(0), NOLAST);
    CALL("cuMemFree_v2", "after_one_release", 0, dfree(kept), NOLAST);
    CALL("cuMemAlloc_v2", "before_last_release", gone, alloc(&gone, kSmall), NOLAST);
    CALL(name, "last", 0, release(0), NOLAST);
    CALL(name, "none_left", 0, release(0), NOLAST);
    CALL("cuMemFree_v2", "after_last_release", 0, dfree(gone), NOLAST);
  }
}

}  // namespace

void fidelity_hip();

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* which = argc > 1 ? argv[1] : "all";
  if (!std::strcmp(which, "all") || !std::strcmp(which, "runtime")) runtime();
  if (!std::strcmp(which, "all") || !std::strcmp(which, "driver")) driver();
  if (!std::strcmp(which, "all") || !std::strcmp(which, "hip")) fidelity_hip();
  if (!std::strcmp(which, "all") || !std::strcmp(which, "runtime")) runtime_reset();
  if (!std::strcmp(which, "all") || !std::strcmp(which, "driver")) created_contexts();
  if (!std::strcmp(which, "all") || !std::strcmp(which, "driver")) driver_resets();
  printf("DONE\n");
  return 0;
}
