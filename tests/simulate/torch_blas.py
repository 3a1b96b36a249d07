#!/usr/bin/env python3
"""simulate.cublas_torch: the real PyTorch 2.14.1 multiplies on a simulated
H100 (GPUMEMREC_SIMULATE=h100-80gb) through the simulated libcublas.so.13 and
libcublasLt.so.13, and its memory is as PyTorch documents it.

Run by the system python as `torch_blas.py SIM_DIR`: finds the frameworks
venv (skips, 77, without it) and runs this file again with the venv's python
and the simulated libraries preloaded (CUBLAS_WORKSPACE_CONFIG unset: PyTorch's
default workspace). Fails on any line
saying a function of libcublas or libcublasLt "is not simulated" (such lines
of the other libraries are shown, not counted: they are those libraries'
tests' business).

What the child checks, for float32, float16 and bfloat16:
- nn.Linear forward and backward, matmul, bmm, and addmm with a 1-D bias (the
  cuBLASLt path, aten/src/ATen/native/cuda/Blas.cpp: addmm_out_cuda_impl's
  gemm_and_bias) run, and the simulated libraries saw the calls (their
  fakegpu_* call counters);
- torch.cuda.memory_allocated() holds exactly the cuBLAS workspaces PyTorch
  documents once the results are freed: one per (handle, stream)
  (aten/src/ATen/cuda/CublasHandlePool.cpp, setWorkspaceForHandle), of
  torch.backends.cuda.cublas_workspace_size() bytes, cuBLASLt sharing it
  (TORCH_CUBLASLT_UNIFIED_WORKSPACE, on by default: blas_workspace_size's
  note); the main thread's handle, then after a backward the autograd
  engine's device thread's handle too (torch/csrc/autograd/engine.cpp runs a
  CUDA backward on that thread);
- the default size: CUBLAS_WORKSPACE_CONFIG's default, :4096:8 (32 MiB) on a
  compute capability 9.0 card (parseChosenWorkspaceSize);
- cuBLAS took no device memory of its own (PyTorch always sets a
  workspace): the driver's live bytes are torch.cuda.memory_reserved().
"""
import ctypes
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
PRELOAD = ["libcudart.so.13", "libcuda.so.1", "libnvidia-ml.so.1", "libcublas.so.13", "libcublasLt.so.13"]
MiB = 1 << 20


def run_child(sim_dir, python):
    env = dict(os.environ)
    env.pop("CUBLAS_WORKSPACE_CONFIG", None)
    env["GPUMEMREC_SIMULATE"] = "h100-80gb"
    env["LD_PRELOAD"] = ":".join(str(pathlib.Path(sim_dir) / lib) for lib in PRELOAD)
    proc = subprocess.run([python, __file__, "--child"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    unsimulated = [line for line in proc.stderr.splitlines() if "is not simulated" in line]
    for line in unsimulated:
        print("NOTE: " + line)
    unsimulated = [line for line in unsimulated if "(libcublas" in line]
    if unsimulated:
        print("FAIL: PyTorch called functions the simulation does not model:\n  " + "\n  ".join(unsimulated))
        return 1
    return proc.returncode


def parent(sim_dir):
    sys.path.insert(0, str(HERE))
    import frameworks_venv

    python = frameworks_venv.python_or_skip()
    return run_child(sim_dir, python)


# --- the child, in the venv with the simulated libraries preloaded ---------


def counters():
    """The simulated libraries' call counters (exported fakegpu_* helpers)."""
    blas = ctypes.CDLL("libcublas.so.13")
    lt = ctypes.CDLL("libcublasLt.so.13")
    blas.fakegpu_cublas_gemm_calls.restype = ctypes.c_uint64
    lt.fakegpu_cublaslt_matmul_calls.restype = ctypes.c_uint64
    return blas.fakegpu_cublas_gemm_calls(), lt.fakegpu_cublaslt_matmul_calls()


def expected_workspace(torch):
    assert torch.cuda.get_device_capability() == (9, 0), torch.cuda.get_device_capability()
    return 4096 * 1024 * 8  # ":4096:8" on compute capability 9.0


def products(torch, dtype):
    """Every product of the check, results dropped; returns nothing on the device."""
    a = torch.randn(64, 32, device="cuda", dtype=dtype)
    b = torch.randn(32, 48, device="cuda", dtype=dtype)
    bias = torch.randn(48, device="cuda", dtype=dtype)
    (a @ b).sum()
    torch.bmm(a.expand(3, 64, 32).contiguous(), b.expand(3, 32, 48).contiguous()).sum()
    before = counters()[1]
    torch.addmm(bias, a, b).sum()
    assert counters()[1] > before, "addmm with a 1-D bias did not reach cublasLtMatmul"
    linear = torch.nn.Linear(32, 48, device="cuda", dtype=dtype)
    linear(a).sum()
    torch.cuda.synchronize()


def backward(torch, dtype):
    x = torch.randn(16, 32, device="cuda", dtype=dtype, requires_grad=True)
    linear = torch.nn.Linear(32, 48, device="cuda", dtype=dtype)
    linear(x).float().square().mean().backward()
    assert x.grad is not None and linear.weight.grad is not None
    torch.cuda.synchronize()


def check_memory(torch, handles, ws, label):
    allocated = torch.cuda.memory_allocated()
    want = handles * ws
    print("%s: memory_allocated %d = %d cuBLAS workspace(s) of %d" % (label, allocated, handles, ws))
    assert allocated == want, "%s: memory_allocated %d, expected %d" % (label, allocated, want)
    live = ctypes.CDLL("libcuda.so.1")
    live.fakegpu_cuda_live_bytes.restype = ctypes.c_ulonglong
    assert live.fakegpu_cuda_live_bytes(0) == torch.cuda.memory_reserved(), "device memory outside PyTorch's"


def child():
    import torch

    assert torch.cuda.is_available(), "no simulated device"
    print("device: %s, torch %s" % (torch.cuda.get_device_name(0), torch.__version__))
    ws = expected_workspace(torch)
    assert torch.backends.cuda.cublas_workspace_size() == ws, torch.backends.cuda.cublas_workspace_size()
    assert torch.cuda.memory_allocated() == 0
    gemms = counters()[0]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        products(torch, dtype)
        check_memory(torch, 1, ws, "forward %s" % dtype)
    assert counters()[0] > gemms, "no cuBLAS GEMM call reached the simulated library"
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        backward(torch, dtype)
        check_memory(torch, 2, ws, "backward %s" % dtype)
    print("torch_blas: all checks passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        sys.exit(child())
    if len(sys.argv) != 2:
        sys.exit("usage: torch_blas.py SIM_DIR")
    sys.exit(parent(sys.argv[1]))
