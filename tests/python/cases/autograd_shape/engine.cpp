// Test fixture with the SHAPE of PyTorch's autograd engine, for the
// borrowed-frames tests (tests/python/run_backward.py); not the torch
// stand-in (tests/python/site-packages/torch). Built as libtorch_autograd_shape.so
// so that its module name is PyTorch's (libtorch*), with libtorch's symbol
// names for the frames the dump reads (common/autograd_node.h): the engine
// thread's loop `torch::autograd::Engine::thread_main` and a generated
// node's `torch::autograd::generated::MmBackward0::apply`
// (torch/csrc/autograd/engine.cpp, tools/autograd/gen_autograd_functions.py).
//
// As THPEngine_run_backward (torch/csrc/autograd/python_engine.cpp) does, the
// caller (a ctypes.CDLL call: the GIL is released) hands the work to an
// engine thread and waits for it; the engine thread calls cudaMalloc, or
// (mode 3) runs a gradient hook from Python in AccumulateGrad::apply, as
// PyTorch's PyFunctionTensorPostAccGradHooks does
// (torch/csrc/autograd/python_hook.cpp: the GIL taken with
// pybind11::gil_scoped_acquire, a thread state made for a thread Python
// never saw; here a ctypes callback, which takes it with PyGILState_Ensure).
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstddef>

namespace torch {
namespace autograd {

struct Job {
  int mode;          // 0: allocate until failure; 2: allocate+free `count` times first; 3: the hook
  size_t size;
  int count;
  int done;
};

namespace generated {
struct MmBackward0 {
  static int apply(Job& job);
};
}  // namespace generated

struct AccumulateGrad {
  static int apply(Job& job);
};

struct Engine {
  static void* thread_main(void* job);
};

}  // namespace autograd
}  // namespace torch

namespace {

using MallocFn = int (*)(void**, size_t);
using FreeFn = int (*)(void*);
MallocFn g_malloc = nullptr;
FreeFn g_free = nullptr;

using HookFn = int (*)();
HookFn g_hook = nullptr;
std::atomic<int> g_blocked{0};
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
bool g_released = false;

}  // namespace

namespace torch {
namespace autograd {

__attribute__((noinline)) int generated::MmBackward0::apply(Job& job) {
  if (job.mode == 2) {
    for (int i = 0; i < job.count; ++i) {
      void* p = nullptr;
      if (g_malloc(&p, job.size) != 0) return -1;
      g_free(p);
    }
  }
  for (job.done = 0; job.mode == 2 || job.done < job.count; ++job.done) {
    void* p = nullptr;
    if (g_malloc(&p, job.size) != 0) break;
  }
  __asm__ __volatile__("" ::: "memory");  // not a tail call: the frame stays
  return job.done;
}

__attribute__((noinline)) int AccumulateGrad::apply(Job& job) {
  job.done = g_hook ? g_hook() : -1;
  __asm__ __volatile__("" ::: "memory");
  return job.done;
}

__attribute__((noinline)) void* Engine::thread_main(void* arg) {
  Job* job = static_cast<Job*>(arg);
  if (job->mode == 3) AccumulateGrad::apply(*job);
  else generated::MmBackward0::apply(*job);
  __asm__ __volatile__("" ::: "memory");
  return nullptr;
}

}  // namespace autograd
}  // namespace torch

extern "C" {

// cudaMalloc/cudaFree from the runtime at `cudart` (the preloaded recorder's
// dlsym hands out its hooks); 0 on success.
int gmr_engine_init(const char* cudart) {
  void* h = dlopen(cudart, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  g_malloc = reinterpret_cast<MallocFn>(dlsym(h, "cudaMalloc"));
  g_free = reinterpret_cast<FreeFn>(dlsym(h, "cudaFree"));
  return g_malloc && g_free ? 0 : -1;
}

// The Python caller's run_backward. mode 0: one engine thread allocates
// `size` until failure (at most `count` times); mode 2: it first allocates
// and frees `count` times, then allocates until failure; mode 1: no work,
// the caller waits until gmr_engine_release(); mode 3: the engine thread
// calls the hook (gmr_engine_set_hook) and returns what it returned.
// Returns the allocations made.
int gmr_engine_run_backward(int mode, size_t size, int count) {
  if (mode == 1) {
    pthread_mutex_lock(&g_mu);
    g_blocked.fetch_add(1);
    while (!g_released) pthread_cond_wait(&g_cv, &g_mu);
    g_blocked.fetch_sub(1);
    pthread_mutex_unlock(&g_mu);
    return 0;
  }
  if (!g_malloc) return -1;
  torch::autograd::Job job{mode, size, count, 0};
  pthread_t t;
  if (pthread_create(&t, nullptr, torch::autograd::Engine::thread_main, &job) != 0) return -1;
  pthread_join(t, nullptr);
  return job.done;
}

int gmr_engine_blocked() { return g_blocked.load(); }

void gmr_engine_set_hook(HookFn hook) { g_hook = hook; }

void gmr_engine_release() {
  pthread_mutex_lock(&g_mu);
  g_released = true;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
}

}  // extern "C"
