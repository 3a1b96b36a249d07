# Times capture_python_frames() at a Python depth of DEPTH frames through
# tests/python/libgmr_pystack_bench.so (a copy of the shim's Python-stack
# code; see pystack_bench.cpp). Run WITHOUT LD_PRELOAD.
import ctypes
import sys

lib = ctypes.PyDLL(sys.argv[1])  # PyDLL: the GIL stays held during the calls
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 20
ITERS = 200000
lib.gmr_bench_capture.restype = ctypes.c_double
lib.gmr_bench_capture.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
lib.gmr_bench_status.restype = ctypes.c_char_p
lib.gmr_bench_init(1)


def measure():
    frames = ctypes.c_int()
    ns = lib.gmr_bench_capture(ITERS, ctypes.byref(frames))
    buf = ctypes.create_string_buffer(256)
    line = ctypes.c_int()
    status = lib.gmr_bench_status(buf, 256, ctypes.byref(line)).decode()
    return ns, frames.value, status, buf.value.decode(), line.value


def nest(depth):
    if depth <= 2:  # this frame and <module> make up the rest
        return measure()  # @site:measure
    return nest(depth - 1)


ns, frames, status, func, line = nest(DEPTH - 1)
print("capture_python_frames: %.1f ns per event at %d Python frames (status %s, innermost %s:%d)"
      % (ns, frames, status, func, line))
nogil = ctypes.CDLL(sys.argv[1])  # CDLL: the GIL is released: one marker word
nogil.gmr_bench_capture.restype = ctypes.c_double
nogil.gmr_bench_capture.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
f = ctypes.c_int()
print("capture_python_frames without the GIL: %.1f ns per event (%d word)" % (nogil.gmr_bench_capture(ITERS, ctypes.byref(f)), f.value))
