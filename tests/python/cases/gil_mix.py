# At the same time: a Python thread allocating with the GIL released
# (ctypes.CDLL, nested calls), a Python thread running pure Python code
# (frames pushed and popped, functions created and dropped, generators), and
# then a native thread with no Python state allocating until out of memory
# while the pure-Python thread still runs.
import ctypes
import os
import threading
from gmr_case import rt_nogil, ptr, MiB

native = ctypes.CDLL(os.environ["GMR_NATIVE_LIB"])  # GIL released while it waits
native.native_thread_alloc_until_failure.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
native.native_thread_alloc_until_failure.restype = ctypes.c_int
ROUNDS = 400
stop = threading.Event()


def a_leaf(n):
    p = ptr()
    rc = rt_nogil.cudaMalloc(ctypes.byref(p), n)  # @site:a_leaf
    rt_nogil.cudaFree(p)
    return rc


def a_mid(n):
    return a_leaf(n)  # @site:a_mid


def allocator():
    for i in range(ROUNDS):
        assert a_mid(50000 + i) == 0  # @site:allocator


def churn(depth):
    if depth == 0:
        return sum(x for x in range(20))
    f = eval("lambda d: churn(d)")
    return f(depth - 1)


def pure_python():
    while not stop.is_set():
        churn(8)


def main():
    b = threading.Thread(target=pure_python)
    a = threading.Thread(target=allocator)
    b.start()
    a.start()
    a.join()
    n = native.native_thread_alloc_until_failure(os.environ["GMR_CUDART"].encode(), 3 * MiB, 1000)
    stop.set()
    b.join()
    assert n > 0, n
    print("native allocations", n)


main()
