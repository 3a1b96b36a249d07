#!/usr/bin/env python3
"""Run `<program> <copy>` where <copy> is a copy of a simulated library in a
directory that holds no libcuda.so.1, so the library's dlopen of the driver
fails. Further libraries are copied beside it (what it finds through its
RUNPATH $ORIGIN: libcublas.so.13 needs libcublasLt.so.13). Exits 77 (skipped)
when the system itself provides a libcuda.so.1.

Usage: run_without_driver.py <library> <program> [<library beside it>...]
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    lib, exe, beside = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        cache = subprocess.run(["/sbin/ldconfig", "-p"], stdout=subprocess.PIPE,
                               universal_newlines=True).stdout
    except OSError:
        cache = ""
    if "libcuda.so.1 " in cache:
        print("a system libcuda.so.1 exists; skipping")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="fakegpu-nodriver-") as tmp:
        copy = os.path.join(tmp, os.path.basename(lib))
        shutil.copy(lib, copy)
        for other in beside:
            shutil.copy(other, os.path.join(tmp, os.path.basename(other)))
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.pop("LD_LIBRARY_PATH", None)
        proc = subprocess.run([exe, copy], env=env, timeout=20)
        sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
