"""Stand-in for torch.cuda.memory (tests only), after torch/cuda/memory.py:
_snapshot(device=None) returns torch._C._cuda_memorySnapshot()'s dict;
_record_memory_history(enabled="all", context="all", stacks="all",
max_entries=sys.maxsize, device=None) calls
torch._C._cuda_record_memory_history.
"""
import sys

from .. import _C


def _snapshot(device=None):
    return _C._cuda_memorySnapshot(None)


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
    _C._cuda_record_memory_history(enabled, context, stacks, max_entries)
