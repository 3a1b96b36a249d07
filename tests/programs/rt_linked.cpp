// rt_linked: a CUDA program linked against the shared runtime (-lcudart).
//
//   rt_linked [api] [chunk_bytes]
//     api: cudaMalloc (default) | cudaMallocAsync | cudaMallocFromPoolAsync |
//          cudaMallocManaged | cudaMallocPitch | cudaMalloc3D
//     chunk_bytes: default 67108864 (64 MiB)
//
// Allocates 1 MiB of pinned host memory with cudaMallocHost and cudaHostAlloc
// first (frees the cudaHostAlloc one), then allocates chunks with <api>; after
// the 4th chunk it frees chunks #1 and #3 (cudaFree, or cudaFreeAsync for the
// async APIs) and keeps allocating until the allocation fails with
// cudaErrorMemoryAllocation. Exits 0 without freeing what is live.
//
// Pitched APIs: cudaMallocPitch uses width=1000 bytes, height=chunk/1024 rows;
// cudaMalloc3D uses width=1000, height=16, depth=chunk/16384. ALLOC size is
// pitch*rows (what the driver accounts); OOM size is the logical
// width*height[*depth].
#include <cuda_runtime_api.h>

#include "prog_common.h"

namespace {

enum Api { kMalloc, kMallocAsync, kMallocFromPoolAsync, kMallocManaged, kMallocPitch, kMalloc3D };

const char* const kApiNames[] = {"cudaMalloc",        "cudaMallocAsync", "cudaMallocFromPoolAsync",
                                 "cudaMallocManaged", "cudaMallocPitch", "cudaMalloc3D"};

LiveSet g_live;
cudaStream_t g_stream = nullptr;
cudaMemPool_t g_pool = nullptr;

struct Request {
  uint64_t logical;  // size as the API call sees it
  size_t width, height, depth;
};

Request make_request(Api api, uint64_t chunk) {
  Request r{chunk, 0, 0, 0};
  if (api == kMallocPitch) {
    r.width = 1000;
    r.height = chunk / 1024 ? chunk / 1024 : 1;
    r.logical = static_cast<uint64_t>(r.width) * r.height;
  } else if (api == kMalloc3D) {
    r.width = 1000;
    r.height = 16;
    r.depth = chunk / 16384 ? chunk / 16384 : 1;
    r.logical = static_cast<uint64_t>(r.width) * r.height * r.depth;
  }
  return r;
}

}  // namespace

// Host staging buffers: pinned host memory, never device memory.
extern "C" PROG_NOINLINE void reserve_pinned_staging_runtime() {
  void* h1 = nullptr;
  void* h2 = nullptr;
  cudaError_t e = cudaMallocHost(&h1, 1 << 20);
  printf("HOST api=cudaMallocHost ptr=%p size=%d rc=%d\n", h1, 1 << 20, static_cast<int>(e));
  if (e != cudaSuccess) prog_fail("cudaMallocHost", e);
  e = cudaHostAlloc(&h2, 1 << 20, cudaHostAllocDefault);
  printf("HOST api=cudaHostAlloc ptr=%p size=%d rc=%d\n", h2, 1 << 20, static_cast<int>(e));
  if (e != cudaSuccess) prog_fail("cudaHostAlloc", e);
  e = cudaFreeHost(h2);
  printf("HOSTFREE api=cudaFreeHost ptr=%p rc=%d\n", h2, static_cast<int>(e));
  if (e != cudaSuccess) prog_fail("cudaFreeHost", e);
  // h1 stays allocated until exit.
}

// The single call site of every device allocation API in this program.
extern "C" PROG_NOINLINE cudaError_t allocate_weights_runtime(int api, uint64_t chunk, void** out,
                                                              uint64_t* accounted) {
  const Request r = make_request(static_cast<Api>(api), chunk);
  *out = nullptr;
  *accounted = 0;
  cudaError_t e = cudaSuccess;
  switch (api) {
    case kMalloc:
      e = cudaMalloc(out, chunk);
      *accounted = chunk;
      break;
    case kMallocAsync:
      e = cudaMallocAsync(out, chunk, g_stream);
      *accounted = chunk;
      break;
    case kMallocFromPoolAsync:
      e = cudaMallocFromPoolAsync(out, chunk, g_pool, g_stream);
      *accounted = chunk;
      break;
    case kMallocManaged:
      e = cudaMallocManaged(out, chunk, cudaMemAttachGlobal);
      *accounted = chunk;
      break;
    case kMallocPitch: {
      size_t pitch = 0;
      e = cudaMallocPitch(out, &pitch, r.width, r.height);
      *accounted = static_cast<uint64_t>(pitch) * r.height;
      break;
    }
    case kMalloc3D: {
      cudaPitchedPtr pp{};
      cudaExtent ext{r.width, r.height, r.depth};
      e = cudaMalloc3D(&pp, ext);
      *out = pp.ptr;
      *accounted = static_cast<uint64_t>(pp.pitch) * r.height * r.depth;
      break;
    }
  }
  return e;
}

extern "C" PROG_NOINLINE void release_some_runtime(int api) {
  const bool async = api == kMallocAsync || api == kMallocFromPoolAsync;
  // Free chunks #3 and #1 (indices into the live list).
  for (size_t idx : {size_t{3}, size_t{1}}) {
    if (idx >= g_live.items.size()) continue;
    LiveAlloc a = g_live.take(idx);
    void* p = reinterpret_cast<void*>(static_cast<uintptr_t>(a.ptr));
    const cudaError_t e = async ? cudaFreeAsync(p, g_stream) : cudaFree(p);
    prog_print_free(async ? "cudaFreeAsync" : "cudaFree", a.ptr, a.size, e);
    if (e != cudaSuccess) prog_fail(async ? "cudaFreeAsync" : "cudaFree", e);
  }
}

extern "C" PROG_NOINLINE cudaError_t grow_activations_runtime(int api, uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    void* p = nullptr;
    uint64_t accounted = 0;
    const cudaError_t e = allocate_weights_runtime(api, chunk, &p, &accounted);
    if (e != cudaSuccess) {
      prog_print_oom(kApiNames[api], make_request(static_cast<Api>(api), chunk).logical, e, cudaGetErrorName(e),
                     g_live);
      return e;
    }
    const uint64_t addr = reinterpret_cast<uintptr_t>(p);
    g_live.add(addr, accounted);
    prog_print_alloc(kApiNames[api], addr, accounted);
    if (g_live.items.size() == 4 && i == 3) release_some_runtime(api);
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "cudaMalloc";
  const uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  int api = -1;
  for (int i = 0; i < 6; ++i)
    if (strcmp(api_name, kApiNames[i]) == 0) api = i;
  if (api < 0) {
    fprintf(stderr, "usage: rt_linked [cudaMalloc|cudaMallocAsync|cudaMallocFromPoolAsync|cudaMallocManaged|"
                    "cudaMallocPitch|cudaMalloc3D] [chunk_bytes]\n");
    return 2;
  }
  printf("START prog=rt_linked api=%s chunk=%" PRIu64 "\n", kApiNames[api], chunk);

  int count = 0, drv = 0, rt = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) prog_fail("cudaGetDeviceCount", e);
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  printf("DEVICE count=%d driver=%d runtime=%d\n", count, drv, rt);

  reserve_pinned_staging_runtime();
  if ((e = cudaStreamCreate(&g_stream)) != cudaSuccess) prog_fail("cudaStreamCreate", e);
  if ((e = cudaDeviceGetDefaultMemPool(&g_pool, 0)) != cudaSuccess) prog_fail("cudaDeviceGetDefaultMemPool", e);

  e = grow_activations_runtime(api, chunk);
  if (e != cudaErrorMemoryAllocation) prog_fail("unexpected allocation error", e);

  const cudaError_t last = cudaGetLastError();
  const cudaError_t after = cudaGetLastError();
  printf("LASTERROR rc=%d name=%s after_reset=%d\n", static_cast<int>(last), cudaGetErrorName(last),
         static_cast<int>(after));
  size_t free_b = 0, total_b = 0;
  e = cudaMemGetInfo(&free_b, &total_b);
  printf("MEMINFO free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(e));
  cudaDeviceSynchronize();
  prog_print_done(g_live);
  return 0;  // live allocations are deliberately not freed
}
