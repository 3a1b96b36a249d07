/* The glibc floor (floor.h) for what glibc 2.28 does not have at all: each
   uses the running glibc's function when it has one (looked up once by name
   and version: gmr_floor_newer) and does the job itself otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/glibc_floor/floor.h"

void* dlvsym(void* handle, const char* symbol, const char* version); /* forward_libc.c */

/* The first fields of glibc's struct dl_phdr_info (<link.h>, unchanged
   since glibc 2.2.4), declared here: <link.h> needs _GNU_SOURCE, which
   declares _dl_find_object with default visibility. */
struct floor_phdr_info {
  Elf64_Addr dlpi_addr;
  const char* dlpi_name;
  const Elf64_Phdr* dlpi_phdr;
  Elf64_Half dlpi_phnum;
};
int dl_iterate_phdr(int (*callback)(struct floor_phdr_info*, size_t, void*), void* data);

/* libstdc++ and our inline code read this (glibc 2.32, a variable): 0 says
   "maybe several threads", which is always true enough (atomic reference
   counts instead of plain ones). */
FLOOR_HIDDEN char __libc_single_threaded = 0;

FLOOR_HIDDEN void* gmr_floor_newer(void** cache, const char* name, const char* version) {
#ifdef GPUMEMREC_FLOOR_FALLBACK_ONLY
  (void)cache, (void)name, (void)version;
  return NULL;  /* as on glibc 2.28 (tests/compat/floor_fallback_test.cpp) */
#endif
  void* p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (p) return p == (void*)1 ? NULL : p;
  p = dlvsym(NULL /* RTLD_DEFAULT */, name, version);
  __atomic_store_n(cache, p ? p : (void*)1, __ATOMIC_RELEASE);
  return p;
}

/* arc4random (2.36; libstdc++'s std::random_device): the kernel's
   getrandom (Linux 3.17), then /dev/urandom, then the clocks. */
FLOOR_HIDDEN uint32_t arc4random(void) {
  static void* cache;
  uint32_t (*real)(void) = (uint32_t(*)(void))gmr_floor_newer(&cache, "arc4random", "GLIBC_2.36");
  if (real) return real();
  uint32_t v = 0;
  long n;
  do n = syscall(SYS_getrandom, &v, sizeof v, 0);
  while (n < 0 && errno == EINTR);
  if (n == (long)sizeof v) return v;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = read(fd, &v, sizeof v);
    close(fd);
    if (n == (long)sizeof v) return v;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint32_t)(ts.tv_nsec * 2654435761u) ^ (uint32_t)ts.tv_sec ^ (uint32_t)getpid();
}

/* _dl_find_object (2.35; libgcc's _Unwind_Find_FDE, which reads only
   dlfo_eh_frame: gcc libgcc/unwind-dw2-fde-dip.c, gcc-mirror/gcc at
   02250442a22b2310821214d5f2e2962d1b345a95). Without it: the object whose
   PT_LOAD segments hold the address, by dl_iterate_phdr (as libgcc did
   before gcc 12). The layout is glibc 2.35's <bits/dl_find_object.h> for
   x86-64 (no dlfo_eh_dbase). */
struct floor_dl_find_object {
  unsigned long long dlfo_flags;
  void* dlfo_map_start;
  void* dlfo_map_end;
  void* dlfo_link_map;
  void* dlfo_eh_frame;
  unsigned long long __dlfo_reserved[7];
};

struct floor_find {
  uintptr_t pc;
  struct floor_dl_find_object* out;
  int found;
};

static int floor_find_phdr(struct floor_phdr_info* info, size_t size, void* arg) {
  struct floor_find* f = (struct floor_find*)arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0, eh = 0;
  int inside = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const Elf64_Phdr* ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_GNU_EH_FRAME) eh = start;
    if (ph->p_type != PT_LOAD) continue;
    if (start < lo) lo = start;
    if (start + ph->p_memsz > hi) hi = start + ph->p_memsz;
    if (f->pc >= start && f->pc < start + ph->p_memsz) inside = 1;
  }
  if (!inside) return 0;
  memset(f->out, 0, sizeof *f->out);
  f->out->dlfo_map_start = (void*)lo;
  f->out->dlfo_map_end = (void*)hi;
  f->out->dlfo_eh_frame = (void*)eh;
  f->found = 1;
  return 1;
}

FLOOR_HIDDEN int _dl_find_object(void* pc, struct floor_dl_find_object* out) {
  static void* cache;
  int (*real)(void*, struct floor_dl_find_object*) =
      (int (*)(void*, struct floor_dl_find_object*))gmr_floor_newer(&cache, "_dl_find_object", "GLIBC_2.35");
  if (real) return real(pc, out);
  struct floor_find f = {(uintptr_t)pc, out, 0};
  dl_iterate_phdr(floor_find_phdr, &f);
  return f.found ? 0 : -1;
}
