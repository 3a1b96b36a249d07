#!/usr/bin/env python3
"""simulate.torch_*: the real PyTorch 2.14.1 (the frameworks venv) runs on a
simulated H100 under `gpumemrec run --simulate h100-80gb`, and each bundle
is checked against the program's own figures (programs/expect.py: its
tensors' blocks from PyTorch's own snapshot, torch.cuda.memory_* counters).

Cases (each a program in programs/):
  train_oom         gpt_train.py: AdamW on a GPT-shaped model; the second step
                    runs out of memory in backward, on the autograd device thread
  train_expandable  the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
                    (the caching allocator maps its memory through the driver's VMM)
  train_async       the same with backend:cudaMallocAsync (every tensor a
                    stream-ordered allocation from the driver's pool)
  kv_static         kv_serve.py: a Llama-shaped model from a config serving with a
  kv_dynamic        transformers StaticCache / DynamicCache; a second request's
                    prefill runs out of memory
  recovered         recover.py: PyTorch frees its cache and retries: no bundle by
                    default, a bundle marked recovered with GPUMEMREC_RECOVERED=keep
  fraction          fraction.py: set_per_process_memory_fraction refuses a request
                    before the driver: a framework_oom bundle
  llama7b           llama7b.py: full fine-tuning of a 7B Llama configuration in bf16
                    with AdamW runs to its out-of-memory in under 2 GiB of host
                    memory, and the bundle says what the 80 GB held
  peak              gpt_train.py --steps 3 without an out-of-memory, its exit
                    bundle: peak.json's libc10_cuda.so bytes at the peak equal
                    max_memory_reserved(), the rest of the peak is other
                    libraries' own memory, and memory by role at the peak
                    equals the program's weights, gradients, optimizer state
  peak_expandable   the same with expandable segments

Usage: test_torch.py BUILD_BIN_DIR CASE. Exit 77 without the venv.
"""
import json
import os
import pickle
import re
import subprocess
import sys

from torch_checks import HERE, Run, check, check_backward_site, check_roles, check_simulated, load, run_case


def pickled_segments(bundle, name):
    with open(os.path.join(bundle, name), "rb") as f:
        return sorted([s["address"], s["total_size"]] for s in pickle.load(f)["segments"])


def check_snapshots(bundle, expect):
    """PyTorch's own snapshot at the failure (framework_state.pickle) and the
    recorder's (snapshot.pickle: each live driver allocation a segment) hold
    exactly the segments the program's snapshot shows after catching the
    error (c10 keeps its segments: nothing was released since)."""
    want = expect.get("segments")
    check(bool(want) and pickled_segments(bundle, "framework_state.pickle") == want,
          "framework_state.pickle: PyTorch's %d segments, as the program's snapshot" % len(want or []))
    check(pickled_segments(bundle, "snapshot.pickle") == want,
          "snapshot.pickle: the recorder's live allocations are PyTorch's %d segments" % len(want or []))


def case_train(bin_dir, alloc_conf, api):
    program = "gpt_train.py"
    env = {"PYTORCH_CUDA_ALLOC_CONF": alloc_conf} if alloc_conf else {}
    run = Run(bin_dir, program, ["--layers", "12", "--width", "2048", "--heads", "16"], env)
    check(run.rc == 0, "the program exits 0 (it catches its OutOfMemoryError): %d" % run.rc)
    check(run.expect.get("where") == "backward", "the out-of-memory is in backward: %s" % run.expect.get("where"))
    # PyTorch's cudaMallocAsync backend has no out-of-memory observers
    # (CUDAMallocAsyncAllocator.cpp: attachOutOfMemoryObserver throws "does
    # not yet support"): neither the program's nor the recorder's runs.
    observers = None if "cudaMallocAsync" in alloc_conf else [False]
    check(run.expect.get("observer_on_main") == observers,
          "PyTorch's observers: %s (want %s)" % (run.expect.get("observer_on_main"), observers))
    fatal = [b for b in run.bundles if load(b, "metadata.json").get("outcome") == "fatal"]
    check(len(fatal) == 1, "one fatal bundle (of %d)" % len(run.bundles))
    if not fatal:
        return
    b = fatal[0]
    md = load(b, "metadata.json")
    check(md["api"] == api, "the failing call is %s: %s" % (api, md["api"]))
    check_simulated(b)
    check_backward_site(b, program, run.program_line(program, "loss.backward()"))
    if observers is None:
        # Without an observer the recorder has no moment inside PyTorch to
        # ask it: the bundle is the driver's view (a documented limit).
        check(not os.path.exists(os.path.join(b, "framework.json")), "no framework.json without an observer")
        return
    check_roles(load(b, "framework.json"), run.expect, ("weights", "gradients", "optimizer_state"))
    if not alloc_conf:
        check_snapshots(b, run.expect)


def case_kv(bin_dir, kind):
    program = "kv_serve.py"
    run = Run(bin_dir, program, ["--cache", kind], {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    check(run.rc == 0 and run.expect.get("where") == "second request",
          "the second request runs out of memory (rc %d, %s)" % (run.rc, run.expect.get("where")))
    fatal = [b for b in run.bundles if load(b, "metadata.json").get("outcome") == "fatal"]
    check(len(fatal) == 1, "one fatal bundle (of %d)" % len(run.bundles))
    if not fatal:
        return
    fw = load(fatal[0], "framework.json")
    check_roles(fw, run.expect, ("weights", "kv_cache"))
    owner = "StaticCache" if kind == "static" else "DynamicCache"
    owners = {t["owner"] for t in fw["roles"]["top"] if t["role"] == "kv_cache"}
    check(owners == {owner}, "the KV cache's tensors are named as the %s's: %s" % (owner, owners))
    check(fw["roles"]["tensors"]["kv_cache"] == run.expect["kv_cache_n"],
          "%d cache tensors, the program counts %d" % (fw["roles"]["tensors"]["kv_cache"], run.expect["kv_cache_n"]))


def case_recovered(bin_dir):
    run = Run(bin_dir, "recover.py")
    check(run.rc == 0 and run.expect.get("big", 0) > 0, "the program got its memory: rc %d" % run.rc)
    check(run.bundles == [], "a recovered failure leaves no bundle by default (%d)" % len(run.bundles))
    check(re.search(r"cudaMalloc\(\d+ bytes.*recovered after freeing", run.err) is not None,
          "stderr says the failure was recovered")
    keep = Run(bin_dir, "recover.py", env={"GPUMEMREC_RECOVERED": "keep"})
    outcomes = [load(b, "metadata.json").get("outcome") for b in keep.bundles]
    check(outcomes == ["recovered"], "GPUMEMREC_RECOVERED=keep: one bundle marked recovered: %s" % outcomes)


def case_fraction(bin_dir):
    program = "fraction.py"
    run = Run(bin_dir, program)
    check(run.rc == 0, "the program exits 0: %d" % run.rc)
    check(len(run.bundles) == 1, "one bundle (%d)" % len(run.bundles))
    if not run.bundles:
        return
    b = run.bundles[0]
    md, fw = load(b, "metadata.json"), load(b, "framework.json")
    check(md["reason"] == "framework_oom", "reason framework_oom (no driver call failed): %s" % md["reason"])
    check(fw["memory_fraction"] == 0.25, "framework.json's memory_fraction: %s" % fw["memory_fraction"])
    check(fw["reserved_bytes"] == run.expect["reserved"], "PyTorch's reserved bytes %d, the program's %d"
          % (fw["reserved_bytes"], run.expect["reserved"]))
    check(fw["allocated_bytes"] == run.expect["held"], "PyTorch's allocated bytes %d, the program holds %d"
          % (fw["allocated_bytes"], run.expect["held"]))
    line = run.program_line(program, "acts.append(")
    check(re.search(r"^    site: \w+ \(%s:%d\) \[python\]" % (program, line), load(b, "summary.txt"), re.M)
          is not None, "the site is the program's line %s:%d" % (program, line))


def case_llama7b(bin_dir):
    run = Run(bin_dir, "llama7b.py", env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    e = run.expect
    check(run.rc == 0 and e.get("where") in ("forward", "backward", "optimizer step"),
          "the fine-tuning runs out of memory (rc %d, in %s)" % (run.rc, e.get("where")))
    check(6.7e9 < e.get("parameters", 0) < 6.8e9, "a 7B configuration: %s parameters" % e.get("parameters"))
    check(e.get("host_peak_bytes", 1 << 40) < 2 << 30, "host memory at most 2 GiB: %.2f GiB"
          % (e.get("host_peak_bytes", 0) / (1 << 30)))
    fatal = [b for b in run.bundles if load(b, "metadata.json").get("outcome") == "fatal"]
    check(len(fatal) == 1, "one fatal bundle (of %d)" % len(run.bundles))
    if fatal:
        check_simulated(fatal[0])
        check_roles(load(fatal[0], "framework.json"), e, ("weights", "gradients", "optimizer_state"))


def case_peak(bin_dir, alloc_conf):
    """A run without an out-of-memory, its exit bundle (GPUMEMREC_DUMP_AT_EXIT):
    peak.json's peak, by library, against PyTorch's max_memory_reserved, and
    memory by role at the peak against the program's own count."""
    env = {"GPUMEMREC_DUMP_AT_EXIT": "1"}
    if alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    run = Run(bin_dir, "gpt_train.py", ["--layers", "4", "--width", "512", "--heads", "8", "--steps", "3"], env)
    x = run.expect
    check(run.rc == 0 and x, "the program exits 0 and says its counts: %d" % run.rc)
    check(len(run.bundles) == 1 and load(run.bundles[0], "manifest.json")["reason"] == "exit",
          "one exit bundle: %s" % run.bundles)
    if not x or len(run.bundles) != 1:
        return
    b = run.bundles[0]
    check_simulated(b)
    check(x["reserved"] == x["max_reserved"], "PyTorch still holds its peak at exit (%d of %d): the walk is at it"
          % (x["reserved"], x["max_reserved"]))
    p = load(b, "peak.json")["devices"][0]
    check(p["exact"] is True, "the peak is exact: %s" % p["why_inexact"])
    check(p["after_gap"] is None, "no gap: %s" % p["after_gap"])
    libs = {l["library"]: l["bytes"] for l in p["by_library"]}
    print("peak %d bytes by library: %s" % (p["peak_bytes"], libs))
    check(libs.get("libc10_cuda.so") == x["max_reserved"], "libc10_cuda.so's bytes at the peak %s, PyTorch's "
          "max_memory_reserved() %d" % (libs.get("libc10_cuda.so"), x["max_reserved"]))
    check(sum(libs.values()) == p["peak_bytes"], "the libraries add up to the peak")
    outside = p["peak_bytes"] - x["max_reserved"]
    check(None not in libs, "every byte of the peak has its library")
    roles = p["roles"]
    check(roles is not None and roles["known"] is True, "roles at the peak: %s" % roles)
    if not roles or not roles["known"]:
        return
    check(roles["walk"] == "exit" and roles["framework"] == "torch" and roles["walk_status"] == "complete",
          "the walk at exit: %s" % roles)
    got = roles["bytes"]
    for n in ("weights", "gradients", "optimizer_state"):
        check(got[n] == x[n], "%s at the peak: %d bytes, the program counts %d" % (n, got[n], x[n]))
    check(got["outside_framework"] == outside, "outside PyTorch %d: the peak minus max_memory_reserved %d"
          % (got["outside_framework"], outside))
    check(sum(got.values()) == p["peak_bytes"], "the roles add up to the peak: %d vs %d"
          % (sum(got.values()), p["peak_bytes"]))
    fw = load(b, "framework.json")
    check(fw["reserved_bytes"] == x["max_reserved"], "the walk's reserved bytes %d, max_memory_reserved %d"
          % (fw["reserved_bytes"], x["max_reserved"]))


def case_calibrate(bin_dir):
    """scripts/gpu_validate/calibrate.py, the script that reads a profile's
    figures from a real card, reads them back from the simulated one."""
    card = "t4-16gb"
    script = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "gpu_validate", "calibrate.py")
    run = Run(bin_dir, script, card=card)
    listed = subprocess.run([os.path.join(bin_dir, "gpumemrec"), "simulate", "--list", "--json"],
                            stdout=subprocess.PIPE, universal_newlines=True).stdout
    want = [p for p in json.loads(listed) if p["id"] == card][0]
    start = run.out.find("{")
    got = json.loads(run.out[start:]) if run.rc == 0 and start >= 0 else {}
    for key in ("name", "compute_capability", "sm_count", "l2_bytes", "total_bytes", "nvml_total_bytes",
                "context_bytes", "driver_reserved_bytes"):
        check(got.get(key) == want[key], "%s: calibrate.py reads %s, the profile has %s" % (key, got.get(key), want[key]))
    check(got.get("outside_bytes") == want["context_bytes"] + want["driver_reserved_bytes"],
          "outside_bytes is the context plus the driver's reserve")


CASES = {
    "train_oom": lambda d: case_train(d, "", "cudaMalloc"),
    "train_expandable": lambda d: case_train(d, "expandable_segments:True", "cuMemCreate"),
    "train_async": lambda d: case_train(d, "backend:cudaMallocAsync", "cudaMallocAsync"),
    "kv_static": lambda d: case_kv(d, "static"),
    "kv_dynamic": lambda d: case_kv(d, "dynamic"),
    "recovered": case_recovered,
    "fraction": case_fraction,
    "llama7b": case_llama7b,
    "peak": lambda d: case_peak(d, ""),
    "peak_expandable": lambda d: case_peak(d, "expandable_segments:True"),
    "calibrate": case_calibrate,
}


if __name__ == "__main__":
    sys.exit(run_case(CASES))
