"""Stand-in for torch/nn/modules/linear.py (tests only): weight
(out_features, in_features), bias (out_features), forward = F.linear."""
from ... import empty
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device or "cuda"}
        if dtype is not None:
            kw["dtype"] = dtype
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty(out_features, in_features, **kw))
        if bias:
            self.bias = Parameter(empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)
