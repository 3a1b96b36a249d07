# Threads that do not hold the GIL: a call through ctypes.CDLL (which
# releases the GIL: the thread keeps its own Python frames), and a
# native thread started by a test library, with no Python state at all, that
# allocates until out of memory while this thread keeps the GIL (PyDLL):
# marked native_thread.
import ctypes
import os
from gmr_case import rt, rt_nogil, ptr, MiB

native = ctypes.PyDLL(os.environ["GMR_NATIVE_LIB"])
native.native_thread_alloc_until_failure.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
native.native_thread_alloc_until_failure.restype = ctypes.c_int


def with_gil(n):
    p = ptr()
    return rt.cudaMalloc(ctypes.byref(p), n)  # @site:with_gil


def without_gil(n):
    p = ptr()
    return rt_nogil.cudaMalloc(ctypes.byref(p), n)  # @site:without_gil


def main():
    assert with_gil(MiB) == 0  # @site:main_with
    assert without_gil(2 * MiB) == 0  # @site:main_without
    # The native thread allocates 3 MiB blocks until the fake runs out.
    n = native.native_thread_alloc_until_failure(os.environ["GMR_CUDART"].encode(), 3 * MiB, 1000)
    assert n > 0, n
    return n


print("native allocations", main())  # @site:module
