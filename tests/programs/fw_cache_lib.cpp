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

extern "C" __attribute__((visibility("default"))) void* fw_cache_malloc(size_t size) {
  return c10::cuda::CUDACachingAllocator::Native::allocator().malloc(size);
}

extern "C" __attribute__((visibility("default"))) void fw_cache_free(void* p, size_t size) {
  c10::cuda::CUDACachingAllocator::Native::allocator().free(p, size);
}
