// The HIP half of fork_stress (see fork_stress.cpp).
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <thread>

void hip_warm_up() {
  void* warm = nullptr;
  if (hipMalloc(&warm, 4096) == hipSuccess) (void)hipFree(warm);
}

// In the child: (churn) a few allocations on a new thread, then allocate
// until out of memory. 0 = reached the OOM.
int child_main(size_t chunk, bool new_thread_first) {
  if (new_thread_first) {
    bool ok = true;
    std::thread([&ok] {
      for (int i = 0; i < 4; ++i) {
        void* p = nullptr;
        ok = ok && hipMalloc(&p, 4096) == hipSuccess && hipFree(p) == hipSuccess;
      }
    }).join();
    if (!ok) return 5;
  }
  for (int i = 0; i < 1000; ++i) {
    void* p = nullptr;
    hipError_t e = hipMalloc(&p, chunk);
    if (e == hipErrorOutOfMemory) return 0;
    if (e != hipSuccess) return 3;
  }
  return 4;
}
