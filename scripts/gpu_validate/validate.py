#!/usr/bin/env python3
"""gpumemrec on a real NVIDIA GPU: runs every case of the compatibility
matrix into a real out-of-memory under the shim, checks the bundle, and prints
one table. Standard library only; uses what the GPU machine has (nvcc,
PyTorch, JAX, CuPy) and what the repository carries.

Usage: validate.py --build BUILD_DIR --logs LOG_DIR [--only CASE,...]
"""
import argparse
import glob
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
RESULTS = []
# One program's limit: a hang is recorded as a failure and the matrix goes on.
CLI = None  # gpumemrec, set in main()
TABLE = None  # LOG_DIR/table.md
RUN_TIMEOUT_S = int(os.environ.get("GPUMEMREC_VALIDATE_TIMEOUT_S", "150"))
STARTED = time.time()


def log(msg):
    print(msg, flush=True)


class Case:
    def __init__(self, name, logs):
        self.name = name
        self.dir = os.path.join(logs, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.dumps = os.path.join(self.dir, "dumps")
        self.log = open(os.path.join(self.dir, "run.log"), "w")

    def run(self, argv, shim, env_extra=None, timeout=None):
        timeout = timeout or RUN_TIMEOUT_S
        env = dict(os.environ)
        env["GPUMEMREC_DIR"] = self.dumps
        env["PYTHONUNBUFFERED"] = "1"
        if shim:
            env["LD_PRELOAD"] = shim
        else:
            env.pop("LD_PRELOAD", None)
        if env_extra:
            env.update(env_extra)
        self.log.write("$ %s %s\n" % (" ".join("%s=%s" % kv for kv in (env_extra or {}).items()), " ".join(argv)))
        t0 = time.time()
        try:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            # A hang under the shim is a result, not a crash of the matrix.
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            p = subprocess.CompletedProcess(argv, -9, out, err + "\nTIMEOUT after %ds" % timeout)
        self.log.write("exit %d after %.1fs\n--- stdout\n%s\n--- stderr\n%s\n" % (p.returncode, time.time() - t0,
                                                                             p.stdout, p.stderr[-20000:]))
        self.log.flush()
        return p

    def bundles(self):
        return sorted(glob.glob(os.path.join(self.dumps, "oom_dump_*")))


def load(bundle, name):
    with open(os.path.join(bundle, name)) as f:
        return json.load(f)


def check_bundle(case, apis, want_fn=None, python_fn=None, reason="oom", max_bundles=None):
    """Returns (ok, detail)."""
    bundles = case.bundles()
    if not bundles:
        return False, "no bundle"
    if max_bundles is not None and len(bundles) > max_bundles:
        return False, "%d bundles (expected at most %d)" % (len(bundles), max_bundles)
    if glob.glob(os.path.join(case.dumps, ".tmp*")):
        return False, "half-written bundle left"
    b = bundles[0]
    md = load(b, "metadata.json")
    stacks = {s["stack_id"]: s for s in load(b, "stacks.json")}
    allocs = load(b, "allocations.json")
    problems = []
    if md.get("reason") != reason:
        problems.append("reason %s" % md.get("reason"))
    if md.get("api") not in apis:
        problems.append("api %s not in %s" % (md.get("api"), apis))
    if not md.get("requested_bytes"):
        problems.append("no requested_bytes")
    if md.get("device_free_bytes") is None or not md.get("device_total_bytes"):
        problems.append("driver gave no free/total")
    if not allocs:
        problems.append("empty live table")
    failing = stacks.get(md.get("stack_id"), {})
    frames = failing.get("frames", [])
    names = [f["function"] for f in frames]
    # The site must be the user's line (the function the case allocates
    # from), never a runtime or framework frame.
    site_i = failing.get("site_frame", -1)
    site = frames[site_i]["function"] if 0 <= site_i < len(frames) else None
    user_fn = python_fn or want_fn
    if user_fn and (site is None or user_fn not in site):
        problems.append("site is %r, not %s (library %r)" % (site, user_fn, failing.get("library")))
    if want_fn and not any(want_fn in n for n in names):
        problems.append("native stack lacks %s" % want_fn)
    if python_fn:
        py = [f["function"] for f in frames if f["kind"] == "python"]
        if not any(python_fn in n for n in py):
            problems.append("python frames lack %s (have %s)" % (python_fn, py[:5]))
    acc = (md.get("device_accounting") or [{}])[0]
    if acc.get("unaccounted_bytes") is None or abs(acc["unaccounted_bytes"]) > (1 << 30):
        problems.append("card accounting leaves %s unaccounted (%s)" % (acc.get("unaccounted_bytes"), acc.get("note")))
    detail = "api=%s asked=%s free=%s live=%s allocs=%d bundles=%d site=%s lib=%s unaccounted=%s" % (
        md.get("api"), md.get("requested_bytes"), md.get("device_free_bytes"), md.get("live_bytes"), len(allocs),
        len(bundles), site, failing.get("library"), acc.get("unaccounted_bytes"))
    if CLI:
        rep = subprocess.run([CLI, "report", b], capture_output=True, text=True, timeout=120)
        with open(os.path.join(case.dir, "report.txt"), "w") as f:
            f.write(rep.stdout + rep.stderr)
        if rep.returncode != 0:
            problems.append("gpumemrec report exited %d" % rep.returncode)
    return not problems, ("; ".join(problems) + " | " if problems else "") + detail


RESET_APIS = {"cudaDeviceReset", "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2",
              "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"}


def context_frees(case, destroys):
    """The case's first bundle and its deallocations whose api `destroys(api)`
    (a destroyed context's), or (None, None) when there is no bundle."""
    bundles = case.bundles()
    if not bundles:
        return None, None
    b = bundles[0]
    events = load(b, "events.json")
    events = events.get("events", events) if isinstance(events, dict) else events
    return b, [e for e in events if destroys(e.get("api", "")) and e.get("event_type") == "deallocation"]


def check_reset(case):
    """A device reset's frees are in the bundle and nothing it freed is live."""
    b, gone = context_frees(case, lambda api: api in RESET_APIS)
    if b is None:
        return False, "no bundle"
    allocs = load(b, "allocations.json")
    md = load(b, "metadata.json")
    live = sum(a["size"] for a in allocs)
    ok = len(gone) == 8 and live <= (md.get("device_total_bytes") or 0)
    return ok, "reset frees=%d via %s, live %d of %s" % (len(gone), sorted({e["api"] for e in gone}), live,
                                                          md.get("device_total_bytes"))


def check_ctx_destroy(case, stdout):
    """A created context's destruction: its 8 chunks are freed in the bundle
    (api cuCtxDestroy_v2), the primary context's chunk (KEEP) is still live:
    what the driver answers cuPointerGetAttribute for each address decided."""
    b, gone = context_frees(case, lambda api: api.startswith("cuCtxDestroy"))
    if b is None:
        return False, "no bundle"
    m = re.search(r"KEEP ptr=0x([0-9a-f]+)", stdout)
    kept = int(m.group(1), 16) if m else None
    live = {a["address"] for a in load(b, "allocations.json")}
    ok = len(gone) == 8 and kept is not None and kept in live
    return ok, "context frees=%d, primary's chunk %s" % (len(gone), "live" if kept in live else "MISSING")


def record(name, ok, detail):
    detail = "%s (at %.0fs)" % (detail, time.time() - STARTED)
    RESULTS.append((name, "PASS" if ok else ("SKIP" if ok is None else "FAIL"), detail))
    if TABLE:  # written as it goes: a matrix cut short still leaves its rows
        with open(TABLE, "a") as f:
            f.write("| %s | %s | %s |\n" % RESULTS[-1])
    log("%-22s %s  %s" % (name, RESULTS[-1][1], detail))


def have_module(mod):
    return subprocess.run([sys.executable, "-c", "import " + mod], capture_output=True).returncode == 0


def run_workloads(logs, shim, want, torch_ok):
    """Real workloads (workloads.py): backward, KV cache, fragmentation,
    the peak without an out-of-memory, NCCL; checks in check_workloads.py."""
    import check_workloads as cw
    wl = [sys.executable, os.path.join(HERE, "workloads.py")]
    cases = [
        ("torch_backward", {}, lambda c, p: cw.check_backward(c.dumps, p.stdout, p.returncode)),
        ("torch_kv_cache", {}, lambda c, p: cw.check_kv_cache(c.dumps, p.stdout)),
        ("torch_fragment", {}, lambda c, p: cw.check_fragment(c.dumps, p.stdout, CLI, False)),
        ("torch_fragment_expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
         lambda c, p: cw.check_fragment(c.dumps, p.stdout, CLI, True)),
        ("torch_peak", {"GPUMEMREC_DUMP_AT_EXIT": "1"}, lambda c, p: cw.check_peak(c.dumps, p.stdout)),
        ("nccl_allreduce", {}, lambda c, p: cw.check_nccl(c.dumps, p.stdout)),
    ]
    for name, env, check in cases:
        if not want(name):
            continue
        if not torch_ok:
            record(name, None, "torch not installed")
            continue
        c = Case(name, logs)
        arg = name.replace("_expandable", "")
        p = c.run(wl + [arg], shim, env)
        ok, detail = check(c, p)
        if CLI:
            for b in sorted(glob.glob(os.path.join(c.dumps, "*")))[-1:]:
                rep = subprocess.run([CLI, "report", b], capture_output=True, text=True, timeout=120)
                with open(os.path.join(c.dir, "report.txt"), "w") as f:
                    f.write(rep.stdout + rep.stderr)
        record(name, ok, detail)


def run_calibrate(logs, want, torch_ok):
    """The card's figures for a simulated profile (calibrate.py, without the
    recorder): LOG_DIR/torch_calibrate/calibration.json."""
    name = "torch_calibrate"
    if not want(name):
        return
    if not torch_ok:
        record(name, None, "torch not installed")
        return
    c = Case(name, logs)
    p = c.run([sys.executable, os.path.join(HERE, "calibrate.py")], None, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    try:
        figures = json.loads(p.stdout[p.stdout.index("{"):])
    except ValueError:
        record(name, False, "calibrate.py printed no figures (exit %d)" % p.returncode)
        return
    with open(os.path.join(c.dir, "calibration.json"), "w") as f:
        json.dump(figures, f, indent=1)
    record(name, p.returncode == 0, "%s: total %d, context %s, driver reserve %s" % (
        figures["name"], figures["total_bytes"], figures["context_bytes"], figures["driver_reserved_bytes"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    global CLI, TABLE
    shim = os.path.abspath(os.path.join(args.build, "bin", "libgpumemrec.so"))
    CLI = os.path.abspath(os.path.join(args.build, "bin", "gpumemrec"))
    logs = os.path.abspath(args.logs)
    os.makedirs(logs, exist_ok=True)
    TABLE = os.path.join(logs, "table.md")
    with open(TABLE, "w") as f:
        f.write("| case | result | details |\n|---|---|---|\n")
    only = set(filter(None, args.only.split(",")))
    want = lambda n: not only or n in only
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    bins = os.path.join(logs, "bin")
    os.makedirs(bins, exist_ok=True)
    fw = [sys.executable, os.path.join(HERE, "frameworks.py")]

    # --- CUDA C++ programs
    builds = {
        "cuda_static": [nvcc, "-g", "-O1", os.path.join(HERE, "oom_runtime.cu"), "-o", os.path.join(bins, "cuda_static")],
        "cuda_shared": [nvcc, "-g", "-O1", "-cudart", "shared", os.path.join(HERE, "oom_runtime.cu"), "-o",
                        os.path.join(bins, "cuda_shared")],
        "driver_api": [nvcc, "-g", "-O1", "-x", "cu", os.path.join(HERE, "oom_driver.cpp"), "-lcuda", "-o",
                       os.path.join(bins, "driver_api")],
    }
    expect = {"cuda_static": ({"cuMemAlloc_v2"}, "grab_device_memory"),
              "cuda_shared": ({"cudaMalloc"}, "grab_device_memory"),
              "driver_api": ({"cuMemAlloc_v2"}, "grab_with_driver")}
    reset_cases = {"cuda_reset_static": "cuda_static", "cuda_reset_shared": "cuda_shared",
                   "driver_ctx_destroy": "driver_api"}
    for name, cmd in list(builds.items()) + [(n, None) for n in reset_cases]:
        if not want(name) or (cmd is None and not os.path.exists(os.path.join(bins, reset_cases[name]))):
            continue
        if cmd is None:  # a context destroyed while 8 GiB are held: they must not stay listed
            c = Case(name, logs)
            ctx = name == "driver_ctx_destroy"
            prog = [os.path.join(bins, reset_cases[name]), "ctx" if ctx else "reset"]
            plain, p = c.run(prog, None), c.run(prog, shim)
            ok, detail = check_bundle(c, expect[reset_cases[name]][0], want_fn=expect[reset_cases[name]][1])
            ok2, detail2 = check_ctx_destroy(c, p.stdout) if ctx else check_reset(c)
            said = "CTXDESTROY held=8 rc=0" if ctx else "RESET held=8 rc=0"
            if p.returncode != plain.returncode or said not in p.stdout:
                ok, detail = False, "program behaved differently under the shim | " + detail
            record(name, ok and ok2, detail2 + " | " + detail)
            continue
        c = Case(name, logs)
        b = subprocess.run(cmd, capture_output=True, text=True)
        c.log.write("build: %s\n%s%s\n" % (" ".join(cmd), b.stdout, b.stderr))
        if b.returncode != 0:
            record(name, False, "nvcc failed: " + b.stderr.strip().splitlines()[-1][:100] if b.stderr else "")
            continue
        plain = c.run([os.path.join(bins, name)], None)
        p = c.run([os.path.join(bins, name)], shim)
        ok, detail = check_bundle(c, expect[name][0], want_fn=expect[name][1])
        if p.returncode != plain.returncode or p.stdout.split("held=")[0] != plain.stdout.split("held=")[0]:
            ok, detail = False, "program behaved differently under the shim | " + detail
        record(name, ok, detail)

    # --- Frameworks
    torch_ok = have_module("torch")
    fw_cases = [
        ("torch_default", "torch", {}, {"cudaMalloc"}, "torch_grow_activations", torch_ok, 1),
        ("torch_expandable", "torch", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, {"cuMemCreate"},
         "torch_grow_activations", torch_ok, 1),
        ("torch_async", "torch", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
         {"cudaMallocAsync", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
          "cuMemAllocFromPoolAsync_ptsz", "cudaMallocFromPoolAsync"}, "torch_grow_activations", torch_ok, 1),
        # JAX's BFC arena stops at XLA_PYTHON_CLIENT_MEM_FRACTION (75%) of the
        # card by itself, preallocated or not, without a failing driver call
        # (seen on an H200, 2026-11-26: RESOURCE_EXHAUSTED at 104 of 139 GiB):
        # the driver is reached only with the whole card allowed, or with
        # the platform allocator (jax docs, "GPU memory allocation").
        ("jax_platform", "jax", {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"},
         {"cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemCreate"}, "jax_grow_arrays",
         have_module("jax"), None),
        ("jax_whole_card", "jax", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_MEM_FRACTION": "1.0"},
         {"cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemCreate"}, "jax_grow_arrays",
         have_module("jax"), None),
        ("cupy", "cupy", {}, {"cuMemAlloc_v2", "cudaMalloc", "cuMemAllocAsync", "cuMemAllocAsync_ptsz"},
         "cupy_grow_arrays", have_module("cupy"), None),
    ]
    for name, case_arg, env, apis, pyfn, available, max_b in fw_cases:
        if not want(name):
            continue
        if not available:
            record(name, None, "framework not installed")
            continue
        c = Case(name, logs)
        p = c.run(fw + [case_arg], shim, env)
        ok, detail = check_bundle(c, apis, python_fn=pyfn, max_bundles=max_b)
        if p.returncode != 0 or "OOM" not in p.stdout:
            ok, detail = False, "framework did not report OOM cleanly (exit %d) | %s" % (p.returncode, detail)
        record(name, ok, detail)

    if want("jax_arena_caught") and have_module("jax"):
        # The arena's own refusal, caught by the program: no driver call
        # failed and nothing was uncaught, so there is nothing to record
        # (docs/compatibility.md says so); the program must be unchanged.
        c = Case("jax_arena_caught", logs)
        p = c.run(fw + ["jax"], shim, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
        n = len(c.bundles())
        record("jax_arena_caught", p.returncode == 0 and "OOM jax" in p.stdout and n == 0,
               "exit=%d bundles=%d (%s)" % (p.returncode, n, p.stdout.strip()[:60]))

    if want("torch_recovered") and torch_ok:
        c = Case("torch_recovered", logs)
        p = c.run(fw + ["torch_recovered"], shim)
        n = len(c.bundles())
        # Documented: a driver-level failure the framework recovers from is
        # still recorded; within one episode it is one bundle at most, and
        # the program is unaffected.
        record("torch_recovered", p.returncode == 0 and "RECOVERED" in p.stdout and n <= 2,
               "exit=%d bundles=%d (the first OOM while filling, plus at most the recovered one)" % (p.returncode, n))

    if want("torch_limit") and torch_ok:
        c = Case("torch_limit", logs)
        p = c.run(fw + ["torch"], shim, {"GPUMEMREC_LIMIT": "4GiB"})
        ok, detail = check_bundle(c, {"cudaMalloc"}, python_fn="torch_grow_activations", reason="limit", max_bundles=1)
        if "OOM torch held=3" not in p.stdout and "OOM torch held=4" not in p.stdout:
            ok, detail = False, "torch did not raise OutOfMemoryError at ~4 GiB: %s | %s" % (p.stdout.strip()[:80], detail)
        record("torch_limit", ok, detail)

    if want("nvml_other_process") and torch_ok:
        c = Case("nvml_other_process", logs)
        env = dict(os.environ, HOLD_GIB="8", PYTHONUNBUFFERED="1")
        env.pop("LD_PRELOAD", None)
        holder = subprocess.Popen(fw + ["torch_hold"], env=env, stdout=subprocess.PIPE, text=True)
        line = holder.stdout.readline()
        try:
            c.run(fw + ["torch"], shim)
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        ok, detail = check_bundle(c, {"cudaMalloc"}, python_fn="torch_grow_activations", max_bundles=1)
        procs = (load(c.bundles()[0], "metadata.json").get("gpu_processes") or []) if c.bundles() else []
        if not any(p["pid"] == holder.pid for p in procs):
            ok, detail = False, "NVML list lacks the holder pid %d (%s) | %s" % (holder.pid, line.strip(), detail)
        record("nvml_other_process", ok, detail)

    # --- The Python start-up hook (docs/python-hook.md)
    def framework_files(c, reason, state):
        found = c.bundles()
        if not found:
            return False, "no bundle"
        b = found[0]
        if CLI:
            rep = subprocess.run([CLI, "report", b], capture_output=True, text=True, timeout=120)
            with open(os.path.join(c.dir, "report.txt"), "w") as f:
                f.write(rep.stdout + rep.stderr)
        man = load(b, "manifest.json")
        digest = load(b, "framework.json") if "framework.json" in man["files"] else {}
        ok = man["reason"] == reason and man.get("outcome") == "fatal" and state in man["files"]
        return ok, "reason=%s outcome=%s files=%s reserved=%s allocated=%s" % (
            man["reason"], man.get("outcome"), man["files"], digest.get("reserved_bytes"),
            digest.get("allocated_bytes"))

    def roles_match(c, stdout):
        m = re.search(r"^EXPECT (.*)$", stdout, re.M)
        found = [b for b in c.bundles() if "framework.json" in load(b, "manifest.json")["files"]]
        if not m or not found:
            return False, "no count printed or no framework.json: %s" % stdout[-300:]
        want, roles = json.loads(m.group(1)), load(found[0], "framework.json").get("roles", {})
        got = {k: roles.get("bytes", {}).get(k) for k in ("weights", "gradients", "optimizer_state")}
        return all(got[k] == want[k] for k in got), "roles %s want %s status %s oom in %s" % (
            got, {k: want[k] for k in got}, roles.get("status"), want.get("where"))

    if want("hook_env"):
        c = Case("hook_env", logs)
        prog = [sys.executable, os.path.join(HERE, "..", "..", "tests/python/framework_cases/show_env.py")]
        plain, hooked = c.run(prog, None), c.run(prog, shim)
        record("hook_env", plain.returncode == 0 and plain.stdout == hooked.stdout and "HOOKED=1" in hooked.stderr,
               "environment, sys.path and a child's view unchanged under the hook")
    if want("hook_torch_fraction") and torch_ok:
        c = Case("hook_torch_fraction", logs)
        p = c.run(fw + ["torch_fraction"], shim)
        ok, detail = framework_files(c, "framework_oom", "framework_state.pickle")
        record("hook_torch_fraction", ok and p.returncode == 0 and "OOM torch" in p.stdout, detail)
    if want("hook_torch_exact") and torch_ok:
        c = Case("hook_torch_exact", logs)
        p = c.run(fw + ["torch_wait_fatal"], shim, {"GPUMEMREC_EPISODE_MS": "600000"})
        ok, detail = framework_files(c, "oom", "framework_state.pickle")
        record("hook_torch_exact", ok and "FATAL_WHILE_RUNNING" in p.stdout, detail)
    if want("hook_torch_roles") and torch_ok:
        # Memory by role (docs/python-hook.md): the program's own count of
        # parameter, gradient and optimizer-state bytes, exactly.
        c = Case("hook_torch_roles", logs)
        cases = os.path.join(HERE, "..", "..", "tests/python/framework_cases")
        p = c.run([sys.executable, os.path.join(cases, "train_backward.py")], shim, {"PYTHONPATH": cases})
        record("hook_torch_roles", *roles_match(c, p.stdout))
    if want("hook_jax") and have_module("jax"):
        c = Case("hook_jax", logs)
        p = c.run(fw + ["jax_uncaught"], shim)
        ok, detail = framework_files(c, "framework_oom", "framework_memory_profile.pb.gz")
        report = subprocess.run([os.path.join(args.build, "bin", "gpumemrec"), "report"] + c.bundles()[:1],
                                capture_output=True, text=True)
        ok = ok and p.returncode != 0 and "JAX live buffers" in report.stdout and "jax_uncaught" in report.stdout
        record("hook_jax", ok, detail)

    run_workloads(logs, shim, want, torch_ok)
    run_calibrate(logs, want, torch_ok)

    if want("overhead") and torch_ok:
        c = Case("overhead", logs)
        times = {"plain": [], "shim": [], "torch_recorder": []}
        for rep in range(3):
            for mode in ["plain", "shim", "torch_recorder"]:
                env = {"TRAIN_MODE": mode, "TRAIN_STEPS": "300"}
                p = c.run(fw + ["torch_train"], shim if mode == "shim" else None, env)
                for l in p.stdout.splitlines():
                    if l.startswith("STEP_MS"):
                        times[mode].append(float(l.split()[1]))
        med = {k: sorted(v)[len(v) // 2] if v else float("nan") for k, v in times.items()}
        shim_pct = 100.0 * (med["shim"] / med["plain"] - 1)
        rec_pct = 100.0 * (med["torch_recorder"] / med["plain"] - 1)
        # The target is the shim's own: under 1% of a training step.
        # PyTorch's recorder is printed beside it for reference only (its
        # cost hides behind a GPU-bound step: -0.05% on an H200).
        record("overhead", shim_pct < 1.0,
               "ms/step plain=%.3f shim=%.3f (%+.2f%%) torch_recorder=%.3f (%+.2f%%)" %
               (med["plain"], med["shim"], shim_pct, med["torch_recorder"], rec_pct))

    # --- The table
    table = ["| case | result | details |", "|---|---|---|"]
    table += ["| %s | %s | %s |" % r for r in RESULTS]
    text = "\n".join(table)
    log("\n" + text)
    return 0 if all(r[1] != "FAIL" for r in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
