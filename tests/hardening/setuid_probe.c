/* setuid_probe: the shim must refuse to record in a process whose real and
   effective ids differ, even when a hook runs before the shim's constructor.
   Run as root with LD_PRELOAD="libgpumemrec.so:libsetuid_early.so":
   libsetuid_early.so is initialised first; its constructor makes the
   effective uid 65534 (setresuid(0, 65534, 0): the state of a setuid
   program) and calls cudaMalloc, a hook that runs before the shim's own
   constructor. main then allocates until out of memory. Expected: the calls
   pass straight through, no bundle, no directory, nothing on stderr. */
#include <stdio.h>
#include <unistd.h>

extern int cudaMalloc(void**, size_t);

int main(void) {
  void* p;
  int rc = 0, n = 0;
  while ((rc = cudaMalloc(&p, 16 << 20)) == 0 && n < 1000) ++n;
  printf("PROBE allocs=%d rc=%d uid=%d euid=%d\n", n, rc, (int)getuid(), (int)geteuid());
  return 0;
}
