/* Test helper: allocates from a native thread that never held the GIL.
 * cudaMalloc is found with dlsym on the runtime's handle (the preloaded
 * recorder's dlsym hands out its hook). */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*cuda_malloc_fn)(void**, size_t);

struct job {
  cuda_malloc_fn fn;
  size_t size;
  int max_count;
  int done;
};

static void* native_thread_main(void* arg) {
  struct job* j = (struct job*)arg;
  for (j->done = 0; j->done < j->max_count; ++j->done) {
    void* p = NULL;
    if (j->fn(&p, j->size) != 0) break;
  }
  return NULL;
}

/* Starts a thread that calls cudaMalloc(size) until it fails (at most
 * max_count times) and waits for it: returns how many succeeded, -1 on error. */
int native_thread_alloc_until_failure(const char* cudart_path, size_t size, int max_count) {
  void* h = dlopen(cudart_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  struct job j = {(cuda_malloc_fn)dlsym(h, "cudaMalloc"), size, max_count, 0};
  if (!j.fn) return -1;
  pthread_t t;
  if (pthread_create(&t, NULL, native_thread_main, &j) != 0) return -1;
  pthread_join(t, NULL);
  return j.done;
}
