"""Stand-in for torch/nn/parameter.py (tests only): Parameter(data=None,
requires_grad=True) is a Tensor on the same storage as `data`
(Tensor._make_subclass), a leaf."""
from .._tensor import Tensor


class Parameter(Tensor):
    def __init__(self, data, requires_grad=True):
        super().__init__(data.untyped_storage(), data.shape, data.dtype, requires_grad, None, data._offset)
