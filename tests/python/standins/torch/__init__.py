"""Stand-in for torch (tests only; see ../README.md).

torch/__init__.py imports torch.cuda while it runs, so torch.cuda._lazy_call
exists once "import torch" returns (the hook relies on that). Factories
follow torch's signatures (torch/_torch_docs.py): empty, zeros, ones,
empty_like, zeros_like, ones_like, tensor (CPU scalars only).
"""
from . import _C  # noqa: F401  (the C extension in the real package)
from . import cuda  # noqa: F401
from ._tensor import Tensor, UntypedStorage, device, _make  # noqa: F401

uint8 = ("uint8", 1)
float16 = ("float16", 2)
bfloat16 = ("bfloat16", 2)
float32 = ("float32", 4)
float = float32
preserve_format = "preserve_format"
OutOfMemoryError = _C.OutOfMemoryError


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def empty(*size, dtype=float32, device="cuda", requires_grad=False):
    """torch.empty: numel * itemsize bytes from the caching allocator for
    CUDA (c10 CUDACachingAllocator::malloc); CPU tensors take no GPU memory."""
    return _make(_shape(size), dtype, device, requires_grad)


zeros = ones = empty  # the stand-in has no values


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    return _make(t.shape, dtype or t.dtype, device or t.device, requires_grad)


zeros_like = ones_like = empty_like


def tensor(value, dtype=float32, device="cpu", requires_grad=False):
    """torch.tensor of a scalar (what optimizers make for `step`)."""
    return _make((), dtype, device, requires_grad)


from . import autograd  # noqa: E402,F401
from . import nn  # noqa: E402,F401
from . import optim  # noqa: E402,F401
