"""GPUMEMREC_DUMP_AT_EXIT=1: PyTorch's view of the memory still held at a
normal exit, for the exit bundle's framework.json.

An atexit handler, registered once CUDA is initialized (torch_hook.py),
takes the allocator snapshot of the current device, walks the roles as at
an out-of-memory (torch_digest.py), adds PyTorch's own peaks
(torch.cuda.max_memory_allocated / max_memory_reserved: the
allocated_bytes/reserved_bytes.all.peak of memory_stats, torch/cuda/memory.py)
and the walk's moment (snapshot_mono_ns, done_mono_ns: torch_digest.mark_walk)
and hands the digest, with "at": "exit", to the recorder's
gpumemrec_framework_exit(digest, len) when the preloaded library exports
it (an older library does not: then nothing happens). Python runs atexit
handlers before the interpreter finalizes, so before the recorder's own
exit bundle.
"""
import os
import time

from . import bridge, torch_digest

_TRUE = ("1", "true", "yes", "on")  # common/config.cpp parse_bool


def install():
    if os.environ.get("GPUMEMREC_DUMP_AT_EXIT", "").strip().lower() not in _TRUE:
        return
    import atexit

    atexit.register(bridge.guarded, _report_exit)


def _report_exit():
    import ctypes
    import json

    fn = getattr(ctypes.CDLL(None), "gpumemrec_framework_exit", None)
    if fn is None:
        return
    import torch


    if not torch.cuda.is_initialized():
        return
    device = int(torch.cuda.current_device())
    free, total = torch.cuda.mem_get_info(device)
    started = time.monotonic_ns()
    snapshot = torch.cuda.memory._snapshot()
    digest = torch_digest.full_digest(torch, snapshot, device, 0, total, free, "exit")
    torch_digest.mark_walk(digest, started)
    digest["torch_peak_allocated"] = int(torch.cuda.max_memory_allocated(device))
    digest["torch_peak_reserved"] = int(torch.cuda.max_memory_reserved(device))
    text = json.dumps(digest, separators=(",", ":")).encode()
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    fn(text, len(text))
