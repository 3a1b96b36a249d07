"""Stand-in for torch.autograd (tests only), after pytorch/pytorch
torch/autograd/__init__.py @ 1a5f2e5079238e645bbe42ba6ad1f8b27c148ac0:
backward() makes the root gradients (_make_grads: ones_like for a scalar
output, on the calling thread) and calls graph._engine_run_backward(tensors,
grad_tensors_, retain_graph, create_graph, inputs, allow_unreachable=True,
accumulate_grad=True).
"""
from . import graph  # noqa: F401
from .graph import _engine_run_backward
from .variable import Variable  # noqa: F401


def _make_grads(outputs, grads):
    import torch

    return tuple(g if g is not None else torch.ones_like(o, memory_format=torch.preserve_format)
                 for o, g in zip(outputs, grads))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    tensors = (tensors,) if not isinstance(tensors, (tuple, list)) else tuple(tensors)
    if grad_tensors is None or not isinstance(grad_tensors, (tuple, list)):
        grad_tensors = (grad_tensors,) * len(tensors)
    grad_tensors_ = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    _engine_run_backward(tensors, grad_tensors_, retain_graph, create_graph, inputs or (),
                         allow_unreachable=True, accumulate_grad=True)
