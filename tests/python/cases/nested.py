# Allocations from nested functions and a method, through the runtime
# (cudaMalloc) and the driver (cuMemAlloc_v2), until out of memory.
import ctypes
from gmr_case import rt, drv, ptr, dptr, MiB


def driver_alloc(n):
    p = dptr()
    rc = drv.cuMemAlloc_v2(ctypes.byref(p), n)  # @site:driver_alloc
    return rc


def keep_driver_allocations():
    for _ in range(3):
        assert driver_alloc(MiB) == 0  # @site:keep_driver


def leaf(n):
    p = ptr()
    rc = rt.cudaMalloc(ctypes.byref(p), n)  # @site:leaf
    return rc


class Model:
    def forward(self, n):
        return leaf(n)  # @site:forward


def middle(n):
    return Model().forward(n)  # @site:middle


def main():
    keep_driver_allocations()  # @site:main_keep
    while True:
        rc = middle(MiB)  # @site:main_loop
        if rc != 0:
            return rc


print("oom rc", main())  # @site:module
