#!/usr/bin/env python3
"""Cost of the Python hook's walk by role (shim/python/gpumemrec_pyhook/roles.py)
per object in gc.get_objects(): N junk objects (small lists, as a big
program's many containers) beside a model with AdamW state, on the stand-in
torch over the fake runtime.

  GMR_CUDART=build/tests/fakes/libcudart.so \
  PYTHONPATH=tests/python/site-packages:shim/python python3 bench/roles_walk.py 100000 1000000
"""
import gc
import statistics
import sys
import time

import torch
from gpumemrec_pyhook import roles


def measure(n, repeat=5):
    junk = [[i] for i in range(n)]
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(24)])
    opt = torch.optim.AdamW(model.parameters())
    for p in model.parameters():
        p.grad = torch.empty(*p.shape)
    opt.step()
    snap = torch.cuda.memory._snapshot()
    times, cpu, objects = [], [], 0
    for _ in range(repeat):
        c0 = time.process_time()
        out = roles.walk(torch, snap, 0, budget=3600000)
        cpu.append((time.process_time() - c0) * 1000)
        times.append(out["elapsed_ms"])
        objects = out["objects"]
    t0 = time.perf_counter()
    gc.get_objects()
    listing = (time.perf_counter() - t0) * 1000
    del junk
    return objects, statistics.median(times), statistics.median(cpu), listing, out["bytes"]["weights"]


def main():
    torch.cuda.init()
    print("python %s" % sys.version.split()[0])
    for n in [int(a) for a in sys.argv[1:]] or [100000, 1000000]:
        objects, ms, cpu, listing, weights = measure(n)
        print("%9d objects: walk %.1f ms wall, %.1f ms CPU (medians of 5; gc.get_objects() alone %.1f ms), "
              "%.3f us/object CPU; weights found %d bytes" % (objects, ms, cpu, listing, cpu * 1000.0 / objects,
                                                             weights))


main()
