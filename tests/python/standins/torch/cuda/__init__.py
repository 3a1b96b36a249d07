"""Stand-in for torch.cuda (tests only), after torch/cuda/__init__.py:
_initialized, _queued_calls, _initialization_lock (a threading.Lock, not
re-entrant), _tls, is_initialized(), _lazy_call() (runs at once under the
lock when initialized, else queues), _lazy_init() (under the lock:
torch._C._cuda_init(), then the queued calls with _tls.is_initializing set;
an exception of a queued call becomes DeferredCudaCallError).
"""
import ctypes
import os
import threading
import traceback

from .. import _C
from . import memory  # noqa: F401

_initialized = False
_queued_calls = []
_tls = threading.local()
_initialization_lock = threading.Lock()

OutOfMemoryError = _C.OutOfMemoryError


class DeferredCudaCallError(Exception):
    pass


def is_initialized():
    return _initialized


def _lazy_call(callable, **kwargs):
    if os.environ.get("STANDIN_BREAK") == "lazy_call":
        raise RuntimeError("stand-in: _lazy_call broken on purpose")
    with _initialization_lock:
        if is_initialized():
            callable()
        else:
            _queued_calls.append((callable, traceback.format_stack()))


def _lazy_init():
    global _initialized, _queued_calls
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        _C._cuda_init()
        _tls.is_initializing = True
        try:
            for queued_call, orig_traceback in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    raise DeferredCudaCallError("CUDA call failed lazily at initialization with error: %s\n\n"
                                                "CUDA call was originally invoked at:\n\n%s"
                                                % (e, "".join(orig_traceback))) from e
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def init():
    _lazy_init()


def set_per_process_memory_fraction(fraction, device=None):
    """torch/cuda/memory.py -> CUDACachingAllocator::setMemoryFraction."""
    _lazy_init()
    _C._allocator().fraction = float(fraction)


def get_per_process_memory_fraction(device=None):
    """torch/cuda/memory.py -> torch._C._cuda_getMemoryFraction: 1.0 unless set."""
    _lazy_init()
    f = _C._allocator().fraction
    return 1.0 if f is None else f


def get_allocator_backend():
    """torch/cuda/memory.py -> torch._C._cuda_getAllocatorBackend: the
    backend PYTORCH_CUDA_ALLOC_CONF's `backend:` chose ("native" unless
    "cudaMallocAsync"; c10/cuda/CUDAAllocatorConfig.cpp parseAllocatorConfig)."""
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").replace(" ", "")
    return "cudaMallocAsync" if "backend:cudaMallocAsync" in conf else "native"


def current_device():
    return 0


def mem_get_info(device=None):
    """torch/cuda/memory.py: cudaMemGetInfo, (free, total)."""
    free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
    _C._runtime().cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
    return free.value, total.value


def max_memory_allocated(device=None):
    return _C._allocator().peak_allocated if is_initialized() else 0


def max_memory_reserved(device=None):
    return _C._allocator().peak_reserved if is_initialized() else 0


def empty_cache():
    if is_initialized():
        _C._allocator().empty_cache()


def memory_reserved(device=None):
    return sum(s.size for s in _C._allocator().segments) if is_initialized() else 0


def memory_allocated(device=None):
    return sum(s.allocated_bytes() for s in _C._allocator().segments) if is_initialized() else 0
