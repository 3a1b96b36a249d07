"""Three allocator settings for framework.json, read without side effects.

- allocator_backend: see allocator_backend() below.

- memory_fraction: torch.cuda.get_per_process_memory_fraction(device)
  (torch/cuda/memory.py: _lazy_init(), a no-op once CUDA is up, then
  torch._C._cuda_getMemoryFraction(device)); c10 answers 1.0 when no
  fraction was set, so 1.0 (or an older PyTorch without the function) reads
  as null.
- expandable_segments: the allocator configuration as c10 parses it
  (pytorch/pytorch c10/core/AllocatorConfig.cpp @ 065861fb, lexArgs and
  parseArgs; read from PYTORCH_ALLOC_CONF, else the older
  PYTORCH_CUDA_ALLOC_CONF, c10/cuda/CUDAAllocatorConfig.cpp @ 01f9ef32):
  spaces dropped, tokens split at ',' ':' '[' ']', the value after
  "expandable_segments" ':' is "True" or "False" (anything else makes
  PyTorch refuse to start), the last one wins; absent: false. Read from the
  environment now: a program that changed it after CUDA started is not seen.
"""
import os
import re


def memory_fraction(torch, device):
    get = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    if get is None:
        return None
    value = float(get(device))
    return value if 0.0 <= value < 1.0 else None


def allocator_backend(torch):
    """torch.cuda.get_allocator_backend() (torch/cuda/memory.py, PyTorch 2.0
    and later: "native" or "cudaMallocAsync", as PYTORCH_CUDA_ALLOC_CONF's
    `backend` chose at start-up; no side effect once CUDA is up); None when
    the function is absent or answers something else than a short string."""
    get = getattr(torch.cuda, "get_allocator_backend", None)
    if get is None:
        return None
    value = get()
    return value if isinstance(value, str) and 0 < len(value) <= 64 else None


def expandable_segments(environ=None):
    env = os.environ if environ is None else environ
    text = env.get("PYTORCH_ALLOC_CONF")
    if text is None:
        text = env.get("PYTORCH_CUDA_ALLOC_CONF")
    if not text:
        return False
    tokens = [t for t in re.split(r"([,:\[\]])", text.replace(" ", "")) if t]
    value = False
    for i, tok in enumerate(tokens[:-2]):
        if tok == "expandable_segments" and tokens[i + 1] == ":" and tokens[i + 2] in ("True", "False"):
            value = tokens[i + 2] == "True"
    return value
