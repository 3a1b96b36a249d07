#!/usr/bin/env python3
"""The Python start-up hook's tests (docs/python-hook.md): programs run under
LD_PRELOAD=libgpumemrec.so with the interpreter under test, stand-in torch
and jax packages (site-packages/) on PYTHONPATH driving the fake CUDA runtime.

  run_framework.py --case env --shim build/bin/libgpumemrec.so --fakes build/tests/fakes

Cases:
  env          the program, its os.environ, the C environment, sys.path and a
               child (python and env) see what they see without the recorder,
               for PYTHONPATH unset, set and empty; the hook did load
  user_site    the user's own sitecustomize still runs (and is the module
               named sitecustomize)
  flags        no hook under -I, -E, -S, -IS (nothing loaded, environment
               unchanged for the program and its children)
  inherited    a stale injection in the environment (a parent whose hook
               never ran) is undone, with and without -S/-I
  off          GPUMEMREC_PYTHON_HOOK=0: no hook
  hook_error   a hook that fails (torch.cuda._lazy_call raising; the
               snapshot raising inside the observer) changes nothing: same
               stdout, same exit status, one line on stderr
  torch_fraction  set_per_process_memory_fraction: a framework_oom bundle
               with framework.json and framework_state.pickle
  torch_driver    cudaMalloc fails: the episode is fatal at the observer's
               word, while the program still runs, with GPUMEMREC_EPISODE_MS
               at 10 minutes (no grace-period wait); the bundle has the
               framework's files, snapshot.pickle keeps our trace
  torch_history   GPUMEMREC_TORCH_HISTORY=N turns on PyTorch's history
  bad_report   hostile reports to gpumemrec_framework_oom() are refused, a
               good one with wrongly typed keys reads them as absent
  roles_report a digest with the framework's roles (and a key nested
               300,000 deep): summary.txt has memory by role and What to try
  roles_train, roles_kv, roles_fsdp, roles_budget, roles_hostile,
  roles_exit
               memory by role in framework.json equals the program's own
               count (framework_cases/train_backward.py, kv_cache.py,
               fsdp_flat.py, roles_misc.py; --engine, --exit-probe)
  jax          an uncaught RESOURCE_EXHAUSTED (main thread and a thread) in
               XLA's GPU arena, which the real JAX cannot show on a CPU
               (run_real_jax.py runs the real jax, flax and optax): a
               framework_oom bundle about device 0 with the memory profile;
               exit status as without the recorder; `gpumemrec report` lists
               the live buffers with their Python sites (--gpumemrec)
"""
import argparse
import glob
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "framework_cases")
# Named site-packages as an install is: the recorder's site rules (common/site_rules.cpp)
# treat these stand-ins as the installed packages they stand for, so a
# failure's site is the program's own line, as with a real torch.
STANDINS = os.path.join(HERE, "site-packages")
MiB = 1 << 20


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(args, argv, tmp, env_extra=None, preload=True, pythonpath=(CASES, STANDINS), expect_rc=0):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "PYTHON", "LD_PRELOAD"))}
    env.update({
        "GPUMEMREC_DIR": os.path.join(tmp, "dumps"),
        "FAKEGPU_CAPACITY": str(256 * MiB),
        "GMR_CUDART": os.path.join(args.fakes, "libcudart.so"),
        "GMR_AUTOGRAD_ENGINE": args.engine,
        "GMR_C10_CUDA": args.c10 or None,
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    if preload:
        env["LD_PRELOAD"] = args.shim
    env.update(env_extra or {})
    env = {k: v for k, v in env.items() if v is not None}
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=180, cwd=tmp)
    if expect_rc is not None and p.returncode != expect_rc:
        sys.stderr.write(p.stdout + p.stderr)
        raise Failure("%s exited with %d, want %d" % (argv, p.returncode, expect_rc))
    return p


def py(*args):
    return [sys.executable] + list(args)


def bundles(tmp):
    return sorted(d for d in glob.glob(os.path.join(tmp, "dumps", "*"))
                  if os.path.exists(os.path.join(d, "manifest.json")))


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f) if name.endswith(".json") else f.read()


SHOW_ENV = os.path.join(CASES, "show_env.py")


def hooked_lines(stderr):
    return re.findall(r"^HOOKED=(\d)$", stderr, re.M)


def same_view(args, tmp, argv, what, env_extra=None, pythonpath=(CASES, STANDINS), want_hooked="1"):
    base = run(args, argv, tmp, env_extra, preload=False, pythonpath=pythonpath)
    got = run(args, argv, tmp, env_extra, preload=True, pythonpath=pythonpath)
    check(got.stdout == base.stdout, "%s: the program or its child saw a difference\n  without: %s\n  with:    %s"
          % (what, base.stdout, got.stdout))
    h = hooked_lines(got.stderr)
    check(h and h[0] == want_hooked, "%s: hook loaded %r, want %s (stderr: %s)" % (what, h, want_hooked, got.stderr))
    return base, got


def case_env(args, tmp):
    for pp in [None, (CASES, STANDINS), ("",), ("/nonexistent", "", STANDINS)]:
        _, got = same_view(args, tmp, py(SHOW_ENV), "PYTHONPATH=%r" % (pp,), pythonpath=pp)
        check(hooked_lines(got.stderr) == ["1", "1"], "the child was not hooked: %s" % got.stderr)


def case_user_site(args, tmp):
    site = os.path.join(CASES, "user_site")
    base, got = same_view(args, tmp, py(SHOW_ENV), "user sitecustomize", pythonpath=(site, STANDINS))
    check("user sitecustomize ran" in got.stdout, "the user's sitecustomize did not run: %s" % got.stdout)
    check(got.stderr.count("USER SITECUSTOMIZE RAN") == 2, "want it once in the program and once in the child")


def case_flags(args, tmp):
    for flags in (["-I"], ["-E"], ["-S"], ["-IS"], ["-bE"], ["-W", "ignore", "-S"], ["-X", "dev", "-E"]):
        same_view(args, tmp, py(*(flags + [SHOW_ENV])), "python %s" % " ".join(flags), want_hooked="0")


def case_inherited(args, tmp):
    """An injection inherited from a parent whose hook never ran (it died
    before site ran, or was not a python* executable) is undone by the
    child's library first, whatever the child's options."""
    hook_dir = os.path.join(os.path.dirname(args.shim), "python")
    for flags in ([], ["-S"], ["-I"]):
        for saved, orig in (("1:" + STANDINS, (STANDINS,)), ("0:", None)):
            stale = {"GPUMEMREC_PYHOOK_SAVED": saved,
                     "PYTHONPATH": os.pathsep.join([hook_dir] + list(orig or []))}
            base = run(args, py(*(flags + [SHOW_ENV])), tmp, preload=False, pythonpath=orig)
            got = run(args, py(*(flags + [SHOW_ENV])), tmp, stale, pythonpath=None)
            check(got.stdout == base.stdout, "python %s with %s: the stale injection was not undone\n"
                  "  want %s\n  got  %s" % (" ".join(flags), stale, base.stdout, got.stdout))


def case_off(args, tmp):
    same_view(args, tmp, py(SHOW_ENV), "GPUMEMREC_PYTHON_HOOK=0", {"GPUMEMREC_PYTHON_HOOK": "0"}, want_hooked="0")


def case_hook_error(args, tmp):
    prog = os.path.join(CASES, "torch_oom.py")
    for brk in ("lazy_call", "snapshot"):
        env = {"STANDIN_BREAK": brk}
        base = run(args, py(prog, "fraction"), tmp, env, preload=False)
        got = run(args, py(prog, "fraction"), tmp, env, preload=True)
        check(got.stdout == base.stdout and "caught OutOfMemoryError" in got.stdout,
              "STANDIN_BREAK=%s: output differs\n  without: %s\n  with:    %s" % (brk, base.stdout, got.stdout))
        said = re.findall(r"gpumemrec: warning: Python hook: .*", got.stderr)
        check(len(said) == 1 and "broken on purpose" in said[0], "want one line about the hook's error: %s" % said)


def framework_bundle(tmp, reason):
    found = bundles(tmp)
    check(len(found) == 1, "want one bundle, got %s" % found)
    d = found[0]
    manifest = load(d, "manifest.json")
    check(manifest["reason"] == reason, "reason %r, want %r" % (manifest["reason"], reason))
    check(manifest.get("outcome") == "fatal", "outcome %r, want fatal" % manifest.get("outcome"))
    return d, manifest


def check_torch_state(d, manifest, device_total):
    check({"framework.json", "framework_state.pickle"} <= set(manifest["files"]), "files: %s" % manifest["files"])
    fw = load(d, "framework.json")
    want = {"framework": "torch", "request_bytes": 18 * MiB, "reserved_bytes": 56 * MiB,
            "allocated_bytes": 39 * MiB, "largest_free_block": 17 * MiB, "mostly_free_segment_count": 1,
            "device_total": device_total}
    for k, v in want.items():
        check(fw.get(k) == v, "framework.json %s = %r, want %r" % (k, fw.get(k), v))
    with open(os.path.join(d, "framework_state.pickle"), "rb") as f:
        snap = pickle.load(f)
    check(len(snap["segments"]) == 3, "want 3 segments in PyTorch's snapshot, got %d" % len(snap["segments"]))
    meta = load(d, "metadata.json")
    check(meta["framework"]["name"] == "torch" and meta["framework"]["state_file"] == "framework_state.pickle",
          "metadata.json framework: %s" % meta["framework"])
    summary = load(d, "summary.txt")
    check("PyTorch:" in summary and "largest free block 17.00 MiB" in summary and "fragmentation" in summary,
          "summary.txt lacks PyTorch's view:\n%s" % summary)
    return snap


def case_torch_fraction(args, tmp):
    p = run(args, py(os.path.join(CASES, "torch_oom.py"), "fraction"), tmp)
    check("caught OutOfMemoryError" in p.stdout, p.stdout)
    d, manifest = framework_bundle(tmp, "framework_oom")
    check_torch_state(d, manifest, 64 * MiB)  # the fraction's limit: 0.25 of 256 MiB
    fw = load(d, "framework.json")
    check(fw["memory_fraction"] == 0.25 and fw["at"] == "oom", "memory_fraction: %s" % fw.get("memory_fraction"))
    check_roles_sum(fw)
    check("framework" in load(d, "metadata.json")["outcome_detail"], "outcome_detail does not name the framework")


def case_torch_driver(args, tmp):
    # 64 MiB: the same segments as torch_fraction, refused by the driver.
    p = run(args, py(os.path.join(CASES, "torch_oom.py"), "driver"), tmp,
            {"GPUMEMREC_EPISODE_MS": "600000", "FAKEGPU_CAPACITY": str(64 * MiB)})
    check("fatal bundle while running: True" in p.stdout, "no fatal bundle while the program ran:\n" + p.stdout)
    d, manifest = framework_bundle(tmp, "oom")
    check_torch_state(d, manifest, 64 * MiB)
    meta = load(d, "metadata.json")
    check("framework" in meta["outcome_detail"], "outcome_detail: %s" % meta["outcome_detail"])
    check("snapshot.pickle" in manifest["files"], "our own snapshot.pickle is missing")


def case_torch_history(args, tmp):
    run(args, py(os.path.join(CASES, "torch_oom.py"), "fraction"), tmp, {"GPUMEMREC_TORCH_HISTORY": "5"})
    d, manifest = framework_bundle(tmp, "framework_oom")
    with open(os.path.join(d, "framework_state.pickle"), "rb") as f:
        traces = pickle.load(f)["device_traces"][0]
    check(len(traces) == 5 and traces[-1]["action"] == "oom", "want PyTorch's last 5 events, got %s" % traces)


def case_jax(args, tmp):
    prog = os.path.join(CASES, "jax_oom.py")
    for mode, rc in (("main", 1), ("thread", 3)):
        sub = tempfile.mkdtemp(dir=tmp)
        base = run(args, py(prog, mode), sub, preload=False, expect_rc=rc)
        got = run(args, py(prog, mode), sub, expect_rc=rc)
        check(got.stdout == base.stdout, "%s: output differs" % mode)
        check("RESOURCE_EXHAUSTED" in got.stderr, "%s: the program's own traceback is missing" % mode)
        d, manifest = framework_bundle(sub, "framework_oom")
        check("framework_memory_profile.pb.gz" in manifest["files"], "files: %s" % manifest["files"])
        fw = load(d, "framework.json")
        check(fw["framework"] == "jax" and fw["error"].startswith("RESOURCE_EXHAUSTED"), "framework.json: %s" % fw)
        # XLA's message names the device and the size (jax 0.11.2 on an H200:
        # "... allocate 1.00GiB with allocator GPU_0_bfc on device 0."): the
        # bundle is about device 0, with its free memory in the accounting.
        check(fw["device"] == 0 and fw["request_bytes"] == 16 << 20, "device/size not read: %s" % fw)
        md = load(d, "metadata.json")
        acc = md["device_accounting"][0]
        check(md["device_id"] == 0 and md["device_free_bytes"] is not None and acc["free_bytes"] is not None,
              "framework_oom bundle not about device 0: device_id %s, accounting %s" % (md["device_id"], acc))
        if args.gpumemrec:
            check_jax_report(args.gpumemrec, d, prog, "jax at the out-of-memory: asked about 16.00 MiB on device 0",
                             [("train_step", "activations"), ("make_params", "params")])


def site_lines(prog):
    """{name: line} of the program's "# @site:name" markers."""
    lines = {}
    with open(prog) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"# @site:(\w+)", line)
            if m:
                lines[m.group(1)] = i
    return lines


def check_jax_report(gpumemrec, d, prog, request_line, sites):
    """`gpumemrec report` lists the JAX live buffers (the memory profile
    read by tools/pprof_profile.cpp) by Python site: `sites` lists
    (function, marker) pairs, the marker "# @site:marker" on its line in
    `prog`."""
    out = subprocess.run([gpumemrec, "report", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=60)
    check(out.returncode == 0, "report failed: %s" % out.stderr)
    lines, name, text = site_lines(prog), os.path.basename(prog), out.stdout
    check("JAX live buffers" in text, "report lists no JAX buffers:\n" + text)
    check(request_line in text, "no line %r:\n%s" % (request_line, text))
    for function, marker in sites:
        check(re.search(r"%s .*%s:%d" % (function, re.escape(name), lines[marker]), text),
              "no %s site (%s:%d):\n%s" % (marker, name, lines[marker], text))


def case_bad_report(args, tmp):
    p = run(args, py(os.path.join(CASES, "bad_report.py")), tmp)
    check(p.stdout.count("refused") == 7 and "ACCEPTED" not in p.stdout, "a hostile report was taken:\n" + p.stdout)
    check("good: 1" in p.stdout, "the good report wrote no bundle:\n" + p.stdout)
    d, manifest = framework_bundle(tmp, "framework_oom")
    fw = load(d, "metadata.json")["framework"]
    check(fw["device"] == -1 and fw["reserved_bytes"] == 0 and fw["request_bytes"] == 1024,
          "wrong types must read as absent: %s" % fw)


def case_roles_report(args, tmp):
    p = run(args, py(os.path.join(CASES, "roles_report.py")), tmp)
    check("roles: 1" in p.stdout, "the report with roles wrote no bundle:\n" + p.stdout + p.stderr[-2000:])
    d, manifest = framework_bundle(tmp, "framework_oom")
    s = load(d, "summary.txt")
    for line in ["Memory by role on device 0", "      2.00 GiB  [framework] optimizer state", "What to try:",
                 "  - PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fragmentation)",
                 "      because optimizer state 2.00 GiB is 2.0x the weights (1.00 GiB)"]:
        check(line in s, "summary.txt lacks %r:\n%s" % (line, s))


def roles_of(args, tmp, prog, *argv, env=None):
    """Runs a roles program with and without the recorder (same stdout),
    returns framework.json and the program's own count (its EXPECT line)."""
    cmd = py(os.path.join(CASES, prog), *argv)
    base = run(args, cmd, tmp, env, preload=False)
    got = run(args, cmd, tmp, env)
    check(got.stdout == base.stdout, "%s: output differs\n  without: %s\n  with:    %s" % (prog, base.stdout, got.stdout))
    expect = json.loads(re.search(r"^EXPECT (.*)$", got.stdout, re.M).group(1))
    found = [d for d in bundles(tmp) if os.path.exists(os.path.join(d, "framework.json"))]
    check(len(found) == 1, "want one bundle with framework.json, got %s" % bundles(tmp))
    fw = load(found[0], "framework.json")
    check(fw.get("at") == "oom", "framework.json at = %r" % fw.get("at"))
    check_roles_sum(fw)
    if args.c10 and fw.get("framework") == "torch":
        check_no_second_count(found[0])
    return fw, expect


def check_no_second_count(d):
    """The stand-in torch's segments come from a library named like c10's,
    as a real torch's do (gmr_c10_cuda.c): the role table counts them once,
    in the framework's rows, and lists no driver row for their bytes."""
    s = load(d, "summary.txt")
    table = s[s.find("Memory by role"):s.find("\n\n", s.find("Memory by role"))]
    check("Memory by role" in s and "[driver]    library" not in table,
          "the role table lists the framework's segments again as a library:\n%s" % table)
    acc = load(d, "metadata.json")["device_accounting"][0]
    check(set(acc["recorded_by_library"]) <= {"libc10_cuda_standin.so", "libtorch_standin_autograd.so"},
          "segments recorded under %s" % acc["recorded_by_library"])


def check_roles_sum(fw):
    roles = fw.get("roles") or {}
    b = roles.get("bytes", {})
    check(set(b) == {"weights", "gradients", "optimizer_state", "kv_cache", "activations", "allocator_cache",
                     "unknown"}, "roles.bytes keys: %s" % sorted(b))
    check(sum(b.values()) == fw["reserved_bytes"], "roles add up to %d, reserved is %d: %s"
          % (sum(b.values()), fw["reserved_bytes"], roles))
    check(b["allocator_cache"] == fw["reserved_bytes"] - fw["allocated_bytes"], "allocator_cache: %s" % roles)
    check(len(roles["top"]) <= 10 and roles["device"] == fw["device"], "top/device: %s" % roles)


def check_roles(roles, expect, names):
    for name in names:
        got, want = roles["bytes"][name], expect[name]
        check(got == want, "roles.bytes.%s = %d, the program counted %d: %s" % (name, got, want, roles))
        got, want = roles["tensors"][name], expect[name + "_n"]
        check(got == want, "roles.tensors.%s = %d, the program counted %d: %s" % (name, got, want, roles))


def case_roles_train(args, tmp):
    fw, expect = roles_of(args, tmp, "train_backward.py")
    check(expect["where"] == "backward", "the out-of-memory was not in backward: %s" % expect)
    check(expect["unpacks"] == 0, "saved tensors were unpacked %d times" % expect["unpacks"])
    check(expect["observer_on_main"] == [False], "the observers did not run once on the engine's thread: %s" % expect)
    roles = fw["roles"]
    check(roles["status"] == "complete" and roles["sharding"] is None, "roles: %s" % roles)
    check_roles(roles, expect, ("weights", "gradients", "optimizer_state"))
    check(expect["gradients"] > 0 and roles["bytes"]["activations"] > 0, "no gradients/activations: %s" % roles)
    names = {(t["role"], t["owner"], t["name"]) for t in roles["top"]}
    check({("optimizer_state", "AdamW", "state.exp_avg"), ("weights", "Linear", "weight"),
           ("weights", "MLP", "scale")} <= names, "top: %s" % roles["top"])
    check(fw["memory_fraction"] is None and fw["expandable_segments"] is False and
          fw["allocator_backend"] == "native", "settings: %s" % fw)
    check_backward_line(tmp, "train_backward.py")


def check_backward_line(tmp, prog):
    """The failing cudaMalloc ran on the engine's thread, which has no Python
    frame: its stack borrows the frames of the thread waiting in backward
    and names the program's loss.backward() line (docs/design.md)."""
    d = [d for d in bundles(tmp) if os.path.exists(os.path.join(d, "framework.json"))][0]
    md = load(d, "metadata.json")
    stack = {s["stack_id"]: s for s in load(d, "stacks.json")}.get(md["stack_id"], {})
    with open(os.path.join(CASES, prog)) as f:
        line = [i for i, text in enumerate(f, 1) if "loss.backward()" in text][0]
    frames = [(os.path.basename(fr.get("file", "")), fr.get("line")) for fr in stack.get("frames", [])
              if fr.get("kind") == "python"]
    check(stack.get("python") == "borrowed" and (prog, line) in frames,
          "the failing stack does not name %s:%d from the waiting thread: python=%s frames=%s" %
          (prog, line, stack.get("python"), frames[:6]))
    # torch's own frames are an installed package's (site-packages/): the
    # failure's site is the program's line, as a user of the real torch sees it.
    summary = load(d, "summary.txt")
    check(re.search(r"^    site: \w+ \(%s:%d\) \[python\]" % (re.escape(prog), line), summary, re.M),
          "the failure's site is not %s:%d:\n%s" % (prog, line, summary[:1500]))


def case_roles_kv(args, tmp):
    fw, expect = roles_of(args, tmp, "kv_cache.py", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    roles = fw["roles"]
    check_roles(roles, expect, ("weights", "kv_cache"))
    check(expect["kv_cache_n"] == 8 and {t["owner"] for t in roles["top"] if t["role"] == "kv_cache"}
          == {"StaticCache"}, "kv: %s" % roles)
    check(fw["expandable_segments"] is True, "expandable_segments not read: %s" % fw["expandable_segments"])
    sys.path.insert(0, os.path.join(os.path.dirname(args.shim), "python"))
    from gpumemrec_pyhook.torch_settings import expandable_segments as es
    for env, want in (({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, True),
                      ({"PYTORCH_ALLOC_CONF": "backend:native", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                       False),  # PYTORCH_ALLOC_CONF first
                      ({"PYTORCH_CUDA_ALLOC_CONF": " max_split_size_mb : 128 , expandable_segments : True "}, True),
                      ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,expandable_segments:False"}, False),
                      ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:true"}, False), ({}, False)):
        check(es(env) is want, "expandable_segments(%s) = %s, want %s" % (env, es(env), want))


def case_roles_fsdp(args, tmp):
    fw, expect = roles_of(args, tmp, "fsdp_flat.py")
    roles = fw["roles"]
    check(roles["sharding"] == "fsdp", "sharding: %s" % roles["sharding"])
    check_roles(roles, expect, ("weights", "unknown"))
    check(any("_gmr_undocumented" in n for n in roles["notes"]), "no note on the unknown: %s" % roles["notes"])


def case_roles_budget(args, tmp):
    fw, expect = roles_of(args, tmp, "roles_misc.py", "budget", env={"GPUMEMREC_ROLES_BUDGET_MS": "1"})
    roles = fw["roles"]
    check(roles["status"] == "partial" and roles["budget_ms"] == 1 and roles["objects"] < expect["junk"],
          "want a partial walk: %s" % roles)
    check(roles["notes"] and "budget" in roles["notes"][0], "no note on the budget: %s" % roles["notes"])
    fw, expect = roles_of(args, tempfile.mkdtemp(dir=tmp), "roles_misc.py", "budget",
                          env={"GPUMEMREC_ROLES_BUDGET_MS": "junk"})
    check(fw["roles"]["status"] == "complete" and fw["roles"]["budget_ms"] == 1000, "bad budget: %s" % fw["roles"])
    check_roles(fw["roles"], expect, ("weights",))


def case_roles_hostile(args, tmp):
    fw, expect = roles_of(args, tmp, "roles_misc.py", "hostile")
    roles = fw["roles"]
    check(roles["status"] == "complete", "roles: %s" % roles)
    check_roles(roles, expect, ("weights",))
    check("1 object(s) and 1 tensor(s) raised while examined (skipped)" in roles["notes"],
          "no note on the failures: %s" % roles["notes"])


def case_roles_exit(args, tmp):
    prog = py(os.path.join(CASES, "roles_misc.py"), "exit")
    out = os.path.join(tmp, "exit.json")
    env = {"GPUMEMREC_DUMP_AT_EXIT": "1", "GMR_EXIT_PROBE_OUT": out}
    base = run(args, prog, tmp, env, preload=False)
    plain = run(args, prog, tmp, env)  # no gpumemrec_framework_exit in this library: nothing happens
    check(plain.stdout == base.stdout and "warning: Python hook" not in plain.stderr, plain.stderr)
    check(not os.path.exists(out) or _exported(args.shim), "the hook called an export that is not there")
    got = run(args, prog, tmp, dict(env, LD_PRELOAD=args.exit_probe + ":" + args.shim))
    check(got.stdout == base.stdout, "output differs with the probe")
    expect = json.loads(re.search(r"^EXPECT (.*)$", got.stdout, re.M).group(1))
    with open(out) as f:
        fw = json.load(f)
    check(fw["at"] == "exit" and fw["framework"] == "torch", "exit digest: %s" % fw)
    check_roles_sum(fw)
    check_roles(fw["roles"], expect, ("weights", "gradients", "optimizer_state"))
    check(fw["torch_peak_allocated"] >= fw["allocated_bytes"] and fw["torch_peak_reserved"] >= fw["reserved_bytes"]
          and fw["torch_peak_reserved"] > 0, "peaks: %s" % fw)


def _exported(shim):
    import ctypes
    return hasattr(ctypes.CDLL(shim), "gpumemrec_framework_exit")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--fakes", required=True)
    ap.add_argument("--gpumemrec", default="")
    ap.add_argument("--engine", default="", help="the stand-in torch's native autograd engine (gmr_autograd_engine)")
    ap.add_argument("--c10", default="", help="the stand-in torch's cudaMalloc/cudaFree library (gmr_c10_cuda)")
    ap.add_argument("--exit-probe", default="", help="a library exporting gpumemrec_framework_exit (gmr_exit_probe)")
    args = ap.parse_args()
    fn = globals().get("case_" + args.case)
    if fn is None:
        sys.exit("unknown case %s" % args.case)
    with tempfile.TemporaryDirectory(dir=os.environ.get("GMR_KEEP_TMP_PARENT")) as tmp:
        try:
            fn(args, tmp)
        except Failure as e:
            print("FAIL: %s" % e)
            sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
