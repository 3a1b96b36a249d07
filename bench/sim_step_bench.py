#!/usr/bin/env python3
"""The recorder's cost per training step on a simulated card, beside the
same step without it, in one run (docs/performance.md, "A training step on
a simulated card"). No GPU time hides the recorder's work here, so this is
its worst case.

The step is examples/train_gpt.py's model (GPT-2 small: 124M parameters,
AdamW, float32) at batch B x 1024 tokens on a simulated H100; each process
runs W warm-up steps, then N measured ones, and reports the CPU of the whole
process per step (every thread: PyTorch's, the autograd engine's and the
recorder's background thread) and its peak host memory. Runs alternate
without and with the recorder, R rounds; the medians of every measured step
(and of each round) are printed.

  bench/sim_step_bench.py BUILD_BIN PYTHON [--batch 8] [--steps 10] [--rounds 3] [--busy]

--busy: one spinning process per core for the whole run (a loaded machine).
"""
import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIM_LIBS = ["libcuda.so.1", "libnvidia-ml.so.1", "libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13",
            "libcudnn.so.9", "libnccl.so.2"]

STEP_PROGRAM = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import torch.nn.functional as F
from train_gpt import GPT
batch, warm, steps = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
model = GPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
vocab, seq = model.head.out_features, model.pos.num_embeddings
cpu = []
for i in range(warm + steps):
    if i == warm:
        segs0 = torch.cuda.memory_stats().get("segment.all.allocated", 0)
    c0 = time.process_time()
    idx = torch.randint(0, vocab, (batch, seq), device="cuda")
    loss = F.cross_entropy(model(idx).view(-1, vocab), idx.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if i >= warm:
        cpu.append(time.process_time() - c0)
print("RESULT " + json.dumps({"cpu": cpu, "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                              "reserved": torch.cuda.max_memory_reserved(),
                              "segments": torch.cuda.memory_stats().get("segment.all.allocated", 0) - segs0}))
"""


def run_once(bin_dir, python, recorder, args):
    sim = os.path.join(bin_dir, "simulate")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "LD_PRELOAD", "PYTORCH_"))}
    env["GPUMEMREC_SIMULATE"] = "h100-80gb"
    cmd = [python, "-c", STEP_PROGRAM, os.path.join(os.path.dirname(HERE), "examples"), str(args.batch),
           str(args.warmup), str(args.steps)]
    if recorder:
        env["GPUMEMREC_DIR"] = os.path.join(args.tmp, "dumps")
        cmd = [os.path.join(bin_dir, "gpumemrec"), "run", "--simulate", "h100-80gb", "--"] + cmd
    else:
        env["LD_PRELOAD"] = ":".join(os.path.join(sim, lib) for lib in SIM_LIBS)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        sys.exit("sim_step_bench: the step failed (%s, rc %d): %s" % ("recorder" if recorder else "floor",
                                                                      p.returncode, p.stderr[-2000:]))
    return json.loads(lines[-1][len("RESULT "):])


def spin():
    while True:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_dir")
    ap.add_argument("python")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--tmp", default="/tmp/gmr-sim-step-bench")
    args = ap.parse_args()
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(os.cpu_count() or 1)] \
        if args.busy else []
    for s in spinners:
        s.start()
    per = {False: [], True: []}
    rss = {False: [], True: []}
    steps = {False: [], True: []}
    segments = 0
    try:
        for _ in range(args.rounds):
            for recorder in (False, True):
                r = run_once(args.bin_dir, args.python, recorder, args)
                per[recorder].append(statistics.median(r["cpu"]))
                steps[recorder] += r["cpu"]
                segments = max(segments, r["segments"])
                rss[recorder].append(r["maxrss_kib"] / 1024.0)
    finally:
        for s in spinners:
            s.terminate()
    floor, rec = statistics.median(steps[False]), statistics.median(steps[True])
    print("GPT-2 small (124M), AdamW, batch %d x 1024, simulated H100, %d rounds x %d steps%s" % (
        args.batch, args.rounds, args.steps, ", every core busy" if args.busy else ""))
    print("  without the recorder: %.1f ms CPU per step (rounds: %s), host peak %.0f MiB" % (
        floor * 1000, ", ".join("%.1f" % (x * 1000) for x in per[False]), statistics.median(rss[False])))
    print("  with the recorder:    %.1f ms CPU per step (rounds: %s), host peak %.0f MiB" % (
        rec * 1000, ", ".join("%.1f" % (x * 1000) for x in per[True]), statistics.median(rss[True])))
    print("  added: %+.1f ms per step (%+.2f %%), host memory %+.0f MiB" % (
        (rec - floor) * 1000, (rec - floor) / floor * 100, statistics.median(rss[True]) - statistics.median(rss[False])))
    print("  (medians of every measured step; PyTorch's caching allocator asked the driver for %d segment(s) "
          "in a run's measured steps)" % segments)


if __name__ == "__main__":
    main()
