#!/usr/bin/env python3
"""The shim never changes what the program does, and its own behaviour
(episodes, pruning, configuration, unwritable directories) is as documented."""
import os
import re
import subprocess
import sys

from gm_e2e import (BUILD, E2E_BIN, PRELOAD_PREFIX, RUN_TIMEOUT_S, Failure, check, check_live_matches_ledger, main,
                    normalized, preload_env, program, run, auto_unwinder, system_has_libunwind)

CHUNK = 16 << 20

FIDELITY_RUNS = [
    ["rt_linked", "cudaMalloc", str(CHUNK)], ["rt_linked", "cudaMallocPitch", str(CHUNK)],
    ["rt_linked", "cudaMallocAsync", str(CHUNK)], ["drv_linked", "cuMemAlloc_v2", str(CHUNK)],
    ["drv_linked", "ptsz", str(CHUNK)], ["static_rt_path", "cuMemAlloc", str(CHUNK)],
    ["static_rt_path", "cuMemAllocAsync", str(CHUNK)], ["dlsym_driver", "cuMemAlloc_v2", str(CHUNK)],
    ["vmm", "cuMemCreate", str(CHUNK)], ["hip_linked", "hipMalloc", str(CHUNK)],
    ["hip_procaddr", "hipMalloc", str(CHUNK)],
]


def same_behaviour(argv, env_extra=None, capacity=256 << 20):
    a = run(argv, preload=False, capacity=capacity)
    b = run(argv, preload=True, env_extra=env_extra, capacity=capacity)
    check(a.rc == b.rc, "%s: exit code %d without the shim, %d with it" % (argv[0], a.rc, b.rc))
    check(normalized(a.stdout) == normalized(b.stdout), "%s: output differs with the shim:\n--- without\n%s\n--- with\n%s" %
          (" ".join(argv), a.stdout[-1500:], b.stdout[-1500:]))
    return a, b


def fidelity():
    for argv in FIDELITY_RUNS:
        same_behaviour([program(argv[0])] + argv[1:])


def dlsym_pseudo_handles():
    exe = os.path.join(E2E_BIN, "dlsym_next")
    a, b = same_behaviour([exe])
    check("next_from_main=A" in a.stdout and "next_from_a=B" in a.stdout, "unexpected baseline: " + a.stdout)


def disable():
    a, b = same_behaviour([program("rt_linked"), "cudaMalloc", str(CHUNK)], {"GPUMEMREC_DISABLE": "1"})
    check(not b.bundles(), "GPUMEMREC_DISABLE=1 still wrote a bundle")
    check("gpumemrec" not in b.stderr.replace("GPUMEMREC_DISABLE", ""), "disabled shim printed: " + b.stderr)


def episode_one_bundle():
    r = run([program("mt_alloc"), "4", "3000", str(8 << 20)], capacity=64 << 20)
    check(r.rc == 0, "mt_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
    ooms = sum(int(l.split("ooms=")[1].split()[0]) for l in r.stdout.splitlines() if "ooms=" in l)
    check(ooms > 1, "mt_alloc saw %d OOMs; the test needs several" % ooms)
    b = r.only_bundle()
    b.check_well_formed()
    check(r.stderr.count("bundle: ") == 1, "more than one bundle line on stderr:\n" + r.stderr[-1500:])


def episodes_pruned():
    r = run([program("mt_alloc"), "1", "300", str(8 << 20)], capacity=64 << 20,
            env_extra={"GPUMEMREC_EPISODE_MS": "0", "GPUMEMREC_MAX_DUMPS": "2"})
    check(r.rc == 0, "mt_alloc exited %d" % r.rc)
    bundles = r.bundles()
    check(len(bundles) == 2, "expected 2 bundles after pruning, found %d" % len(bundles))


def ranks_share_dir():
    """16 processes (the ranks of one job) OOMing at once into one directory
    with GPUMEMREC_MAX_DUMPS=5, four rounds: pruning is
    serialised by a lock on the directory, so after every round exactly 5
    bundles remain; in a burst the earliest are kept, and what each process
    says on stderr is true (its "bundle:" path exists, a pruned one does not)."""
    import tempfile
    from gm_e2e import base_env, preload_env
    work = tempfile.mkdtemp(prefix="gpumemrec-ranks-")
    dumps = os.path.join(work, "dumps")
    reported = set()
    for rnd in range(4):
        procs = []
        for rank in range(16):
            env = base_env(256 << 20)
            env.update({"LD_PRELOAD": preload_env(), "GPUMEMREC_DIR": dumps, "GPUMEMREC_MAX_DUMPS": "5",
                        "GPUMEMREC_MAX_TOTAL_MB": "0", "RANK": str(rank), "WORLD_SIZE": "16"})
            procs.append(subprocess.Popen([program("rt_linked"), "cudaMalloc", str(CHUNK)], env=env, cwd=work,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, err = p.communicate(timeout=RUN_TIMEOUT_S)
            check(p.returncode == 0, "round %d: a rank exited %d: %s" % (rnd, p.returncode, err[-500:]))
            for m in re.finditer(r"bundle: (\S+)", err):
                reported.add(os.path.basename(m.group(1)))
        kept = sorted(n for n in os.listdir(dumps) if n.startswith("oom_dump_"))
        check(len(kept) == 5, "round %d: %d bundles kept, not 5: %r" % (rnd, len(kept), kept))
        check(not [n for n in os.listdir(dumps) if n.startswith(".tmp-")], "round %d: temporary left" % rnd)
        check(set(kept) <= reported, "round %d: a kept bundle was never reported: %r" % (rnd, set(kept) - reported))
        stale = [n for n in reported if n not in kept and os.path.exists(os.path.join(dumps, n))]
        check(not stale, "round %d: %r" % (rnd, stale))
    # All 64 failures came within seconds: one burst, whose 5 earliest stay
    # (the first round's).
    times = sorted(os.stat(os.path.join(dumps, n)).st_mtime_ns for n in os.listdir(dumps) if n.startswith("oom_dump_"))
    check(len(times) == 5, "bundles at the end: %d" % len(times))


BAD_VALUES = {
    "GPUMEMREC_RING_EVENTS": "lots", "GPUMEMREC_STACK_DEPTH": "-1", "GPUMEMREC_EPISODE_MS": "1e3",
    "GPUMEMREC_MAX_DUMPS": "", "GPUMEMREC_MAX_TOTAL_MB": "99999999999999999999999", "GPUMEMREC_LOG_LEVEL": "loud",
    "GPUMEMREC_DISABLE": "maybe", "GPUMEMREC_PYTHON_STACKS": "2", "GPUMEMREC_LIMIT": "huge",
    "GPUMEMREC_FAIL_AFTER": "-5", "GPUMEMREC_DUMP_SIGNAL": "KILL", "GPUMEMREC_DUMP_AT_EXIT": "sometimes",
    "GPUMEMREC_FOLLOW_EXEC": "perhaps", "GPUMEMREC_EXIT_WAIT_S": "soon", "GPUMEMREC_UNWINDER": "libgcc",
}


def bad_config():
    a, b = same_behaviour([program("rt_linked"), "cudaMalloc", str(CHUNK)], BAD_VALUES)
    for var in BAD_VALUES:
        n = sum(1 for l in b.stderr.splitlines() if var + "=" in l)
        check(n == 1, "expected one warning for %s, got %d:\n%s" % (var, n, b.stderr))
    b.only_bundle().check_well_formed()  # defaults applied: still records and dumps


def unwritable_dir():
    a, b = same_behaviour([program("mt_alloc"), "1", "2000", str(8 << 20)],
                          {"GPUMEMREC_DIR": "/proc/gpumemrec-cannot-write", "GPUMEMREC_EPISODE_MS": "0"},
                          capacity=64 << 20)
    n = b.stderr.count("cannot write a bundle")
    check(n == 1, "expected the directory problem once on stderr, got %d:\n%s" % (n, b.stderr[-1500:]))


def stack_depth_off():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], env_extra={"GPUMEMREC_STACK_DEPTH": "0"})
    b = r.only_bundle()
    b.check_well_formed()
    check(all(e["stack_id"] == 0 for e in b.events), "stacks recorded with STACK_DEPTH=0")


def unwinders():
    """GPUMEMREC_UNWINDER: which unwinder took the stacks is in
    environment.json; each one gives the program's own frames; glibc's
    fallback is announced once on stderr unless it was asked for. The
    bundled copy is what the build put beside the library (shim/CMakeLists.txt)."""
    tsan = "tsan" in PRELOAD_PREFIX  # the TSan build always unwinds with glibc (stack_capture.cpp)
    bundled = os.path.exists(os.path.join(BUILD, "bin", "libunwind.so.8"))
    system = system_has_libunwind()
    want = {"auto": auto_unwinder(),
            "system": "libunwind" if system else "glibc backtrace",
            "bundled": "libunwind (bundled)" if bundled else "glibc backtrace",
            "glibc": "glibc backtrace"}
    for mode, backend in want.items():
        backend = "glibc backtrace" if tsan else backend
        r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], env_extra={"GPUMEMREC_UNWINDER": mode})
        b = r.only_bundle()
        b.check_well_formed()
        got = b.json("environment.json")["config"]["unwinder"]
        check(got == backend, "GPUMEMREC_UNWINDER=%s: unwinder %r, expected %r" % (mode, got, backend))
        warned = "could not be loaded" in r.stderr
        check(warned == (backend == "glibc backtrace" and mode != "glibc" and not tsan),
              "GPUMEMREC_UNWINDER=%s: warning %s on stderr:\n%s" % (mode, "present" if warned else "absent",
                                                                    r.stderr[-1500:]))
        oom = [e for e in b.events if e["event_type"] == "oom"]
        check(len(oom) == 1, "GPUMEMREC_UNWINDER=%s: %d oom events" % (mode, len(oom)))
        mods = [f.get("module", "") for f in b.frames(oom[0]["stack_id"]) if f.get("kind") == "native"]
        check(any(m.endswith("/rt_linked") for m in mods),
              "GPUMEMREC_UNWINDER=%s: no frame of the program in the failing call's stack: %r" % (mode, mods))


def threads_ledger():
    r = run([program("mt_alloc"), "8", "5000", str(4 << 20)], capacity=1 << 40,
            env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1", "GPUMEMREC_RING_EVENTS": "1024"})
    check(r.rc == 0, "mt_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
    b = r.only_bundle()
    b.check_well_formed()
    check(b.metadata["reason"] == "exit", "reason %s" % b.metadata["reason"])
    check_live_matches_ledger(b, r.ledger())
    total = b.metadata["total_event_count"]
    check(total >= 8 * 5000, "only %d events recorded" % total)
    # The window is the last 1024 seqs, cut by time at its start (about
    # 1/16 + 1/64 of the ring, 80 events); its holes are the unused seqs of
    # the threads' blocks (16 seqs each with a ring of 1024:
    # docs/bundle-format.md): at most one block per thread at the cut, one
    # more for a thread whose block fell behind. Every other event is there.
    seqs = [e["seq"] for e in b.events]
    check(len(set(seqs)) == len(seqs) and all(total - 1024 < s <= total for s in seqs),
          "ring window is not the last 1024 seqs")
    check(len(seqs) >= 1024 - 80 - 9 * 16 * 2, "ring has %d holes after all threads finished" % (1024 - len(seqs)))


def nvcc(name):
    def case():
        exe = os.path.join(BUILD, "tests", "programs", name)
        if not os.path.exists(exe):
            return "skip"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMREC_")}
        env.pop("LD_PRELOAD", None)
        a = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        env["LD_PRELOAD"] = preload_env()  # the sanitizer's runtime first in the sanitizer builds
        env["GPUMEMREC_DIR"] = "/tmp/gpumemrec-nvcc-unused"
        b = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        check(a.returncode == b.returncode, "exit code %d vs %d" % (a.returncode, b.returncode))
        check(a.stdout == b.stdout, "NVIDIA runtime output differs with the shim:\n%s\n---\n%s" % (a.stdout, b.stdout))
        check(a.stdout.strip(), "program printed nothing")
    return case


CASES = {
    "fidelity": fidelity, "dlsym_pseudo_handles": dlsym_pseudo_handles, "disable": disable,
    "episode_one_bundle": episode_one_bundle, "episodes_pruned": episodes_pruned, "ranks_share_dir": ranks_share_dir,
    "bad_config": bad_config,
    "unwritable_dir": unwritable_dir, "stack_depth_off": stack_depth_off, "threads_ledger": threads_ledger,
    "unwinders": unwinders,
    "nvcc_static": nvcc("nvcc_static"), "nvcc_shared": nvcc("nvcc_shared"),
}

if __name__ == "__main__":
    sys.exit(main(CASES))
