#!/usr/bin/env python3
"""The Python hook's JAX part against the real jax, flax and optax
(tests/requirements-frameworks.txt, the frameworks venv), on JAX's CPU
backend, under LD_PRELOAD=libgpumemrec.so.

  run_real_jax.py --mode main|thread --shim build/bin/libgpumemrec.so [--gpumemrec build/bin/gpumemrec]

framework_cases/jax_real_train.py trains a flax TrainState with optax Adam,
catches one RESOURCE_EXHAUSTED (no bundle) and dies of a second one,
uncaught, in the main thread (sys.excepthook) or in a thread
(threading.excepthook). Checked: the exit status and output are the
program's own (1, or 3 after the thread); one framework_oom bundle, fatal;
framework.json says jax, the error, the size XLA's CPU message names;
memory by role equals the program's own count exactly (params: weights;
Adam's count, mu and nu: optimizer state; every other array it holds:
activations; their sum is the live arrays' total); the memory profile is
jaxlib's own (jax.profiler.device_memory_profile) and `gpumemrec report`
lists its live buffers at the program's lines.

What the CPU backend cannot show, so the stand-in jax (site-packages/jax,
run_framework.py --case jax) keeps it: XLA's GPU allocator (BFC) taking
one arena with cudaMalloc at start-up, its message naming the device and a
human-readable size ("... allocate 1.00GiB with allocator GPU_0_bfc on
device 0"), and so a bundle about device 0 with the card's accounting. On
the CPU, JAX's buffers are host memory: the recorder sees no driver call,
and XLA's message names no device (framework.json device -1).

Exit 0 pass, 1 fail, 77 skip (no frameworks venv: tests/simulate/frameworks_venv.py).
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "simulate"))
import frameworks_venv  # noqa: E402  (tests/simulate: the venv's one finder)
from run_framework import (CASES, Failure, bundles, check, check_jax_report, check_roles,  # noqa: E402
                           framework_bundle, load)

PROG = os.path.join(CASES, "jax_real_train.py")
PIB = 1 << 50


def run_program(python, shim, mode, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "PYTHON", "LD_PRELOAD", "JAX_",
                                                                     "XLA_"))}
    env.update({"GPUMEMREC_DIR": os.path.join(tmp, "dumps"), "LD_PRELOAD": shim, "PYTHONPATH": CASES,
                "PYTHONDONTWRITEBYTECODE": "1", "JAX_PLATFORMS": "cpu"})
    return subprocess.run([python, PROG, mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=240, cwd=tmp)


def check_run(p, mode):
    """The program's own exit status and output (Python's, for an uncaught
    exception: 1 in the main thread; a thread's is printed, the program goes on)."""
    want_rc, tail = (1, "") if mode == "main" else (3, "thread ended\n")
    lines = p.stdout.splitlines(True)
    check(p.returncode == want_rc, "exit status %d, want %d:\n%s" % (p.returncode, want_rc, p.stderr[-3000:]))
    check(len(lines) == 2 + bool(tail) and lines[0] == "caught: RESOURCE_EXHAUSTED\n" and
          lines[1].startswith("EXPECT ") and "".join(lines[2:]) == tail, "output:\n%s" % p.stdout)
    check("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED" in p.stderr, "the program's traceback is missing")
    said = re.findall(r"^gpumemrec: .*", p.stderr, re.M)
    check(len(said) == 1 and "framework_oom dump written" in said[0], "the recorder's lines: %s" % said)
    return json.loads(lines[1][len("EXPECT "):])


def check_digest(fw, expect):
    check(fw["framework"] == "jax" and fw["error"].startswith("RESOURCE_EXHAUSTED: Out of memory allocating"),
          "framework.json: %s" % {k: fw.get(k) for k in ("framework", "error")})
    # XLA's CPU message: "Out of memory allocating N bytes." (no device named)
    check(fw["request_bytes"] == expect["request_bytes"] and fw["device"] == -1,
          "request_bytes %s device %s, want %d and -1" % (fw["request_bytes"], fw["device"], expect["request_bytes"]))
    roles = fw["roles"]
    check(roles["status"] == "complete", "roles: %s" % roles)
    check_roles(roles, expect, ("weights", "optimizer_state"))
    total = expect["weights"] + expect["optimizer_state"] + expect["activations"]
    check(roles["bytes"]["activations"] == expect["activations"] and roles["bytes"]["allocator_cache"] == 0 and
          sum(roles["bytes"].values()) == total, "activations/total: %s, the program holds %s" % (roles, expect))
    check(any("add up to the live arrays (%d bytes)" % total in n for n in roles["notes"]),
          "no note with the live arrays' total %d: %s" % (total, roles["notes"]))
    top = {(t["role"], t["owner"], t["name"]) for t in roles["top"]}
    check({("optimizer_state", "ScaleByAdamState", "mu"), ("optimizer_state", "ScaleByAdamState", "nu"),
           ("weights", "TrainState", "params")} <= top, "top: %s" % roles["top"])


def check_profile(d):
    with open(os.path.join(d, "framework_memory_profile.pb.gz"), "rb") as f:
        data = gzip.decompress(f.read())
    # jaxlib's heap profile: a pprof Profile whose string table names the program
    check(len(data) > 100 and b"jax_real_train.py" in data, "the profile does not name the program")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("main", "thread"), required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--gpumemrec", default="")
    args = ap.parse_args()
    args.shim = os.path.abspath(args.shim)  # the program runs in a temporary directory
    python = frameworks_venv.python_or_skip()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            expect = check_run(run_program(python, args.shim, args.mode, tmp), args.mode)
            d, manifest = framework_bundle(tmp, "framework_oom")
            check(len(bundles(tmp)) == 1, "the caught RESOURCE_EXHAUSTED made a bundle too: %s" % bundles(tmp))
            check("framework_memory_profile.pb.gz" in manifest["files"], "files: %s" % manifest["files"])
            check_digest(load(d, "framework.json"), expect)
            check_profile(d)
            if args.gpumemrec:
                # The buffers' sites: the program's lines, not jax's or flax's
                # (the outputs are made in flax's Dense, called from the model's line).
                check_jax_report(args.gpumemrec, d, PROG, "jax at the out-of-memory: asked about 4.00 PiB",
                                 [("run", "batch"), ("run", "step"), ("__call__", "logits")])
        except Failure as e:
            print("FAIL: %s" % e)
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
