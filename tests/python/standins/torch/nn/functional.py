"""Stand-in for torch.nn.functional (tests only): linear -> addmm(bias,
input, weight.t()) (aten/src/ATen/native/Linear.cpp, 2-D input with bias),
relu. Outputs are new CUDA tensors from the caching allocator; the grad_fn
keeps what backward needs (_autograd_nodes.py)."""
from .. import _autograd_nodes as nodes
from .._tensor import _make


def linear(input, weight, bias=None):
    wt = weight.t()
    needs = input.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    out = _make((input.shape[0], weight.shape[0]), input.dtype, input.device, needs)
    if needs:
        out.grad_fn = nodes.AddmmBackward0(bias, input, wt)
    return out


def relu(input):
    out = _make(input.shape, input.dtype, input.device, input.requires_grad)
    if input.requires_grad:
        out.grad_fn = nodes.ReluBackward0(input, out)
    return out
