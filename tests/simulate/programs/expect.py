"""What a test program tells its runner: its own count of memory by role,
taken from PyTorch's objects (each storage once, at the size of the
caching allocator's block that holds it, as PyTorch's own
torch.cuda.memory._snapshot() reports it: a block may be larger than its
request where c10 left a remainder unsplit), and PyTorch's own counters
(torch.cuda.memory_allocated / reserved / max_memory_*)."""
import json
import os
import sys

import torch


def allocator_blocks():
    """Block start -> size of every allocated block (PyTorch's snapshot)."""
    blocks = {}
    try:
        segments = torch.cuda.memory._snapshot()["segments"]
    except RuntimeError:  # the cudaMallocAsync backend keeps no blocks: sizes as requested
        return blocks
    for seg in segments:
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                blocks[b["address"]] = b["size"]
    return blocks


def block_bytes(tensors, blocks=None):
    blocks = allocator_blocks() if blocks is None else blocks
    seen = {}
    for t in tensors:
        if t is not None and t.device.type == "cuda" and t.untyped_storage().nbytes():
            ptr = t.untyped_storage().data_ptr()
            seen[ptr] = blocks.get(ptr, (t.untyped_storage().nbytes() + 511) // 512 * 512)
    return sum(seen.values()), len(seen)


def segments():
    """PyTorch's own snapshot of its segments: [address, total_size] sorted
    ([] with the cudaMallocAsync backend, which keeps none)."""
    try:
        return sorted([s["address"], s["total_size"]] for s in torch.cuda.memory._snapshot()["segments"])
    except RuntimeError:
        return []


def counters():
    return {
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
        "max_allocated": torch.cuda.max_memory_allocated(),
        "max_reserved": torch.cuda.max_memory_reserved(),
    }


def say(**values):
    sys.stdout.write("EXPECT %s\n" % json.dumps(values, sort_keys=True))
    sys.stdout.flush()


def user_frame(exc):
    """The innermost frame of the error's traceback in this folder's
    programs or the model they share (examples/train_gpt.py): the user's own
    code, as opposed to the installed trainer's: (file name, line, function)."""
    here = os.path.dirname(os.path.abspath(__file__))
    mine = {here, os.path.normpath(os.path.join(here, "..", "..", "..", "examples"))}
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if os.path.dirname(os.path.abspath(code.co_filename)) in mine:
            found = (os.path.basename(code.co_filename), tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def role_counts(model, optimizer):
    """weights, gradients and optimizer_state as the roles walk names them
    (docs/python-hook.md): the module's parameters and buffers, their .grad,
    the tensors of the optimizer's state."""
    blocks = allocator_blocks()
    params = list(model.parameters()) + list(model.buffers())
    state = [v for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v)]
    return {
        "weights": block_bytes(params, blocks)[0],
        "gradients": block_bytes([p.grad for p in model.parameters()], blocks)[0],
        "optimizer_state": block_bytes(state, blocks)[0],
    }


def say_oom(exc, model, optimizer, **extra):
    """At a caught out-of-memory error, before it goes on: the program's own
    count by role, PyTorch's counters and where it failed."""
    say(user_frame=user_frame(exc), **role_counts(model, optimizer), **counters(), **extra)
