#!/usr/bin/env python3
"""alloc_bench.py: cudaMalloc + cudaFree pairs from Python (stdlib only).

An unmodified Python "GPU program": ctypes.PyDLL into the CUDA runtime (the
fake libcudart in the benchmark), so the GIL stays held during the calls and
the shim sees a thread running Python code; with --nogil, ctypes.CDLL, which
releases the GIL around each call (as PyTorch operators, CuPy and pybind11
extensions call cudaMalloc). The pairs are made from --frames nested Python
functions.

  alloc_bench.py --lib /path/libcudart.so.13 [--pairs N] [--frames F] [--warmup W] [--nogil]
      prints: RESULT mode=python|python_nogil frames=F pairs=N ns_per_pair=<wall/N> cpu_ns_per_pair=<thread CPU/N>
  alloc_bench.py --lib ... --probe-oom
      one pair from F frames, then one cudaMalloc larger than the device (under
      the shim this writes a dump bundle: run_bench.py checks its stacks for
      Python frames). prints: PROBE rc=<code>
"""
import argparse
import ctypes
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--pairs", type=int, default=50000)
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--probe-oom", action="store_true")
    ap.add_argument("--nogil", action="store_true", help="ctypes.CDLL: the GIL is released in each call")
    args = ap.parse_args()

    rt = (ctypes.CDLL if args.nogil else ctypes.PyDLL)(args.lib)
    cuda_malloc = rt.cudaMalloc
    cuda_malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    cuda_malloc.restype = ctypes.c_int
    cuda_free = rt.cudaFree
    cuda_free.argtypes = [ctypes.c_void_p]
    cuda_free.restype = ctypes.c_int

    ptr = ctypes.c_void_p()
    ref = ctypes.byref(ptr)
    size = args.size

    def pair_loop(n):
        for _ in range(n):
            rc = cuda_malloc(ref, size)
            if rc != 0:
                raise SystemExit("cudaMalloc failed: %d" % rc)
            rc = cuda_free(ptr)
            if rc != 0:
                raise SystemExit("cudaFree failed: %d" % rc)

    def at_depth(depth, fn):
        # One Python frame per level. The pairs run `frames` Python frames
        # deep: <module>, main, at_depth x (nest + 1), timed, pair_loop.
        if depth > 0:
            return at_depth(depth - 1, fn)
        return fn()

    nest = max(args.frames - 5, 0)

    if args.probe_oom:
        at_depth(nest, lambda: pair_loop(1))
        free_b, total_b = ctypes.c_size_t(), ctypes.c_size_t()
        rt.cudaMemGetInfo(ctypes.byref(free_b), ctypes.byref(total_b))
        rc = at_depth(nest, lambda: cuda_malloc(ref, total_b.value + (1 << 30)))
        print("PROBE rc=%d" % rc, flush=True)
        return 0

    def timed():
        pair_loop(args.warmup)
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        pair_loop(args.pairs)
        t1 = time.perf_counter_ns()
        c1 = time.thread_time_ns()
        return t1 - t0, c1 - c0

    wall, cpu = at_depth(nest, timed)
    print("RESULT mode=%s frames=%d pairs=%d ns_per_pair=%.1f cpu_ns_per_pair=%.1f"
          % ("python_nogil" if args.nogil else "python", args.frames, args.pairs, wall / args.pairs, cpu / args.pairs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
