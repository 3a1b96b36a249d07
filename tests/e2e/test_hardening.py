#!/usr/bin/env python3
"""Hardening (docs/reliability.md): the recorder never changes what the
program does, survives threads, fork, exec, signals, short memory, disk
problems, bad configuration, and keeps its bundles private.

Each case is one ctest test e2e.hardening.<case>. Sizes of the concurrency
case: GPUMEMREC_HARDENING_ITERS (default 20000 per thread; the issue's full
size is 100000)."""
import json
import os
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

from gm_e2e import (BUILD, PRELOAD_PREFIX, RUN_TIMEOUT_S, SHIM, Bundle, Failure, auto_unwinder, base_env, check,
                    check_live_matches_ledger, main, normalized, preload_env, program, run)

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARD = os.path.join(BUILD, "tests", "hardening")
CHUNK = 16 << 20
SANITIZED = bool(PRELOAD_PREFIX)


def hard(name):
    path = os.path.join(HARD, name)
    check(os.path.exists(path), "missing " + path)
    return path


def hook_names():
    text = open(os.path.join(SRC, "shim", "base", "hook_list.h")).read()
    return re.findall(r"^\s*X\((\w+),\s*\w+\)", text, re.M)


def warnings_for(stderr, var):
    return [l for l in stderr.splitlines() if (var + "=") in l]


def all_bundles(r):
    out = r.bundles()
    alt = os.path.join(r.workdir, "gpumemrec-dumps")
    if os.path.isdir(alt):
        names = sorted(os.listdir(alt))
        check(not any(n.startswith(".tmp") for n in names), "half-written bundle left behind: %s" % names)
        out += [os.path.join(alt, n) for n in names if n.startswith("oom_dump_")]
    return [Bundle(b) for b in out]


def no_tmp_left(d):
    if os.path.isdir(d):
        left = [n for n in os.listdir(d) if n.startswith(".tmp")]
        check(not left, "temporary bundle left behind in %s: %s" % (d, left))


def check_complete_low_memory(b):
    """check_well_formed, except that snapshot.pickle (optional, skipped by the
    dumper when the host is short of memory) may be missing."""
    try:
        b.check_well_formed()
    except Failure as e:
        if "snapshot.pickle missing" not in str(e):
            raise
        md = b.metadata
        check(md["live_bytes"] == sum(a["size"] for a in b.allocations), "live_bytes != sum(allocations)")
        check(md["live_allocations"] == len(b.allocations), "live_allocations mismatch")


# ---------------------------------------------------------------- 1. fidelity
def fidelity_all():
    argv = [hard("fidelity_calls")]
    a = run(argv, preload=False, capacity=64 << 20)
    b = run(argv, preload=True, capacity=64 << 20, env_extra={"GPUMEMREC_EPISODE_MS": "0"})
    check(a.rc == 0 and b.rc == 0, "exit codes %d / %d\n%s" % (a.rc, b.rc, b.stderr[-1500:]))
    la, lb = a.stdout.splitlines(), b.stdout.splitlines()
    diffs = [(x, y) for x, y in zip(la, lb) if x != y]
    check(len(la) == len(lb) and not diffs, "calls differ with the shim (without -> with):\n%s" %
          "\n".join("  %s\n  %s" % d for d in diffs[:20]) + ("\nline counts %d vs %d" % (len(la), len(lb))))
    called = {l.split()[0] for l in la}
    missing = [h for h in hook_names() if h not in called]
    check(not missing, "hooked functions never called by fidelity_calls: %s" % missing)
    for case in ("ok", "size0", "null_out", "oom", "double_free", "unknown_ptr"):
        check(any((" %s " % case) in l for l in la), "no %s case in the output" % case)
    check(b.bundles(), "the shim wrote no bundle for the OOM cases")


# ---------------------------------------------------------------- 2. concurrency
SEQ_RE = re.compile(rb'"seq":(\d+)')
TYPE_RE = re.compile(rb'"event_type":"(\w+)"')


def event_stream(bundle):
    with open(os.path.join(bundle.path, "events.json"), "rb") as f:
        data = f.read()
    return data


def check_consistent(b):
    """A bundle written while other threads kept allocating is internally
    consistent: (1) every stack id referenced exists in stacks.json; (2) every
    allocation listed was made before the cut (its seq < the first seq not in
    the bundle); (3) replaying events.json never contradicts
    allocations.json: an address whose last event in the bundle is a
    successful allocation is listed live with that seq, one whose last event
    is a successful free is not listed (events.json is in time order, and an
    address reused across threads must be freed before it is allocated
    again in that order); (4) holes in the sequence numbers (events still
    being written at the cut, the unused seqs of each thread's block: at most
    a block of 64 per thread at each cut in the window) are few."""
    b.check_well_formed()  # stacks, live_bytes == sum, counts
    events = b.events
    allocs = b.allocations
    total = b.metadata["total_event_count"]
    cut = total + 1
    for a in allocs:
        check(a["seq"] < cut, "allocation seq %d after the cut %d" % (a["seq"], cut))
    live = {(a["memory_type"] == "physical", a["address"]): a for a in allocs}
    position = {e["seq"]: i for i, e in enumerate(events)}
    last = {}
    for e in events:
        if e["memory_type"] == "mapping" or e["address"] == 0:
            continue
        if e["event_type"] in ("allocation", "deallocation"):
            last[(e["memory_type"] == "physical", e["address"])] = e
    bad = []
    for key, e in last.items():
        if e["event_type"] == "allocation":
            a = live.get(key)
            if not a or a["seq"] != e["seq"] or a["size"] != e["size"]:
                bad.append("allocation seq %d at %#x not listed live (listed: %s)" % (e["seq"], key[1], a))
        elif key in live and (live[key]["seq"] not in position or position[live[key]["seq"]] < position[e["seq"]]):
            bad.append("address %#x freed at seq %d but listed live (seq %d)" % (key[1], e["seq"], live[key]["seq"]))
    check(not bad, "bundle %s inconsistent (%d problems):\n  %s" % (b.name, len(bad), "\n  ".join(bad[:8])))
    seqs = [e["seq"] for e in events]
    if seqs:
        threads = len({e["thread_id"] for e in events})
        holes = set(range(min(seqs), cut)) - set(seqs)
        # this cut, a few freezes before it in the window, a quiet thread
        check(len(holes) <= 65 * threads * 4, "%d holes in the ring at the cut" % len(holes))
    return len(events)


def concurrency():
    iters = int(os.environ.get("GPUMEMREC_HARDENING_ITERS", "20000"))
    threads = 16
    ring = 1 << max(16, (threads * iters * 2).bit_length())
    t0 = time.time()
    r = run([program("mt_alloc"), str(threads), str(iters), str(1 << 20)], capacity=48 << 20, timeout=900,
            env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1", "GPUMEMREC_RING_EVENTS": str(min(ring, 1 << 25)),
                       "GPUMEMREC_EPISODE_MS": "100000", "GPUMEMREC_MAX_DUMPS": "3", "GPUMEMREC_MAX_TOTAL_MB": "0",
                       "GPUMEMREC_STACK_DEPTH": "8"})
    elapsed = time.time() - t0
    check(r.rc == 0, "mt_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
    total_line = [l for l in r.stdout.splitlines() if l.startswith("TOTAL ")]
    check(total_line, "no TOTAL line")
    tot = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", total_line[0])}
    check(tot["ooms"] > 0, "no OOMs injected (capacity too large?)")
    bundles = all_bundles(r)
    exits = [b for b in bundles if b.manifest["reason"] == "exit"]
    mids = [b for b in bundles if b.manifest["reason"] == "oom"]
    check(len(exits) == 1, "expected one exit bundle, found %d" % len(exits))
    check(mids, "no OOM bundle written while the threads ran")
    e = exits[0]
    check_live_matches_ledger(e, r.ledger())
    data = event_stream(e)
    seqs = [int(x) for x in SEQ_RE.findall(data)]
    total = e.metadata["total_event_count"]
    # Every event kept (the counts below), each seq once; the holes are the
    # unused seqs of the threads' blocks (docs/bundle-format.md).
    check(len(set(seqs)) == len(seqs) and max(seqs) <= total,
          "ring seq numbers repeat or pass the cut (%d events, total %d)" % (len(seqs), total))
    kinds = {}
    for k in TYPE_RE.findall(data):
        kinds[k] = kinds.get(k, 0) + 1
    check(kinds.get(b"allocation", 0) == tot["allocs"], "allocation events %d != program's allocs %d" %
          (kinds.get(b"allocation", 0), tot["allocs"]))
    check(kinds.get(b"deallocation", 0) == tot["frees"], "free events %d != program's frees %d" %
          (kinds.get(b"deallocation", 0), tot["frees"]))
    check(kinds.get(b"oom", 0) == tot["ooms"], "oom events %d != program's ooms %d" % (kinds.get(b"oom", 0), tot["ooms"]))
    for b in mids[:3]:
        check_consistent(b)
    print("concurrency: %d threads x %d iterations: %.1f s, %d events, %d mid-run bundles" %
          (threads, iters, elapsed, total, len(mids)))


def dump_while_running():
    """Signal dumps taken while 8 threads allocate are consistent."""
    env = base_env(48 << 20)
    workdir = tempfile.mkdtemp(prefix="gpumemrec-hard-")
    dumpdir = os.path.join(workdir, "dumps")
    env.update({"LD_PRELOAD": preload_env(), "GPUMEMREC_DIR": dumpdir, "GPUMEMREC_DUMP_SIGNAL": "USR2",
                "GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0", "GPUMEMREC_EPISODE_MS": "100000",
                "GPUMEMREC_RING_EVENTS": "4194304", "GPUMEMREC_STACK_DEPTH": "8"})
    p = subprocess.Popen([program("mt_alloc"), "8", "150000", str(1 << 20)], env=env, cwd=workdir,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sent = 0
    # Signalled only once the program says it runs (its START line): the
    # recorder's handler is installed by then (its constructor ran before
    # main). A signal sent before that would take the default action and kill
    # the program, which a loaded machine or a sanitizer made likely with a
    # fixed 0.2 s. A watchdog ends a program that never says it.
    watchdog = threading.Timer(300, p.kill)
    watchdog.start()
    try:
        first = p.stdout.readline()
        check(first.startswith("START "), "mt_alloc did not start: %r" % first)
        # Paced, not timed: the signals land while the threads allocate (the
        # program runs 8 x 150000 iterations); any that come after its end are
        # not sent (poll).
        while p.poll() is None and sent < 5:
            p.send_signal(signal.SIGUSR2)
            sent += 1
            time.sleep(0.3)
        out, err = p.communicate(timeout=300)
    finally:
        watchdog.cancel()
    check(p.returncode == 0, "mt_alloc exited %d: %s" % (p.returncode, err[-800:]))
    no_tmp_left(dumpdir)
    sig = [Bundle(os.path.join(dumpdir, n)) for n in sorted(os.listdir(dumpdir)) if n.startswith("oom_dump_")]
    sig = [b for b in sig if b.manifest["reason"] == "signal"]
    check(sig, "no signal bundle (sent %d signals)\n%s" % (sent, err[-1000:]))
    for b in sig:
        check_consistent(b)
    shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- 3. fork and exec
def fork_threads():
    if "tsan" in PRELOAD_PREFIX:
        return "skip"  # TSan does not support threads started in a child of a multi-threaded fork
    if "asan" in PRELOAD_PREFIX:
        # Diagnosed (gdb on a hung child, 1 run in 5): the child waits for a lock
        # of ASan's own allocator (SizeClassAllocator64, in malloc) that a
        # parent thread held at the fork. GCC 12's libsanitizer installs no
        # atfork handler for it; LLVM added one in 2023 (llvm/llvm-project
        # pull request 75290, "[asan] Install pthread_atfork"). Not ours to
        # fix: runs in the normal build (and would under a newer runtime).
        return "skip"
    r = run([hard("fork_stress"), "4", "6"], capacity=64 << 20, timeout=240,
            env_extra={"GPUMEMREC_EPISODE_MS": "200", "GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0",
                       "GPUMEMREC_DUMP_SIGNAL": "USR2"})
    check(r.rc == 0 and "DONE hung=0 bad=0" in r.stdout, "fork_stress: rc %d\n%s\n%s" % (r.rc, r.stdout[-1500:],
                                                                                        r.stderr[-1500:]))
    pids = [int(m) for m in re.findall(r"CHILD pid=(\d+) status=0", r.stdout)]
    check(len(pids) == 6, "expected 6 children: %s" % r.stdout)
    by_pid = {}
    for b in all_bundles(r):
        by_pid.setdefault(b.manifest["pid"], []).append(b)
    for pid in pids:
        bs = [b for b in by_pid.get(pid, []) if b.manifest["backend"] == "rocm"]
        check(len(bs) == 1, "child %d wrote %d hip bundles" % (pid, len(bs)))
        b = bs[0]
        b.check_well_formed()
        check(b.metadata["api"] == "hipMalloc" and b.json("environment.json")["pid"] == pid, "wrong bundle content")
        check("_%d_rocm_1" % pid in b.name, "child bundle name %s lacks its pid / seq 1" % b.name)


def fork_unwind_churn():
    """Forks while the parent's threads are inside libunwind on its locks
    (each call on a new thread: a new trace cache, DWARF look-ups), and each
    child first allocates on a new thread of its own (the same locks):
    no child hangs, each writes its bundle, and each unwinds with libunwind
    or, when a parent thread was still inside at the fork, with glibc
    (shim/record/unwind_guard.h)."""
    if "tsan" in PRELOAD_PREFIX or "asan" in PRELOAD_PREFIX:
        return "skip"  # as fork_threads: the sanitizer runtimes' own locks at a threaded fork
    r = run([hard("fork_stress"), "4", "12", str(16 << 20), "churn"], capacity=64 << 20, timeout=240,
            env_extra={"GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0"})
    check(r.rc == 0 and "DONE hung=0 bad=0" in r.stdout, "fork_stress churn: rc %d\n%s\n%s" % (
        r.rc, r.stdout[-1500:], r.stderr[-1500:]))
    pids = [int(m) for m in re.findall(r"CHILD pid=(\d+) status=0", r.stdout)]
    check(len(pids) == 12, "expected 12 children: %s" % r.stdout)
    by_pid = {}
    for b in all_bundles(r):
        by_pid.setdefault(b.manifest["pid"], []).append(b)
    allowed = {auto_unwinder(), "glibc backtrace"}
    kept = 0
    for pid in pids:
        bs = by_pid.get(pid, [])
        check(len(bs) == 1, "child %d wrote %d bundles" % (pid, len(bs)))
        bs[0].check_well_formed()
        got = bs[0].json("environment.json")["config"]["unwinder"]
        check(got in allowed, "child %d unwound with %r (expected one of %s)" % (pid, got, sorted(allowed)))
        kept += got != "glibc backtrace"
    print("fork_unwind_churn: %d of %d children kept %s" % (kept, len(pids), auto_unwinder()))


def follow_exec(on):
    def case():
        target = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
        base = run(target, preload=False)
        r = run([hard("exec_child")] + target, env_extra={"GPUMEMREC_FOLLOW_EXEC": on})
        check(r.rc == base.rc, "exit code %d vs %d" % (r.rc, base.rc))
        lines = r.stdout.splitlines()
        check(lines and lines[0] == "PARENT rc=0 preload_has_shim=%s" % on, "exec_child said %s" % lines[:1])
        check(normalized("\n".join(lines[1:]) + "\n") == normalized(base.stdout), "exec'd program output differs")
        bundles = r.bundles()
        if on == "1":
            check(len(bundles) == 1, "FOLLOW_EXEC=1: the exec'd program wrote %d bundles" % len(bundles))
        else:
            check(not bundles, "FOLLOW_EXEC=0: the exec'd program still recorded")
    return case


def python_mp(method):
    def case():
        if SANITIZED:
            return "skip"  # the interpreter itself is not instrumented
        script = os.path.join(SRC, "tests", "hardening", "mp_children.py")
        r = run([sys.executable, script, method, "3"], capacity=64 << 20, timeout=RUN_TIMEOUT_S,
                env_extra={"GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0"})
        check(r.rc == 0, "mp_children %s exited %d\n%s\n%s" % (method, r.rc, r.stdout, r.stderr[-2000:]))
        pids = [int(p) for p in re.findall(r"CHILD pid=(\d+) rc=2", r.stdout)]
        check(len(pids) == 3, "children: %s" % r.stdout)
        got = {b.manifest["pid"]: b for b in all_bundles(r)}
        for pid in pids:
            check(pid in got, "child %d wrote no bundle (bundles from %s)" % (pid, sorted(got)))
        # No thread of the parent is inside libunwind when multiprocessing
        # forks from its main thread: a forked child keeps the parent's
        # unwinder (before, every forked child fell back to glibc's, about
        # ten times slower per call; shim/record/unwind_guard.h).
        want = auto_unwinder()
        for pid in pids:
            unw = got[pid].json("environment.json")["config"]["unwinder"]
            check(unw == want, "%s child %d unwound with %r, expected %r" % (method, pid, unw, want))
    return case


# ---------------------------------------------------------------- 4. signal and exit dumps
def signal_dump():
    r = run([hard("signal_prog"), "none"], env_extra={"GPUMEMREC_DUMP_SIGNAL": "USR2"})
    check(r.rc == 0, "signal_prog exited %d (the signal should have been taken by the shim)\n%s" % (r.rc, r.stderr))
    b = r.only_bundle()
    b.check_well_formed()
    check(b.manifest["reason"] == "signal" and b.metadata["reason"] == "signal", "reason %s" % b.manifest["reason"])
    check(len(b.allocations) == 3 and all(a["size"] == 1 << 20 for a in b.allocations), "allocations %s" %
          b.allocations)
    check(b.metadata["api"] is None, "a signal bundle names no failed call")
    # Several signals: several bundles, no OOM needed.
    r = run([hard("signal_prog"), "none", str(int(signal.SIGUSR2)), "3"],
            env_extra={"GPUMEMREC_DUMP_SIGNAL": "SIGUSR2", "GPUMEMREC_MAX_DUMPS": "0"})
    check(len(r.bundles()) == 3, "3 signals, %d bundles" % len(r.bundles()))


def signal_off_by_default():
    a = run([hard("signal_prog"), "none"], preload=False)
    b = run([hard("signal_prog"), "none"])
    check(a.rc == b.rc == -signal.SIGUSR2, "without GPUMEMREC_DUMP_SIGNAL SIGUSR2 must keep its default action "
          "(rc %d without the shim, %d with)" % (a.rc, b.rc))
    check(not b.bundles(), "bundle written without GPUMEMREC_DUMP_SIGNAL")


def signal_program_handler_after():
    env = {"GPUMEMREC_DUMP_SIGNAL": "USR2"}
    a = run([hard("signal_prog"), "own_after"], preload=False, env_extra=env)
    b = run([hard("signal_prog"), "own_after"], env_extra=env)
    check(a.rc == b.rc == 0 and a.stdout == b.stdout, "program output differs:\n%s\n---\n%s" % (a.stdout, b.stdout))
    check("HANDLER count=1" in b.stdout, "the program's own handler did not run: " + b.stdout)
    # Documented: the program's handler replaced ours, so no signal dump.
    check(not b.bundles(), "a handler installed later by the program must win")


def signal_program_ignores():
    env = {"GPUMEMREC_DUMP_SIGNAL": "USR2"}
    a = run([hard("signal_prog"), "ignore"], preload=False, env_extra=env)
    b = run([hard("signal_prog"), "ignore"], env_extra=env)
    check(a.rc == b.rc == 0 and a.stdout == b.stdout, "program output differs")


def signal_chains_to_earlier_handler():
    lib = hard("libpreload_handler.so")
    env = {"GPUMEMREC_DUMP_SIGNAL": "USR2"}
    a = run([hard("signal_prog"), "none"], preload=preload_env(lib), env_extra=env)
    b = run([hard("signal_prog"), "none"], preload=preload_env(SHIM, lib), env_extra=env)
    check(a.rc == 0 and "PRELOAD_HANDLER count=1" in a.stdout, "baseline: %d %s" % (a.rc, a.stdout))
    check(b.rc == 0 and a.stdout == b.stdout, "with the shim: rc %d\n%s" % (b.rc, b.stdout))
    check(len(b.bundles()) == 1, "the shim's signal dump did not happen alongside the earlier handler")


def exit_dump():
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    a = run(argv, preload=False)
    b = run(argv, env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1", "GPUMEMREC_MAX_DUMPS": "0"})
    check(a.rc == b.rc and normalized(a.stdout) == normalized(b.stdout), "output differs with DUMP_AT_EXIT")
    reasons = sorted(x.manifest["reason"] for x in all_bundles(b))
    check(reasons == ["exit", "oom"], "reasons %s" % reasons)
    e = [x for x in all_bundles(b) if x.manifest["reason"] == "exit"][0]
    e.check_well_formed()
    check_live_matches_ledger(e, b.ledger())
    check(e.allocations, "exit bundle lists no leaks although the program frees nothing")
    c = run(argv)
    check([x.manifest["reason"] for x in all_bundles(c)] == ["oom"], "exit bundle written without DUMP_AT_EXIT")


# ---------------------------------------------------------------- 5. short host memory
def lowmem_failmalloc():
    if SANITIZED:
        return "skip"  # the sanitizer allocators do not go through malloc
    fm = hard("libfailmalloc.so")
    argv = [hard("lowmem"), "failmalloc", str(64 << 20)]
    a = run(argv, preload=preload_env(fm), capacity=64 << 20)
    b = run(argv, preload=preload_env(SHIM, fm), capacity=64 << 20)
    check(a.rc == b.rc == 0, "exit codes %d / %d\n%s" % (a.rc, b.rc, b.stderr[-1500:]))
    check(normalized(a.stdout) == normalized(b.stdout), "output differs:\n%s\n---\n%s" % (a.stdout, b.stdout))
    check("OOM rc=2" in b.stdout, "no OOM: " + b.stdout)
    check("HOST_FAILURES=some" in b.stderr, "the injector never refused anything: " + b.stderr)
    bundle = b.only_bundle()  # written in spite of malloc failing, nothing half-written
    check_complete_low_memory(bundle)
    check(bundle.metadata["reason"] == "oom", "reason")


def lowmem_rlimit():
    if SANITIZED:
        return "skip"  # sanitizers reserve terabytes of address space
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
    argv = [hard("lowmem"), "eat", str(64 << 20)]
    a = run(argv, preload=False, capacity=64 << 20, preexec_fn=limit, timeout=RUN_TIMEOUT_S)
    b = run(argv, capacity=64 << 20, preexec_fn=limit, timeout=RUN_TIMEOUT_S)
    check(a.rc == b.rc == 0, "exit codes %d / %d\n%s" % (a.rc, b.rc, b.stderr[-1500:]))
    check(normalized(a.stdout) == normalized(b.stdout), "output differs:\n%s\n---\n%s" % (a.stdout, b.stdout))
    check("HOST exhausted" in b.stdout and "OOM rc=2" in b.stdout, b.stdout)
    check_complete_low_memory(b.only_bundle())


def lowmem_address_space():
    """Under RLIMIT_AS with room for the program's own large malloc plus a
    margin far below what the recorder used to reserve (~330 MiB), the malloc
    succeeds with the recorder as it does without, with
    stacks on (the default) and off."""
    if SANITIZED:
        return "skip"  # sanitizers reserve terabytes of address space
    big = 512 << 20
    base = run([hard("lowmem"), "big", "0"], preload=False, capacity=64 << 20)
    check(base.rc == 0, "baseline: " + base.stderr[-500:])
    vsz = int(re.search(r"VMSIZE_KIB=(\d+)", base.stderr).group(1)) << 10
    cap = vsz + big + (128 << 20)
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    argv = [hard("lowmem"), "big", str(big)]
    a = run(argv, preload=False, capacity=64 << 20, preexec_fn=limit)
    check(a.rc == 0 and "BIG ok" in a.stdout, "without the recorder: %s %s" % (a.stdout, a.stderr[-500:]))
    for extra in ({}, {"GPUMEMREC_STACK_DEPTH": "0", "GPUMEMREC_PYTHON_STACKS": "0"}):
        b = run(argv, capacity=64 << 20, preexec_fn=limit, env_extra=extra)
        check(b.rc == 0 and a.stdout == b.stdout, "with the recorder %s:\n%s\n---\n%s\n%s" %
              (extra, a.stdout, b.stdout, b.stderr[-800:]))


# ---------------------------------------------------------------- 6. disk problems
def disk_missing_dir():
    r0 = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], preload=False)
    deep = os.path.join(r0.workdir, "a", "b", "c")
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], env_extra={"GPUMEMREC_DIR": deep},
            preexec_fn=lambda: os.umask(0))
    check(os.path.isdir(deep), "dump directory not created")
    for d in (os.path.join(r0.workdir, "a"), os.path.join(r0.workdir, "a", "b"), deep):
        check(stat.S_IMODE(os.stat(d).st_mode) == 0o700, "%s created with mode %o" % (d, os.stat(d).st_mode))
    names = [n for n in os.listdir(deep) if n.startswith("oom_dump_")]
    check(len(names) == 1, "bundles in the created dir: %s" % names)
    Bundle(os.path.join(deep, names[0])).check_well_formed()


def disk_unwritable():
    r0 = run(["true"], preload=False)
    if os.geteuid() == 0:
        # root ignores permission bits: a path below a regular file instead.
        blocker = os.path.join(r0.workdir, "file")
        open(blocker, "w").close()
        d = os.path.join(blocker, "dumps")
    else:
        d = os.path.join(r0.workdir, "ro")
        os.mkdir(d, 0o500)
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    a = run(argv, preload=False)
    b = run(argv, env_extra={"GPUMEMREC_DIR": d})
    check(a.rc == b.rc and normalized(a.stdout) == normalized(b.stdout), "program behaviour changed")
    lines = [l for l in b.stderr.splitlines() if "cannot write a bundle" in l]
    check(len(lines) == 1 and d in lines[0], "expected one clear warning naming %s:\n%s" % (d, b.stderr))


def disk_full_fsize():
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    a = run(argv, preload=False, preexec_fn=limit)
    b = run(argv, preexec_fn=limit)
    check(a.rc == b.rc and normalized(a.stdout) == normalized(b.stdout), "program behaviour changed:\n%s" % b.stderr)
    no_tmp_left(b.dumpdir)
    check(not b.bundles(), "a bundle was written past RLIMIT_FSIZE?")
    lines = [l for l in b.stderr.splitlines() if "could not write the bundle" in l]
    check(len(lines) == 1 and "File too large" in lines[0] and "nothing left behind" in lines[0],
          "expected one clear warning:\n%s" % b.stderr)


def disk_full_tmpfs():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return "skip"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return "skip"
    r0 = run(["true"], preload=False)
    d = os.path.join(r0.workdir, "small")
    os.mkdir(d, 0o700)
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    inner = "mount -t tmpfs -o size=8k,mode=0700 gpumemrec-test %s && exec \"$@\"" % d
    a = run(["unshare", "-m", "sh", "-c", inner, "sh"] + argv, preload=False)
    if a.rc != 0 and "mount" in a.stderr:
        return "skip"
    b = run(["unshare", "-m", "sh", "-c", inner, "sh"] + argv, env_extra={"GPUMEMREC_DIR": d})
    check(a.rc == b.rc and normalized(a.stdout) == normalized(b.stdout), "program behaviour changed:\n%s" % b.stderr)
    lines = [l for l in b.stderr.splitlines() if "could not write the bundle" in l]
    check(len(lines) == 1 and "No space left" in lines[0], "expected one clear warning:\n%s" % b.stderr)


def disk_symlink():
    r0 = run(["true"], preload=False)
    target = os.path.join(r0.workdir, "victim")
    os.mkdir(target, 0o700)
    link = os.path.join(r0.workdir, "dumps-link")
    os.symlink(target, link)
    if os.geteuid() == 0:
        os.lchown(link, 65534, 65534)  # planted by another user
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    a = run(argv, preload=False)
    b = run(argv, env_extra={"GPUMEMREC_DIR": link})
    check(a.rc == b.rc and normalized(a.stdout) == normalized(b.stdout), "program behaviour changed")
    check(os.listdir(target) == [], "wrote through the symlink: %s" % os.listdir(target))
    lines = [l for l in b.stderr.splitlines() if "symbolic link" in l]
    check(len(lines) == 1, "expected one clear warning:\n%s" % b.stderr)


# ---------------------------------------------------------------- 7. bad configuration
VARS = ["DIR", "RING_EVENTS", "STACK_DEPTH", "EPISODE_MS", "MAX_DUMPS", "MAX_TOTAL_MB", "LOG_LEVEL", "DISABLE",
        "PYTHON_STACKS", "LIMIT", "FAIL_AFTER", "DUMP_SIGNAL", "DUMP_AT_EXIT", "FOLLOW_EXEC", "RECOVERED",
        "EXIT_WAIT_S"]
BAD = {
    # Any string is a valid directory name: DIR is bad only when empty or too long.
    "malformed": {"RING_EVENTS": "lots", "STACK_DEPTH": "deep", "EPISODE_MS": "1e3", "MAX_DUMPS": "five",
                  "MAX_TOTAL_MB": "12MB", "LOG_LEVEL": "loud", "DISABLE": "maybe", "PYTHON_STACKS": "2",
                  "LIMIT": "huge", "FAIL_AFTER": "0x10", "DUMP_SIGNAL": "KILL", "DUMP_AT_EXIT": "sometimes",
                  "FOLLOW_EXEC": "perhaps", "RECOVERED": "sometimes", "EXIT_WAIT_S": "1m"},
    "negative": {v: "-1" for v in VARS if v != "DIR"},
    "huge": dict({v: "9" * 30 for v in VARS}, DIR="x" * 4000, LOG_LEVEL="x" * 4000, LIMIT="9" * 30 + "TiB"),
    "empty": {v: "" for v in VARS},
}
DEFAULTS = {"ring_events": 65536, "stack_depth": 32, "episode_ms": 2000, "max_dumps": 5, "max_total_mb": 256,
            "python_stacks": True}


def bad_config(kind):
    def case():
        values = {"GPUMEMREC_" + k: v for k, v in BAD[kind].items()}
        argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
        a = run(argv, preload=False)
        b = run(argv, env_extra=values)
        check(a.rc == b.rc, "exit code %d without the shim, %d with %s values" % (a.rc, b.rc, kind))
        check(normalized(a.stdout) == normalized(b.stdout), "program output changed")
        for var in values:
            n = len(warnings_for(b.stderr, var))
            check(n == 1, "expected one warning for %s=%r, got %d:\n%s" % (var, values[var][:40], n, b.stderr[-3000:]))
            w = warnings_for(b.stderr, var)[0]
            check("using the default" in w, "warning does not say what applies: " + w)
        bundles = all_bundles(b)
        check(len(bundles) == 1, "expected exactly one bundle (defaults: no exit dump), found %d" % len(bundles))
        bd = bundles[0]
        bd.check_well_formed()
        check(bd.manifest["reason"] == "oom", "reason %s: LIMIT/FAIL_AFTER defaults not applied" % bd.manifest["reason"])
        cfg = bd.json("environment.json")["config"]
        for k, v in DEFAULTS.items():
            check(cfg[k] == v, "config %s = %r, default is %r" % (k, cfg[k], v))
        if "GPUMEMREC_DIR" in values:
            check(cfg["dir"] == os.path.join(b.workdir, "gpumemrec-dumps"),  # resolved at start-up
                  "dir default not applied: %s" % cfg["dir"])
        check(SHIM in bd.json("environment.json")["env"].get("LD_PRELOAD", ""), "FOLLOW_EXEC default not applied")
    return case


# ---------------------------------------------------------------- 8. security
def security_permissions():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], preexec_fn=lambda: os.umask(0))
    b = r.only_bundle()
    b.check_well_formed()  # 0700 directory, 0600 files
    check(stat.S_IMODE(os.stat(r.dumpdir).st_mode) == 0o700, "dump dir mode %o" % os.stat(r.dumpdir).st_mode)


def security_untrusted_dir():
    """A dump directory another user could tamper with is refused, also when
    the program runs as root: writable by others or by the
    group without the sticky bit, or owned by another user. One warning, no
    bundle, the program's output unchanged; a sticky world-writable directory
    owned by root (like /tmp) is used."""
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    base = run(argv, preload=False)
    cases = [("0777", 0o777, None), ("0770", 0o770, None), ("other_owner", 0o700, 65534)]
    for label, mode, owner in cases:
        d = tempfile.mkdtemp(prefix="gpumemrec-untrusted-")
        os.chmod(d, mode)
        if owner is not None:
            if os.geteuid() != 0:
                continue
            os.chown(d, owner, owner)
        r = run(argv, env_extra={"GPUMEMREC_DIR": d})
        # HOST lines print host-pinned addresses, which ASLR moves between runs.
        device_lines = lambda out: [l for l in out.splitlines() if not l.startswith("HOST")]
        check(r.rc == base.rc and device_lines(r.stdout) == device_lines(base.stdout), "%s: the program changed" % label)
        check(os.listdir(d) == [], "%s: something was written: %r" % (label, os.listdir(d)))
        check(r.stderr.count("refusing to write there") == 1, "%s: not one warning: %r" % (label, r.stderr[-500:]))
        shutil.rmtree(d, ignore_errors=True)
    d = tempfile.mkdtemp(prefix="gpumemrec-sticky-")
    os.chmod(d, 0o1777)
    r = run(argv, env_extra={"GPUMEMREC_DIR": d})
    check(len([n for n in os.listdir(d) if n.startswith("oom_dump_")]) == 1, "sticky dir not used: %r" % os.listdir(d))
    shutil.rmtree(d, ignore_errors=True)


SECRETS = {"CUDA_AUTH_TOKEN": "s3cr3t-token-1", "NCCL_SECRET": "s3cr3t-nccl-2", "HIP_PASSWORD": "s3cr3t-pw-3",
           "TF_API_KEY": "s3cr3t-key-4", "PYTORCH_CREDENTIALS": "s3cr3t-cred-5", "XLA_AUTH": "s3cr3t-auth-6",
           "GPUMEMREC_TEST_passwd": "s3cr3t-lower-7", "MY_TOKEN": "s3cr3t-other-8", "AWS_SECRET_ACCESS_KEY":
           "s3cr3t-aws-9"}


def security_redaction():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], env_extra=SECRETS)
    b = r.only_bundle()
    env = b.json("environment.json")["env"]
    for name in ("CUDA_AUTH_TOKEN", "NCCL_SECRET", "HIP_PASSWORD", "TF_API_KEY", "PYTORCH_CREDENTIALS", "XLA_AUTH",
                 "GPUMEMREC_TEST_passwd"):
        check(env.get(name) == "<redacted>", "%s not redacted: %r" % (name, env.get(name)))
    for f in os.listdir(b.path):
        data = open(os.path.join(b.path, f), "rb").read()
        for v in SECRETS.values():
            check(v.encode() not in data, "secret value %s appears in %s" % (v, f))


def security_setuid():
    """A hook that runs before the shim's constructor, in a process whose
    effective uid differs from its real uid, must not initialise the
    recorder (setuid_probe.c / setuid_early.c). Needs root."""
    if os.geteuid() != 0:
        return "skip"
    early = hard("libsetuid_early.so")
    dumps = tempfile.mkdtemp(prefix="gpumemrec-setuid-")
    os.chmod(dumps, 0o777)  # writable by the effective uid: only the refusal keeps it empty
    env = {"SETUID_EARLY": "1", "GPUMEMREC_DIR": os.path.join(dumps, "d"), "GPUMEMREC_LOG_LEVEL": "info"}
    a = run([hard("setuid_probe")], preload=preload_env(early), env_extra=env, capacity=64 << 20)
    if a.rc == 77:
        return "skip"
    b = run([hard("setuid_probe")], preload=preload_env(SHIM, early), env_extra=env, capacity=64 << 20)
    check(a.rc == b.rc == 0 and a.stdout == b.stdout, "behaviour changed:\n%s\n---\n%s\n%s" %
          (a.stdout, b.stdout, b.stderr))
    check("EARLY rc=2 euid=65534" in b.stdout and "PROBE allocs=4 rc=2" in b.stdout, "unexpected: " + b.stdout)
    check(not os.path.exists(os.path.join(dumps, "d")), "the shim wrote in a privileged process: %s" %
          os.listdir(dumps))
    check("gpumemrec:" not in b.stderr, "the shim spoke in a privileged process: " + b.stderr)
    # Contrast: the same run without the id change records as usual.
    env["SETUID_EARLY"] = "0"
    c = run([hard("setuid_probe")], preload=preload_env(SHIM, early), env_extra=env, capacity=64 << 20)
    check(os.path.isdir(os.path.join(dumps, "d")), "contrast run wrote no bundle: " + c.stderr)
    shutil.rmtree(dumps, ignore_errors=True)


def security_no_network():
    out = subprocess.run(["nm", "-D", "--undefined-only", SHIM], capture_output=True, text=True).stdout
    imported = set(l.split()[-1].split("@")[0] for l in out.splitlines() if l.strip())
    net = {"socket", "connect", "bind", "listen", "accept", "accept4", "sendto", "sendmsg", "send", "recv",
           "recvfrom", "getaddrinfo", "gethostbyname", "socketpair"}
    check(imported, "nm printed nothing")
    check(not (imported & net), "the shim imports network functions: %s" % sorted(imported & net))
    # And at run time: no socket open in the process after a dump, and no
    # connection made while symbolizing, even with DEBUGINFOD_URLS set (the
    # default on Ubuntu and Fedora): libdw's standard debuginfo search asks
    # debuginfod last (elfutils libdwfl/find-debuginfo.c); ours does not. The
    # program is a stripped copy (no symbols, no local debug file for its
    # build ID: the case that reaches debuginfod).
    cache = tempfile.mkdtemp(prefix="gpumemrec-debuginfod-")
    stripped = os.path.join(cache, "signal_prog_stripped")
    shutil.copy(hard("signal_prog"), stripped)
    check(subprocess.run(["strip", "--strip-all", stripped]).returncode == 0, "strip failed")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    url = "http://127.0.0.1:%d/" % server.getsockname()[1]
    try:
        r = run([stripped, "none"], env_extra={"GPUMEMREC_DUMP_SIGNAL": "USR2", "DEBUGINFOD_URLS": url,
                                                           "DEBUGINFOD_CACHE_PATH": cache})
        check("SOCKETS n=0" in r.stdout, "sockets open after a dump: " + r.stdout)
        check(r.bundles(), "no bundle written: " + r.stderr[-800:])
        try:
            conn, _ = server.accept()
            conn.close()
            check(False, "the dump connected to DEBUGINFOD_URLS=%s" % url)
        except BlockingIOError:
            pass
    finally:
        server.close()
        shutil.rmtree(cache, ignore_errors=True)



# ---------------------------------------------------------------- 10. loader and limits
def reload(mode):
    """A GPU library dlclose'd and dlopen'ed again at another address (the old
    range blocked by a PROT_NONE placeholder): cached real-function and helper
    addresses must not be used after their library is gone."""
    def case():
        argv = [hard("reload"), mode]
        a = run(argv, preload=False)
        b = run(argv)
        check(a.rc == 0 and b.rc == 0, "exit codes %d / %d\n%s" % (a.rc, b.rc, b.stderr[-1500:]))
        # moved= may differ: without the recorder, glibc's dlsym(RTLD_DEFAULT)
        # from the program adds a dependency of the program on the library
        # (so dlclose keeps it); with it our wrapper answers and no dependency
        # is added. Every result code must be the same.
        same = lambda out: re.sub(r"moved=\d ", "", out)
        check(same(a.stdout) == same(b.stdout), "output differs:\n%s\n---\n%s" % (a.stdout, b.stdout))
        check(b.stdout.count("moved=1") == 3 and "alloc=0 free=0" in b.stdout and "DONE" in b.stdout,
              "the library was not reloaded elsewhere: " + b.stdout)
        # Still recording after the reloads: the last round's out-of-memory is dumped.
        api = "cuMemAlloc_v2" if mode == "driver" else "cudaMalloc"
        check(b.only_bundle().metadata["api"] == api, "bundle of the OOM after the reloads")
    return case


def reload_storm():
    """Libraries loaded and unloaded on the program's thread while the writer
    thread writes bundles: it lists the loaded modules (environment.json) and
    symbolizes frames in a runtime that the program dlcloses right after each
    out-of-memory. Every call answers as without the recorder, every bundle is
    complete and names the out-of-memory's frames. Under TSan this is the
    hostile case of the loader's state shared with the writer: without the
    collect_modules entry of scripts/tsan.supp it reports, every run, the race
    CI's TSan run once found in fidelity_all (a library name's NUL; see there)."""
    argv = [hard("reload"), "storm"]
    a = run(argv, preload=False)
    # RELOAD_WAIT_DIR: run() starts the program in its work directory, with
    # GPUMEMREC_DIR=<workdir>/dumps.
    b = run(argv, env_extra={"GPUMEMREC_EPISODE_MS": "0", "RELOAD_WAIT_DIR": "dumps"})
    check(a.rc == 0 and b.rc == 0, "exit codes %d / %d\n%s" % (a.rc, b.rc, b.stderr[-1500:]))
    check(a.stdout == b.stdout, "output differs:\n%s\n---\n%s" % (a.stdout, b.stdout))
    check("loaded=0" not in b.stdout and b.stdout.count("OOM rc=2") == 5 and "DONE" in b.stdout,
          "the storm did not run as planned: " + b.stdout)
    bundles = b.bundles()
    check(len(bundles) == 5, "%d bundles for 5 out-of-memory errors" % len(bundles))
    fresh = ["libresolv.so.2", "libanl.so.1", "libutil.so.1", "libnss_dns.so.2", "libBrokenLocale.so.1"]
    for path, lib in zip(bundles, fresh):
        bundle = Bundle(path)
        bundle.check_well_formed()
        check(bundle.metadata["api"] == "cudaMalloc", "api %s" % bundle.metadata["api"])
        fns = bundle.functions(bundle.metadata["stack_id"])
        check(any("storm" in f for f in fns), "the failing call's frames do not name storm(): %s" % fns)
        # environment.json's modules are listed when the bundle is written
        # (docs/bundle-format.md): the library loaded after this failure,
        # before the bundle was on disk, is among them.
        with open(os.path.join(path, "environment.json")) as f:
            modules = json.load(f)["modules"]
        check(any(m.endswith("/" + lib) for m in modules), "%s missing from the modules: %s" % (lib, modules))


def dlsym_default_preloads():
    """dlsym(RTLD_DEFAULT, hooked name) answers as without the recorder,
    whatever else is preloaded (ahead of or after us) and whether a CUDA
    library is loaded or not. Where the recorder is ahead of the other
    library and the function exists, its own wrapper may answer."""
    from gm_e2e import FAKES
    other = os.path.join(FAKES, "libfake_interposer.so")
    names = hook_names()
    for load in ([], ["--load", "libcuda.so.1"], ["--load", "libcudart.so.13"]):
        argv = [hard("dlsym_probe")] + load + names
        for order in ("other_first", "shim_first", "shim_only"):
            libs = {"other_first": (other, SHIM), "shim_first": (SHIM, other), "shim_only": (SHIM,)}[order]
            base_libs = tuple(l for l in libs if l != SHIM)
            a = run(argv, preload=preload_env(*base_libs) if base_libs else False)
            b = run(argv, preload=preload_env(*libs))
            check(a.rc == 0 and b.rc == 0, "exit codes %d / %d" % (a.rc, b.rc))
            for la, lb in zip(a.stdout.splitlines(), b.stdout.splitlines()):
                name, obj_a = la.split(" ", 1)
                obj_b = lb.split(" ", 1)[1]
                ahead = order == "other_first" and obj_a == os.path.basename(other)
                if obj_a == "null" or ahead:
                    check(obj_a == obj_b, "%s %s: %r without the recorder, %r with it" % (order, load, la, lb))
                else:
                    check(obj_b in (obj_a, "libgpumemrec.so"), "%s %s: %r / %r" % (order, load, la, lb))
            check(len(a.stdout.splitlines()) == len(b.stdout.splitlines()), "line counts differ")


def limit_threads():
    """GPUMEMREC_LIMIT under 8 threads allocating at once: the live total
    (as the program counts it, never more than the recorder does) never
    exceeds the limit."""
    # 8 threads that each hold up to 4 chunks against a limit of 8: whether
    # and how often they meet at the limit depends on the scheduler (the
    # version that checked, then acted, overshot in 2 of 3 runs here); the
    # deterministic check is unit.Admit.ManyThreadsNeverExceedTheLimit.
    limit = 8 << 20
    r = run([hard("limit_threads"), "8", "3000", str(1 << 20), "0"], capacity=256 << 20,
            env_extra={"GPUMEMREC_LIMIT": str(limit), "GPUMEMREC_EPISODE_MS": "600000"})
    check(r.rc == 0 and "DONE" in r.stdout, "rc %d\n%s\n%s" % (r.rc, r.stdout, r.stderr[-1500:]))
    kv = dict(x.split("=") for x in r.stdout.split()[:4])
    check(int(kv["OTHER"]) == 0, "unexpected errors: " + r.stdout)
    check(int(kv["MAX_LIVE"]) <= limit, "live bytes %s exceeded GPUMEMREC_LIMIT=%d" % (kv["MAX_LIVE"], limit))
# ---------------------------------------------------------------- 11. the program never notices
def dump_raises_no_signal_xfsz():
    """Writing a bundle past RLIMIT_FSIZE with SIGXFSZ at its default action
    (as in a shell after `ulimit -f`): the kernel sends SIGXFSZ to the writing
    thread; the dump path blocks and consumes it. Same exit code and output
    as without the shim, no bundle, nothing half-written."""
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    for argv, cap in (([program("rt_linked"), "cudaMalloc", str(CHUNK)], 256 << 20),
                      ([program("caching_alloc"), "8", "20"], 16 * 4194304)):
        a = run(argv, preload=False, preexec_fn=limit, capacity=cap)
        check(a.rc == 0, "baseline %s exited %d (the test needs a program that survives the limit)" % (argv[0], a.rc))
        b = run(argv, preexec_fn=limit, capacity=cap)
        check(b.rc == a.rc, "%s: exit code %d with the shim, %d without (SIGXFSZ is %d)\n%s" %
              (argv[0], b.rc, a.rc, signal.SIGXFSZ, b.stderr[-1500:]))
        # caching_alloc's counts of recovered failures vary from run to run (threads)
        vary = r"(driver_ooms|recovered|gave_up|max_step_us|p99_step_us|max_failed_call_us)=\d+"
        check(re.sub(vary, "", normalized(a.stdout)) == re.sub(vary, "", normalized(b.stdout)),
              "output differs:\n%s\n---\n%s" % (a.stdout, b.stdout))
        no_tmp_left(b.dumpdir)
        check(not b.bundles(), "a bundle was written past RLIMIT_FSIZE?")
        check("File too large" in b.stderr, "no clear warning:\n" + b.stderr)


def dump_raises_no_signal_pipe():
    """The shim's stderr line after a dump goes to a pipe whose reader has
    gone (a log collector that died): SIGPIPE must not kill the program."""
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK)]
    results = []
    for preload in (False, True):
        r, w = os.pipe()
        os.close(r)
        env = base_env()
        workdir = tempfile.mkdtemp(prefix="gpumemrec-hard-")
        env["GPUMEMREC_DIR"] = os.path.join(workdir, "dumps")
        if preload:
            env["LD_PRELOAD"] = preload_env()
        p = subprocess.run(argv, env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=w, text=True, timeout=RUN_TIMEOUT_S)
        os.close(w)
        results.append((p.returncode, normalized(p.stdout), workdir))
    (ra, oa, _), (rb, ob, wd) = results
    check(ra == 0, "baseline exited %d" % ra)
    check(rb == ra, "exit code %d with the shim, %d without (SIGPIPE is %d)" % (rb, ra, signal.SIGPIPE))
    check(oa == ob, "output differs:\n%s\n---\n%s" % (oa, ob))
    names = os.listdir(os.path.join(wd, "dumps"))
    check(len([n for n in names if n.startswith("oom_dump_")]) == 1, "bundle not written: %s" % names)
    for _, _, d in results:
        shutil.rmtree(d, ignore_errors=True)


def signal_dump_fds_reused():
    """A daemon-style program closes every descriptor above 2 and opens its
    own files, which get the numbers the shim may have cached: a signal dump
    must not write into them, and later signal dumps must still work."""
    r = run([hard("signal_fds"), "2"], env_extra={"GPUMEMREC_DUMP_SIGNAL": "USR2", "GPUMEMREC_MAX_DUMPS": "0"})
    check(r.rc == 0, "signal_fds exited %d\n%s\n%s" % (r.rc, r.stdout, r.stderr[-1500:]))
    check("FDS first=3" in r.stdout, "own files did not reuse the low descriptors: " + r.stdout)
    check("OWNFILES intact=16/16" in r.stdout, "the program's own files were changed: " + r.stdout)
    check("BUNDLES n=2" in r.stdout, "signal dumps stopped after the descriptors were closed: " + r.stdout)
    bundles = r.bundles()
    check(len(bundles) == 2 and all(Bundle(b).manifest["reason"] == "signal" for b in bundles),
          "expected 2 signal bundles: %s" % bundles)
    for b in bundles:
        Bundle(b).check_well_formed()


def exit_during_dump():
    """The program's SIGTERM handler calls exit() while the writer thread is
    writing the out-of-memory bundle (the failing call has already
    returned). The program's handler runs as it would have, and its exit()
    waits for the writer: exit code 7, one complete bundle whose verdict is
    fatal, no temporary directory left. (Before the writer thread the bundle was written on
    the failing thread itself and this exit() interrupted it: no bundle.)"""
    for attempt in range(3):
        n = 200000 * (attempt + 1)
        # No ledger: the fake driver writes it at exit with malloc, and this
        # program exits from a signal handler (exit() is not
        # async-signal-safe: the program's own hazard).
        r = run([hard("exit_in_dump"), str(n)], capacity=1 << 30, timeout=RUN_TIMEOUT_S,
                env_extra={"GPUMEMREC_STACK_DEPTH": "4", "GPUMEMREC_DUMP_AT_EXIT": "1", "FAKEGPU_LEDGER": ""})
        if "MISSED" in r.stdout:
            continue  # the bundle was written before the watcher saw it: a bigger one
        check(r.rc == 7 and "HANDLER exit(7)" in r.stdout, "rc %d\n%s\n%s" % (r.rc, r.stdout, r.stderr[-1500:]))
        no_tmp_left(r.dumpdir)
        ooms = [b for b in map(Bundle, r.bundles()) if b.manifest["reason"] == "oom"]
        check(len(ooms) == 1, "expected one out-of-memory bundle: %s" % r.bundles())
        ooms[0].check_well_formed()
        # The program's own handler runs at once (it might recover); its
        # exit() waits for the bundle. The verdict: the program exited, or,
        # when the big bundle took longer than EPISODE_MS, no retry came.
        check(ooms[0].metadata["outcome"] == "fatal", "verdict %r: %r" %
              (ooms[0].metadata.get("outcome"), ooms[0].metadata.get("outcome_detail")))
        return
    raise Failure("the bundle was never caught being written: %s" % r.stdout)


def episode_threads():
    """A PyTorch-like caching allocator (tests/programs/caching_alloc.cpp: the
    retry chain of c10/cuda/CUDACachingAllocator.cpp) recovers from an
    out-of-memory every step, then fails for good on a request larger than
    the device. A recovered episode gets no bundle by default
    (GPUMEMREC_RECOVERED=count), it is counted; the fatal one gets exactly one
    bundle, marked fatal, whatever the thread count, and one "bundle:" line.
    The bundle is the fatal episode's first failure, not a later retry."""
    block = 4194304
    for threads in ("1", "8"):
        r = run([program("caching_alloc"), threads, "50"], capacity=16 * block,
                env_extra={"GPUMEMREC_EPISODE_MS": "600000"})
        check(r.rc == 0, "caching_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
        recovered = int(re.search(r"recovered=(\d+)", r.stdout).group(1))
        check(recovered > 10, "caching_alloc recovered %d times; the test needs many" % recovered)
        b = r.only_bundle()
        b.check_well_formed()
        check(b.manifest["outcome"] == "fatal" and b.metadata["outcome"] == "fatal", "outcome %s / %s" %
              (b.manifest.get("outcome"), b.metadata.get("outcome")))
        # A request a step gave up on (several threads: the others held the
        # memory) is also fatal, and its episode, open until the program
        # ends, takes in the final failure: then the bundle is that request's.
        gave_up = int(re.search(r"gave_up=(\d+)", r.stdout).group(1))
        check(gave_up > 0 or b.metadata["requested_bytes"] == block * 1024,
              "the bundle is not the fatal request's: %d" % b.metadata["requested_bytes"])
        lines = [l for l in r.stderr.splitlines() if l.startswith("gpumemrec")]
        bundle_lines = [l for l in lines if "bundle: " in l]
        check(len(bundle_lines) == 1 and "not recovered" in bundle_lines[0], "%s threads: bundle lines:\n%s" %
              (threads, "\n".join(lines[:10])))
        counted = re.search(r"(\d+) out-of-memory failure\(s\) recovered without a bundle", r.stderr)
        n = int(counted.group(1)) if counted else 0
        # One thread, no request given up: one episode per recovered request,
        # exactly. Several threads failing together share an episode, and a
        # request given up keeps its episode open to the end (fatal): fewer.
        if threads == "1" and gave_up == 0:
            check(n == recovered, "%d recovered episodes counted, the program recovered %d requests:\n%s" %
                  (n, recovered, "\n".join(lines[:10])))
        check(n <= recovered, "%s threads: %d recovered episodes counted, %d requests recovered" %
              (threads, n, recovered))
        check(b.metadata["recovered_failures"]["count"] == n, "metadata recovered_failures.count %r, stderr %d" %
              (b.metadata["recovered_failures"]["count"], n))
        first = min(e["timestamp"] for e in b.events
                    if e["event_type"] == "oom" and e["size"] == b.metadata["requested_bytes"] and
                    e["timestamp"] >= b.metadata["timestamp"] - 0.005)
        check(b.metadata["timestamp"] - first < 0.005, "the bundle is not the first failure's (%r, first %r)" %
              (b.metadata["timestamp"], first))
    # Every failure its own episode (GPUMEMREC_EPISODE_MS=0, fatal unless its
    # retry came before any other failure): failures that find the writer
    # two bundles and four waiting records behind (shim/dump/capture/deferred.h) are
    # events in those bundles, said once with their count.
    r = run([program("caching_alloc"), "8", "10"], capacity=16 * block,
            env_extra={"GPUMEMREC_EPISODE_MS": "0", "GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0"})
    check(r.rc == 0, "caching_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
    lines = [l for l in r.stderr.splitlines() if l.startswith("gpumemrec")]
    bundle_lines = [l for l in lines if "bundle: " in l]
    others = [l for l in lines if "bundle: " not in l]
    check(len(bundle_lines) == len(r.bundles()), "%d bundle lines, %d bundles" % (len(bundle_lines), len(r.bundles())))
    said_once = ("got no bundle of their own", "recovered failures are counted",
                 "recovered without a bundle")
    check(len(others) <= 3 and all(any(s in l for s in said_once) for l in others),
          "EPISODE_MS=0: %d other lines on stderr:\n%s" % (len(others), "\n".join(others[:10])))


def signal_burst_during_ooms():
    """100 dump signals while 8 threads keep running out of memory: the
    signal request waits for the out-of-memory bundle being written and is
    not dropped; at least one signal bundle; the program is unaffected."""
    for episode in ("0", "2000"):
        r = run([hard("oom_signal_burst"), "8", "100"], capacity=64 << 20, timeout=180,
                env_extra={"GPUMEMREC_DUMP_SIGNAL": "USR2", "GPUMEMREC_EPISODE_MS": episode,
                           "GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0", "GPUMEMREC_STACK_DEPTH": "4"})
        check(r.rc == 0 and "TOTAL errors=0" in r.stdout and "DONE" in r.stdout,
              "EPISODE_MS=%s: rc %d\n%s\n%s" % (episode, r.rc, r.stdout, r.stderr[-1500:]))
        check("SIGNAL_BUNDLE seen=1" in r.stdout, "EPISODE_MS=%s: no signal bundle (request dropped?)\n%s" %
              (episode, r.stderr[-1500:]))
        sig = [b for b in map(Bundle, r.bundles()) if b.manifest["reason"] == "signal"]
        check(sig, "no signal bundle kept")
        # Complete (every file, counts agree). Not the snapshot.pickle
        # cross-check: a cut while 8 threads free and re-allocate the same
        # addresses can fail it (seen once under ASan; reported, not ours).
        m, md = sig[0].manifest, sig[0].metadata
        for f in ("metadata.json", "events.json", "allocations.json", "stacks.json", "manifest.json"):
            check(f in m["files"] and os.path.isfile(os.path.join(sig[0].path, f)), "signal bundle lacks " + f)
        check(md["live_bytes"] == sum(a["size"] for a in sig[0].allocations), "live_bytes != sum(allocations)")


def names_pid_namespaces():
    """Processes in separate PID namespaces (both pid 1) fail in the same
    second and dump into one directory: every bundle is kept."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return "skip"
    if subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"], capture_output=True).returncode != 0:
        return "skip"
    workdir = tempfile.mkdtemp(prefix="gpumemrec-ns-")
    dumpdir = os.path.join(workdir, "dumps")
    env = base_env()
    env.update({"LD_PRELOAD": preload_env(), "GPUMEMREC_DIR": dumpdir, "GPUMEMREC_MAX_DUMPS": "0",
                "GPUMEMREC_MAX_TOTAL_MB": "0"})
    argv = ["unshare", "-p", "-f", "--mount-proc", program("rt_linked"), "cudaMalloc", str(CHUNK)]
    collided, total = False, 0
    for _ in range(5):
        procs = [subprocess.Popen(argv, env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True) for _ in range(4)]
        errs = [p.communicate(timeout=RUN_TIMEOUT_S)[1] for p in procs]
        total += 4
        names = sorted(n for n in os.listdir(dumpdir) if n.startswith("oom_dump_"))
        check(not any(n.startswith(".tmp") for n in os.listdir(dumpdir)), "temporary directory left behind")
        check(len(names) == total, "%d processes, %d bundles:\n%s\n%s" % (total, len(names), names,
                                                                          "\n".join(errs)))
        prefixes = ["_".join(n.split("_")[:6]) for n in names]  # oom_dump_<stamp>_<pid>_<backend>_<seq>
        collided = collided or len(set(prefixes)) < len(prefixes)
        if collided:
            break
    check(collided, "could not make two namespaces fail in the same second (names: %s)" % names)
    for n in names:
        b = Bundle(os.path.join(dumpdir, n))
        b.check_well_formed()
        check(b.manifest["pid"] == 1, "pid in the namespace should be 1: %s" % b.manifest["pid"])
    shutil.rmtree(workdir, ignore_errors=True)


def relative_dir_chdir():
    """GPUMEMREC_DIR relative: resolved when the shim starts, so a program
    that chdir()s before its out-of-memory still writes where it started."""
    for rel in ("dumps", "./dumps", "sub/../dumps"):
        r0 = run(["true"], preload=False)
        os.makedirs(os.path.join(r0.workdir, "elsewhere"))
        os.makedirs(os.path.join(r0.workdir, "sub"))
        r = run([hard("chdir_oom"), os.path.join(r0.workdir, "elsewhere")], env_extra={"GPUMEMREC_DIR": rel})
        check(r.rc == 0 and "CHDIR rc=0" in r.stdout and "OOM rc=2" in r.stdout, "chdir_oom: %s" % r.stdout)
        check(not os.path.exists(os.path.join(r0.workdir, "elsewhere", "dumps")),
              "%s: bundle written relative to the new working directory" % rel)
        b = r.only_bundle()  # in <workdir>/dumps, where the program started
        b.check_well_formed()
        cfg_dir = b.json("environment.json")["config"]["dir"]
        check(os.path.isabs(cfg_dir) and os.path.realpath(cfg_dir) == os.path.realpath(r.dumpdir),
              "%s recorded as %s" % (rel, cfg_dir))
    # The start directory was removed before the program started: getcwd
    # fails; one warning, the program unchanged.
    r0 = run(["true"], preload=False)
    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$@"'
    argv = ["sh", "-c", script, "sh", hard("chdir_oom"), "/"]
    a = run(argv, preload=False)
    b = run(argv, env_extra={"GPUMEMREC_DIR": "dumps"})
    check(a.rc == b.rc == 0 and a.stdout == b.stdout, "behaviour changed:\n%s\n%s" % (b.stdout, b.stderr))
    lines = [l for l in b.stderr.splitlines() if "relative GPUMEMREC_DIR" in l]
    check(len(lines) == 1, "expected one warning about the relative directory:\n" + b.stderr)


CASES = {
    "fidelity_all": fidelity_all,
    "concurrency": concurrency, "dump_while_running": dump_while_running,
    "fork_threads": fork_threads, "fork_unwind_churn": fork_unwind_churn, "follow_exec_1": follow_exec("1"), "follow_exec_0": follow_exec("0"),
    "python_mp_fork": python_mp("fork"), "python_mp_spawn": python_mp("spawn"),
    "signal_dump": signal_dump, "signal_off_by_default": signal_off_by_default,
    "signal_program_handler_after": signal_program_handler_after, "signal_program_ignores": signal_program_ignores,
    "signal_chains_to_earlier_handler": signal_chains_to_earlier_handler, "exit_dump": exit_dump,
    "lowmem_failmalloc": lowmem_failmalloc, "lowmem_rlimit": lowmem_rlimit,
    "lowmem_address_space": lowmem_address_space,
    "disk_missing_dir": disk_missing_dir, "disk_unwritable": disk_unwritable, "disk_full_fsize": disk_full_fsize,
    "disk_full_tmpfs": disk_full_tmpfs, "disk_symlink": disk_symlink,
    "bad_config_malformed": bad_config("malformed"), "bad_config_negative": bad_config("negative"),
    "bad_config_huge": bad_config("huge"), "bad_config_empty": bad_config("empty"),
    "security_permissions": security_permissions, "security_untrusted_dir": security_untrusted_dir, "security_redaction": security_redaction,
    "security_setuid": security_setuid, "security_no_network": security_no_network,
    "reload_driver": reload("driver"), "reload_runtime": reload("runtime"), "reload_storm": reload_storm,
    "dlsym_default_preloads": dlsym_default_preloads, "limit_threads": limit_threads,
    "dump_raises_no_signal_xfsz": dump_raises_no_signal_xfsz, "dump_raises_no_signal_pipe": dump_raises_no_signal_pipe,
    "signal_dump_fds_reused": signal_dump_fds_reused, "exit_during_dump": exit_during_dump,
    "episode_threads": episode_threads, "signal_burst_during_ooms": signal_burst_during_ooms,
    "names_pid_namespaces": names_pid_namespaces, "relative_dir_chdir": relative_dir_chdir,
}

if __name__ == "__main__":
    sys.exit(main(CASES))
