// A library whose constructor holds dlopen() in flight until the test lets
// it go (for the loader guard's test): it writes one byte to the fd named
// by GPUMEMREC_UNIT_CTOR_READY_FD, then reads one from GPUMEMREC_UNIT_CTOR_GO_FD.
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void hold_dlopen_in_flight() {
  const char* ready = getenv("GPUMEMREC_UNIT_CTOR_READY_FD");
  const char* go = getenv("GPUMEMREC_UNIT_CTOR_GO_FD");
  if (!ready || !go) return;
  char c = 1;
  while (write(atoi(ready), &c, 1) < 0) {
  }
  while (read(atoi(go), &c, 1) < 0) {
  }
}
