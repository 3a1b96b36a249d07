// hip_procaddr: loads HIP by hand and resolves its entry points with HIP 6's
// hipGetProcAddress. Links nothing GPU-related; relies on RUNPATH (or
// LD_LIBRARY_PATH) to find the fake libamdhip64.so.
//
//   hip_procaddr [api] [chunk_bytes]
//     api: hipMalloc (the only one)
//     chunk_bytes: default 67108864 (64 MiB)
//
// dlopen("libamdhip64.so"), dlsym(h, "hipGetProcAddress"), then
// hipGetProcAddress("hipMalloc" / "hipFree" / "hipGetErrorName" /
// "hipMemGetInfo" / "hipRuntimeGetVersion", &p, 60200000, 0, &status) and an
// unknown symbol ("hipFakeSymbolThatDoesNotExist"). Allocates with the
// hipMalloc pointer until hipErrorOutOfMemory (frees #1 and #3 after the 4th).
// Extra output:
//   PROC symbol=<name> version=60200000 flags=0 rc=<rc> status=<st> pfn=<set|null>
#include <dlfcn.h>

#include <cstddef>

#include "prog_common.h"

namespace {

// HIP 6 declarations (not in the HIP 5.2 headers of this machine).
typedef int hipError_t;
enum { hipSuccess = 0, hipErrorOutOfMemory = 2 };
typedef enum hipDriverProcAddressQueryResult {
  HIP_GET_PROC_ADDRESS_SUCCESS = 0,
  HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} hipDriverProcAddressQueryResult;
using PFN_hipGetProcAddress = hipError_t (*)(const char*, void**, int, uint64_t, hipDriverProcAddressQueryResult*);
using PFN_hipMalloc = hipError_t (*)(void**, size_t);
using PFN_hipFree = hipError_t (*)(void*);
using PFN_hipGetErrorName = const char* (*)(hipError_t);
using PFN_hipMemGetInfo = hipError_t (*)(size_t*, size_t*);
using PFN_hipRuntimeGetVersion = hipError_t (*)(int*);

constexpr int kVersion = 60200000;

struct Hip {
  PFN_hipGetProcAddress gpa;
  PFN_hipMalloc hipMalloc;
  PFN_hipFree hipFree;
  PFN_hipGetErrorName hipGetErrorName;
  PFN_hipMemGetInfo hipMemGetInfo;
  PFN_hipRuntimeGetVersion hipRuntimeGetVersion;
} g;

LiveSet g_live;

void* lookup(const char* name, bool required) {
  void* p = nullptr;
  hipDriverProcAddressQueryResult st = HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const hipError_t e = g.gpa(name, &p, kVersion, 0, &st);
  printf("PROC symbol=%s version=%d flags=0 rc=%d status=%d pfn=%s\n", name, kVersion, e, static_cast<int>(st),
         p ? "set" : "null");
  if (required && (e != hipSuccess || p == nullptr)) prog_fail(name, e);
  return p;
}

}  // namespace

extern "C" PROG_NOINLINE void resolve_hip_entry_points() {
  void* h = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    printf("ERROR dlopen libamdhip64.so: %s rc=0\n", dlerror());
    exit(1);
  }
  g.gpa = reinterpret_cast<PFN_hipGetProcAddress>(dlsym(h, "hipGetProcAddress"));
  if (g.gpa == nullptr) prog_fail("dlsym hipGetProcAddress", 0);
  g.hipMalloc = reinterpret_cast<PFN_hipMalloc>(lookup("hipMalloc", true));
  g.hipFree = reinterpret_cast<PFN_hipFree>(lookup("hipFree", true));
  g.hipGetErrorName = reinterpret_cast<PFN_hipGetErrorName>(lookup("hipGetErrorName", true));
  g.hipMemGetInfo = reinterpret_cast<PFN_hipMemGetInfo>(lookup("hipMemGetInfo", true));
  g.hipRuntimeGetVersion = reinterpret_cast<PFN_hipRuntimeGetVersion>(lookup("hipRuntimeGetVersion", true));
  if (lookup("hipFakeSymbolThatDoesNotExist", false) != nullptr) prog_fail("unknown symbol resolved", 0);
}

extern "C" PROG_NOINLINE hipError_t allocate_weights_hip_procaddr(uint64_t chunk, void** out) {
  *out = nullptr;
  return g.hipMalloc(out, chunk);
}

extern "C" PROG_NOINLINE void release_some_hip_procaddr() {
  for (size_t idx : {size_t{3}, size_t{1}}) {
    if (idx >= g_live.items.size()) continue;
    LiveAlloc a = g_live.take(idx);
    const hipError_t e = g.hipFree(reinterpret_cast<void*>(static_cast<uintptr_t>(a.ptr)));
    prog_print_free("hipFree", a.ptr, a.size, e);
    if (e != hipSuccess) prog_fail("hipFree", e);
  }
}

extern "C" PROG_NOINLINE hipError_t grow_activations_hip_procaddr(uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    void* p = nullptr;
    const hipError_t e = allocate_weights_hip_procaddr(chunk, &p);
    if (e != hipSuccess) {
      prog_print_oom("hipMalloc", chunk, e, g.hipGetErrorName(e), g_live);
      return e;
    }
    g_live.add(reinterpret_cast<uintptr_t>(p), chunk);
    prog_print_alloc("hipMalloc", reinterpret_cast<uintptr_t>(p), chunk);
    if (i == 3) release_some_hip_procaddr();
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "hipMalloc";
  const uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  if (strcmp(api_name, "hipMalloc") != 0) {
    fprintf(stderr, "usage: hip_procaddr [hipMalloc] [chunk_bytes]\n");
    return 2;
  }
  printf("START prog=hip_procaddr api=hipMalloc chunk=%" PRIu64 "\n", chunk);
  resolve_hip_entry_points();
  int rt = 0;
  g.hipRuntimeGetVersion(&rt);
  printf("DEVICE runtime=%d\n", rt);
  const hipError_t e = grow_activations_hip_procaddr(chunk);
  if (e != hipErrorOutOfMemory) prog_fail("unexpected allocation error", e);
  size_t free_b = 0, total_b = 0;
  const hipError_t m = g.hipMemGetInfo(&free_b, &total_b);
  printf("MEMINFO free=%zu total=%zu rc=%d\n", free_b, total_b, m);
  prog_print_done(g_live);
  return 0;
}
