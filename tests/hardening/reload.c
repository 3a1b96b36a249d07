// reload: a GPU library unloaded and loaded again at another address.
// The recorder caches real-function and helper
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
//   reload storm    libraries loaded and unloaded on the program's thread
//                   while the recorder's writer thread writes bundles (it
//                   lists the loaded modules and symbolizes frames in them):
//                   20 rounds of dlopen libcudart.so.13, cudaMalloc, an
//                   out-of-memory on every 4th round followed by the dlopen
//                   of a library kept to the end (and, under the recorder, a
//                   wait for the bundle), then dlopen/dlclose of the fake HIP
//                   runtime and system libraries, cudaFree, dlclose of the
//                   runtime.
//                   A program that loads plugins as it goes (Python importing
//                   extension modules, JAX loading its CUDA plugins) does this.
// Output: per round "ROUND i moved=<0|1> alloc=<rc> free=<rc>", "OOM rc=<rc>",
// then DONE (storm: "ROUND i alloc=<rc> free=<rc> loaded=<n>", "OOM rc=<rc>").
// Exit 0. Identical with and without the recorder.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

// Loads each library, holds them all for a moment (the writer may be listing
// modules), unloads them; returns how many could be loaded.
static int churn(void) {
  static const char* const libs[] = {"libamdhip64.so.6", "libz.so.1", "libm.so.6", "libnss_files.so.2"};
  enum { kLibs = sizeof libs / sizeof libs[0] };
  void* handles[kLibs];
  int loaded = 0;
  for (int i = 0; i < kLibs; ++i) loaded += (handles[i] = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL)) != NULL;
  for (int i = 0; i < 200; ++i) sched_yield();
  for (int i = kLibs - 1; i >= 0; --i)
    if (handles[i]) dlclose(handles[i]);
  return loaded;
}

// dlopen()s `lib` from libc's directory (found from gnu_get_libc_version:
// a sanitizer intercepts printf and the like) by a path whose length is a multiple
// of 8 (extra slashes; the loader keeps the name as given), so that its NUL
// starts an 8-byte word of its own: TSan then tracks that byte apart from the
// name's characters (the case of CI's report, a 56-character path).
static void* dlopen_aligned_name(const char* lib) {
  Dl_info info;
  char path[512];
  if (!dladdr((void*)gnu_get_libc_version, &info) || !info.dli_fname || !strrchr(info.dli_fname, '/'))
    return dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  const int dir_len = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);
  const int len = dir_len + 1 + (int)strlen(lib);
  const int slashes = 1 + (8 - len % 8) % 8;
  if (len + slashes >= (int)sizeof path) return dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  snprintf(path, sizeof path, "%.*s%.*s%s", dir_len, info.dli_fname, slashes, "////////", lib);
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

// With RELOAD_WAIT_DIR set (the test sets it when the recorder is loaded),
// waits up to 10 s until that directory holds `n` published bundles, doing
// nothing that synchronizes with the writer thread: the library loaded just
// before is still there, and nothing unloaded, while the writer lists the
// modules (the interleaving of CI's TSan report on fidelity_all, made certain).
static void wait_for_bundles(int n) {
  const char* dir = getenv("RELOAD_WAIT_DIR");
  for (int waited = 0; dir && waited < 10000; waited += 5) {
    int found = 0;
    DIR* d = opendir(dir);
    for (struct dirent* e; d && (e = readdir(d));) found += strncmp(e->d_name, "oom_dump_", 9) == 0;
    if (d) closedir(d);
    if (found >= n) return;
    usleep(5000);
  }
}

__attribute__((noinline)) static int storm(void) {
  static const char* const kFreshLibs[] = {"libresolv.so.2", "libanl.so.1", "libutil.so.1", "libnss_dns.so.2",
                                           "libBrokenLocale.so.1"};
  enum { kFresh = sizeof kFreshLibs / sizeof kFreshLibs[0] };
  void* fresh[kFresh] = {NULL};
  for (int round = 0; round < 20; ++round) {
    void* h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      printf("ROUND %d dlopen failed\n", round);
      return 1;
    }
    AllocFn alloc = (AllocFn)dlsym(h, "cudaMalloc");
    RtFreeFn fr = (RtFreeFn)dlsym(h, "cudaFree");
    void* p = NULL;
    const int alloc_rc = alloc(&p, 1 << 20);
    if (round % 4 == 3) {
      void* q = NULL;
      printf("OOM rc=%d\n", alloc(&q, (size_t)1 << 40));
      // A library loaded right after the failure and kept (as a program
      // loading a plugin would): the writer finds a link map that did not
      // exist when it started.
      if (round / 4 < kFresh) fresh[round / 4] = dlopen_aligned_name(kFreshLibs[round / 4]);
      wait_for_bundles(round / 4 + 1);
    }
    int loaded = 0;
    for (int i = 0; i < 8; ++i) loaded = churn();
    const int free_rc = fr(p);
    printf("ROUND %d alloc=%d free=%d loaded=%d\n", round, alloc_rc, free_rc, loaded);
    dlclose(h);
  }
  for (int i = 0; i < kFresh; ++i)
    if (fresh[i]) dlclose(fresh[i]);
  printf("DONE\n");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "storm") == 0) return storm();
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
