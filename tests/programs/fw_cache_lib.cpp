// libc10_fakecuda.so: a framework's caching allocator in its own shared
// library, between the program and the CUDA runtime, in the shape of
// PyTorch's (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp:
// c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc
// looks for a cached block under the allocator's mutex and, when none fits,
// alloc_block asks the runtime with cudaMalloc; a freed block goes back to
// the cache, never to the driver). Its name matches the `libc10*` row of the
// site rules (common/site_rules.cpp), as libc10_cuda.so does, so the
// allocation sites of the program that calls it are the program's functions
// and the owning library is this .so.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace c10::cuda::CUDACachingAllocator::Native {

class DeviceCachingAllocator {
 public:
  __attribute__((noinline)) void* malloc(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cached_.lower_bound(size);
    if (it != cached_.end()) {
      void* p = it->second;
      cached_.erase(it);
      return p;
    }
    return alloc_block(size);
  }
  __attribute__((noinline)) void free(void* p, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    cached_.emplace(size, p);
  }
  // emptyCache: every cached block back to the driver (release_cached_blocks
  // -> release_block -> cudaFree in the real one).
  __attribute__((noinline)) void emptyCache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& kv : cached_) (void)cudaFree(kv.second);
    cached_.clear();
  }

 private:
  __attribute__((noinline)) void* alloc_block(size_t size) {
    void* p = nullptr;
    if (cudaMalloc(&p, size) != cudaSuccess) {
      (void)cudaGetLastError();  // as C10_CUDA_CHECK's caller clears the sticky error before raising
      return nullptr;
    }
    return p;
  }
  std::mutex mutex_;
  std::multimap<size_t, void*> cached_;
};

DeviceCachingAllocator& allocator() {
  static DeviceCachingAllocator a;
  return a;
}

}  // namespace c10::cuda::CUDACachingAllocator::Native

// PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync selects PyTorch's other
// backend (c10/cuda/CUDAMallocAsyncAllocator.cpp): no cache of its own, each
// malloc a cudaMallocAsync and each free a cudaFreeAsync on the current
// stream, so the driver's pool keeps what is freed; emptyCache is
// cudaDeviceSynchronize then cudaMemPoolTrimTo(default pool, 0) (the fake
// has no trim: its pools give back at the synchronization).
namespace c10::cuda::CUDACachingAllocator::CudaMallocAsync {

bool selected() {
  static const bool on = [] {
    const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
    return conf && std::strstr(conf, "backend:cudaMallocAsync") != nullptr;
  }();
  return on;
}

__attribute__((noinline)) void* mallocAsync(size_t size) {
  void* p = nullptr;
  if (cudaMallocAsync(&p, size, nullptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

__attribute__((noinline)) void free(void* p) { (void)cudaFreeAsync(p, nullptr); }

__attribute__((noinline)) void emptyCache() { (void)cudaDeviceSynchronize(); }

}  // namespace c10::cuda::CUDACachingAllocator::CudaMallocAsync

namespace async = c10::cuda::CUDACachingAllocator::CudaMallocAsync;

extern "C" __attribute__((visibility("default"))) void* fw_cache_malloc(size_t size) {
  if (async::selected()) return async::mallocAsync(size);
  return c10::cuda::CUDACachingAllocator::Native::allocator().malloc(size);
}

extern "C" __attribute__((visibility("default"))) void fw_cache_free(void* p, size_t size) {
  if (async::selected()) return async::free(p);
  c10::cuda::CUDACachingAllocator::Native::allocator().free(p, size);
}

extern "C" __attribute__((visibility("default"))) void fw_cache_empty_cache() {
  if (async::selected()) return async::emptyCache();
  c10::cuda::CUDACachingAllocator::Native::allocator().emptyCache();
}
