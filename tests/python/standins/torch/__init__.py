"""Stand-in for torch (tests only; see ../README.md).

torch/__init__.py imports torch.cuda while it runs, so torch.cuda._lazy_call
exists once "import torch" returns (the hook relies on that).
"""
from . import _C  # noqa: F401  (the C extension in the real package)
from . import cuda  # noqa: F401

uint8 = ("uint8", 1)
float32 = ("float32", 4)


class Tensor:
    """A CUDA tensor's storage: one block of the caching allocator, given
    back when the tensor goes (c10's DataPtr deleter -> CUDACachingAllocator
    free)."""

    def __init__(self, block, nbytes):
        self._block = block
        self.nbytes = nbytes

    def data_ptr(self):
        return self._block.address

    def __del__(self):
        block, self._block = self._block, None
        if block is not None:
            _C._allocator().free(block)


def empty(*size, dtype=float32, device="cuda"):
    """torch.empty for device="cuda" only: numel * itemsize bytes from the
    caching allocator (aten/src/ATen/native/cuda/... -> c10 CUDACachingAllocator::malloc)."""
    if not str(device).startswith("cuda"):
        raise RuntimeError("the stand-in only knows CUDA tensors")
    numel = 1
    for s in size:
        numel *= int(s)
    cuda._lazy_init()
    nbytes = numel * dtype[1]
    return Tensor(_C._allocator().malloc(nbytes), nbytes)
