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
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
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

/* ---- run_backward as a C method of the engine object, as PyTorch's is
 * (python_engine.cpp: THPEngine_methods lists run_backward with
 * METH_VARARGS | METH_KEYWORDS; THPEngine_run_backward parses its arguments,
 * then runs Engine::execute under pybind11::gil_scoped_release). So while
 * backward runs, the waiting thread's innermost Python frame is its caller,
 * torch/autograd/graph.py _engine_run_backward: no Python frame of the
 * engine's own sits above it. The Python part (torch/_autograd_engine.py)
 * prepares the graph task before the wait and finishes it after, each as a
 * call that returns before the GIL is released.
 *
 * The interpreter's functions are taken from the process (the python
 * executable or libpython exports them), all of the stable ABI, so one build
 * serves every CPython the tests run; nothing here includes Python.h. */
typedef struct gmr_pyobject gmr_pyobject;
struct gmr_method_def {
  const char* name;
  gmr_pyobject* (*meth)(gmr_pyobject*, gmr_pyobject*, gmr_pyobject*);
  int flags;
  const char* doc;
};
enum { GMR_METH_VARARGS = 1, GMR_METH_KEYWORDS = 2 };

static struct {
  gmr_pyobject* (*get_attr)(gmr_pyobject*, const char*);
  gmr_pyobject* (*call)(gmr_pyobject*, gmr_pyobject*, gmr_pyobject*);
  int (*parse_tuple)(gmr_pyobject*, const char*, ...);
  void* (*save_thread)(void);
  void (*restore_thread)(void*);
  gmr_pyobject* (*call_method)(gmr_pyobject*, const char*, const char*, ...);
  void (*dec_ref)(gmr_pyobject*);
  gmr_pyobject* (*new_cfunction)(struct gmr_method_def*, gmr_pyobject*, gmr_pyobject*);
} py;

static int load_python_api(void) {
  if (py.new_cfunction) return 0;
  py.get_attr = dlsym(RTLD_DEFAULT, "PyObject_GetAttrString");
  py.call = dlsym(RTLD_DEFAULT, "PyObject_Call");
  py.parse_tuple = dlsym(RTLD_DEFAULT, "PyArg_ParseTuple");
  py.save_thread = dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
  py.restore_thread = dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
  py.call_method = dlsym(RTLD_DEFAULT, "PyObject_CallMethod");
  py.dec_ref = dlsym(RTLD_DEFAULT, "Py_DecRef");
  py.new_cfunction = dlsym(RTLD_DEFAULT, "PyCFunction_NewEx");
  return py.get_attr && py.call && py.parse_tuple && py.save_thread && py.restore_thread && py.call_method &&
                 py.dec_ref && py.new_cfunction ? 0 : -1;
}

/* self._prepare(*args, **kwargs) -> (cudart_path, njobs, take, release,
 * place, oom, &failed) as integers; the wait with the GIL released; then
 * self._finish(rc), whose result (or exception) is run_backward's. */
static gmr_pyobject* run_backward_method(gmr_pyobject* self, gmr_pyobject* args, gmr_pyobject* kwargs) {
  gmr_pyobject* prepare = py.get_attr(self, "_prepare");
  if (!prepare) return NULL;
  gmr_pyobject* prepared = py.call(prepare, args, kwargs);
  py.dec_ref(prepare);
  if (!prepared) return NULL;
  const char* path;
  int njobs;
  unsigned long long take, release, place, oom, failed;
  if (!py.parse_tuple(prepared, "yiKKKKK", &path, &njobs, &take, &release, &place, &oom, &failed)) {
    py.dec_ref(prepared);
    return NULL;
  }
  void* ts = py.save_thread();
  int rc = gmr_engine_run_backward(path, njobs, (gmr_take_fn)take, (gmr_release_fn)release, (gmr_place_fn)place,
                                   (gmr_oom_fn)oom, (int*)failed);
  py.restore_thread(ts);
  py.dec_ref(prepared);  /* it held the path's bytes during the wait */
  return py.call_method(self, "_finish", "i", rc);
}

static struct gmr_method_def run_backward_def = {"run_backward", run_backward_method,
                                                 GMR_METH_VARARGS | GMR_METH_KEYWORDS, NULL};

/* The bound method for `engine` (called through ctypes.PyDLL, GIL held);
 * NULL with no exception set only if the interpreter's API is not found. */
gmr_pyobject* gmr_engine_method(gmr_pyobject* engine) {
  if (load_python_api() != 0) return NULL;
  return py.new_cfunction(&run_backward_def, engine, NULL);
}
