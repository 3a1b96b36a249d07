# Allocations made with the GIL released, as PyTorch operators, CuPy, ctypes
# .CDLL and pybind11 extensions make them: through ctypes.CDLL from nested
# functions, through a C extension that calls PyEval_SaveThread (two ways),
# from four Python threads at once, from a generator and from an asyncio
# task. Every one must carry the calling thread's own Python frames.
import asyncio
import ctypes
import threading
from gmr_case import rt_nogil, ptr, MiB
import gmr_nogil_ext

KiB = 1 << 10


def cdll_leaf(n):
    p = ptr()
    return rt_nogil.cudaMalloc(ctypes.byref(p), n)  # @site:cdll_leaf


class Layer:
    def forward(self, n):
        return cdll_leaf(n)  # @site:forward


def ext_scoped(n):
    return gmr_nogil_ext.malloc_released(n)  # @site:ext_scoped


def ext_saved(n):
    return gmr_nogil_ext.malloc_saved(n)  # @site:ext_saved


def thread_body(barrier, n, rcs):
    barrier.wait()
    for _ in range(3):
        rcs.append(ext_saved(n))  # @site:thread_body


def in_threads():
    barrier = threading.Barrier(4)
    rcs = []
    threads = [threading.Thread(target=thread_body, args=(barrier, 100 * KiB + i * KiB, rcs)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rcs == [0] * 12, rcs


def gen_allocs(n):
    for _ in range(2):
        yield cdll_leaf(n)  # @site:gen


async def task_alloc(n):
    await asyncio.sleep(0)
    return ext_scoped(n)  # @site:task


async def tasks():
    return await asyncio.gather(asyncio.create_task(task_alloc(300 * KiB)))  # @site:gather


def main():
    assert Layer().forward(200 * KiB) == 0  # @site:main_forward
    assert ext_scoped(201 * KiB) == 0  # @site:main_scoped
    in_threads()
    assert list(gen_allocs(202 * KiB)) == [0, 0]  # @site:main_gen
    assert asyncio.run(tasks()) == [0]
    while True:  # out of memory with the GIL released
        rc = Layer().forward(MiB)  # @site:main_oom
        if rc != 0:
            return rc


print("oom rc", main())  # @site:module
