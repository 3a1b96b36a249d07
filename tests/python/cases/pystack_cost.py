# Times capture_python_frames() at a Python depth of DEPTH frames through
# tests/python/libgmr_pystack_bench.so (a copy of the shim's Python-stack
# code; see pystack_bench.cpp), with the GIL held (ctypes.PyDLL) and with the
# GIL released (ctypes.CDLL, as PyTorch operators call cudaMalloc), from a
# recursion (one code object repeated) and from DEPTH distinct functions
# (each code object validated once per capture). Run WITHOUT LD_PRELOAD.
import ctypes
import sys

DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 20
ITERS = 20000


def load(cls):
    lib = cls(sys.argv[1])
    lib.gmr_bench_capture.restype = ctypes.c_double
    lib.gmr_bench_capture.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.gmr_bench_walk.restype = ctypes.c_double
    lib.gmr_bench_walk.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.gmr_bench_status.restype = ctypes.c_char_p
    return lib


held = load(ctypes.PyDLL)      # the GIL stays held during the calls
released = load(ctypes.CDLL)   # the GIL is released during the calls
held.gmr_bench_init(1, sys.version_info[1])


def measure(lib):
    frames, walked = ctypes.c_int(), ctypes.c_int()
    # Floor and capture alternate (three times each; the best of each) so
    # that both see the same load.
    floor, ns = 1e30, 1e30
    for _ in range(3):
        floor = min(floor, lib.gmr_bench_walk(ITERS, ctypes.byref(walked)))
        ns = min(ns, lib.gmr_bench_capture(ITERS, ctypes.byref(frames)))
    if walked.value != frames.value:
        sys.exit("the floor walked %d frames, the capture took %d" % (walked.value, frames.value))
    buf = ctypes.create_string_buffer(256)
    line = ctypes.c_int()
    status = lib.gmr_bench_status(buf, 256, ctypes.byref(line)).decode()
    return ns, floor, frames.value, status, buf.value.decode(), line.value


def nest(depth, lib):
    if depth <= 2:  # this frame and <module> make up the rest
        return measure(lib)  # @site:measure
    return nest(depth - 1, lib)


# DEPTH - 3 distinct functions d_0 .. d_n calling each other, then measure.
src = "".join("def d_%d(lib):\n    return d_%d(lib)\n" % (i, i + 1) for i in range(DEPTH - 3))
src += "def d_%d(lib):\n    return measure(lib)\n" % (DEPTH - 3)
distinct = {"measure": measure}
exec(compile(src, "<distinct>", "exec"), distinct)

for label in ("recursion", "distinct"):
    for how, lib in (("GIL held", held), ("GIL released", released)):
        if label == "recursion":
            ns, floor, frames, status, func, line = nest(DEPTH - 1, lib)
        else:
            ns, floor, frames, status, func, line = distinct["d_0"](lib)
        print("capture_python_frames (%s, %s): %.1f ns per event at %d Python frames (status %s, innermost %s:%d);"
              " floor (bare walk) %.1f ns, added %.1f ns (%.2fx the floor)"
              % (how, label, ns, frames, status, func, line, floor, ns - floor, ns / floor))


# A borrowed capture: a native thread with no Python frame while this thread
# waits in a function shaped like PyTorch's _engine_run_backward (the
# autograd_shape fixture), GIL released. The same DEPTH of Python frames.
import os  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograd_shape", "site-packages"))
from torch.autograd import graph  # noqa: E402  (the fixture)

released.gmr_bench_borrow.restype = ctypes.c_double
released.gmr_bench_borrow.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int]
graph.Variable._execution_engine.run_backward = released.gmr_bench_borrow


def borrow(depth):
    if depth > 3:  # DEPTH - 2 of these, _engine_run_backward and <module>
        return borrow(depth - 1)
    words, status = ctypes.c_int(), ctypes.create_string_buffer(32)
    ns = graph._engine_run_backward(ITERS // 10, ctypes.byref(words), status, 32)
    return ns, words.value, status.value.decode()


ns, words, status = borrow(DEPTH)
print("borrowed capture (native thread, caller waiting in _engine_run_backward): %.1f ns per event at %d words"
      " (status %s)" % (ns, words, status))
if status != "borrowed" or words != DEPTH + 1:
    sys.exit("borrowed capture: status %s, %d words (want borrowed, %d)" % (status, words, DEPTH + 1))
