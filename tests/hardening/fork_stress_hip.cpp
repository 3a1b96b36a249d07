// The HIP half of fork_stress (see fork_stress.cpp).
#include <hip/hip_runtime_api.h>

#include <cstddef>

void hip_warm_up() {
  void* warm = nullptr;
  if (hipMalloc(&warm, 4096) == hipSuccess) (void)hipFree(warm);
}

// In the child: allocate until out of memory. 0 = reached the OOM.
int child_main(size_t chunk) {
  for (int i = 0; i < 1000; ++i) {
    void* p = nullptr;
    hipError_t e = hipMalloc(&p, chunk);
    if (e == hipErrorOutOfMemory) return 0;
    if (e != hipSuccess) return 3;
  }
  return 4;
}
