/* A library whose constructor installs a SIGUSR2 handler before the shim's
   constructor runs (it is listed AFTER libgpumemrec.so in LD_PRELOAD, so it
   is initialised first). The handler counts into a file descriptor-free
   counter and the destructor prints it. Used to test that the shim chains to
   a handler installed before its own. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_count = 0;
static void h(int sig) { (void)sig; g_count++; }

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  sigaction(SIGUSR2, &sa, NULL);
}

__attribute__((destructor)) static void report(void) {
  char buf[64];
  int n = snprintf(buf, sizeof buf, "PRELOAD_HANDLER count=%d\n", (int)g_count);
  if (write(1, buf, (size_t)n) < 0) {}
}
