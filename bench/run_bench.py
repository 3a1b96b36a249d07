#!/usr/bin/env python3
"""run_bench.py: what the recorder costs, side by side, in one run.

Runs bench/alloc_bench (C++) and bench/alloc_bench.py (ctypes) against the
fake CUDA driver WITHOUT and WITH LD_PRELOAD=libgpumemrec.so under several
settings, interleaving the runs (every run of one repetition in a shuffled
order, baseline and shim runs mixed) and reporting medians over the
repetitions of the per-repetition difference (shim - baseline of the same
repetition). Then the recorder's memory and the time to write a large dump.
The null-driver rows run bench/alloc_bench_null (the same program against
bench/null_cudart.cpp, a driver that shares nothing between threads) at
1..16 threads, stacks off and native 32, each beside its floor (the same
program without the shim, same repetition): the recorder's own cost as
threads are added; --chrt runs them again under `chrt -f 1`. The --lags rows
do the same with each free L allocations after its allocation (L live per
thread), and with frees on another thread (lag_rows).

  python3 bench/run_bench.py [--build-dir build] [--reps 9] [--quick] [--only-null|--only-python] [--chrt]
      [--lags 16,500,5000] [--lag-threads 1,2,4] [--cross-lags 500] [--old-shim PATH]

The primary metric is the allocating thread's CPU time per pair
(CLOCK_THREAD_CPUTIME_ID): on a shared, oversubscribed machine the wall time
mostly measures the other processes. Wall time is printed as well.

Stdlib only. Prints ONE table (see docs/performance.md for its meaning).
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def parse_kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


class Job:
    """One program invocation; run once per repetition."""

    def __init__(self, key, argv, env, shim, tag):
        self.key, self.argv, self.env, self.shim, self.tag = key, argv, env, shim, tag
        self.results = []  # one dict per repetition (None if it failed)


class Runner:
    def __init__(self, args):
        self.args = args
        b = os.path.abspath(args.build_dir)
        self.build = b
        self.shim = os.path.join(b, "bin", "libgpumemrec.so")
        self.fakes = os.path.join(b, "tests", "fakes")
        self.cbench = os.path.join(b, "bench", "alloc_bench")
        self.nbench = os.path.join(b, "bench", "alloc_bench_null")  # against bench/null_cudart.cpp
        self.ringfloor = os.path.join(b, "bench", "ring_floor")  # the ring's writes alone (may be absent)
        self.sizes = os.path.join(b, "bench", "bench_sizes")
        self.pybench = os.path.join(HERE, "alloc_bench.py")
        self.cudart = os.path.join(self.fakes, "libcudart.so.13")
        self.python = args.python or sys.executable
        for p in (self.shim, self.cbench, self.nbench, self.cudart):
            if not os.path.exists(p):
                sys.exit("run_bench: %s is missing: build first (cmake --build %s)" % (p, b))
        self.tmp = tempfile.mkdtemp(prefix="gpumemrec-bench-")
        self.jobs = {}

    def base_env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GPUMEMREC_") and not k.startswith("FAKEGPU_") and k != "LD_PRELOAD"}
        # The shim wraps dlopen: the fake runtime's RUNPATH no longer applies.
        env["LD_LIBRARY_PATH"] = self.fakes + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["FAKEGPU_CAPACITY"] = str(1 << 40)
        env["GPUMEMREC_DIR"] = os.path.join(self.tmp, "dumps")
        return env

    def job(self, tag, argv, shim_env, shim=None):
        """shim_env None: no shim; else the GPUMEMREC_ settings for it, with
        `shim` (default: the build's) preloaded."""
        shim = shim or self.shim
        key = (tuple(argv), None if shim_env is None else tuple(sorted(shim_env.items())) + (shim,))
        if key not in self.jobs:
            env = self.base_env()
            if shim_env is not None:
                env["LD_PRELOAD"] = shim
                env.update(shim_env)
            self.jobs[key] = Job(key, argv, env, shim_env is not None, tag)
        return self.jobs[key]

    def run_once(self, job):
        try:
            p = subprocess.run(job.argv, env=job.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=600)
        except subprocess.TimeoutExpired:
            return None
        for line in p.stdout.splitlines():
            if line.startswith(("RESULT ", "MEM ", "DUMP ", "PROBE ")):
                return parse_kv(line)
        sys.stderr.write("run_bench: %s failed (rc %d): %s\n" % (" ".join(job.argv), p.returncode,
                                                                 p.stderr.strip()[-2000:]))
        return None

    def run_all(self, reps, jobs):
        for rep in range(reps):
            order = list(jobs)
            random.Random(1000 + rep).shuffle(order)
            for j in order:
                j.results.append(self.run_once(j))
            if self.args.verbose:
                sys.stderr.write("rep %d/%d done\n" % (rep + 1, reps))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def paired(shim, base, field):
    """Median over repetitions of shim - baseline (same repetition)."""
    d = []
    for a, b in zip(shim.results, base.results):
        if a and b and field in a and field in b:
            d.append(float(a[field]) - float(b[field]))
    return med(d)


def values(job, field):
    return [float(r[field]) for r in job.results if r and field in r]


def fmt_ns(v):
    if v is None:
        return "n/a"
    return "%.0f" % v


def null_jobs(r, args, argv):
    """The null-driver group: (setting label, threads, shim job, floor job)
    for every thread count, stacks off and native 32, and, with --chrt, the
    same under `chrt -f 1` (SCHED_FIFO: the threads run on both cores without
    being preempted by the machine's other processes, so what they share
    shows). Every row has its own floor: the same program without the shim,
    same scheduling, same repetition."""
    scheds = [("", [])] + ([("fifo ", ["chrt", "-f", "1"])] if args.chrt else [])
    settings = (("stacks off", {"GPUMEMREC_STACK_DEPTH": "0", "GPUMEMREC_PYTHON_STACKS": "0"}),
                ("native 32", {"GPUMEMREC_STACK_DEPTH": "32", "GPUMEMREC_PYTHON_STACKS": "0"}))
    rows = []
    for prefix, sched in scheds:
        for label, env in settings:
            for t in (int(x) for x in args.null_threads.split(",")):
                cmd = sched + argv(t, args.pairs, warm_ring(t))
                # The same work in t one-thread processes that run at once
                # (alloc_bench --procs): nothing the recorder writes is
                # shared, so their cost over 1 thread is the machine's own.
                pcmd = sched + argv(1, args.pairs // t, warm_ring(1)) + ["--procs", str(t)] if t > 1 else None
                procs = (r.job("null", pcmd, env), r.job("null", pcmd, None)) if pcmd else None
                rows.append((prefix + label, t, r.job("null", cmd, env), r.job("null", cmd, None), procs))
    rows += lag_rows(r, args, argv, settings[0][1])
    # The first pass over a fresh ring: its pages are faulted in by the
    # calls that first write them (4 MiB for the default ring; on a VM the
    # hypervisor's first touch too), once per process. Timed alone, so the
    # rows above (warmed over a whole ring) show the steady state.
    cmd = argv(1, RING_EVENTS // 2, "0")
    rows.append(("ring 1st pass", 1, r.job("null", cmd, settings[0][1]), r.job("null", cmd, None), None))
    return rows


def lag_rows(r, args, argv, off):
    """Rows (as null_jobs') where each free comes L of the thread's
    allocations after its allocation (alloc_bench --lag: L live per
    thread, the live table's home tables at work), stacks off, at
    --lag-threads, each beside its floor and the same work in one-thread
    processes; then "cross": frees on the next thread (alloc_bench --lag L
    --cross, rounds of L allocations then L frees of the next thread's),
    whose T=1 row is the same shape on one thread. With --old-shim, the
    same rows with that build too (label "old: ..."), interleaved in the
    same repetitions: before and after a change, side by side."""
    rows = []
    shims = [("", None)] + ([("old: ", os.path.abspath(args.old_shim))] if args.old_shim else [])
    for sched_label, sched in [("", [])] + ([("fifo ", ["chrt", "-f", "1"])] if args.chrt else []):
        for lag in (int(x) for x in args.lags.split(",") if x):
            for cross in (False, True) if lag in args.cross_lags else (False,):
                extra = ["--lag", str(lag)] + (["--cross"] if cross else [])
                for prefix, shim in shims:
                    label = "%s%sstacks off, lag %d%s" % (prefix, sched_label, lag, " cross" if cross else "")
                    for t in (int(x) for x in args.lag_threads.split(",")):
                        warm = str(max(2000, RING_EVENTS // t, lag))
                        cmd = sched + argv(t, args.pairs, warm) + extra
                        pcmd = sched + argv(1, args.pairs // t, warm) + extra + ["--procs", str(t)] if t > 1 else None
                        procs = (r.job("null", pcmd, off, shim), r.job("null", pcmd, None)) if pcmd else None
                        rows.append((label, t, r.job("null", cmd, off, shim), r.job("null", cmd, None), procs))
    return rows


def ring_floor_jobs(r, args):
    """The machine's own scaling for the ring's writes (bench/ring_floor.cpp),
    per thread count: {(threads, private): job}; empty without the program
    (a carried build from before it)."""
    if not os.path.exists(r.ringfloor):
        return {}
    jobs = {}
    for t in (int(x) for x in args.null_threads.split(",")):
        for private in (False, True):
            # Five times the null rows' pairs (a slot write is ~10x cheaper), split over the threads.
            cmd = [r.ringfloor, "--threads", str(t), "--pairs", str(max(5 * args.pairs // t, 1000))] + \
                (["--private"] if private else [])
            jobs[(t, private)] = r.job("ringfloor", cmd, None)
    return jobs


def print_ring_floor(w, jobs):
    """Per slot write (2 per pair), and each column's ratio to 1 thread:
    "private" is the machine's own scaling with T (clock, shared caches), no
    line moving between cores; "shared" adds the lines another core wrote a
    lap ago, as the recorder's ring has them. The shim's added/T=1 above is
    read against these."""
    if not jobs:
        return
    f = "cpu_ns_per_pair"
    w("")
    w("the ring's writes alone (bench/ring_floor.cpp: a 64-byte slot per call, taken as ring.h takes it, in a"
      " 65536-slot ring), ns per slot write, thread CPU time, same run")
    hdr = "%3s %14s %10s %14s %10s" % ("T", "shared ring", "x T=1", "private 1/T", "x T=1")
    w(hdr)
    w("-" * len(hdr))
    one = {}
    for t in sorted({t for t, _ in jobs}):
        cells = []
        for private in (False, True):
            v = med(values(jobs[(t, private)], f))
            v = v / 2 if v is not None else None
            if t == 1:
                one[private] = v
            ratio = v / one[private] if v and one.get(private) else None
            cells += [fmt_ns(v) if v is None or v >= 10 else "%.1f" % v, "%.2fx" % ratio if ratio else "n/a"]
        w("%3d %14s %10s %14s %10s" % (t, cells[0], cells[1], cells[2], cells[3]))


RING_EVENTS = 65536  # GPUMEMREC_RING_EVENTS' default


def warm_ring(threads):
    """Warm-up pairs per thread for the null rows: together more than one
    ring of events (each pair is 2), so the timed calls write slots whose
    pages were touched before (the steady state of a long job)."""
    return str(max(2000, RING_EVENTS // threads))


def added_per_call(sj, bj, f="cpu_ns_per_pair"):
    """Per repetition: (with shim - floor) / 2, the recorder's cost per call."""
    return [(float(a[f]) - float(b[f])) / 2 for a, b in zip(sj.results, bj.results) if a and b]


def print_null(w, rows):
    """Per call (a pair is 2 calls): the floor, with the shim, what the shim
    adds (median and spread of the per-repetition differences), the ratio to
    the floor and the added cost's ratio to 1 thread of the same setting.
    Target: stacks off, 2..16 threads within 1.2x of 1 thread. Beside each
    row of T > 1 threads, the same work in T one-thread processes at once
    (nothing the recorder writes is shared between them): "procs/T=1" is what
    the machine itself does to the recorder's cost with T of them running,
    and "threads/procs" what is left for the threads of one process to share."""
    f = "cpu_ns_per_pair"
    w("")
    w("null driver (bench/null_cudart.cpp: lock-free alloc/free, nothing shared between threads): ns per recorded"
      " call = thread CPU time / calls, mean over threads; floor = the same program without the shim, same run;"
      " procs = the recorder's added cost in T one-thread processes running at once (alloc_bench --procs)")
    hdr = "%-18s %3s %7s %9s %18s %7s %9s %9s %9s %s" % (
        "setting", "T", "floor", "with shim", "added (min..max)", "x floor", "added/T=1", "procs/T=1",
        "thr/procs", "target")
    w(hdr)
    w("-" * len(hdr))
    one = {}
    for label, t, sj, bj, procs in rows:
        d = added_per_call(sj, bj)
        base, shim, added = med(values(bj, f)), med(values(sj, f)), med(d)
        if t == 1:
            one[label] = added
        ratio = added / one[label] if added is not None and one.get(label) else None
        pratio = tp = None
        if procs:
            padded = med(added_per_call(*procs))
            pratio = padded / one[label] if padded and one.get(label) else None
            tp = added / padded if added is not None and padded else None
        target = ""
        if "stacks off" in label and t > 1 and ratio is not None:
            target = "<= 1.2x: " + ("yes" if ratio <= 1.2 else "NO")
        w("%-18s %3d %7s %9s %18s %7s %9s %9s %9s %s" % (
            label, t, fmt_ns(base and base / 2), fmt_ns(shim and shim / 2),
            "%s (%s..%s)" % (fmt_ns(added), fmt_ns(min(d) if d else None), fmt_ns(max(d) if d else None)),
            "%.2f" % (shim / base) if base and shim else "n/a", "%.2fx" % ratio if ratio else "n/a",
            "%.2fx" % pratio if pratio else "", "%.2fx" % tp if tp else "", target))


def python_stacks_available(r):
    """Runs the Python bench once under the shim with an out-of-memory at the
    end and looks for Python frames in the bundle's stacks.json. Returns
    (available, detail)."""
    d = os.path.join(r.tmp, "probe")
    env = r.base_env()
    env.update({"LD_PRELOAD": r.shim, "GPUMEMREC_DIR": d, "GPUMEMREC_PYTHON_STACKS": "1",
                "FAKEGPU_CAPACITY": str(1 << 30)})
    try:
        subprocess.run([r.python, r.pybench, "--lib", r.cudart, "--probe-oom", "--frames", "20"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        return False, "probe timed out"
    stacks = glob.glob(os.path.join(d, "oom_dump_*", "stacks.json"))
    if not stacks:
        return False, "probe wrote no bundle"
    try:
        with open(stacks[0]) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return False, "probe bundle unreadable: %s" % e
    best = 0
    for s in data:
        n = sum(1 for fr in s.get("frames", []) if fr.get("kind") == "python")
        best = max(best, n)
    if best == 0:
        return False, "capture_python_frames returned no frames"
    return True, "%d Python frames in the probe's OOM stack" % best


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--reps", type=int, default=9, help="repetitions (medians; >= 5 for real numbers)")
    ap.add_argument("--pairs", type=int, default=200000, help="timed pairs per run (split over threads)")
    ap.add_argument("--py-pairs", type=int, default=50000)
    ap.add_argument("--depth", type=int, default=80, help="native recursion depth before allocating")
    ap.add_argument("--python", default=None, help="interpreter for alloc_bench.py (default: this one)")
    ap.add_argument("--quick", action="store_true", help="smoke mode: tiny runs, numbers meaningless")
    ap.add_argument("--no-dump", action="store_true")
    ap.add_argument("--no-mem", action="store_true")
    ap.add_argument("--only-python", action="store_true", help="only the Python rows (implies --no-mem --no-dump)")
    ap.add_argument("--only-null", action="store_true",
                    help="only the null-driver thread rows (implies --no-mem --no-dump)")
    ap.add_argument("--null-threads", default="1,2,4,8,16", help="thread counts of the null-driver rows")
    ap.add_argument("--chrt", action="store_true",
                    help="also run the null-driver rows under chrt -f 1 (SCHED_FIFO; needs the privilege)")
    ap.add_argument("--lags", default="16,500,5000",
                    help="null-driver rows where each free comes L allocations after its allocation ('' for none)")
    ap.add_argument("--lag-threads", default="1,2,4", help="thread counts of the --lags rows")
    ap.add_argument("--cross-lags", default="500", help="of --lags, those also run with frees on another thread")
    ap.add_argument("--old-shim", default=None, help="another libgpumemrec.so for the --lags rows, side by side")
    ap.add_argument("--dump-reps", type=int, default=3)
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    args.cross_lags = [int(x) for x in args.cross_lags.split(",") if x]

    if args.only_python or args.only_null:
        args.no_mem = args.no_dump = True
    if args.quick:
        args.reps, args.pairs, args.py_pairs, args.dump_reps = 1, 2000, 1000, 1
        args.lags, args.lag_threads, args.cross_lags = "16", "1,2", [16]
    warm = "200" if args.quick else "2000"
    r = Runner(args)
    C = lambda threads, pairs: [r.cbench, "pairs", "--threads", str(threads), "--pairs",
                                str(max(pairs // threads, 100)), "--depth", str(args.depth), "--warmup", warm]
    N = lambda threads, pairs, w=warm: [r.nbench, "pairs", "--threads", str(threads), "--pairs",
                                        str(max(pairs // threads, 100)), "--depth", str(args.depth), "--warmup",
                                        "200" if args.quick else w]
    P = [r.python, r.pybench, "--lib", r.cudart, "--pairs", str(args.py_pairs), "--frames", "20", "--warmup", warm]
    PN = P + ["--nogil"]  # ctypes.CDLL: the GIL is released in each call

    off = {"GPUMEMREC_STACK_DEPTH": "0", "GPUMEMREC_PYTHON_STACKS": "0"}
    nat = lambda d: {"GPUMEMREC_STACK_DEPTH": str(d), "GPUMEMREC_PYTHON_STACKS": "0"}

    py_ok, py_detail = (False, "not run") if args.only_null else python_stacks_available(r)

    # rows: (label, threads, shim job, baseline job, target ns per call, field)
    rows = []
    c_rows = not args.only_python and not args.only_null
    # The null-driver group: the recorder's own cost with threads (the
    # driver shares nothing between threads, so only what the recorder
    # shares shows).
    null_rows = [] if args.only_python else null_jobs(r, args, N)
    ring_floor = {} if args.only_python or args.quick else ring_floor_jobs(r, args)
    b1 = r.job("c", C(1, args.pairs), None) if c_rows else None
    if c_rows:
        rows.append(("stacks off (STACK_DEPTH=0, PYTHON_STACKS=0)", 1, r.job("c", C(1, args.pairs), off), b1, 100))
    for d in (16, 32, 64) if c_rows else ():
        rows.append(("native stack, depth %d" % d, 1, r.job("c", C(1, args.pairs), nat(d)), b1,
                     1000 if d == 32 else None))
    for t in (2, 4, 8) if c_rows else ():
        bt = r.job("c", C(t, args.pairs), None)
        rows.append(("stacks off, %d threads" % t, t, r.job("c", C(t, args.pairs), off), bt, 100))
        rows.append(("native depth 32, %d threads" % t, t, r.job("c", C(t, args.pairs), nat(32)), bt, 1000))
    if args.only_null:
        P = PN = None
    pb = r.job("py", P, None) if P else None
    pbn = r.job("py", PN, None) if PN else None
    both = {"GPUMEMREC_STACK_DEPTH": "32", "GPUMEMREC_PYTHON_STACKS": "1"}
    # (label, shim job, baseline job, target ns per call)
    py_rows = [] if not P else [
        ("Python program (20 frames): stacks off", r.job("py", P, off), pb, None),
        ("Python program: native 32, Python off", r.job("py", P, nat(32)), pb, None),
        ("GIL released (CDLL): native 32, Python off", r.job("py", PN, nat(32)), pbn, None),
    ]
    pyonly = {"GPUMEMREC_STACK_DEPTH": "0", "GPUMEMREC_PYTHON_STACKS": "1"}
    if py_ok:
        py_rows.insert(2, ("Python program: native 32 + Python 20 frames", r.job("py", P, both), pb, 600))
        py_rows.append(("GIL released (CDLL): native 32 + Python 20", r.job("py", PN, both), pbn, 600))
        py_rows.append(("Python 20 frames, native off (GIL held)", r.job("py", P, pyonly), pb, 450))
        py_rows.append(("Python 20 frames, native off (GIL released)", r.job("py", PN, pyonly), pbn, 450))

    t_start = time.time()
    n_jobs = len(r.jobs)
    r.run_all(args.reps, list(r.jobs.values()))
    t_pairs = time.time() - t_start

    out = []
    w = out.append
    w("gpumemrec benchmark: added ns per alloc+free pair (cudaMalloc + cudaFree; each pair is 2 recorded calls)")
    w("median over %d interleaved repetitions of (with shim - without shim) in the same repetition;" % args.reps)
    w("metric: CPU time of the allocating thread per pair (wall in brackets); native stacks from %d frames deep"
      % args.depth)
    hdr = "%-46s %7s %15s %15s %13s %13s %7s %11s %s" % (
        "row", "threads", "baseline ns", "with shim ns", "added/pair", "added/call", "x floor", "target/call", "ok")
    w(hdr)
    w("-" * len(hdr))

    def add_row(label, threads, sj, bj, target, field, wfield):
        base = med(values(bj, field))
        shim = med(values(sj, field))
        added = paired(sj, bj, field)
        wadded = paired(sj, bj, wfield)
        per_call = None if added is None else added / 2
        ok = ""
        if target is not None and per_call is not None:
            ok = "yes" if per_call <= target else "NO (+%.0f)" % (per_call - target)
        w("%-46s %7s %15s %15s %13s %13s %7s %11s %s" % (
            label, threads, fmt_ns(base), fmt_ns(shim),
            "%s [%s]" % (fmt_ns(added), fmt_ns(wadded)), fmt_ns(per_call),
            "%.2f" % (shim / base) if base and shim else "n/a",
            "" if target is None else "<= %d" % target, ok))

    for label, threads, sj, bj, target in rows:
        add_row(label, threads, sj, bj, target, "cpu_ns_per_pair", "wall_ns_per_pair")
    for label, sj, bj, target in py_rows:
        add_row(label, 1, sj, bj, target, "cpu_ns_per_pair", "ns_per_pair")
    if args.only_null:
        pass
    elif not py_ok:
        w("%-46s %7s %15s %15s %13s %13s %7s %11s %s" % (
            "Python program: native 32 + Python 20 frames", 1, fmt_ns(med(values(pb, "cpu_ns_per_pair"))),
            "pending", "pending", "pending", "", "<= 600", "pending (%s)" % py_detail))
    else:
        w("  (Python stacks: %s)" % py_detail)
        held, rel = (paired(sj, bj, "cpu_ns_per_pair") for label, sj, bj, _ in py_rows
                     if label.endswith("+ Python 20 frames") or label.endswith("+ Python 20"))
        if held is not None and rel is not None and held > 0:
            w("  native 32 + Python 20, added per call: GIL held %.0f ns, GIL released %.0f ns (%+.0f%%; target: "
              "released within 10%% of held)" % (held / 2, rel / 2, 100.0 * (rel - held) / held))

    if null_rows:
        print_null(w, null_rows)
        print_ring_floor(w, ring_floor)

    # ------------------------------------------------------------------ memory
    if not args.no_mem:
        mem_pairs = 2000 if args.quick else 600000
        ring_big = 10000 if args.quick else 1000000
        M = [r.cbench, "mem", "--pairs", str(mem_pairs), "--depth", str(args.depth)]
        mb = r.job("mem", M, None)
        md = r.job("mem", M, {})
        mbig = r.job("mem", M, {"GPUMEMREC_RING_EVENTS": str(ring_big)})
        mjobs = [mb, md, mbig]
        r.run_all(1 if args.quick else 3, mjobs)
        sizes = {}
        try:
            p = subprocess.run([r.sizes], stdout=subprocess.PIPE, universal_newlines=True)
            sizes = parse_kv(p.stdout)
        except OSError:
            pass
        ev = int(sizes.get("event", 0)) or None
        rss = {j: med(values(j, "rss_kb")) for j in mjobs}
        vm = {j: med(values(j, "vm_kb")) for j in mjobs}

        def d_kb(j, table):
            if table[j] is None or table[mb] is None:
                return None
            return (table[j] - table[mb]) * 1024

        w("")
        w("memory (process with shim minus without, after %d events; %s)" % (
            2 * mem_pairs, "ring full" if 2 * mem_pairs >= ring_big else "ring NOT full"))
        w("  sizeof(Event) = %s bytes per ring event (target <= 64: %s); sizeof(LiveEntry) = %s"
          % (ev, "yes" if ev and ev <= 64 else "NO", sizes.get("live_entry", "?")))
        for label, j, cap in (("default (RING_EVENTS=65536)", md, 65536),
                              ("RING_EVENTS=%d" % ring_big, mbig, ring_big)):
            drss, dvm = d_kb(j, rss), d_kb(j, vm)
            w("  %-28s added RSS %8.1f MiB   added virtual %8.1f MiB   ring %6.1f MiB (= %d x 64 B)"
              % (label, (drss or 0) / 2**20, (dvm or 0) / 2**20, cap * 64 / 2**20, cap))
        drd, drb = d_kb(md, rss), d_kb(mbig, rss)
        if drd is not None and drb is not None:
            w("  measured RSS per extra ring event: %.1f bytes" % ((drb - drd) / float(ring_big - 65536)))

    # -------------------------------------------------------------------- dump
    if not args.no_dump:
        if args.quick:
            live, sites, events, ring = 1000, 100, 5000, 5000
        else:
            live, sites, events, ring = 100000, 10000, 1000000, 1000000
        res = []
        need = 2 * 400 * events  # ~400 bytes per event in the bundle, twice for safety
        free = shutil.disk_usage(r.tmp).free
        if free < need:
            w("")
            w("dump: skipped: %d MiB free under %s, the bundle needs ~%d MiB (set TMPDIR elsewhere)"
              % (free >> 20, r.tmp, need >> 21))
            args.dump_reps = 0
        for i in range(args.dump_reps):
            d = os.path.join(r.tmp, "dump%d" % i)
            env = r.base_env()
            env.update({"LD_PRELOAD": r.shim, "GPUMEMREC_DIR": d, "GPUMEMREC_RING_EVENTS": str(ring),
                        "GPUMEMREC_MAX_TOTAL_MB": "0", "FAKEGPU_CAPACITY": str(1 << 30)})
            j = Job(None, [r.cbench, "dump", "--live", str(live), "--sites", str(sites), "--events", str(events)],
                    env, True, "dump")
            t0 = time.time()
            kv = r.run_once(j)
            wall = time.time() - t0
            bundles = glob.glob(os.path.join(d, "oom_dump_*"))
            if not kv or not bundles:
                res.append(None)
                continue
            b = bundles[0]
            n_stacks = n_events = n_live = None
            try:
                with open(os.path.join(b, "stacks.json")) as f:
                    n_stacks = len(json.load(f))
                with open(os.path.join(b, "manifest.json")) as f:
                    n_events = json.load(f).get("event_count")
                with open(os.path.join(b, "allocations.json")) as f:
                    n_live = len(json.load(f))
            except (OSError, ValueError):
                pass
            res.append((int(kv["oom_call_ns"]), dir_bytes(b), n_stacks, n_events, n_live, wall))
            shutil.rmtree(d, ignore_errors=True)
        good = [x for x in res if x]
        if args.dump_reps:
            w("")
        if not args.dump_reps:
            pass
        elif good:
            ms = med([x[0] / 1e6 for x in good])
            size = med([x[1] for x in good])
            g = good[0]
            w("dump: %d events in the ring, %d live allocations, %d call sites (median of %d runs)"
              % (events, live, sites, len(good)))
            w("  failing cudaMalloc incl. synchronous dump: %.0f ms (target < 1000 ms: %s); runs: %s"
              % (ms, "yes" if ms < 1000 else "NO (+%.0f ms)" % (ms - 1000),
                 ", ".join("%.0f" % (x[0] / 1e6) for x in good)))
            w("  bundle: %.1f MiB (%d bytes); stacks.json %s stacks, events.json %s events, allocations.json %s"
              % (size / 2**20, size, g[2], g[3], g[4]))
        else:
            w("dump: FAILED (no bundle written)")

    w("")
    w("(pairs section %.0f s; %d jobs x %d reps)" % (t_pairs, n_jobs, args.reps))
    print("\n".join(out))
    shutil.rmtree(r.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
