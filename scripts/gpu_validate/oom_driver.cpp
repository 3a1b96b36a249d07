// Real-GPU validation: a driver-API program (links libcuda) allocating until
// out of memory. With the argument "ctx": first one chunk in the primary
// context (printed as "KEEP ptr=0x..."), then a context of its own
// (cuCtxCreate_v2) holding 8 chunks, destroyed with cuCtxDestroy (which
// frees those 8, not the primary's) and "CTXDESTROY held=8 rc=<rc>", then the
// primary context again and the same loop.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <vector>

// cuda.h maps cuCtxCreate to _v4 from CUDA 12.5 on (another signature); _v2
// is what every driver exports and PyCUDA's wheels call.
extern "C" CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);

__attribute__((noinline)) CUresult grab_with_driver(std::vector<CUdeviceptr>* held, size_t chunk) {
  CUdeviceptr p = 0;
  CUresult rc = cuMemAlloc(&p, chunk);
  if (rc == CUDA_SUCCESS) held->push_back(p);
  return rc;
}

int main(int argc, char** argv) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const size_t chunk = size_t(1) << 30;
  std::vector<CUdeviceptr> held;
  if (argc > 1 && std::strcmp(argv[1], "ctx") == 0) {
    grab_with_driver(&held, chunk);
    std::printf("KEEP ptr=0x%llx\n", held.empty() ? 0ull : static_cast<unsigned long long>(held[0]));
    CUcontext own = nullptr;
    if (cuCtxCreate_v2(&own, 0, dev) != CUDA_SUCCESS) {
      std::printf("cuCtxCreate_v2 failed\n");
      return 1;
    }
    std::vector<CUdeviceptr> in_own;
    for (int i = 0; i < 8; ++i) grab_with_driver(&in_own, chunk);
    const CUresult rc = cuCtxDestroy(own);
    std::printf("CTXDESTROY held=%zu rc=%d\n", in_own.size(), int(rc));
    cuCtxSetCurrent(ctx);
  }
  for (int i = 0; i < 100000; ++i) {
    CUresult rc = grab_with_driver(&held, chunk);
    if (rc != CUDA_SUCCESS) {
      std::printf("OOM size=%zu rc=%d held=%zu\n", chunk, int(rc), held.size());
      break;
    }
  }
  for (CUdeviceptr p : held) cuMemFree(p);
  return 0;
}
