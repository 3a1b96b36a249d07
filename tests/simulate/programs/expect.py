"""What a test program tells its runner: its own count of memory by role,
taken from PyTorch's objects (each storage once, its block as the caching
allocator rounds it: c10 round_size, multiples of 512 bytes), and PyTorch's
own counters (torch.cuda.memory_allocated / reserved / max_memory_*)."""
import json
import sys

import torch


def block_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is not None and t.device.type == "cuda" and t.untyped_storage().nbytes():
            st = t.untyped_storage()
            seen[st.data_ptr()] = (st.nbytes() + 511) // 512 * 512
    return sum(seen.values()), len(seen)


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
