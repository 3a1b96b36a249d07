"""A PyTorch-like training step that runs out of memory.

  torch_oom.py fraction   set_per_process_memory_fraction: the allocator
                          refuses before cudaMalloc (no driver failure)
  torch_oom.py driver     cudaMalloc fails; the program catches the OOM and
                          waits for a fatal bundle while still running
  torch_oom.py uncaught   as driver, the OOM not caught (exit status 1)
"""
import glob
import json
import os
import sys
import time

import torch

MiB = 1 << 20


def fill(keep):
    # A 3 MiB tensor gets a 20 MiB segment (17 MiB of it free cache), then
    # 18 MiB tensors, each a segment of its own, until memory runs out: at
    # the OOM the largest free block (17 MiB) is just too small.
    keep.append(torch.empty(3 * MiB, dtype=torch.uint8, device="cuda"))
    for _ in range(1000):
        keep.append(torch.empty(18 * MiB, dtype=torch.uint8, device="cuda"))


def wait_for_fatal(limit_s):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for m in glob.glob(os.path.join(os.environ["GPUMEMREC_DIR"], "*", "manifest.json")):
            with open(m) as f:
                if json.load(f).get("outcome") == "fatal":
                    return True
        time.sleep(0.05)
    return False


def main():
    mode = sys.argv[1]
    torch.cuda.init()
    if mode == "fraction":
        torch.cuda.set_per_process_memory_fraction(0.25)
    keep = []
    if mode == "uncaught":
        fill(keep)
    try:
        fill(keep)
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError: %s" % e)
    print("reserved %d allocated %d" % (torch.cuda.memory_reserved(), torch.cuda.memory_allocated()))
    if mode == "driver":
        # GPUMEMREC_EPISODE_MS is 10 minutes in this test: only the
        # framework's own word can make the verdict fatal now.
        print("fatal bundle while running: %s" % wait_for_fatal(float(os.environ.get("GMR_WAIT_S", "60"))))


main()
