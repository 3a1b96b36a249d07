"""A Python program for `gpumemrec top` to watch (tests/e2e/test_top.py,
case top_python): GPU memory from Python functions, a method and a thread,
through the fake runtime (ctypes, the GIL held in the call as PyTorch's
bindings hold it until they release it), then "READY" and a wait on stdin
("grow": one more allocation from another site; "quit"). Standard library
only; GMR_CUDART is the fake libcudart.so."""
import ctypes
import os
import sys
import threading

MiB = 1 << 20
rt = ctypes.PyDLL(os.environ["GMR_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaMalloc.restype = ctypes.c_int
kept = []


def allocate(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), n) == 0
    kept.append(p)


class Layer:
    def build(self, n):
        allocate(n)


def load_weights():
    for _ in range(3):
        Layer().build(8 * MiB)


def make_cache():
    allocate(2 * MiB)


def grow():
    allocate(1 * MiB)


load_weights()
worker = threading.Thread(target=make_cache)
worker.start()
worker.join()
print("READY", flush=True)
for line in sys.stdin:
    if line.startswith("quit"):
        break
    if line.startswith("grow"):
        grow()
    print("READY", flush=True)
