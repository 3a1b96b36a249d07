// Real-GPU validation: allocate with the CUDA runtime until out of memory.
// Built twice by gpu-validate: nvcc's default static runtime and -cudart shared.
// With the argument "reset": first holds 8 chunks, then cudaDeviceReset
// (which frees them) and prints "RESET held=8 rc=<rc>", then the same loop.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <vector>

__attribute__((noinline)) cudaError_t grab_device_memory(std::vector<void*>* held, size_t chunk) {
  void* p = nullptr;
  cudaError_t rc = cudaMalloc(&p, chunk);
  if (rc == cudaSuccess) held->push_back(p);
  return rc;
}

int main(int argc, char** argv) {
  const size_t chunk = size_t(1) << 30;
  std::vector<void*> held;
  if (argc > 1 && std::strcmp(argv[1], "reset") == 0) {
    for (int i = 0; i < 8; ++i) grab_device_memory(&held, chunk);
    const cudaError_t rc = cudaDeviceReset();
    std::printf("RESET held=%zu rc=%d\n", held.size(), int(rc));
    held.clear();  // the reset freed them
  }
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
