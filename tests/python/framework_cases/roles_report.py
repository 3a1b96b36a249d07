"""Hands gpumemrec_framework_oom() a PyTorch digest with the framework's
roles (framework.json "roles", docs/bundle-format.md) and, beside them, a
key nested 300,000 levels deep (a digest of any shape must not take the
program down: the shim parses it without recursion). One framework_oom
bundle, whose summary.txt has the roles and "What to try"."""
import ctypes
import json

GiB = 1 << 30
fn = ctypes.CDLL(None).gpumemrec_framework_oom
fn.restype = ctypes.c_int
fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]

roles = {"status": "complete", "elapsed_ms": 3.5, "objects": 1200, "budget_ms": 2000, "device": 0,
         "bytes": {"weights": GiB, "gradients": GiB, "optimizer_state": 2 * GiB, "kv_cache": 0,
                   "activations": GiB, "allocator_cache": GiB, "unknown": 0},
         "tensors": {"weights": 4, "gradients": 4, "optimizer_state": 8, "kv_cache": 0, "unknown": 0},
         "top": [], "sharding": None, "notes": []}
digest = {"framework": "torch", "device": 0, "request_bytes": GiB, "reserved_bytes": 6 * GiB,
          "allocated_bytes": 5 * GiB, "largest_free_block": GiB // 2, "expandable_segments": False,
          "memory_fraction": None, "roles": roles}
text = json.dumps(digest)[:-1] + ',"deep":' + "[" * 300000 + "]" * 300000 + "}"
text = text.encode()
print("roles:", fn(text, len(text), None, None, 0))
