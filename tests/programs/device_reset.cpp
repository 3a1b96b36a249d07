// device_reset: a CUDA program that destroys a device's primary context while
// it holds memory, then allocates until out-of-memory (linked against the
// fake libcudart and libcuda).
//
//   device_reset <mode> [chunk_bytes]
//     cudaDeviceReset              cudaMalloc x2, cudaMallocAsync, cudaMallocManaged,
//                                  then cudaDeviceReset; then cudaMalloc until OOM
//     cuDevicePrimaryCtxReset_v2   retain the primary context; cuMemAlloc_v2 x2 and a
//                                  VMM handle mapped into a reservation (cuMemCreate +
//                                  cuMemMap), then cuDevicePrimaryCtxReset_v2; then
//                                  cuMemAlloc_v2 until OOM
//     cuDevicePrimaryCtxRelease_v2 retain once, cuMemAlloc_v2 x2, release (the last
//                                  reference: the context is destroyed), retain again;
//                                  then cuMemAlloc_v2 until OOM
//     release_kept                 retain twice, cuMemAlloc_v2 x2, release once (a
//                                  reference is left: nothing is freed); then until OOM
//     procaddr_reset               as cuDevicePrimaryCtxReset_v2, with the reset taken
//                                  from cuGetProcAddress("cuDevicePrimaryCtxReset",
//                                  12000) as NVIDIA's static runtime takes entry points
//     dlsym_v1_reset               as cuDevicePrimaryCtxReset_v2, with the pre-CUDA-11
//                                  ABI cuDevicePrimaryCtxReset taken with dlsym
//     cuCtxDestroy_v2              retain the primary context and cuMemAlloc_v2 once in it
//                                  (KEEP line: it outlives what follows); cuCtxCreate_v2 (a
//                                  context of our own, pushed current), cuMemAlloc_v2 x2
//                                  in it, then cuCtxDestroy_v2 (frees those two only, and
//                                  pops it: the primary is current again); then
//                                  cuMemAlloc_v2 until OOM
//     procaddr_ctx_destroy         as cuCtxDestroy_v2, with the destroy taken from
//                                  cuGetProcAddress("cuCtxDestroy", 12000)
//     exit_release                 retain once, cuMemAlloc_v2 x2, then return from main
//                                  with no OOM; an atexit handler releases the last
//                                  reference (a runtime tearing its context down while
//                                  the process exits): prints EXIT live_count=2 ...
//
// What a destroyed context frees is printed as FREE lines with the resetting
// call as api (the memory is gone from the driver's ledger), then
//   RESET api=<call> rc=<rc> released=<n> bytes=<b>
// The rest of the output follows prog_common.h; the ledger at exit equals the
// live set at the OOM.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "prog_common.h"

// CUDA 13's cuda.h maps cuCtxCreate to cuCtxCreate_v4 and no longer declares
// _v2; a program built against CUDA 11 or 12 (PyCUDA's wheels) calls _v2.
extern "C" CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);

namespace {

LiveSet g_live;
CUdevice g_dev = 0;
CUcontext g_ctx = nullptr;

void check(const char* what, int rc) {
  if (rc != 0) prog_fail(what, rc);
}

// Everything live is gone with the context: FREE lines, then the RESET line.
void print_released(const char* api, int rc) {
  const size_t n = g_live.items.size();
  const uint64_t bytes = g_live.bytes;
  while (!g_live.items.empty()) {
    const LiveAlloc a = g_live.take(0);
    prog_print_free(api, a.ptr, a.size, rc);
  }
  printf("RESET api=%s rc=%d released=%zu bytes=%" PRIu64 "\n", api, rc, n, bytes);
}

// At exit, as a runtime or a library's destructor does: the last reference
// goes, and the context with it.
void release_at_exit() {
  const CUresult rc = cuDevicePrimaryCtxRelease(g_dev);
  printf("EXITRELEASE rc=%d\n", int(rc));
}

void retain_primary() {
  check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&g_ctx, g_dev));
  check("cuCtxSetCurrent", cuCtxSetCurrent(g_ctx));
}

}  // namespace

extern "C" PROG_NOINLINE void hold_runtime_memory(uint64_t chunk) {
  cudaStream_t stream = nullptr;
  check("cudaStreamCreate", cudaStreamCreate(&stream));
  void* p = nullptr;
  for (int i = 0; i < 2; ++i) {
    check("cudaMalloc", cudaMalloc(&p, chunk));
    g_live.add(reinterpret_cast<uintptr_t>(p), chunk);
    prog_print_alloc("cudaMalloc", reinterpret_cast<uintptr_t>(p), chunk);
  }
  check("cudaMallocAsync", cudaMallocAsync(&p, chunk, stream));
  g_live.add(reinterpret_cast<uintptr_t>(p), chunk);
  prog_print_alloc("cudaMallocAsync", reinterpret_cast<uintptr_t>(p), chunk);
  check("cudaMallocManaged", cudaMallocManaged(&p, chunk, cudaMemAttachGlobal));
  g_live.add(reinterpret_cast<uintptr_t>(p), chunk);
  prog_print_alloc("cudaMallocManaged", reinterpret_cast<uintptr_t>(p), chunk);
}

extern "C" PROG_NOINLINE void hold_driver_memory(uint64_t chunk, bool vmm) {
  for (int i = 0; i < 2; ++i) {
    CUdeviceptr p = 0;
    check("cuMemAlloc_v2", cuMemAlloc(&p, chunk));
    g_live.add(p, chunk);
    prog_print_alloc("cuMemAlloc_v2", p, chunk);
  }
  if (!vmm) return;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = int(g_dev);
  size_t gran = 0;
  check("cuMemGetAllocationGranularity",
        cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  const uint64_t size = (chunk + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h = 0;
  check("cuMemCreate", cuMemCreate(&h, size, &prop, 0));
  g_live.add(h, size);
  prog_print_alloc("cuMemCreate", h, size);
  CUdeviceptr va = 0;
  check("cuMemAddressReserve", cuMemAddressReserve(&va, size, 0, 0, 0));
  check("cuMemMap", cuMemMap(va, size, 0, h, 0));
  printf("MAP va=0x%llx handle=0x%llx size=%" PRIu64 " rc=0\n", static_cast<unsigned long long>(va),
         static_cast<unsigned long long>(h), size);
}

// The reset as the chosen mode reaches it.
extern "C" PROG_NOINLINE int destroy_primary_context(const char* mode) {
  if (strcmp(mode, "procaddr_reset") == 0) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    check("cuGetProcAddress", cuGetProcAddress("cuDevicePrimaryCtxReset", &fn, 12000, 0, &st));
    return reinterpret_cast<CUresult (*)(CUdevice)>(fn)(g_dev);
  }
  if (strcmp(mode, "dlsym_v1_reset") == 0) {
    void* fn = dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxReset");
    if (fn == nullptr) prog_fail("dlsym cuDevicePrimaryCtxReset", 0);
    return reinterpret_cast<CUresult (*)(CUdevice)>(fn)(g_dev);
  }
  return cuDevicePrimaryCtxReset(g_dev);
}

// A context of our own, as PyCUDA's make_context and cuda-python programs
// make one: what is allocated in it goes with it; the primary context's
// allocation (KEEP) stays.
extern "C" PROG_NOINLINE int destroy_created_context(const char* mode, uint64_t chunk) {
  CUdeviceptr kept = 0;
  check("cuMemAlloc_v2", cuMemAlloc(&kept, chunk));
  prog_print_alloc("cuMemAlloc_v2", kept, chunk);
  printf("KEEP ptr=0x%llx size=%" PRIu64 "\n", static_cast<unsigned long long>(kept), chunk);
  CUcontext ctx = nullptr;
  check("cuCtxCreate_v2", cuCtxCreate_v2(&ctx, 0, g_dev));
  hold_driver_memory(chunk, false);
  CUresult rc;
  if (strcmp(mode, "procaddr_ctx_destroy") == 0) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    check("cuGetProcAddress", cuGetProcAddress("cuCtxDestroy", &fn, 12000, 0, &st));
    rc = reinterpret_cast<CUresult (*)(CUcontext)>(fn)(ctx);
  } else {
    rc = cuCtxDestroy(ctx);
  }
  print_released("cuCtxDestroy_v2", rc);
  g_live.add(kept, chunk);
  return rc;
}

extern "C" PROG_NOINLINE int grow_until_oom(bool runtime, uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    if (runtime) {
      void* p = nullptr;
      const cudaError_t e = cudaMalloc(&p, chunk);
      if (e != cudaSuccess) {
        prog_print_oom("cudaMalloc", chunk, e, cudaGetErrorName(e), g_live);
        return e;
      }
      g_live.add(reinterpret_cast<uintptr_t>(p), chunk);
      prog_print_alloc("cudaMalloc", reinterpret_cast<uintptr_t>(p), chunk);
    } else {
      CUdeviceptr p = 0;
      const CUresult e = cuMemAlloc(&p, chunk);
      if (e != CUDA_SUCCESS) {
        prog_print_oom("cuMemAlloc_v2", chunk, e, "CUDA_ERROR_OUT_OF_MEMORY", g_live);
        return e;
      }
      g_live.add(p, chunk);
      prog_print_alloc("cuMemAlloc_v2", p, chunk);
    }
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* mode = argc > 1 ? argv[1] : "cudaDeviceReset";
  const uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  printf("START prog=device_reset api=%s chunk=%" PRIu64 "\n", mode, chunk);
  const bool runtime = strcmp(mode, "cudaDeviceReset") == 0;
  if (runtime) {
    hold_runtime_memory(chunk);
    print_released("cudaDeviceReset", cudaDeviceReset());
  } else {
    check("cuInit", cuInit(0));
    check("cuDeviceGet", cuDeviceGet(&g_dev, 0));
    retain_primary();
    if (strcmp(mode, "cuDevicePrimaryCtxRelease_v2") == 0) {
      hold_driver_memory(chunk, false);
      const CUresult rc = cuDevicePrimaryCtxRelease(g_dev);
      print_released("cuDevicePrimaryCtxRelease_v2", rc);
      retain_primary();
    } else if (strcmp(mode, "exit_release") == 0) {
      hold_driver_memory(chunk, false);
      atexit(release_at_exit);
      prog_print_done(g_live);
      return 0;
    } else if (strcmp(mode, "cuCtxDestroy_v2") == 0 || strcmp(mode, "procaddr_ctx_destroy") == 0) {
      destroy_created_context(mode, chunk);
    } else if (strcmp(mode, "release_kept") == 0) {
      retain_primary();  // a second reference
      hold_driver_memory(chunk, false);
      check("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(g_dev));
      printf("RELEASE api=cuDevicePrimaryCtxRelease_v2 rc=0 kept=%zu\n", g_live.items.size());
    } else if (strcmp(mode, "cuDevicePrimaryCtxReset_v2") == 0 || strcmp(mode, "procaddr_reset") == 0 ||
               strcmp(mode, "dlsym_v1_reset") == 0) {
      hold_driver_memory(chunk, true);
      const int rc = destroy_primary_context(mode);
      print_released(strcmp(mode, "dlsym_v1_reset") == 0 ? "cuDevicePrimaryCtxReset" : "cuDevicePrimaryCtxReset_v2",
                     rc);
    } else {
      fprintf(stderr, "usage: device_reset <mode> [chunk_bytes] (see the source)\n");
      return 2;
    }
  }
  grow_until_oom(runtime, chunk);
  prog_print_done(g_live);
  return 0;
}
