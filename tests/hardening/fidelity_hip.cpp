// fidelity_calls (HIP half; the CUDA half and main are in fidelity_calls.cpp,
// the headers of the two cannot share a translation unit): calls EVERY function libgpumemrec.so hooks (shim/hook_list.h)
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
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>


namespace {

void* g_hip = nullptr;
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

int last_hip() {
  auto f = sym<hipError_t (*)()>(g_hip, "hipGetLastError");
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

// ---------------------------------------------------------------- HIP
void hip_free_cases(const char* fname, void* dev) {
  bool async = std::strstr(fname, "Async") != nullptr;
  auto ffree = sym<hipError_t (*)(void*)>(g_hip, fname);
  auto fasync = sym<hipError_t (*)(void*, hipStream_t)>(g_hip, fname);
  print_resolution(g_hip, fname);
  if (!ffree) return;
  auto call = [&](void* p) { return async ? fasync(p, nullptr) : ffree(p); };
  CALL(fname, "free", 0, call(dev), last_hip());
  CALL(fname, "double_free", 0, call(dev), last_hip());
  CALL(fname, "unknown_ptr", 0, call(reinterpret_cast<void*>(0x12345600)), last_hip());
  CALL(fname, "null", 0, call(nullptr), last_hip());
}

template <typename AllocFn>
void hip_alloc_cases(const char* api, const char* free_api, AllocFn alloc) {
  void* p = reinterpret_cast<void*>(kMarker);
  CALL(api, "ok", uintptr_t(p), alloc(&p, kSmall), last_hip());
  void* keep = p;
  void* z = reinterpret_cast<void*>(kMarker);
  CALL(api, "size0", uintptr_t(z), alloc(&z, 0), last_hip());
  CALL(api, "null_out", 0, alloc(nullptr, kSmall), last_hip());
  void* o = reinterpret_cast<void*>(kMarker);
  CALL(api, "oom", uintptr_t(o), alloc(&o, kHuge), last_hip());
  hip_free_cases(free_api, keep);
}

// Last: a reset frees everything of the device. A pointer freed after it is
// unknown to the library, with and without the shim.
void resets() {
  auto alloc = sym<hipError_t (*)(void**, size_t)>(g_hip, "hipMalloc");
  auto hfree = sym<hipError_t (*)(void*)>(g_hip, "hipFree");
  auto reset = sym<hipError_t (*)()>(g_hip, "hipDeviceReset");
  auto ctx_reset = sym<hipError_t (*)(int)>(g_hip, "hipDevicePrimaryCtxReset");
  print_resolution(g_hip, "hipDeviceReset");
  print_resolution(g_hip, "hipDevicePrimaryCtxReset");
  if (!alloc || !hfree || !reset || !ctx_reset) return;
  void* p = reinterpret_cast<void*>(kMarker);
  CALL("hipMalloc", "before_reset", uintptr_t(p), alloc(&p, kSmall), last_hip());
  CALL("hipDeviceReset", "ok", 0, reset(), last_hip());
  CALL("hipFree", "after_reset", 0, hfree(p), last_hip());
  CALL("hipMalloc", "before_ctx_reset", uintptr_t(p), alloc(&p, kSmall), last_hip());
  CALL("hipDevicePrimaryCtxReset", "ok", 0, ctx_reset(0), last_hip());
  CALL("hipDevicePrimaryCtxReset", "bad_device", 0, ctx_reset(99), last_hip());
  CALL("hipFree", "after_ctx_reset", 0, hfree(p), last_hip());
}

void hip() {
  g_hip = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_GLOBAL);
  if (!g_hip) {
    printf("hip missing\n");
    return;
  }
  for (const char* name : {"hipMalloc", "hipExtMallocWithFlags", "hipMallocManaged", "hipMallocAsync",
                           "hipMallocFromPoolAsync", "hipMallocPitch", "hipGetProcAddress"})
    print_resolution(g_hip, name);
  if (auto f = sym<hipError_t (*)(void**, size_t)>(g_hip, "hipMalloc"))
    hip_alloc_cases("hipMalloc", "hipFree", [&](void** p, size_t n) { return f(p, n); });
  if (auto f = sym<hipError_t (*)(void**, size_t, unsigned)>(g_hip, "hipExtMallocWithFlags"))
    hip_alloc_cases("hipExtMallocWithFlags", "hipFree", [&](void** p, size_t n) { return f(p, n, 0); });
  if (auto f = sym<hipError_t (*)(void**, size_t, unsigned)>(g_hip, "hipMallocManaged"))
    hip_alloc_cases("hipMallocManaged", "hipFree", [&](void** p, size_t n) { return f(p, n, 1); });
  if (auto f = sym<hipError_t (*)(void**, size_t, hipStream_t)>(g_hip, "hipMallocAsync"))
    hip_alloc_cases("hipMallocAsync", "hipFreeAsync", [&](void** p, size_t n) { return f(p, n, nullptr); });
  hipMemPool_t pool = nullptr;
  if (auto getpool = sym<hipError_t (*)(hipMemPool_t*, int)>(g_hip, "hipDeviceGetDefaultMemPool")) getpool(&pool, 0);
  if (auto f = sym<hipError_t (*)(void**, size_t, hipMemPool_t, hipStream_t)>(g_hip, "hipMallocFromPoolAsync"))
    hip_alloc_cases("hipMallocFromPoolAsync", "hipFreeAsync",
                    [&](void** p, size_t n) { return f(p, n, pool, nullptr); });
  if (auto f = sym<hipError_t (*)(void**, size_t*, size_t, size_t)>(g_hip, "hipMallocPitch")) {
    size_t pitch = kMarker;
    void* p = reinterpret_cast<void*>(kMarker);
    CALL("hipMallocPitch", "ok", uintptr_t(p), f(&p, &pitch, 1000, 64), last_hip());
    printf("hipMallocPitch ok pitch=%zu\n", pitch);
    void* keep = p;
    CALL("hipMallocPitch", "null_pitch", uintptr_t(p), f(&p, nullptr, 1000, 64), last_hip());
    CALL("hipMallocPitch", "null_out", pitch, f(nullptr, &pitch, 1000, 64), last_hip());
    void* o = reinterpret_cast<void*>(kMarker);
    CALL("hipMallocPitch", "oom", uintptr_t(o), f(&o, &pitch, 1 << 20, 1 << 20), last_hip());
    hip_free_cases("hipFree", keep);
  }
  // VMM
  for (const char* name : {"hipMemCreate", "hipMemRelease", "hipMemMap", "hipMemUnmap"}) print_resolution(g_hip, name);
  auto create = sym<hipError_t (*)(hipMemGenericAllocationHandle_t*, size_t, const hipMemAllocationProp*,
                                   unsigned long long)>(g_hip, "hipMemCreate");
  auto release = sym<hipError_t (*)(hipMemGenericAllocationHandle_t)>(g_hip, "hipMemRelease");
  auto map = sym<hipError_t (*)(void*, size_t, size_t, hipMemGenericAllocationHandle_t, unsigned long long)>(
      g_hip, "hipMemMap");
  auto unmap = sym<hipError_t (*)(void*, size_t)>(g_hip, "hipMemUnmap");
  auto reserve = sym<hipError_t (*)(void**, size_t, size_t, void*, unsigned long long)>(g_hip, "hipMemAddressReserve");
  if (create && release && map && unmap && reserve) {
    hipMemAllocationProp prop;
    std::memset(&prop, 0, sizeof prop);
    prop.type = hipMemAllocationTypePinned;
    prop.location.type = hipMemLocationTypeDevice;
    prop.location.id = 0;
    const size_t g = 2 << 20;
    hipMemGenericAllocationHandle_t h = reinterpret_cast<hipMemGenericAllocationHandle_t>(kMarker);
    CALL("hipMemCreate", "ok", uintptr_t(h), create(&h, g, &prop, 0), last_hip());
    auto keep = h;
    h = reinterpret_cast<hipMemGenericAllocationHandle_t>(kMarker);
    CALL("hipMemCreate", "size0", uintptr_t(h), create(&h, 0, &prop, 0), last_hip());
    CALL("hipMemCreate", "null_out", 0, create(nullptr, g, &prop, 0), last_hip());
    h = reinterpret_cast<hipMemGenericAllocationHandle_t>(kMarker);
    CALL("hipMemCreate", "oom", uintptr_t(h), create(&h, kHuge, &prop, 0), last_hip());
    void* va = nullptr;
    reserve(&va, 4 * g, 0, nullptr, 0);
    CALL("hipMemMap", "ok", 0, map(va, g, 0, keep, 0), last_hip());
    CALL("hipMemMap", "unknown_handle", 0,
         map(static_cast<char*>(va) + g, g, 0, reinterpret_cast<hipMemGenericAllocationHandle_t>(0x999), 0),
         last_hip());
    CALL("hipMemUnmap", "ok", 0, unmap(va, g), last_hip());
    CALL("hipMemUnmap", "again", 0, unmap(va, g), last_hip());
    CALL("hipMemRelease", "ok", 0, release(keep), last_hip());
    CALL("hipMemRelease", "double", 0, release(keep), last_hip());
    CALL("hipMemRelease", "unknown", 0, release(reinterpret_cast<hipMemGenericAllocationHandle_t>(0x999)), last_hip());
  }
  using Gpa = hipError_t (*)(const char*, void**, int, uint64_t, int*);
  if (auto gpa = sym<Gpa>(g_hip, "hipGetProcAddress")) {
    for (const char* name : {"hipMalloc", "hipFree", "hipNoSuchFunction", "hipMemCreate"}) {
      void* pfn = reinterpret_cast<void*>(kMarker);
      int st = 77;
      errno = 4242;
      int rc = int(gpa(name, &pfn, 60200000, 0, &st));
      int e = errno;
      printf("hipGetProcAddress %s rc=%d pfn=%s status=%d errno=%d\n", name, rc,
             pfn == reinterpret_cast<void*>(kMarker) ? "untouched" : pfn ? "set" : "null", st, e);
    }
    CALL("hipGetProcAddress", "null_pfn", 0, gpa("hipMalloc", nullptr, 60200000, 0, nullptr), last_hip());
    void* pa = nullptr;
    void* pf = nullptr;
    gpa("hipMalloc", &pa, 60200000, 0, nullptr);
    gpa("hipFree", &pf, 60200000, 0, nullptr);
    if (pa && pf) {
      auto a = reinterpret_cast<hipError_t (*)(void**, size_t)>(pa);
      auto f = reinterpret_cast<hipError_t (*)(void*)>(pf);
      void* p = reinterpret_cast<void*>(kMarker);
      CALL("hip_pfn", "alloc", uintptr_t(p), a(&p, kSmall), last_hip());
      void* o = reinterpret_cast<void*>(kMarker);
      CALL("hip_pfn", "oom", uintptr_t(o), a(&o, kHuge), last_hip());
      CALL("hip_pfn", "free", 0, f(p), last_hip());
      CALL("hip_pfn", "double_free", 0, f(p), last_hip());
    }
  }
  resets();
}

}  // namespace

void fidelity_hip() { hip(); }
