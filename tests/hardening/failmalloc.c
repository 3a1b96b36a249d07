/* An LD_PRELOAD malloc-failure injector. While armed, every malloc, calloc,
   realloc, memalign, posix_memalign, aligned_alloc and valloc fails with
   ENOMEM. Armed by the program with failmalloc_arm(1) (found with dlsym) or
   from the start with FAILMALLOC_ARMED=1. failmalloc_failures() counts the
   refusals. Uses glibc's __libc_* entry points, so it needs no dlsym. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);

static volatile int g_armed = -1;
static volatile unsigned long g_failures = 0;

static int armed(void) {
  if (g_armed < 0) {
    const char* v = getenv("FAILMALLOC_ARMED");
    g_armed = v && v[0] == '1';
  }
  return g_armed;
}

static void* refuse(void) {
  __atomic_fetch_add(&g_failures, 1, __ATOMIC_RELAXED);
  errno = ENOMEM;
  return NULL;
}

void failmalloc_arm(int on) { g_armed = on; }
unsigned long failmalloc_failures(void) { return g_failures; }

void* malloc(size_t n) { return armed() ? refuse() : __libc_malloc(n); }
void* calloc(size_t a, size_t b) { return armed() ? refuse() : __libc_calloc(a, b); }
void* realloc(void* p, size_t n) { return armed() && n ? refuse() : __libc_realloc(p, n); }
void* memalign(size_t al, size_t n) { return armed() ? refuse() : __libc_memalign(al, n); }
void* aligned_alloc(size_t al, size_t n) { return armed() ? refuse() : __libc_memalign(al, n); }
void* valloc(size_t n) { return armed() ? refuse() : __libc_memalign(4096, n); }
int posix_memalign(void** out, size_t al, size_t n) {
  if (armed()) {
    refuse();
    return ENOMEM;
  }
  void* p = __libc_memalign(al, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
