// drv_linked: a driver-API program linked against libcuda (-lcuda) that uses
// cuda.h normally, so cuMemAlloc is the cuMemAlloc_v2 macro, etc.
//
//   drv_linked [api] [chunk_bytes]
//     api: cuMemAlloc_v2 (default) | cuMemAllocPitch_v2 | cuMemAllocManaged |
//          cuMemAllocAsync | cuMemAllocFromPoolAsync | ptsz
//     chunk_bytes: default 67108864 (64 MiB)
//
// Allocates chunks with <api>; after the 4th chunk frees chunks #1 and #3
// (cuMemFree_v2, or cuMemFreeAsync for the async APIs) and keeps allocating
// until CUDA_ERROR_OUT_OF_MEMORY. cuMemAllocFromPoolAsync uses a pool made with
// cuMemPoolCreate on device 0. cuMemAllocPitch_v2 uses width=1000 bytes,
// height=chunk/1024 rows, element size 4 (ALLOC size = pitch*rows, OOM size =
// width*height).
//
// Mode `ptsz` runs code from drv_linked_ptsz.cpp, compiled with
// -DCUDA_API_PER_THREAD_DEFAULT_STREAM, which calls the exported
// cuMemAllocFromPoolAsync_ptsz (2 chunks from the default pool),
// cuMemFreeAsync_ptsz (frees the first) and then cuMemAllocAsync_ptsz until OOM.
#include <cuda.h>

#include "prog_common.h"

LiveSet g_live;  // shared with drv_linked_ptsz.cpp

extern "C" CUresult grow_activations_driver_ptsz(uint64_t chunk);  // drv_linked_ptsz.cpp

namespace {

enum Api { kAlloc, kPitch, kManaged, kAsync, kFromPool };
const char* const kApiNames[] = {"cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemAllocAsync",
                                 "cuMemAllocFromPoolAsync"};

CUstream g_stream = nullptr;
CUmemoryPool g_pool = nullptr;

const char* err_name(CUresult r) {
  const char* s = nullptr;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "?";
}

}  // namespace

// The single call site of every (non-ptsz) driver allocation API here.
extern "C" PROG_NOINLINE CUresult allocate_weights_driver(int api, uint64_t chunk, CUdeviceptr* out,
                                                          uint64_t* accounted) {
  *out = 0;
  *accounted = chunk;
  switch (api) {
    case kAlloc: return cuMemAlloc(out, chunk);
    case kPitch: {
      size_t pitch = 0;
      const size_t rows = chunk / 1024 ? chunk / 1024 : 1;
      const CUresult r = cuMemAllocPitch(out, &pitch, 1000, rows, 4);
      *accounted = static_cast<uint64_t>(pitch) * rows;
      return r;
    }
    case kManaged: return cuMemAllocManaged(out, chunk, CU_MEM_ATTACH_GLOBAL);
    case kAsync: return cuMemAllocAsync(out, chunk, g_stream);
    case kFromPool: return cuMemAllocFromPoolAsync(out, chunk, g_pool, g_stream);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

extern "C" PROG_NOINLINE void release_some_driver(int api) {
  const bool async = api == kAsync || api == kFromPool;
  for (size_t idx : {size_t{3}, size_t{1}}) {
    if (idx >= g_live.items.size()) continue;
    LiveAlloc a = g_live.take(idx);
    const CUresult r = async ? cuMemFreeAsync(a.ptr, g_stream) : cuMemFree(a.ptr);
    prog_print_free(async ? "cuMemFreeAsync" : "cuMemFree_v2", a.ptr, a.size, r);
    if (r != CUDA_SUCCESS) prog_fail("free", r);
  }
}

extern "C" PROG_NOINLINE CUresult grow_activations_driver(int api, uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    CUdeviceptr p = 0;
    uint64_t accounted = 0;
    const CUresult r = allocate_weights_driver(api, chunk, &p, &accounted);
    if (r != CUDA_SUCCESS) {
      const uint64_t logical = api == kPitch ? 1000ull * (chunk / 1024 ? chunk / 1024 : 1) : chunk;
      prog_print_oom(kApiNames[api], logical, r, err_name(r), g_live);
      return r;
    }
    g_live.add(p, accounted);
    prog_print_alloc(kApiNames[api], p, accounted);
    if (i == 3) release_some_driver(api);
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "cuMemAlloc_v2";
  const uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  int api = -1;
  const bool ptsz = strcmp(api_name, "ptsz") == 0;
  for (int i = 0; i < 5; ++i)
    if (strcmp(api_name, kApiNames[i]) == 0) api = i;
  if (strcmp(api_name, "cuMemAlloc") == 0) api = kAlloc;
  if (strcmp(api_name, "cuMemAllocPitch") == 0) api = kPitch;
  if (api < 0 && !ptsz) {
    fprintf(stderr, "usage: drv_linked [cuMemAlloc_v2|cuMemAllocPitch_v2|cuMemAllocManaged|cuMemAllocAsync|"
                    "cuMemAllocFromPoolAsync|ptsz] [chunk_bytes]\n");
    return 2;
  }
  printf("START prog=drv_linked api=%s chunk=%" PRIu64 "\n", ptsz ? "ptsz" : kApiNames[api], chunk);

  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) prog_fail("cuInit", r);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) prog_fail("cuDeviceGet", r);
  if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) prog_fail("cuDevicePrimaryCtxRetain", r);
  if ((r = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) prog_fail("cuCtxSetCurrent", r);
  char name[64] = {0};
  size_t total = 0;
  int version = 0;
  cuDeviceGetName(name, sizeof name, dev);
  cuDeviceTotalMem(&total, dev);
  cuDriverGetVersion(&version);
  printf("DEVICE index=0 name=\"%s\" total=%zu driver=%d\n", name, total, version);

  if (ptsz) {
    r = grow_activations_driver_ptsz(chunk);
  } else {
    if ((r = cuStreamCreate(&g_stream, CU_STREAM_DEFAULT)) != CUDA_SUCCESS) prog_fail("cuStreamCreate", r);
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    if ((r = cuMemPoolCreate(&g_pool, &props)) != CUDA_SUCCESS) prog_fail("cuMemPoolCreate", r);
    r = grow_activations_driver(api, chunk);
  }
  if (r != CUDA_ERROR_OUT_OF_MEMORY) prog_fail("unexpected allocation error", r);

  size_t free_b = 0, total_b = 0;
  r = cuMemGetInfo(&free_b, &total_b);
  printf("MEMINFO free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(r));
  cuCtxSynchronize();
  prog_print_done(g_live);
  return 0;
}
