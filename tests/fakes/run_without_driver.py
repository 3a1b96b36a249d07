#!/usr/bin/env python3
"""Run `selftest_cudart_nodriver <copy>` where <copy> is a copy of the fake
libcudart.so.13 in a directory that holds no libcuda.so.1, so the runtime's
dlopen of the driver fails. Exits 77 (skipped) when the system itself provides
a libcuda.so.1.

Usage: run_without_driver.py <libcudart.so.13> <selftest_cudart_nodriver>
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    lib, exe = sys.argv[1], sys.argv[2]
    try:
        cache = subprocess.run(["/sbin/ldconfig", "-p"], stdout=subprocess.PIPE,
                               universal_newlines=True).stdout
    except OSError:
        cache = ""
    if "libcuda.so.1 " in cache:
        print("a system libcuda.so.1 exists; skipping")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="fakegpu-nodriver-") as tmp:
        copy = os.path.join(tmp, "libcudart.so.13")
        shutil.copy(lib, copy)
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.pop("LD_LIBRARY_PATH", None)
        proc = subprocess.run([exe, copy], env=env, timeout=20)
        sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
