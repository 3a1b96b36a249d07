/* exec_child PROGRAM ARGS...: one cudaMalloc (so the shim is initialised in
   this process and GPUMEMREC_FOLLOW_EXEC has been applied), prints its own
   LD_PRELOAD, then execs PROGRAM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*malloc_fn)(void**, size_t);
extern int cudaMalloc(void**, size_t);
extern int cudaFree(void*);

int main(int argc, char** argv) {
  void* p = 0;
  int rc = cudaMalloc(&p, 4096);
  cudaFree(p);
  const char* pre = getenv("LD_PRELOAD");
  printf("PARENT rc=%d preload_has_shim=%d\n", rc, pre && strstr(pre, "libgpumemrec") ? 1 : 0);
  fflush(stdout);
  if (argc < 2) return 0;
  execv(argv[1], argv + 1);
  perror("execv");
  return 127;
}
