// For the recorder checks' programs (blas_oom.cpp, dnn_oom.cpp): fills the
// simulated card through the driver until `leave` bytes are free, so that a
// library's own next allocation fails. It synchronizes first: a stream-ordered
// pool keeps what was freed into it until then (not free, and the next
// asynchronous allocation is served from it).
#pragma once

#include <dlfcn.h>

#include <cstddef>

inline bool fill_card(size_t leave) {
  void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto get_info = drv ? reinterpret_cast<int (*)(size_t*, size_t*)>(dlsym(drv, "cuMemGetInfo_v2")) : nullptr;
  auto alloc = drv ? reinterpret_cast<int (*)(unsigned long long*, size_t)>(dlsym(drv, "cuMemAlloc_v2")) : nullptr;
  auto sync = drv ? reinterpret_cast<int (*)()>(dlsym(drv, "cuCtxSynchronize")) : nullptr;
  size_t free_bytes = 0, total = 0;
  if (get_info == nullptr || alloc == nullptr || sync == nullptr || sync() != 0) return false;
  if (get_info(&free_bytes, &total) != 0 || free_bytes < leave) return false;
  unsigned long long fill = 0;
  return alloc(&fill, free_bytes - leave) == 0;
}
