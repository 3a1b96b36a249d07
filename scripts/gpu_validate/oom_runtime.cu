// Real-GPU validation: allocate with the CUDA runtime until out of memory.
// Built twice by gpu-validate: nvcc's default static runtime and -cudart shared.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

__attribute__((noinline)) cudaError_t grab_device_memory(std::vector<void*>* held, size_t chunk) {
  void* p = nullptr;
  cudaError_t rc = cudaMalloc(&p, chunk);
  if (rc == cudaSuccess) held->push_back(p);
  return rc;
}

int main() {
  const size_t chunk = size_t(1) << 30;
  std::vector<void*> held;
  for (int i = 0; i < 100000; ++i) {
    cudaError_t rc = grab_device_memory(&held, chunk);
    if (rc != cudaSuccess) {
      std::printf("OOM size=%zu rc=%d name=%s held=%zu\n", chunk, int(rc), cudaGetErrorName(rc), held.size());
      cudaGetLastError();
      break;
    }
  }
  for (void* p : held) cudaFree(p);
  return 0;
}
