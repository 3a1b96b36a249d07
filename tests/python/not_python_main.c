/* A process without Python: allocates through the fake runtime until it
 * fails, so the recorder writes a bundle whose stacks say "not_python". */
#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>

typedef int (*cuda_malloc_fn)(void**, size_t);

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) return 3;
  cuda_malloc_fn fn = (cuda_malloc_fn)dlsym(h, "cudaMalloc");
  if (!fn) return 4;
  for (int i = 0; i < 100000; ++i) {
    void* p = NULL;
    if (fn(&p, 1 << 20) != 0) {
      printf("oom after %d\n", i);
      return 0;
    }
  }
  return 5;
}
