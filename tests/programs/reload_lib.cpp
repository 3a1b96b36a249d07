// libreload_alpha.so / libreload_omega.so: one source built twice with
// RELOAD_FN=alpha_alloc / omega_alloc (names of the same length), so both
// libraries have the same layout and, loaded one after the other at the same
// address, the same return address inside their allocating function. Used by
// dl_reload (the symbolizer must not describe the second with the first's
// names).
#include <cuda_runtime_api.h>

extern "C" __attribute__((noinline, visibility("default"))) int RELOAD_FN(unsigned long long size) {
  void* p = nullptr;
  const int rc = int(cudaMalloc(&p, size));
  if (rc == 0) cudaFree(p);
  return rc;
}
