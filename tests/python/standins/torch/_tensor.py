"""Stand-in for torch.Tensor and torch.UntypedStorage (tests only).

After pytorch/pytorch torch/_tensor.py (Tensor.backward calls
torch.autograd.backward), torch/storage.py (UntypedStorage: data_ptr,
nbytes, device) and c10/core/StorageImpl.h: one storage owns one block of
the caching allocator and gives it back when the last tensor (or view) on it
goes (the DataPtr deleter -> CUDACachingAllocator free). A view shares the
storage: untyped_storage().data_ptr() is the block's address (the snapshot's
block "address"), the view's own data_ptr() may differ.
"""
import itertools

from . import _C

_cpu_addresses = itertools.count(0x1000, 0x1000)


class device:
    def __init__(self, spec):
        text = str(spec)
        self.type, _, index = text.partition(":")
        self.index = int(index) if index else (0 if self.type == "cuda" else None)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


class UntypedStorage:
    def __init__(self, nbytes, dev, block=None):
        self._nbytes, self.device, self._block = nbytes, dev, block
        self._cpu = next(_cpu_addresses) if block is None else 0

    def data_ptr(self):
        return self._block.address if self._block is not None else self._cpu

    def nbytes(self):
        return self._nbytes

    def resize_(self, n):
        """FSDP's _free_storage (resize to 0: the block goes back) and
        _alloc_storage (from 0 to its size: a new block)."""
        self._release()
        self._nbytes = n
        if n and self.device.type == "cuda":
            self._block = _C._allocator().malloc(n)
        return self

    def _release(self):
        block, self._block = self._block, None
        if block is not None:
            _C._allocator().free(block)

    def __del__(self):
        self._release()


class Tensor:
    def __init__(self, storage, shape, dtype, requires_grad=False, grad_fn=None, offset=0):
        self._storage, self.shape, self.dtype = storage, tuple(shape), dtype
        self.requires_grad, self.grad_fn, self.grad = requires_grad, grad_fn, None
        self._offset = offset

    device = property(lambda self: self._storage.device)
    is_leaf = property(lambda self: self.grad_fn is None)
    is_cuda = property(lambda self: self.device.type == "cuda")

    def untyped_storage(self):
        return self._storage

    def data_ptr(self):
        return self._storage.data_ptr() + self._offset

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def element_size(self):
        return self.dtype[1]

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    def view(self, *shape):
        return Tensor(self._storage, shape, self.dtype, self.requires_grad, self.grad_fn, self._offset)

    def t(self):
        from . import _autograd_nodes as nodes
        fn = nodes.TBackward0(self) if self.requires_grad else None
        return Tensor(self._storage, tuple(reversed(self.shape)), self.dtype, self.requires_grad, fn, self._offset)

    def sum(self):
        from . import _autograd_nodes as nodes
        fn = nodes.SumBackward0(self) if self.requires_grad else None
        return _make((), self.dtype, self.device, self.requires_grad, fn)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from . import autograd
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def __repr__(self):
        return "tensor(shape=%s, device=%s)" % (self.shape, self.device)


def _make(shape, dtype, dev, requires_grad=False, grad_fn=None):
    dev = dev if isinstance(dev, device) else device(dev)
    n = _nbytes(shape, dtype)
    if dev.type == "cuda":
        from . import cuda
        cuda._lazy_init()
        storage = UntypedStorage(n, dev, _C._allocator().malloc(n))
    else:
        storage = UntypedStorage(n, dev)
    return Tensor(storage, shape, dtype, requires_grad, grad_fn)


def _on_block(block, shape, dtype, dev):
    """A tensor on a block the autograd engine got (its gradients)."""
    return Tensor(UntypedStorage(_nbytes(shape, dtype), dev, block), shape, dtype)


def _nbytes(shape, dtype):
    n = dtype[1]
    for s in shape:
        n *= int(s)
    return n
