/* Stand-in for c10's CUDA calls (tests only), built as libc10_cuda_standin.so.
 *
 * In PyTorch the caching allocator's segments come from native code in
 * libc10_cuda.so (read in pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp):
 * DeviceCachingAllocator::alloc_block sets p.err = cudaMallocMaybeCapturing(
 * &ptr, size) (cudaMalloc outside graph capture) and checks it after the call;
 * release_block calls C10_CUDA_CHECK(cudaFree(block->ptr)). The stand-in torch (site-packages/torch/_C.py) keeps the
 * allocator's book-keeping in Python but makes those two calls here, through
 * ctypes, so the frame that calls the CUDA runtime is in a library named
 * like c10's, as it is under a real torch (the recorder's per-library
 * accounting then counts these segments as PyTorch's: common/roles.cpp,
 * framework_library). ctypes releases the GIL around the call, as c10 runs
 * cudaMalloc without it. The runtime is the one GMR_CUDART names; cudaMalloc
 * is found with dlsym on its handle (the preloaded recorder's dlsym hands
 * out its hook), as gmr_autograd_engine.c does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_free_fn)(void*);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cuda_malloc_fn g_malloc;
static cuda_free_fn g_free;

static void resolve(void) {
  const char* path = getenv("GMR_CUDART");
  void* rt = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
  if (!rt) return;
  g_malloc = (cuda_malloc_fn)dlsym(rt, "cudaMalloc");
  g_free = (cuda_free_fn)dlsym(rt, "cudaFree");
}

/* cudaErrorInitializationError (3) when the runtime cannot be found. */
int c10_cuda_malloc(void** ptr, size_t size) {
  pthread_once(&g_once, resolve);
  return g_malloc ? g_malloc(ptr, size) : 3;
}

int c10_cuda_free(void* ptr) {
  pthread_once(&g_once, resolve);
  return g_free ? g_free(ptr) : 3;
}
