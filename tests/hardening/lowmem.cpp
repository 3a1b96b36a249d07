// lowmem: a GPU out-of-memory while the host is short of memory too.
//
//   lowmem failmalloc <capacity>   allocate capacity/4 chunks; arm the malloc
//                                  failure injector (failmalloc.c) just before
//                                  the allocation that runs out, disarm after
//   lowmem eat <capacity>          first malloc host memory until malloc fails
//                                  (run under a tight RLIMIT_AS), keep it,
//                                  then the GPU allocations as above
// Output: OOM rc=<rc> ..., HOST_FAILURES=<n>, DONE. Exit 0.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* mode = argc > 1 ? argv[1] : "failmalloc";
  const size_t capacity = argc > 2 ? strtoull(argv[2], nullptr, 0) : (64u << 20);
  auto arm = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "failmalloc_arm"));
  auto failures = reinterpret_cast<unsigned long (*)()>(dlsym(RTLD_DEFAULT, "failmalloc_failures"));
  std::vector<void*> host;
  host.reserve(1 << 16);
  // The GPU side first (the fake driver needs host memory for its own
  // bookkeeping of successful allocations), then the host is exhausted.
  const size_t chunk = capacity / 4;
  void* d[8];
  int rc = 0;
  for (int i = 0; i < 4; ++i) {
    rc = int(cudaMalloc(&d[i], chunk));
    printf("ALLOC i=%d rc=%d\n", i, rc);
  }
  void* slack = nullptr;
  if (!std::strcmp(mode, "eat")) {
    slack = malloc(256 << 10);  // given back before the OOM: the fake driver's own needs
    for (size_t c = 64u << 20; c >= 64; c /= 2) {
      while (host.size() < host.capacity()) {
        void* p = malloc(c);
        if (!p) break;
        std::memset(p, 1, c < 4096 ? c : 4096);
        host.push_back(p);
      }
    }
    printf("HOST exhausted\n");
  }
  free(slack);
  if (arm) arm(1);
  void* p = reinterpret_cast<void*>(1);
  rc = int(cudaMalloc(&p, chunk));
  if (arm) arm(0);
  printf("OOM rc=%d ptr=%p\n", rc, p);
  printf("LAST rc=%d\n", int(cudaGetLastError()));
  rc = int(cudaFree(d[0]));
  printf("FREE rc=%d\n", rc);
  // stderr: differs with the shim (the shim's dump path meets the failures)
  fprintf(stderr, "HOST_FAILURES=%s\n", failures ? (failures() ? "some" : "none") : "n/a");
  printf("DONE\n");
  return 0;
}
