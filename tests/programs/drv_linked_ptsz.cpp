// Second translation unit of drv_linked, compiled with
// -DCUDA_API_PER_THREAD_DEFAULT_STREAM: here cuda.h maps cuMemAllocAsync,
// cuMemFreeAsync and cuMemAllocFromPoolAsync to their exported _ptsz symbols.
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "drv_linked_ptsz.cpp must be compiled with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif
#include <cuda.h>

#include "prog_common.h"

extern LiveSet g_live;

namespace {
const char* err_name(CUresult r) {
  const char* s = nullptr;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "?";
}
}  // namespace

extern "C" PROG_NOINLINE CUresult allocate_weights_driver_ptsz(bool from_pool, CUmemoryPool pool, uint64_t chunk,
                                                               CUdeviceptr* out) {
  // Per-thread default stream (stream 0 under per-thread semantics).
  if (from_pool) return cuMemAllocFromPoolAsync(out, chunk, pool, nullptr);  // -> cuMemAllocFromPoolAsync_ptsz
  return cuMemAllocAsync(out, chunk, nullptr);                                 // -> cuMemAllocAsync_ptsz
}

extern "C" PROG_NOINLINE CUresult grow_activations_driver_ptsz(uint64_t chunk) {
  CUmemoryPool pool = nullptr;
  CUresult r = cuDeviceGetDefaultMemPool(&pool, 0);
  if (r != CUDA_SUCCESS) prog_fail("cuDeviceGetDefaultMemPool", r);

  for (int i = 0; i < 2; ++i) {
    CUdeviceptr p = 0;
    r = allocate_weights_driver_ptsz(true, pool, chunk, &p);
    if (r != CUDA_SUCCESS) {
      prog_print_oom("cuMemAllocFromPoolAsync_ptsz", chunk, r, err_name(r), g_live);
      return r;
    }
    g_live.add(p, chunk);
    prog_print_alloc("cuMemAllocFromPoolAsync_ptsz", p, chunk);
  }
  LiveAlloc first = g_live.take(0);
  r = cuMemFreeAsync(first.ptr, nullptr);  // -> cuMemFreeAsync_ptsz
  prog_print_free("cuMemFreeAsync_ptsz", first.ptr, first.size, r);
  if (r != CUDA_SUCCESS) prog_fail("cuMemFreeAsync_ptsz", r);

  for (int i = 0; i < kMaxIterations; ++i) {
    CUdeviceptr p = 0;
    r = allocate_weights_driver_ptsz(false, nullptr, chunk, &p);
    if (r != CUDA_SUCCESS) {
      prog_print_oom("cuMemAllocAsync_ptsz", chunk, r, err_name(r), g_live);
      return r;
    }
    g_live.add(p, chunk);
    prog_print_alloc("cuMemAllocAsync_ptsz", p, chunk);
  }
  prog_fail("no out-of-memory reached", 0);
}
