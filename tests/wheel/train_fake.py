"""A training-loop stand-in for the wheel test: allocates GPU memory the way
a framework's allocator does (cudaMalloc through the runtime, from Python
via ctypes with the GIL held, as PyTorch's allocator is called from
Python-level code) against the fake runtime (GMR_CUDART), until the device
is full. Weights first (4 x 32 MiB), then activations (16 MiB each) until
cudaMalloc fails; exits 3 so the test sees the exit status pass through.
"""
import ctypes
import os
import sys

MiB = 1 << 20
rt = ctypes.PyDLL(os.environ["GMR_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaMalloc.restype = ctypes.c_int


def cuda_malloc(n):
    p = ctypes.c_void_p()
    return rt.cudaMalloc(ctypes.byref(p), n)


def load_weights():
    for _ in range(4):
        assert cuda_malloc(32 * MiB) == 0


class Block:
    def forward(self, n):
        return cuda_malloc(n)


def train_step():
    while True:
        rc = Block().forward(16 * MiB)
        if rc != 0:
            return rc


load_weights()
print("OOM rc=%d" % train_step(), flush=True)
sys.exit(3)
