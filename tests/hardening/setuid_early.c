/* See setuid_probe.c. With SETUID_EARLY=1: become "setuid" (real uid 0,
   effective uid 65534) and call the hooked cudaMalloc (one that runs out of memory) before the shim's
   constructor has run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void early(void) {
  const char* v = getenv("SETUID_EARLY");
  if (!v || v[0] != '1') return;
  if (setresuid(0, 65534, 0) != 0) {
    perror("setresuid");
    _exit(77);
  }
  int (*m)(void**, size_t) = (int (*)(void**, size_t))dlsym(RTLD_DEFAULT, "cudaMalloc");
  void* p = 0;
  int rc = m ? m(&p, (size_t)1 << 40) : -1; /* out of memory: would write a bundle */
  printf("EARLY rc=%d euid=%d\n", rc, (int)geteuid());
  fflush(stdout);
}
