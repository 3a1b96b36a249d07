// THE table of every function libgpumemrec.so hooks.
//
// Adding a hook is one line here plus its wrapper (an extern "C" function of
// the same name, in shim/hooks/cuda_runtime.cpp, cuda_driver.cpp or hip.cpp,
// which also put its address in the wrapper table, see hooks/wrappers.h).
// The list is kept per family (one per library); GPUMEMREC_HOOKS is all of
// them in this order, and HookId numbers them. Each line is X(symbol, library)
// where library says where the real function lives:
//   CUDART  libcudart.so*   (CUDA runtime, shared)
//   CUDA    libcuda.so.1    (CUDA driver)
//   HIP     libamdhip64.so* (HIP runtime)
// The real function is found lazily: dlsym(RTLD_NEXT) first, then the loaded
// library's own handle (dlopen RTLD_NOLOAD), or the address a dlsym /
// cuGetProcAddress / hipGetProcAddress call handed out (see resolve.cpp).
#pragma once

#define GPUMEMREC_HOOKS(X) GPUMEMREC_HOOKS_CUDART(X) GPUMEMREC_HOOKS_CUDA(X) GPUMEMREC_HOOKS_HIP(X)

#define GPUMEMREC_HOOKS_CUDART(X)          \
  X(cudaMalloc, CUDART)                    \
  X(cudaFree, CUDART)                      \
  X(cudaMallocAsync, CUDART)               \
  X(cudaMallocAsync_ptsz, CUDART)          \
  X(cudaFreeAsync, CUDART)                 \
  X(cudaFreeAsync_ptsz, CUDART)            \
  X(cudaMallocFromPoolAsync, CUDART)       \
  X(cudaMallocFromPoolAsync_ptsz, CUDART)  \
  X(cudaMallocManaged, CUDART)             \
  X(cudaMallocPitch, CUDART)               \
  X(cudaMalloc3D, CUDART)                  \
  /* the current device's primary context destroyed (device_reset.h) */ \
  X(cudaDeviceReset, CUDART)

#define GPUMEMREC_HOOKS_CUDA(X)            \
  /* CUDA driver: device memory */         \
  X(cuMemAlloc_v2, CUDA)                   \
  X(cuMemAllocPitch_v2, CUDA)              \
  X(cuMemAllocManaged, CUDA)               \
  X(cuMemAllocAsync, CUDA)                 \
  X(cuMemAllocAsync_ptsz, CUDA)            \
  X(cuMemAllocFromPoolAsync, CUDA)         \
  X(cuMemAllocFromPoolAsync_ptsz, CUDA)    \
  X(cuMemFree_v2, CUDA)                    \
  X(cuMemFreeAsync, CUDA)                  \
  X(cuMemFreeAsync_ptsz, CUDA)             \
  /* CUDA driver: virtual memory management */ \
  X(cuMemCreate, CUDA)                     \
  X(cuMemRelease, CUDA)                    \
  X(cuMemMap, CUDA)                        \
  X(cuMemUnmap, CUDA)                      \
  /* CUDA driver: a primary context destroyed (device_reset.h) */ \
  X(cuDevicePrimaryCtxReset, CUDA)         \
  X(cuDevicePrimaryCtxReset_v2, CUDA)      \
  X(cuDevicePrimaryCtxRelease, CUDA)       \
  X(cuDevicePrimaryCtxRelease_v2, CUDA)    \
  /* CUDA driver: a created context destroyed, with what it held (device_reset.h) */ \
  X(cuCtxDestroy, CUDA)                    \
  X(cuCtxDestroy_v2, CUDA)                 \
  X(cuCtxDetach, CUDA)  /* deprecated; PyCUDA's Context.detach: destroys at the last use */ \
  /* CUDA driver: entry-point look-up (static runtime path) */ \
  X(cuGetProcAddress, CUDA)                \
  X(cuGetProcAddress_v2, CUDA)

#define GPUMEMREC_HOOKS_HIP(X)             \
  X(hipMalloc, HIP)                        \
  X(hipFree, HIP)                          \
  X(hipExtMallocWithFlags, HIP)            \
  X(hipMallocManaged, HIP)                 \
  X(hipMallocAsync, HIP)                   \
  X(hipFreeAsync, HIP)                     \
  X(hipMallocFromPoolAsync, HIP)           \
  X(hipMallocPitch, HIP)                   \
  X(hipMemCreate, HIP)                     \
  X(hipMemRelease, HIP)                    \
  X(hipMemMap, HIP)                        \
  X(hipMemUnmap, HIP)                      \
  X(hipDeviceReset, HIP)                   \
  X(hipDevicePrimaryCtxReset, HIP)         \
  X(hipGetProcAddress, HIP)
