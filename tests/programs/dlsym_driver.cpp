// dlsym_driver: loads the driver by hand like XLA/JAX's cuda_stub or Numba:
// dlopen("libcuda.so.1") + dlsym(handle, "<exported versioned name>").
// Links nothing GPU-related.
//
//   dlsym_driver [api] [chunk_bytes]
//     api: cuMemAlloc_v2 (default) | cuMemAllocAsync_ptsz
//     chunk_bytes: default 67108864 (64 MiB)
//
// dlsym'd: cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain, cuCtxSetCurrent,
// cuMemGetInfo_v2, cuMemAlloc_v2, cuMemFree_v2, cuMemAllocAsync_ptsz,
// cuMemFreeAsync_ptsz. Frees chunks #1 and #3 after the 4th (cuMemFree_v2 or
// cuMemFreeAsync_ptsz) and allocates until CUDA_ERROR_OUT_OF_MEMORY.
// Extra output: DLSYM symbol=<name> found=<0|1>
#include <cuda.h>  // types only
#include <dlfcn.h>

#include "prog_common.h"

namespace {

struct Stub {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo_v2)(size_t*, size_t*);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemAllocAsync_ptsz)(CUdeviceptr*, size_t, CUstream);
  CUresult (*cuMemFreeAsync_ptsz)(CUdeviceptr, CUstream);
} g;

const char* const kApiNames[] = {"cuMemAlloc_v2", "cuMemAllocAsync_ptsz"};
LiveSet g_live;

template <typename F>
void load(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  printf("DLSYM symbol=%s found=%d\n", name, *out != nullptr);
  if (*out == nullptr) prog_fail(name, 0);
}

}  // namespace

extern "C" PROG_NOINLINE void load_driver_stub_dlsym() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    printf("ERROR dlopen libcuda.so.1: %s rc=35\n", dlerror());
    exit(1);
  }
  load(h, "cuInit", &g.cuInit);
  load(h, "cuDeviceGet", &g.cuDeviceGet);
  load(h, "cuDevicePrimaryCtxRetain", &g.cuDevicePrimaryCtxRetain);
  load(h, "cuCtxSetCurrent", &g.cuCtxSetCurrent);
  load(h, "cuMemGetInfo_v2", &g.cuMemGetInfo_v2);
  load(h, "cuMemAlloc_v2", &g.cuMemAlloc_v2);
  load(h, "cuMemFree_v2", &g.cuMemFree_v2);
  load(h, "cuMemAllocAsync_ptsz", &g.cuMemAllocAsync_ptsz);
  load(h, "cuMemFreeAsync_ptsz", &g.cuMemFreeAsync_ptsz);
  CUresult r = g.cuInit(0);
  if (r != CUDA_SUCCESS) prog_fail("cuInit", r);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if ((r = g.cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) prog_fail("cuDeviceGet", r);
  if ((r = g.cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) prog_fail("cuDevicePrimaryCtxRetain", r);
  if ((r = g.cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) prog_fail("cuCtxSetCurrent", r);
}

extern "C" PROG_NOINLINE CUresult allocate_weights_dlsym(int api, uint64_t chunk, CUdeviceptr* out) {
  *out = 0;
  return api == 0 ? g.cuMemAlloc_v2(out, chunk) : g.cuMemAllocAsync_ptsz(out, chunk, nullptr);
}

extern "C" PROG_NOINLINE void release_some_dlsym(int api) {
  for (size_t idx : {size_t{3}, size_t{1}}) {
    if (idx >= g_live.items.size()) continue;
    LiveAlloc a = g_live.take(idx);
    const CUresult r = api == 0 ? g.cuMemFree_v2(a.ptr) : g.cuMemFreeAsync_ptsz(a.ptr, nullptr);
    prog_print_free(api == 0 ? "cuMemFree_v2" : "cuMemFreeAsync_ptsz", a.ptr, a.size, r);
    if (r != CUDA_SUCCESS) prog_fail("free", r);
  }
}

extern "C" PROG_NOINLINE CUresult grow_activations_dlsym(int api, uint64_t chunk) {
  for (int i = 0; i < kMaxIterations; ++i) {
    CUdeviceptr p = 0;
    const CUresult r = allocate_weights_dlsym(api, chunk, &p);
    if (r != CUDA_SUCCESS) {
      prog_print_oom(kApiNames[api], chunk, r, r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "?",
                     g_live);
      return r;
    }
    g_live.add(p, chunk);
    prog_print_alloc(kApiNames[api], p, chunk);
    if (i == 3) release_some_dlsym(api);
  }
  prog_fail("no out-of-memory reached", 0);
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const char* api_name = argc > 1 ? argv[1] : "cuMemAlloc_v2";
  const uint64_t chunk = prog_parse_size(argc > 2 ? argv[2] : nullptr, 64ull << 20);
  int api = -1;
  for (int i = 0; i < 2; ++i)
    if (strcmp(api_name, kApiNames[i]) == 0) api = i;
  if (api < 0) {
    fprintf(stderr, "usage: dlsym_driver [cuMemAlloc_v2|cuMemAllocAsync_ptsz] [chunk_bytes]\n");
    return 2;
  }
  printf("START prog=dlsym_driver api=%s chunk=%" PRIu64 "\n", kApiNames[api], chunk);
  load_driver_stub_dlsym();
  const CUresult r = grow_activations_dlsym(api, chunk);
  if (r != CUDA_ERROR_OUT_OF_MEMORY) prog_fail("unexpected allocation error", r);
  size_t free_b = 0, total_b = 0;
  const CUresult m = g.cuMemGetInfo_v2(&free_b, &total_b);
  printf("MEMINFO free=%zu total=%zu rc=%d\n", free_b, total_b, static_cast<int>(m));
  prog_print_done(g_live);
  return 0;
}
