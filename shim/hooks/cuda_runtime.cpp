// CUDA runtime wrappers (libcudart.so). Host-pinned allocations
// (cudaMallocHost, cudaHostAlloc) are not hooked: they are host memory.
#include <cuda_runtime_api.h>

#include "shim/hooks/wrap.h"
#include "shim/hooks/wrappers.h"

using namespace gpumemrec;

extern "C" {
// Per-thread-default-stream entry points the header does not declare.
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
}

namespace {

SymbolSlot g_get_device;

struct Rt {
  using Result = cudaError_t;
  static constexpr Result kNotInitialized = cudaErrorInitializationError;
  static constexpr int kOom = cudaErrorMemoryAllocation;
  static int current_device() {
    auto fn = helper<cudaError_t (*)(int*)>(g_get_device, Library::CUDART, "cudaGetDevice");
    int d = kUnknownDevice;
    if (!fn || fn(&d) != cudaSuccess) return kUnknownDevice;
    return d;
  }
  static Result refuse() {
    refuse_through<decltype(&cudaMalloc)>(HookId::cudaMalloc);
    return cudaErrorMemoryAllocation;
  }
};

constexpr auto kDevice = MemoryType::kDevice;

}  // namespace

GM_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return wrap_simple_alloc<Rt, decltype(&cudaMalloc)>(HookId::cudaMalloc, kDevice, size, 0, devPtr, size);
}

GM_EXPORT cudaError_t cudaFree(void* devPtr) {
  return wrap_free<Rt, decltype(&cudaFree)>(HookId::cudaFree, kDevice, devPtr, 0);
}

GM_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t stream) {
  return wrap_simple_alloc<Rt, decltype(&cudaMallocAsync)>(HookId::cudaMallocAsync, kDevice, size, as_u64(stream),
                                                           devPtr, size, stream);
}

GM_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream) {
  return wrap_simple_alloc<Rt, decltype(&cudaMallocAsync_ptsz)>(HookId::cudaMallocAsync_ptsz, kDevice, size,
                                                                as_u64(stream), devPtr, size, stream);
}

GM_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t stream) {
  return wrap_free<Rt, decltype(&cudaFreeAsync)>(HookId::cudaFreeAsync, kDevice, devPtr, as_u64(stream), stream);
}

GM_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream) {
  return wrap_free<Rt, decltype(&cudaFreeAsync_ptsz)>(HookId::cudaFreeAsync_ptsz, kDevice, devPtr, as_u64(stream),
                                                      stream);
}

GM_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  return wrap_simple_alloc<Rt, decltype(&cudaMallocFromPoolAsync)>(HookId::cudaMallocFromPoolAsync, kDevice, size,
                                                                   as_u64(stream), ptr, size, memPool, stream);
}

GM_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream) {
  return wrap_simple_alloc<Rt, decltype(&cudaMallocFromPoolAsync_ptsz)>(
      HookId::cudaMallocFromPoolAsync_ptsz, kDevice, size, as_u64(stream), ptr, size, memPool, stream);
}

GM_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return wrap_simple_alloc<Rt, decltype(&cudaMallocManaged)>(HookId::cudaMallocManaged, MemoryType::kManaged, size,
                                                             0, devPtr, size, flags);
}

GM_EXPORT cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  using Fn = decltype(&cudaMallocPitch);
  const uint64_t asked = uint64_t(width) * uint64_t(height);
  return wrap_alloc<Rt, Fn>(
      HookId::cudaMallocPitch, kDevice, kAskDevice, asked, 0, [&](Fn fn) { return fn(devPtr, pitch, width, height); },
      [&] { return Held{devPtr ? as_u64(*devPtr) : 0, pitch ? uint64_t(*pitch) * height : asked}; });
}

GM_EXPORT cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
  using Fn = decltype(&cudaMalloc3D);
  const uint64_t asked = uint64_t(extent.width) * extent.height * extent.depth;
  return wrap_alloc<Rt, Fn>(
      HookId::cudaMalloc3D, kDevice, kAskDevice, asked, 0, [&](Fn fn) { return fn(pitchedDevPtr, extent); },
      [&] {
        return pitchedDevPtr
                   ? Held{as_u64(pitchedDevPtr->ptr), uint64_t(pitchedDevPtr->pitch) * extent.height * extent.depth}
                   : Held{0, asked};
      });
}

// The runtime resets the current device's primary context. (NVIDIA's
// runtime is closed source; whatever driver calls it makes inside are nested
// under this one and pass straight through.)
GM_EXPORT cudaError_t cudaDeviceReset(void) {
  return wrap_device_reset<Rt, decltype(&cudaDeviceReset)>(HookId::cudaDeviceReset, kAskDevice,
                                                           context_destroyed_by_reset);
}

namespace gpumemrec {
void* const kCudartWrappers[kCudartHookCount] = {GPUMEMREC_HOOKS_CUDART(GPUMEMREC_WRAPPER_ADDRESS)};
}  // namespace gpumemrec
