# Several Python threads allocate (each from its own call chain), then the
# main thread allocates until out of memory.
import ctypes
import threading
from gmr_case import rt, ptr, MiB

N_THREADS = 4
PER_THREAD = 3
results = []


def thread_alloc(n):
    p = ptr()
    rc = rt.cudaMalloc(ctypes.byref(p), n)  # @site:thread_alloc
    return rc


def worker(barrier):
    barrier.wait()
    for _ in range(PER_THREAD):
        results.append(thread_alloc(MiB))  # @site:worker


def main_alloc(n):
    p = ptr()
    return rt.cudaMalloc(ctypes.byref(p), n)  # @site:main_alloc


def main():
    barrier = threading.Barrier(N_THREADS)
    threads = [threading.Thread(target=worker, args=(barrier,), name="w%d" % i) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [0] * (N_THREADS * PER_THREAD), results
    while True:
        rc = main_alloc(MiB)  # @site:main_loop
        if rc != 0:
            return rc


print("oom rc", main())  # @site:module
