/* Test helper, built at test time against the interpreter under test
 * (run_case.py compiles it with that interpreter's headers): a C extension
 * that releases the GIL the way pybind11's gil_scoped_release and PyTorch's
 * operators do (PyEval_SaveThread ... PyEval_RestoreThread), then calls
 * cudaMalloc from native code. The runtime is found with dlopen/dlsym on the
 * path in GMR_CUDART (the preloaded recorder's dlsym hands out its hook). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*cuda_malloc_fn)(void**, size_t);
static cuda_malloc_fn g_malloc;

/* Native code a few frames deep, as an operator would be. */
static __attribute__((noinline)) int native_alloc(size_t size) {
  void* p = NULL;
  return g_malloc(&p, size);
}

/* malloc_released(size) -> rc: the allocation runs with the GIL released
 * (scoped: Py_BEGIN_ALLOW_THREADS is PyEval_SaveThread + RestoreThread). */
static PyObject* malloc_released(PyObject* self, PyObject* args) {
  Py_ssize_t size;
  int rc;
  if (!PyArg_ParseTuple(args, "n", &size)) return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = native_alloc((size_t)size);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(rc);
}

/* malloc_saved(size) -> rc: the same with explicit PyEval_SaveThread /
 * PyEval_RestoreThread (pybind11::gil_scoped_release). */
static PyObject* malloc_saved(PyObject* self, PyObject* args) {
  Py_ssize_t size;
  if (!PyArg_ParseTuple(args, "n", &size)) return NULL;
  PyThreadState* saved = PyEval_SaveThread();
  int rc = native_alloc((size_t)size);
  PyEval_RestoreThread(saved);
  return PyLong_FromLong(rc);
}

static PyMethodDef methods[] = {
    {"malloc_released", malloc_released, METH_VARARGS, NULL},
    {"malloc_saved", malloc_saved, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gmr_nogil_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_gmr_nogil_ext(void) {
  const char* path = getenv("GMR_CUDART");
  void* h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  g_malloc = h ? (cuda_malloc_fn)dlsym(h, "cudaMalloc") : NULL;
  if (!g_malloc) {
    PyErr_SetString(PyExc_ImportError, "gmr_nogil_ext: cannot find cudaMalloc (GMR_CUDART)");
    return NULL;
  }
  return PyModule_Create(&module);
}
