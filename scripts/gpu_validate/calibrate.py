"""The figures of a simulated card's profile, read from the card this runs
on (docs/simulate.md, "Calibrating a profile"): run alone on the card, with
PyTorch, as `python3 calibrate.py [DEVICE]`; prints one JSON object.

  name, compute_capability, sm_count, l2_bytes   cudaDeviceProp, as PyTorch reads it
  total_bytes        cudaMemGetInfo's total
  nvml_total_bytes   nvmlDeviceGetMemoryInfo's total (nvidia-smi's figure)
  outside_bytes      cudaMemGetInfo's used minus torch.cuda.memory_reserved()
                     once PyTorch holds one tensor: the context and the
                     driver's reserve together
  context_bytes      NVML's figure for this process minus memory_reserved():
                     the CUDA context with PyTorch's kernels loaded lazily
  driver_reserved_bytes  outside_bytes minus context_bytes: used memory no
                     process holds

The last two need NVML's per-process figure (null without it). The same
script on a simulated card (`gpumemrec run --simulate ID`) gives back the
profile's figures; that is how the suite checks it.
"""
import ctypes
import json
import os
import sys

import torch


class ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t (v2/v3), nvml.h
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class MemoryInfo(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def nvml_figures(index):
    """(the card's total, this process's bytes) from NVML; None where it fails."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None, None
    handle = ctypes.c_void_p()
    mem = MemoryInfo()
    if nvml.nvmlInit_v2() != 0 or nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
        return None, None
    total = mem.total if nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0 else None
    count = ctypes.c_uint(64)
    procs = (ProcessInfo * 64)()
    mine = None
    if nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(count), procs) == 0:
        mine = next((p.usedGpuMemory for p in procs[:count.value] if p.pid == os.getpid()), None)
    return total, mine


def main():
    index = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    torch.cuda.set_device(index)
    held = torch.zeros(1, device="cuda")  # the context and the allocator's first segment
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    reserved = torch.cuda.memory_reserved()
    p = torch.cuda.get_device_properties(index)
    nvml_total, mine = nvml_figures(index)  # the same card with CUDA_DEVICE_ORDER=PCI_BUS_ID
    outside = total - free - reserved
    context = mine - reserved if mine is not None else None
    print(json.dumps({
        "name": p.name, "compute_capability": "%d.%d" % (p.major, p.minor),
        "sm_count": p.multi_processor_count, "l2_bytes": p.L2_cache_size,
        "total_bytes": total, "nvml_total_bytes": nvml_total, "outside_bytes": outside,
        "context_bytes": context, "driver_reserved_bytes": outside - context if context is not None else None,
        "torch": torch.__version__, "cuda": torch.version.cuda, "held": held.numel(),
    }, indent=1))


if __name__ == "__main__":
    main()
