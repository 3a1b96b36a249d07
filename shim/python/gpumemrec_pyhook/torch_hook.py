"""PyTorch: an out-of-memory observer, attached once CUDA is initialized.

Sources read (pytorch/pytorch):
- torch/cuda/__init__.py, _lazy_call: runs the callable at once when
  is_initialized(), else queues it for _lazy_init, which runs the queue
  (under _initialization_lock) right after torch._C._cuda_init() and turns
  an exception of a queued call into DeferredCudaCallError: ours never raise.
- torch/csrc/cuda/Module.cpp, _cuda_attach_out_of_memory_observer: the
  Python callable is called with the GIL as fn(device, alloc, device_allocated,
  device_free); an exception in it would propagate out of the allocator.
  Attaching before CUDA is initialized crashes (pytorch issue 107330): hence
  _lazy_call.
- c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc: the
  observers run after the last retry (after release_cached_blocks) failed,
  with the allocator's lock released, before OutOfMemoryError is thrown; the
  third argument is the device total, or the limit set by
  set_per_process_memory_fraction.
- torch/cuda/memory.py, _snapshot (a dict: "segments" with their "blocks",
  "device_traces") and _record_memory_history(enabled="all", context="all",
  stacks="all", max_entries=...).
The digest (framework.json) is torch_digest.py's; the exit handler
(torch_exit.py) is installed from here. Imports go one way: torch_hook ->
torch_exit -> torch_digest.
A trainer's handler that will catch the error and retry (trainer_retry.py)
is named in the digest.
"""
import os
import sys

from . import bridge, torch_digest


def on_import(torch):
    cuda = getattr(torch, "cuda", None)
    lazy_call = getattr(cuda, "_lazy_call", None)
    if lazy_call is None:
        return  # a build without CUDA
    lazy_call(_on_cuda_init)


def _history_entries():
    text = os.environ.get("GPUMEMREC_TORCH_HISTORY", "").strip()
    if not text or text == "0":
        return 0
    try:
        n = int(text)
        if n < 0 or n > 100000000:
            raise ValueError
        return n
    except ValueError:
        return 0  # the library's configuration check said so already (common/config.cpp)


def _on_cuda_init():
    def attach():
        import torch  # imported already: we run inside its initialization

        attach_observer = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach_observer is None:
            return  # a PyTorch older than the observer API (2.0): nothing to attach to
        attach_observer(_observer)
        n = _history_entries()
        if n:
            torch.cuda.memory._record_memory_history(max_entries=n)
        from . import torch_exit

        torch_exit.install()

    bridge.guarded(attach)


def _observer(device, alloc, device_total, device_free):
    # The Python frame that called into PyTorch; None on a thread that runs
    # no Python (the autograd engine's device thread).
    caller = sys._getframe().f_back
    # First: the episode must not close on its window while the walk runs.
    bridge.guarded(bridge.begin, device)
    bridge.guarded(_report, device, alloc, device_total, device_free, caller)


def _report(device, alloc, device_total, device_free, caller):
    import pickle
    import time

    import torch

    from . import trainer_retry

    found = bridge.guarded(trainer_retry.find, caller)
    started = time.monotonic_ns()
    snapshot = torch.cuda.memory._snapshot()
    digest = torch_digest.full_digest(torch, snapshot, device, alloc, device_total, device_free, "oom")
    torch_digest.mark_walk(digest, started)
    if found:
        digest["retry_handler"] = found.handler.name
    try:
        state = pickle.dumps(snapshot, protocol=4)  # memory_viz refuses protocol 5
    except Exception as exc:
        bridge.warn_once("the allocator snapshot could not be pickled: %s" % exc)
        state = b""
    if bridge.report(digest, "framework_state.pickle", state) == 0 and found:
        trainer_retry.await_catch(device, found)
