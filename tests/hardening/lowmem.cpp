// lowmem: a GPU out-of-memory while the host is short of memory too.
//
//   lowmem failmalloc <capacity>   allocate capacity/4 chunks; arm the malloc
//                                  failure injector (failmalloc.c) just before
//                                  the allocation that runs out, disarm after
//   lowmem eat <capacity>          first malloc host memory until malloc fails
//                                  (run under a tight RLIMIT_AS), keep it,
//                                  then the GPU allocations as above
//   lowmem big <bytes>             one cudaMalloc/cudaFree (the recorder then
//                                  holds a stack), print VmSize, then
//                                  malloc(bytes) (run under RLIMIT_AS: the
//                                  recorder's own address space must leave
//                                  room for what the program could have)
// Output: OOM rc=<rc> ..., HOST_FAILURES=<n>, DONE. Exit 0.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
long vm_size_kib() {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) kib = strtol(line + 7, nullptr, 10);
  if (f) fclose(f);
  return kib;
}

int big_malloc(size_t bytes) {
  void* d = nullptr;
  int rc = int(cudaMalloc(&d, 1 << 20));
  cudaFree(d);
  fprintf(stderr, "VMSIZE_KIB=%ld\n", vm_size_kib());  // stderr: differs with the recorder
  void* p = malloc(bytes);
  printf("GPU rc=%d BIG %s\n", rc, p ? "ok" : "failed");
  free(p);
  printf("DONE\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* mode = argc > 1 ? argv[1] : "failmalloc";
  if (!std::strcmp(mode, "big")) return big_malloc(argc > 2 ? strtoull(argv[2], nullptr, 0) : (512u << 20));
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
