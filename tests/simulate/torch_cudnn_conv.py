"""simulate.cudnn_torch_conv: the real PyTorch's convolutions, batch norm and
LSTM on cuDNN on a simulated H100, forward and backward.
torch.cuda.memory_allocated() after each step, and the peak in each, are what
this program computes itself from the tensors' sizes and the workspace the
simulated cuDNN models (docs/simulate.md, "cuDNN"):

  convolution  (cudnn-frontend's engine heuristics, PyTorch's Conv_v8.cpp):
               engine 0, tensor cores, asks for the operands that are not
               channels-last, at their size (NCHW is transposed to NHWC);
               channels-last needs none. A float convolution with TF32 off
               takes engine 1 (Conv_v8.cpp filterEngineConfigs drops engines
               with the TENSOR_CORE note), which asks none. Forward keeps y;
               the backward makes dx (with the data-gradient workspace) and
               then dw (with the weight-gradient one);
  batch norm   (BatchNorm.cpp cudnn_batch_norm): the output and the saved
               mean and inverse variance; no workspace or reserve
               (CUDNN_BATCHNORM_OPS_BN);
  LSTM         (RNN.cpp, aten::_cudnn_rnn): the reserve kept for the backward
               is every layer's and step's gates, output and cell state.

The caching allocator rounds every block up to 512 B.
Run by torch_cudnn_run.py (preloads, GPUMEMREC_SIMULATE=h100-80gb).
"""
import sys

import torch


def r512(n):
    return (n + 511) // 512 * 512


def check(what, got, want):
    print("%-40s %12d  expected %12d  %s" % (what, got, want, "ok" if got == want else "MISMATCH"))
    return got == want


def nbytes(t):
    return t.numel() * t.element_size()


def conv_case(name, dtype, channels_last, tf32):
    torch.backends.cudnn.allow_tf32 = tf32
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    conv = torch.nn.Conv2d(16, 32, 3, padding=1, bias=False).cuda().to(dtype=dtype, memory_format=fmt)
    x = torch.randn(4, 16, 32, 32, device="cuda", dtype=dtype).to(memory_format=fmt).requires_grad_()
    tensor_cores = dtype in (torch.float16, torch.bfloat16) or (dtype == torch.float32 and tf32)
    transposed = lambda *ts: 0 if channels_last or not tensor_cores else sum(nbytes(t) for t in ts)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y = conv(x)
    ok = check(name + " forward: allocated", torch.cuda.memory_allocated() - base, r512(nbytes(y)))
    ok &= check(name + " forward: peak", torch.cuda.max_memory_allocated() - base,
                r512(nbytes(y)) + r512(transposed(x, conv.weight, y)))
    dy = torch.randn_like(y)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y.backward(dy)
    dx, dw = r512(nbytes(x)), r512(nbytes(conv.weight))
    ok &= check(name + " backward: allocated", torch.cuda.memory_allocated() - base, dx + dw)
    # dx stays while dw and the weight-gradient workspace are made.
    peak = dx + dw + r512(transposed(x, conv.weight, dy))
    ok &= check(name + " backward: peak", torch.cuda.max_memory_allocated() - base, peak)
    return ok


def batch_norm_case():
    bn = torch.nn.BatchNorm2d(32).cuda()
    x = torch.randn(8, 32, 16, 16, device="cuda")
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = bn(x)
    ok = check("batch norm (fp32) forward: allocated", torch.cuda.memory_allocated() - base,
               r512(nbytes(out)) + 2 * r512(32 * 4))
    ok &= check("batch norm (fp32) forward: peak", torch.cuda.max_memory_allocated() - base,
                r512(nbytes(out)) + 2 * r512(32 * 4))
    return ok


def lstm_case():
    lstm = torch.nn.LSTM(32, 64, num_layers=2).cuda()
    T, N = 10, 4
    x = torch.randn(T, N, 32, device="cuda")
    hx = torch.zeros(2, N, 64, device="cuda")
    # (input, weights, weight_stride0, weight_buf, hx, cx, mode = CUDNN_LSTM, hidden, proj, layers,
    #  batch_first, dropout, train, bidirectional, batch_sizes, dropout_state)
    out = torch._cudnn_rnn(x, lstm._flat_weights, 4, None, hx, hx, 2, 64, 0, 2, False, 0.0, True, False, [], None)
    reserve = out[3]
    gates, hidden, output, layers = 4, 64, 64, 2
    expect = layers * T * N * (gates * hidden + output + hidden) * 4
    return check("LSTM training reserve (bytes)", nbytes(reserve), expect)


def main():
    ok = check("cuDNN enabled", int(torch.backends.cudnn.enabled and torch.backends.cudnn.is_available()), 1)
    ok &= conv_case("conv bf16 NCHW", torch.bfloat16, False, True)
    ok &= conv_case("conv bf16 channels-last", torch.bfloat16, True, True)
    ok &= conv_case("conv fp32 NCHW, TF32", torch.float32, False, True)
    ok &= conv_case("conv fp32 NCHW, no TF32", torch.float32, False, False)
    ok &= batch_norm_case()
    ok &= lstm_case()
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
