#!/usr/bin/env python3
"""Runs a real-PyTorch case on the simulated card: CASE (a script of this
folder) under the frameworks venv's python, with the simulated libraries of
SIM_DIR preloaded (libcudart, libcuda, libnvidia-ml, libcudnn) and
GPUMEMREC_SIMULATE=h100-80gb, as docs/simulate.md tells users to. Passes when
the case exits 0 and the simulated cuDNN printed no "not simulated" line (a
function PyTorch called that the simulation does not model). Skips (77)
without the venv.

Usage: torch_cudnn_run.py CASE SIM_DIR
"""
import os
import pathlib
import subprocess
import sys

import frameworks_venv

HERE = pathlib.Path(__file__).resolve().parent
LIBS = ["libcudart.so.13", "libcuda.so.1", "libnvidia-ml.so.1", "libcudnn.so.9"]


def main():
    case, sim_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    py = frameworks_venv.python_or_skip()
    env = dict(os.environ)
    env["LD_PRELOAD"] = ":".join(str(sim_dir / lib) for lib in LIBS)
    env["GPUMEMREC_SIMULATE"] = "h100-80gb"
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([py, str(HERE / case)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600)
    print(proc.stdout)
    unmodeled = [l for l in proc.stdout.splitlines() if "is not simulated" in l and "libcudnn.so.9" in l]
    for line in unmodeled:
        print("FAIL: PyTorch called a cuDNN function the simulation does not model: %s" % line)
    if proc.returncode != 0:
        print("FAIL: %s exited %d" % (case, proc.returncode))
    return 0 if proc.returncode == 0 and not unmodeled else 1


if __name__ == "__main__":
    sys.exit(main())
