#!/usr/bin/env python3
"""Writes simulate/exports/<soname>.txt: every function NVIDIA's library of
that name exports, one per line, sorted. The simulated library exports each of
them (core/unmodeled.h). Run it again when moving to a newer CUDA.

  simulate/exports/update.py --site-packages VENV/lib/python3.11/site-packages \
      [--cuda-include /usr/local/cuda/include]

Sources: the NVIDIA wheels PyTorch installs (nvidia/cu13/lib, nvidia/cudnn/lib,
nvidia/nccl/lib: `nm -D --defined-only`, code symbols only) and, for the
driver, which has no wheel, the CUDA toolkit's CUPTI callback list
(cupti_driver_cbid.h names every driver entry point, the _v2/_ptsz ABIs
included). NVML's list comes from cuda-bindings' cynvml.pxd, the declarations
of NVIDIA's Python bindings.
"""
import argparse
import pathlib
import re
import subprocess

HERE = pathlib.Path(__file__).resolve().parent

WHEEL_LIBS = {
    "libcudart.so.13": "nvidia/cu13/lib/libcudart.so.13",
    "libcublas.so.13": "nvidia/cu13/lib/libcublas.so.13",
    "libcublasLt.so.13": "nvidia/cu13/lib/libcublasLt.so.13",
    "libcudnn.so.9": "nvidia/cudnn/lib/libcudnn.so.9",
    "libnccl.so.2": "nvidia/nccl/lib/libnccl.so.2",
}
PREFIX = {
    "libcudart.so.13": ("cuda", "__cuda"),
    "libcublas.so.13": ("cublas",),
    "libcublasLt.so.13": ("cublasLt",),
    "libcudnn.so.9": ("cudnn",),
    "libnccl.so.2": ("nccl", "pnccl"),
}


def wheel_exports(path, prefixes):
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in ("T", "W", "i"):
            continue
        name = parts[2].split("@")[0]
        if name.startswith(prefixes):
            names.add(name)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--site-packages", required=True)
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    a = ap.parse_args()
    sp = pathlib.Path(a.site_packages)
    lists = {so: wheel_exports(sp / rel, PREFIX[so]) for so, rel in WHEEL_LIBS.items()}
    cbid = pathlib.Path(a.cuda_include, "cupti_driver_cbid.h").read_text()
    lists["libcuda.so.1"] = set(re.findall(r"CUPTI_DRIVER_TRACE_CBID_(cu\w+)", cbid))
    pxd = (sp / "cuda/bindings/cynvml.pxd").read_text()
    lists["libnvidia-ml.so.1"] = set(re.findall(r"\bnvmlReturn_t (nvml\w+)\(", pxd))
    for so, names in lists.items():
        (HERE / f"{so}.txt").write_text("".join(n + "\n" for n in sorted(names)))
        print(f"{so}: {len(names)} functions")


if __name__ == "__main__":
    main()
