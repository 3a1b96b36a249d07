/* Stand-in for PyTorch's native autograd engine (tests only).
 *
 * pytorch/pytorch torch/csrc/autograd/engine.cpp (Engine::execute,
 * thread_main) and python_engine.cpp (THPEngine_run_backward): the Python
 * thread calls run_backward, releases the GIL and waits while a device
 * thread (a native thread with no Python frame) evaluates the graph; every
 * gradient it makes comes from c10's caching allocator on that thread
 * (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc).
 *
 * Here the allocator's book-keeping stays in the Python stand-in (torch/_C.py)
 * and is reached through callbacks (ctypes CFUNCTYPE: each one takes the GIL
 * for its duration), while what c10 does natively happens on the worker with
 * no Python frame: cudaMalloc of a new segment, the retries after freeing
 * cached blocks, cudaMemGetInfo before the OOM observers. cudaMalloc is found
 * with dlsym on the runtime's handle (the preloaded recorder's dlsym hands
 * out its hook), as native_thread_lib.c does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_mem_get_info_fn)(size_t*, size_t*);

/* job i: >0 = bytes of the segment to cudaMalloc; 0 = done (a cached block,
 * a view, nothing to make); <0 = error. */
typedef long long (*gmr_take_fn)(int job);
/* level 1: release_available_cached_blocks(size), 2: release_cached_blocks();
 * returns 1 when a retry of cudaMalloc is worth it. */
typedef int (*gmr_release_fn)(int job, int level, size_t size);
/* a new segment for job i at ptr: 0 = ok. */
typedef int (*gmr_place_fn)(int job, void* ptr, size_t size);
/* the OOM path: the observers, with the GIL (c10 takes it in the binding). */
typedef void (*gmr_oom_fn)(int job, size_t size, size_t free_bytes, size_t total_bytes);

struct gmr_backward {
  cuda_malloc_fn malloc_fn;
  cuda_mem_get_info_fn info_fn;
  gmr_take_fn take;
  gmr_release_fn release;
  gmr_place_fn place;
  gmr_oom_fn oom;
  int njobs;
  int status; /* 0 done, 1 out of memory at failed_job, -1 error */
  int failed_job;
};

static int new_segment(struct gmr_backward* b, int job, size_t size, void** p) {
  int rc = b->malloc_fn(p, size);
  for (int level = 1; rc != 0 && level <= 2; ++level) {
    if (b->release(job, level, size) == 1) rc = b->malloc_fn(p, size);
  }
  return rc;
}

static void* gmr_engine_thread_main(void* arg) {
  struct gmr_backward* b = (struct gmr_backward*)arg;
  for (int i = 0; i < b->njobs; ++i) {
    long long need = b->take(i);
    if (need < 0) {
      b->status = -1;
      b->failed_job = i;
      return NULL;
    }
    if (need == 0) continue;
    void* p = NULL;
    if (new_segment(b, i, (size_t)need, &p) != 0) {
      size_t free_bytes = 0, total_bytes = 0;
      b->info_fn(&free_bytes, &total_bytes);
      b->oom(i, (size_t)need, free_bytes, total_bytes);
      b->status = 1;
      b->failed_job = i;
      return NULL;
    }
    if (b->place(i, p, (size_t)need) != 0) {
      b->status = -1;
      b->failed_job = i;
      return NULL;
    }
  }
  return NULL;
}

/* Runs njobs jobs on a new native thread and waits for it (the caller holds
 * no GIL: ctypes.CDLL releases it). Returns 0 done, 1 out of memory (at
 * *failed_job), -1 error (the runtime, the thread or a callback). */
int gmr_engine_run_backward(const char* cudart_path, int njobs, gmr_take_fn take, gmr_release_fn release,
                            gmr_place_fn place, gmr_oom_fn oom, int* failed_job) {
  void* h = dlopen(cudart_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  struct gmr_backward b = {(cuda_malloc_fn)dlsym(h, "cudaMalloc"), (cuda_mem_get_info_fn)dlsym(h, "cudaMemGetInfo"),
                           take, release, place, oom, njobs, 0, -1};
  pthread_t t;
  if (!b.malloc_fn || !b.info_fn || pthread_create(&t, NULL, gmr_engine_thread_main, &b) != 0) {
    dlclose(h);
    return -1;
  }
  pthread_join(t, NULL);
  dlclose(h);
  if (failed_job) *failed_job = b.failed_job;
  return b.status;
}
