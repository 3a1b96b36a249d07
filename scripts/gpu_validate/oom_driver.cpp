// Real-GPU validation: a driver-API program (links libcuda) allocating until
// out of memory.
#include <cuda.h>

#include <cstdio>
#include <vector>

__attribute__((noinline)) CUresult grab_with_driver(std::vector<CUdeviceptr>* held, size_t chunk) {
  CUdeviceptr p = 0;
  CUresult rc = cuMemAlloc(&p, chunk);
  if (rc == CUDA_SUCCESS) held->push_back(p);
  return rc;
}

int main() {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const size_t chunk = size_t(1) << 30;
  std::vector<CUdeviceptr> held;
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
