"""Shared set-up for the Python-stack test programs (stdlib only).

The runner (run_case.py) passes the fake libraries' paths in the environment.
PyDLL keeps the GIL during the foreign call (the Python stack must be
captured); CDLL releases it (the hook then runs on a thread without the GIL).
"""
import ctypes
import os

MiB = 1 << 20

rt = ctypes.PyDLL(os.environ["GMR_CUDART"])          # GIL held in calls
rt_nogil = ctypes.CDLL(os.environ["GMR_CUDART"])     # GIL released in calls
for lib in (rt, rt_nogil):
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.cudaMalloc.restype = ctypes.c_int
    lib.cudaFree.argtypes = [ctypes.c_void_p]
    lib.cudaFree.restype = ctypes.c_int

drv = ctypes.PyDLL(os.environ["GMR_CUDA"])
drv.cuInit.argtypes = [ctypes.c_uint]
drv.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
drv.cuMemAlloc_v2.restype = ctypes.c_int
assert drv.cuInit(0) == 0


def ptr():
    return ctypes.c_void_p()


def dptr():
    return ctypes.c_uint64()
