// CUDA runtime wrappers (libcudart.so). Host-pinned allocations
// (cudaMallocHost, cudaHostAlloc) are not hooked: they are host memory.
#include <cuda_runtime_api.h>

#include "shim/hooks/wrap.h"

using namespace gpumemrec;

extern "C" {
// Per-thread-default-stream entry points the header does not declare.
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
}

namespace {

std::atomic<void*> g_get_device{nullptr};

int current_device() {
  auto fn = helper<cudaError_t (*)(int*)>(g_get_device, Library::CUDART, "cudaGetDevice");
  int d = kUnknownDevice;
  if (!fn || fn(&d) != cudaSuccess) return kUnknownDevice;
  return d;
}

// Refusing on behalf of GPUMEMREC_LIMIT / FAIL_AFTER: ask the real runtime
// for an impossible size so that its own error state (cudaGetLastError) is
// exactly what a real out-of-memory leaves; the driver allocates nothing.
cudaError_t refuse_like_runtime() {
  auto real_malloc = real<decltype(&cudaMalloc)>(HookId::cudaMalloc);
  if (real_malloc) {
    void* dummy = nullptr;
    HookScope nested;  // keep the inner driver call out of the record
    (void)real_malloc(&dummy, size_t(1) << 62);
  }
  return cudaErrorMemoryAllocation;
}

inline uint64_t u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

template <typename Fn, typename... Args>
cudaError_t alloc_common(HookId id, MemoryType type, uint64_t size, uint64_t stream, void** out, Args... args) {
  auto fn = real<Fn>(id);
  if (!fn) return cudaErrorInitializationError;
  HookScope scope;
  if (!scope.record()) return fn(out, args...);
  return run_alloc<cudaError_t>(
      id, type, current_device(), size, stream, [&] { return fn(out, args...); },
      [&] { return Held{out ? u64(*out) : 0, size}; }, [] { return refuse_like_runtime(); });
}

template <typename Fn, typename... Args>
cudaError_t free_common(HookId id, void* ptr, uint64_t stream, Args... args) {
  auto fn = real<Fn>(id);
  if (!fn) return cudaErrorInitializationError;
  HookScope scope;
  if (!scope.record()) return fn(ptr, args...);
  return run_free<cudaError_t>(id, MemoryType::kDevice, u64(ptr), stream, [&] { return fn(ptr, args...); });
}

}  // namespace

GM_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return alloc_common<decltype(&cudaMalloc)>(HookId::cudaMalloc, MemoryType::kDevice, size, 0, devPtr, size);
}

GM_EXPORT cudaError_t cudaFree(void* devPtr) {
  return free_common<decltype(&cudaFree)>(HookId::cudaFree, devPtr, 0);
}

GM_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t stream) {
  return alloc_common<decltype(&cudaMallocAsync)>(HookId::cudaMallocAsync, MemoryType::kDevice, size, u64(stream),
                                                  devPtr, size, stream);
}

GM_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream) {
  return alloc_common<decltype(&cudaMallocAsync_ptsz)>(HookId::cudaMallocAsync_ptsz, MemoryType::kDevice, size,
                                                       u64(stream), devPtr, size, stream);
}

GM_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t stream) {
  return free_common<decltype(&cudaFreeAsync)>(HookId::cudaFreeAsync, devPtr, u64(stream), stream);
}

GM_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream) {
  return free_common<decltype(&cudaFreeAsync_ptsz)>(HookId::cudaFreeAsync_ptsz, devPtr, u64(stream), stream);
}

GM_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  return alloc_common<decltype(&cudaMallocFromPoolAsync)>(HookId::cudaMallocFromPoolAsync, MemoryType::kDevice, size,
                                                          u64(stream), ptr, size, memPool, stream);
}

GM_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream) {
  return alloc_common<decltype(&cudaMallocFromPoolAsync_ptsz)>(
      HookId::cudaMallocFromPoolAsync_ptsz, MemoryType::kDevice, size, u64(stream), ptr, size, memPool, stream);
}

GM_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return alloc_common<decltype(&cudaMallocManaged)>(HookId::cudaMallocManaged, MemoryType::kManaged, size, 0, devPtr,
                                                    size, flags);
}

GM_EXPORT cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  auto fn = real<decltype(&cudaMallocPitch)>(HookId::cudaMallocPitch);
  if (!fn) return cudaErrorInitializationError;
  HookScope scope;
  if (!scope.record()) return fn(devPtr, pitch, width, height);
  const uint64_t asked = uint64_t(width) * uint64_t(height);
  return run_alloc<cudaError_t>(
      HookId::cudaMallocPitch, MemoryType::kDevice, current_device(), asked, 0,
      [&] { return fn(devPtr, pitch, width, height); },
      [&] { return Held{devPtr ? u64(*devPtr) : 0, pitch ? uint64_t(*pitch) * height : asked}; },
      [] { return refuse_like_runtime(); });
}

GM_EXPORT cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
  auto fn = real<decltype(&cudaMalloc3D)>(HookId::cudaMalloc3D);
  if (!fn) return cudaErrorInitializationError;
  HookScope scope;
  if (!scope.record()) return fn(pitchedDevPtr, extent);
  const uint64_t asked = uint64_t(extent.width) * extent.height * extent.depth;
  return run_alloc<cudaError_t>(
      HookId::cudaMalloc3D, MemoryType::kDevice, current_device(), asked, 0, [&] { return fn(pitchedDevPtr, extent); },
      [&] {
        return pitchedDevPtr ? Held{u64(pitchedDevPtr->ptr), uint64_t(pitchedDevPtr->pitch) * extent.height * extent.depth}
                             : Held{0, asked};
      },
      [] { return refuse_like_runtime(); });
}
