// static_rt_path: reaches the driver the way NVIDIA's STATIC runtime does
// (nvcc's default, CuPy, static cudart copies inside cuBLAS/cuDNN/NCCL).
// Links nothing GPU-related.
//
//   static_rt_path [api] [chunk_bytes]
//     api: cuMemAlloc (default; ("cuMemAlloc", 3020, 0) = cuMemAlloc_v2) |
//          cuMemAllocAsync (("cuMemAllocAsync", 11020, 2) = per-thread _ptsz) |
//          cuMemAllocFromPoolAsync (("cuMemAllocFromPoolAsync", 11020, 0))
//     chunk_bytes: default 67108864 (64 MiB)
//
// Sequence:
//   dlopen("libcuda.so.1"), dlsym(h, "cuGetProcAddress_v2"),
//   cuGetProcAddress_v2("cuGetProcAddress", &gpa, 12000, 0, &st), then through
//   gpa: cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain, cuCtxSetCurrent,
//   ("cuMemAlloc", 3020, 0), ("cuMemFree", 3020, 0), ("cuMemAllocAsync", 11020, 2),
//   ("cuMemFreeAsync", 11020, 2), ("cuMemAllocFromPoolAsync", 11020, 0),
//   ("cuDeviceGetDefaultMemPool", 11020, 0), ("cuMemGetInfo", 3020, 0).
//   Legacy ABI probe: ("cuMemAlloc", 2000, 0) called once with a 32-bit
//   out-param (4096 bytes), freed again with ("cuMemFree", 2000, 0).
//   Unknown symbol probe: ("cuFakeSymbolThatDoesNotExist", 12000, 0).
//   v1 cuGetProcAddress: ("cuGetProcAddress", 11030, 0), used to look up and
//   call ("cuMemGetInfo", 3020, 0).
//   Then allocates until OOM through the pointers (frees #1 and #3 after the
//   4th chunk with cuMemFree or the per-thread cuMemFreeAsync).
//
// Extra output lines:
//   PROC symbol=<name> version=<v> flags=<f> rc=<rc> status=<st> pfn=<set|null>
//   PROCV1 symbol=<name> version=<v> flags=<f> rc=<rc> pfn=<set|null>
//   V1ALLOC ptr=0x<hex32> size=4096 rc=<rc>
//   V1FREE ptr=0x<hex32> rc=<rc>
//   MEMINFO source=<v1gpa|final> free=<b> total=<b> rc=<rc>
#include <cuda.h>  // types and enums only; nothing is linked
#include <dlfcn.h>

#include "prog_common.h"

namespace {

using PFN_gpa_v2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using PFN_gpa_v1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using PFN_init = CUresult (*)(unsigned int);
using PFN_deviceGet = CUresult (*)(CUdevice*, int);
using PFN_primaryRetain = CUresult (*)(CUcontext*, CUdevice);
using PFN_ctxSetCurrent = CUresult (*)(CUcontext);
using PFN_alloc = CUresult (*)(CUdeviceptr*, size_t);
using PFN_free = CUresult (*)(CUdeviceptr);
using PFN_allocAsync = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using PFN_freeAsync = CUresult (*)(CUdeviceptr, CUstream);
using PFN_allocFromPool = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
using PFN_defaultPool = CUresult (*)(CUmemoryPool*, CUdevice);
using PFN_memGetInfo = CUresult (*)(size_t*, size_t*);
using PFN_alloc_v1 = CUresult (*)(unsigned int*, unsigned int);  // CUdeviceptr_v1 is a 32-bit unsigned int
using PFN_free_v1 = CUresult (*)(unsigned int);

struct Entry {
  PFN_gpa_v2 gpa = nullptr;
  PFN_alloc cuMemAlloc = nullptr;
  PFN_free cuMemFree = nullptr;
  PFN_allocAsync cuMemAllocAsync = nullptr;  // per-thread variant
  PFN_freeAsync cuMemFreeAsync = nullptr;    // per-thread variant
  PFN_allocFromPool cuMemAllocFromPoolAsync = nullptr;
  PFN_defaultPool cuDeviceGetDefaultMemPool = nullptr;
  PFN_memGetInfo cuMemGetInfo = nullptr;
} g;

enum Api { kAlloc, kAsync, kFromPool };
const char* const kApiNames[] = {"cuMemAlloc", "cuMemAllocAsync", "cuMemAllocFromPoolAsync"};

LiveSet g_live;
CUmemoryPool g_pool = nullptr;

void* lookup(const char* name, int version, cuuint64_t flags, bool required) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r = g.gpa(name, &p, version, flags, &st);
  printf("PROC symbol=%s version=%d flags=%d rc=%d status=%d pfn=%s\n", name, version, static_cast<int>(flags),
         static_cast<int>(r), static_cast<int>(st), p ? "set" : "null");
  if (required && (r != CUDA_SUCCESS || p == nullptr)) prog_fail(name, r);
  return p;
}

}  // namespace

extern "C" PROG_NOINLINE void resolve_driver_entry_points_procaddr() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    printf("ERROR dlopen libcuda.so.1: %s rc=35\n", dlerror());
    exit(1);
  }
  auto entry = reinterpret_cast<PFN_gpa_v2>(dlsym(h, "cuGetProcAddress_v2"));
  if (entry == nullptr) prog_fail("dlsym cuGetProcAddress_v2", 0);
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = entry("cuGetProcAddress", &p, 12000, 0, &st);
  printf("PROC symbol=cuGetProcAddress version=12000 flags=0 rc=%d status=%d pfn=%s\n", static_cast<int>(r),
         static_cast<int>(st), p ? "set" : "null");
  if (r != CUDA_SUCCESS || p == nullptr) prog_fail("cuGetProcAddress", r);
  g.gpa = reinterpret_cast<PFN_gpa_v2>(p);

  auto init = reinterpret_cast<PFN_init>(lookup("cuInit", 2000, 0, true));
  auto device_get = reinterpret_cast<PFN_deviceGet>(lookup("cuDeviceGet", 2000, 0, true));
  auto retain = reinterpret_cast<PFN_primaryRetain>(lookup("cuDevicePrimaryCtxRetain", 7000, 0, true));
  auto set_current = reinterpret_cast<PFN_ctxSetCurrent>(lookup("cuCtxSetCurrent", 4000, 0, true));
  g.cuMemAlloc = reinterpret_cast<PFN_alloc>(lookup("cuMemAlloc", 3020, 0, true));
  g.cuMemFree = reinterpret_cast<PFN_free>(lookup("cuMemFree", 3020, 0, true));
  g.cuMemAllocAsync = reinterpret_cast<PFN_allocAsync>(
      lookup("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, true));
  g.cuMemFreeAsync = reinterpret_cast<PFN_freeAsync>(
      lookup("cuMemFreeAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, true));
  g.cuMemAllocFromPoolAsync = reinterpret_cast<PFN_allocFromPool>(lookup("cuMemAllocFromPoolAsync", 11020, 0, true));
  g.cuDeviceGetDefaultMemPool =
      reinterpret_cast<PFN_defaultPool>(lookup("cuDeviceGetDefaultMemPool", 11020, 0, true));
  g.cuMemGetInfo = reinterpret_cast<PFN_memGetInfo>(lookup("cuMemGetInfo", 3020, 0, true));

  if ((r = init(0)) != CUDA_SUCCESS) prog_fail("cuInit", r);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if ((r = device_get(&dev, 0)) != CUDA_SUCCESS) prog_fail("cuDeviceGet", r);
  if ((r = retain(&ctx, dev)) != CUDA_SUCCESS) prog_fail("cuDevicePrimaryCtxRetain", r);
  if ((r = set_current(ctx)) != CUDA_SUCCESS) prog_fail("cuCtxSetCurrent", r);
  if ((r = g.cuDeviceGetDefaultMemPool(&g_pool, dev)) != CUDA_SUCCESS) prog_fail("cuDeviceGetDefaultMemPool", r);
}

// An older-ABI caller: the 32-bit cuMemAlloc, as a CUDA < 3.2 binary would get it.
extern "C" PROG_NOINLINE void probe_legacy_v1_alloc() {
  auto alloc_v1 = reinterpret_cast<PFN_alloc_v1>(lookup("cuMemAlloc", 2000, 0, true));
  auto free_v1 = reinterpret_cast<PFN_free_v1>(lookup("cuMemFree", 2000, 0, true));
  unsigned int p32 = 0;
  CUresult r = alloc_v1(&p32, 4096);
  printf("V1ALLOC ptr=0x%08x size=4096 rc=%d\n", p32, static_cast<int>(r));
  if (r != CUDA_SUCCESS || p32 == 0) prog_fail("cuMemAlloc v1", r);
  r = free_v1(p32);
  printf("V1FREE ptr=0x%08x rc=%d\n", p32, static_cast<int>(r));
  if (r != CUDA_SUCCESS) prog_fail("cuMemFree v1", r);
}

extern "C" PROG_NOINLINE void probe_unknown_and_v1_gpa() {
  void* p = lookup("cuFakeSymbolThatDoesNotExist", 12000, 0, false);
  if (p != nullptr) prog_fail("unknown symbol resolved", 0);

  auto gpa_v1 = reinterpret_cast<PFN_gpa_v1>(lookup("cuGetProcAddress", 11030, 0, true));
  void* q = nullptr;
  CUresult r = gpa_v1("cuMemGetInfo", &q, 3020, 0);
  printf("PROCV1 symbol=cuMemGetInfo version=3020 flags=0 rc=%d pfn=%s\n", static_cast<int>(r), q ? "set" : "null");
  if (r != CUDA_SUCCESS || q == nullptr) prog_fail("cuGetProcAddress v1", r);
  size_t free_b = 0, total_b = 0;
  r = reinterpret_cast<PFN_memGetInfo>(q)(&free_b, &total_b);
  printf("MEMINFO source=v1gpa free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(r));
}

extern "C" PROG_NOINLINE CUresult allocate_weights_procaddr(int api, uint64_t chunk, CUdeviceptr* out) {
  *out = 0;
  switch (api) {
    case kAlloc: return g.cuMemAlloc(out, chunk);
    case kAsync: return g.cuMemAllocAsync(out, chunk, nullptr);
    case kFromPool: return g.cuMemAllocFromPoolAsync(out, chunk, g_pool, nullptr);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

extern "C" PROG_NOINLINE void release_some_procaddr(int api) {
  const bool async = api != kAlloc;
  for (size_t idx : {size_t{3}, size_t{1}}) {
    if (idx >= g_live.items.size()) continue;
    LiveAlloc a = g_live.take(idx);
    const CUresult r = async ? g.cuMemFreeAsync(a.ptr, nullptr) : g.cuMemFree(a.ptr);
    prog_print_free(async ? "cuMemFreeAsync" : "cuMemFree", a.ptr, a.size, r);
    if (r != CUDA_SUCCESS) prog_fail("free", r);
  }
}

extern "C" PROG_NOINLINE CUresult grow_activations_procaddr(int api, uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    CUdeviceptr p = 0;
    const CUresult r = allocate_weights_procaddr(api, chunk, &p);
    if (r != CUDA_SUCCESS) {
      prog_print_oom(kApiNames[api], chunk, r, r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "?",
                     g_live);
      return r;
    }
    g_live.add(p, chunk);
    prog_print_alloc(kApiNames[api], p, chunk);
    if (i == 3) release_some_procaddr(api);
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "cuMemAlloc";
  const uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  int api = -1;
  for (int i = 0; i < 3; ++i)
    if (strcmp(api_name, kApiNames[i]) == 0) api = i;
  if (api < 0) {
    fprintf(stderr, "usage: static_rt_path [cuMemAlloc|cuMemAllocAsync|cuMemAllocFromPoolAsync] [chunk_bytes]\n");
    return 2;
  }
  printf("START prog=static_rt_path api=%s chunk=%" PRIu64 "\n", kApiNames[api], chunk);
  resolve_driver_entry_points_procaddr();
  probe_legacy_v1_alloc();
  probe_unknown_and_v1_gpa();
  const CUresult r = grow_activations_procaddr(api, chunk);
  if (r != CUDA_ERROR_OUT_OF_MEMORY) prog_fail("unexpected allocation error", r);
  size_t free_b = 0, total_b = 0;
  const CUresult m = g.cuMemGetInfo(&free_b, &total_b);
  printf("MEMINFO source=final free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(m));
  prog_print_done(g_live);
  return 0;
}
