"""The test programs' own count of memory by role (run_framework.py
compares it with framework.json's "roles"): each storage once, its block
size as PyTorch's caching allocator rounds it (c10 round_size: multiples of
512 bytes)."""
import json
import sys


def block_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is not None and t.device.type == "cuda" and t.untyped_storage().nbytes():
            st = t.untyped_storage()
            seen[st.data_ptr()] = (st.nbytes() + 511) // 512 * 512
    return sum(seen.values()), len(seen)


def say(**roles):
    sys.stdout.write("EXPECT %s\n" % json.dumps(roles, sort_keys=True))
    sys.stdout.flush()
