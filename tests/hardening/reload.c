// reload: a GPU library unloaded and loaded again at another address
// (issue 11, item 3). The recorder caches real-function and helper
// addresses; they must never be used after the library they point into is
// gone.
//
//   reload driver   dlopen libcuda.so.1 (RTLD_GLOBAL), cuInit, cuMemAlloc_v2 /
//                   cuMemFree_v2 found with dlsym(RTLD_DEFAULT) (as a program
//                   linked to the library calls them: through our wrappers),
//                   dlclose; block the old address range with a PROT_NONE
//                   placeholder so the next dlopen lands elsewhere; again;
//                   3 rounds, the last one ends with an allocation larger
//                   than the device (an out-of-memory the recorder dumps)
//   reload runtime  the same with libcudart.so.13 and cudaMalloc / cudaFree
// Output: per round "ROUND i moved=<0|1> alloc=<rc> free=<rc>", "OOM rc=<rc>",
// then DONE. Exit 0. Identical with and without the recorder.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

typedef int (*InitFn)(unsigned);
typedef int (*AllocFn)(void*, size_t);
typedef int (*DrvFreeFn)(unsigned long long);
typedef int (*RtFreeFn)(void*);

struct Span {
  const char* want;
  uintptr_t lo, hi;
};

static int find_span(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct Span* s = data;
  if (!info->dlpi_name || !strstr(info->dlpi_name, s->want)) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    uintptr_t b = a + info->dlpi_phdr[i].p_memsz;
    if (!s->lo || a < s->lo) s->lo = a;
    if (b > s->hi) s->hi = b;
  }
  return 1;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int driver = argc < 2 || strcmp(argv[1], "runtime") != 0;
  const char* lib = driver ? "libcuda.so.1" : "libcudart.so.13";
  uintptr_t prev_lo = 0;
  for (int round = 0; round < 3; ++round) {
    void* h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      printf("ROUND %d dlopen failed\n", round);
      return 1;
    }
    struct Span s = {lib, 0, 0};
    dl_iterate_phdr(find_span, &s);
    int alloc_rc, free_rc;
    if (driver) {
      InitFn init = (InitFn)dlsym(h, "cuInit");
      AllocFn alloc = (AllocFn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
      DrvFreeFn fr = (DrvFreeFn)dlsym(RTLD_DEFAULT, "cuMemFree_v2");
      unsigned long long p = 0;
      init(0);
      alloc_rc = alloc(&p, 1 << 20);
      free_rc = fr(p);
      if (round == 2) printf("OOM rc=%d\n", alloc(&p, (size_t)1 << 40));
    } else {
      AllocFn alloc = (AllocFn)dlsym(RTLD_DEFAULT, "cudaMalloc");
      RtFreeFn fr = (RtFreeFn)dlsym(RTLD_DEFAULT, "cudaFree");
      void* p = NULL;
      alloc_rc = alloc(&p, 1 << 20);
      free_rc = fr(p);
      if (round == 2) printf("OOM rc=%d\n", alloc(&p, (size_t)1 << 40));
    }
    printf("ROUND %d moved=%d alloc=%d free=%d\n", round, prev_lo == 0 || s.lo != prev_lo, alloc_rc, free_rc);
    prev_lo = s.lo;
    dlclose(h);
    // Keep the old range occupied: the next dlopen cannot land there, and a
    // call through a stale address faults.
    if (s.hi > s.lo) mmap((void*)s.lo, s.hi - s.lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  }
  printf("DONE\n");
  return 0;
}
