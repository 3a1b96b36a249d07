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
Memory by role (roles.py), the allocator settings (torch_settings.py) and
the exit digest (torch_exit.py) join the digest here; a trainer's handler
that will catch the error and retry (trainer_retry.py) too.
"""
import os
import sys

from . import bridge

# A segment is "mostly free cache" when less than this share of it is
# allocated (fragmentation: reserved, cached, but not usable for a request
# bigger than its free blocks).
MOSTLY_FREE = 0.5
LISTED_SEGMENTS = 16


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
    # The open episode waits for our report, however long the walk takes.
    episode = bridge.guarded(bridge.hold, device) or 0
    attached = bridge.guarded(_report, device, alloc, device_total, device_free, caller, episode)
    if episode and not attached:  # the hook failed or the report was refused: the window decides
        bridge.guarded(bridge.unhold, episode)


def _report(device, alloc, device_total, device_free, caller, episode):
    """True when the report went to the open episode's bundle."""
    import pickle

    import torch

    from . import trainer_retry

    found = bridge.guarded(trainer_retry.find, caller)
    snapshot = torch.cuda.memory._snapshot()
    digest = full_digest(torch, snapshot, device, alloc, device_total, device_free, "oom")
    if found:
        digest["retry_handler"] = found.handler.name
    try:
        state = pickle.dumps(snapshot, protocol=4)  # memory_viz refuses protocol 5
    except Exception as exc:
        bridge.warn_once("the allocator snapshot could not be pickled: %s" % exc)
        state = b""
    attached = bridge.report(digest, "framework_state.pickle", state) == 0
    if found and attached and episode:
        trainer_retry.await_catch(episode, found)
    return attached


def full_digest(torch, snapshot, device, alloc, device_total, device_free, at):
    """digest_of plus "at", memory by role and the allocator settings."""
    from . import roles, torch_settings

    digest = digest_of(snapshot, device, alloc, device_total, device_free)
    digest["at"] = at
    digest["roles"] = roles.walk(torch, snapshot, int(device))
    digest["memory_fraction"] = bridge.guarded(torch_settings.memory_fraction, torch, int(device))
    digest["expandable_segments"] = bool(bridge.guarded(torch_settings.expandable_segments))
    digest["allocator_backend"] = bridge.guarded(torch_settings.allocator_backend, torch)
    return digest


def digest_of(snapshot, device, alloc, device_total, device_free):
    """reserved vs allocated, the largest free block and the mostly-free
    segments of the failing device (framework.json)."""
    segments = [s for s in snapshot.get("segments", []) if s.get("device", device) == device]
    listed = []
    reserved = allocated = largest = 0
    for seg in segments:
        total, used = int(seg.get("total_size", 0)), int(seg.get("allocated_size", 0))
        free_blocks = [int(b.get("size", 0)) for b in seg.get("blocks", []) if b.get("state") == "inactive"]
        seg_largest = max(free_blocks) if free_blocks else 0
        reserved += total
        allocated += used
        largest = max(largest, seg_largest)
        if total and used < total * MOSTLY_FREE:
            listed.append({"address": int(seg.get("address", 0)), "total_size": total, "allocated_size": used,
                           "largest_free_block": seg_largest, "free_blocks": len(free_blocks),
                           "segment_type": seg.get("segment_type", "")})
    listed.sort(key=lambda s: s["total_size"] - s["allocated_size"], reverse=True)
    return {
        "framework": "torch", "device": int(device), "request_bytes": int(alloc),
        "device_total": int(device_total), "device_free": int(device_free),
        "reserved_bytes": reserved, "allocated_bytes": allocated, "largest_free_block": largest,
        "segment_count": len(segments), "mostly_free_segment_count": len(listed),
        "mostly_free_bytes": sum(s["total_size"] - s["allocated_size"] for s in listed),
        "mostly_free_segments": listed[:LISTED_SEGMENTS],
        "history": bool(snapshot.get("device_traces") and any(snapshot["device_traces"])),
    }
