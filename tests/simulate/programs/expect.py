"""What a test program tells its runner: its own count of memory by role,
taken from PyTorch's objects (each storage once, at the size of the
caching allocator's block that holds it, as PyTorch's own
torch.cuda.memory._snapshot() reports it: a block may be larger than its
request where c10 left a remainder unsplit), and PyTorch's own counters
(torch.cuda.memory_allocated / reserved / max_memory_*)."""
import json
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
