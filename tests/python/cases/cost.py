# Cost of the Python part of a stack: alloc+free pairs at a Python depth of
# about 20 frames. Prints ns per pair; the runner compares runs with
# GPUMEMREC_PYTHON_STACKS=1 and =0.
import ctypes
import sys
import time
from gmr_case import rt, ptr, MiB

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
DEPTH = 20


def pairs(n):
    p = ptr()
    ref = ctypes.byref(p)
    malloc, free = rt.cudaMalloc, rt.cudaFree
    best = None
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            malloc(ref, 256)
            free(p)
        dt = time.perf_counter_ns() - t0
        best = dt if best is None else min(best, dt)
    return best / n


def nest(depth, n):
    if depth <= 2:  # this frame, pairs() and <module> make up the rest
        return pairs(n)
    return nest(depth - 1, n)


print("ns_per_pair %.1f" % nest(DEPTH - 1, PAIRS))
