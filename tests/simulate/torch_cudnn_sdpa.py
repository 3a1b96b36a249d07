"""simulate.cudnn_torch_sdpa: the real PyTorch's scaled_dot_product_attention
in bf16 on a simulated H100 goes to cuDNN (PyTorch puts cuDNN attention first
on compute capability 9.x with cuDNN > 9.15: sdp_utils.cpp,
check_prefer_cudnn_attention), forward and backward, and
torch.cuda.memory_allocated() after each step, and the peak in each, are what
this program computes itself:

  forward   keeps the output, the softmax statistics (b, h, s_q, 1) fp32 and
            the philox seed and offset (8 B each) the backward needs
            (aten::_scaled_dot_product_cudnn_attention's outputs), and takes
            for the execution the plan's workspace: 16 B on compute
            capability 9.x (docs/simulate.md, "cuDNN");
  backward  makes dQ, dK, dV, frees the saved statistics, seed and offset,
            and takes a workspace of cudnn-frontend's own share, an fp32 dQ
            accumulator (b, h, s_q, d) and the softmax sums (b, h, s_q)
            (scaled_dot_product_flash_attention.h, get_fe_workspace_size_node),
            plus the backend plan's 0 B.

The caching allocator rounds every block up to 512 B. Outside it, each
thread's cuDNN handle (PyTorch keeps one per thread: the forward's, and the
autograd engine's for the backward) holds 25,344 B + 4 B of device memory,
which cudaMemGetInfo shows (simulate/dnn/handle.h).
Run by torch_cudnn_run.py (preloads, GPUMEMREC_SIMULATE=h100-80gb).
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

SDPA_FWD_WORKSPACE = 16  # the modelled plan workspace, compute capability 9.x
SDPA_BWD_BACKEND_WORKSPACE = 0
HANDLE_BYTES = 25344 + 4


def r512(n):
    return (n + 511) // 512 * 512


def check(what, got, want):
    print("%-36s %12d  expected %12d  %s" % (what, got, want, "ok" if got == want else "MISMATCH"))
    return got == want


def outside_allocator():
    free, total = torch.cuda.mem_get_info()
    return total - free - torch.cuda.memory_reserved()


def case(b, h, s, d, causal):
    opts = dict(device="cuda", dtype=torch.bfloat16, requires_grad=True)
    q, k, v = (torch.randn(b, h, s, d, **opts) for _ in range(3))
    ok = True
    choice = torch._fused_sdp_choice(q, k, v, None, 0.0, causal)
    ok &= check("backend chosen (SDPBackend)", choice, SDPBackend.CUDNN_ATTENTION.value)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    ok &= check("grad_fn is cuDNN attention's", int(type(o.grad_fn).__name__ == "ScaledDotProductCudnnAttentionBackward0"), 1)
    io = b * h * s * d * 2
    kept = r512(io) + r512(b * h * s * 4) + 2 * r512(8)
    ok &= check("forward: allocated", torch.cuda.memory_allocated() - base, kept)
    ok &= check("forward: peak", torch.cuda.max_memory_allocated() - base, kept + r512(SDPA_FWD_WORKSPACE))
    grad = torch.randn_like(o)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    o.backward(grad)
    grads = 3 * r512(io)
    ws = b * h * s * d * 4 + b * h * s * 4 + SDPA_BWD_BACKEND_WORKSPACE
    ok &= check("backward: allocated", torch.cuda.memory_allocated() - base, grads - (kept - r512(io)))
    ok &= check("backward: peak", torch.cuda.max_memory_allocated() - base, grads + r512(ws))
    return ok


def main():
    ok = check("cuDNN attention enabled", int(torch.backends.cuda.cudnn_sdp_enabled()), 1)
    ok &= check("cuDNN version", torch.backends.cudnn.version(), 92400)
    torch.zeros(1, device="cuda")
    before = outside_allocator()
    ok &= case(2, 4, 128, 64, causal=True)
    ok &= check("handles' memory (two threads)", outside_allocator() - before, 2 * HANDLE_BYTES)
    ok &= case(1, 8, 256, 128, causal=False)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
