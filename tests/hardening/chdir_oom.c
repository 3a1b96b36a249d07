/* chdir_oom: changes its working directory, then runs out of device memory.
 *
 *   chdir_oom <directory> [size=2^40]
 *
 * Output: CHDIR rc=<0|-1>, OOM rc=<cudaMalloc result>, DONE. Exit 0. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) return 2;
  printf("CHDIR rc=%d\n", chdir(argv[1]));
  void* p = NULL;
  size_t size = argc > 2 ? strtoull(argv[2], NULL, 0) : ((size_t)1 << 40);
  printf("OOM rc=%d\n", (int)cudaMalloc(&p, size));
  printf("DONE\n");
  return 0;
}
