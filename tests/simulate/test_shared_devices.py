#!/usr/bin/env python3
"""simulate.shared_devices: the processes of one simulation run share each
simulated device (simulate/core/shared_ledger.h). Each case drives
device_probe processes (tests/simulate/device_probe.cpp) on a 1 GiB H100
(GPUMEMREC_SIMULATE=h100-80gb:2, FAKEGPU_CAPACITY) and checks the driver's
capacity check, cuMemGetInfo and NVML's process list against what the other
processes hold; a killed process's share comes back; processes started at once (released together from a gate) all join;
a process of another card, a process without the run's id and a table left
by an earlier run are not shared with.

Usage: test_shared_devices.py DEVICE_PROBE SIMULATED_LIB_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

PROBE, SIMDIR = sys.argv[1], sys.argv[2]
GIB = 1 << 30
BASE = {"GPUMEMREC_SIMULATE": "h100-80gb:2", "FAKEGPU_CAPACITY": str(GIB), "FAKEGPU_CONTEXT_BYTES": "0"}
SHM = "/dev/shm/gpumemrec-sim-%d-" % os.getuid()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


# Waits until the gate file exists, then becomes the probe (same pid): the
# processes released together load the driver at the same moment.
GATED = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.0002)\nos.execv(sys.argv[2], sys.argv[2:])"


class Probe:
    def __init__(self, run, gate=None, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_", "LOCAL_RANK"))}
        env.update(BASE)
        if run is not None:
            env["GPUMEMREC_SIM_RUN"] = run
        env.update(extra)
        argv = [sys.executable, "-c", GATED, gate, PROBE] if gate else [PROBE]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, universal_newlines=True, bufsize=1)

    def __call__(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def free(self):
        return int(self("info").split()[1])

    def nvml(self, device):
        self.p.stdin.write("nvml %d\n" % device)
        self.p.stdin.flush()
        rows = {}
        for line in iter(self.p.stdout.readline, ""):
            if line.strip() == "end":
                break
            pid, used = line.split()
            rows[int(pid)] = int(used)
        return rows

    def end(self, how="exit"):
        if self.p.poll() is None:
            self.p.stdin.write(how + "\n")
            self.p.stdin.flush()
        self.p.wait(timeout=30)
        return self.p.stderr.read()


def share_capacity():
    """Two processes on device 0 of one run: each sees the other's bytes as
    used, the capacity check counts them, NVML lists both; device 1 is
    apart. A killed process's share comes back at the next check short of
    room."""
    run = uuid.uuid4().hex
    a, b = Probe(run), Probe(run)
    check(a("device 0") == "ok" and b("device 0") == "ok", "device 0")
    free0 = a.free()
    held = int(free0 * 0.6) // 512 * 512
    check(a("alloc %d" % held) == "ok", "A takes 60%")
    check(b.free() == free0 - held, "B's free: %d, want %d" % (b.free(), free0 - held))
    check(b("alloc %d" % held) == "error 2", "B cannot take 60% more: CUDA_ERROR_OUT_OF_MEMORY")
    third = int(free0 * 0.3) // 512 * 512
    check(b("alloc %d" % third) == "ok", "B takes 30%")
    rows = b.nvml(0)
    check(rows.get(a.p.pid) == held and rows.get(b.p.pid) == third, "NVML device 0: %s" % rows)
    check(b("device 1") == "ok" and b("alloc %d" % held) == "ok", "device 1 is not shared")
    rows = a.nvml(1)
    check(rows.get(b.p.pid) == held and rows.get(a.p.pid, 0) == 0, "NVML device 1: B's bytes: %s" % rows)
    a.end("kill")
    check(b("device 0") == "ok" and b("alloc %d" % held) == "ok", "A killed: its 60% is free again")
    check(a.p.pid not in b.nvml(0), "NVML no longer lists A")
    b.end()
    check(not os.path.exists(SHM + run), "the last process's exit leaves no table behind")


def exit_without_destructors():
    """A process that ends in _exit() (no library destructor) leaves its
    slot: its pid's death frees it all the same."""
    run = uuid.uuid4().hex
    a, b = Probe(run), Probe(run)
    a("device 0")
    b("device 0")
    half = a.free() // 2 // 512 * 512 + 512
    check(a("alloc %d" % half) == "ok", "A takes half")
    check(b("alloc %d" % half) == "error 2", "B cannot take half")
    a.end("_exit")
    check(b("alloc %d" % half) == "ok", "A gone without destructors: B takes half")
    b.end()


def other_card_and_no_run():
    """A process of the run that simulates another card says so and keeps
    its devices; processes without GPUMEMREC_SIM_RUN each make their own run."""
    run = uuid.uuid4().hex
    a = Probe(run)
    a("device 0")
    most = int(a.free() * 0.9) // 512 * 512
    check(a("alloc %d" % most) == "ok", "A takes 90%")
    c = Probe(run, GPUMEMREC_SIMULATE="h200-141gb:2")
    c("device 0")
    check(c("alloc %d" % (GIB // 2)) == "ok", "an H200 process is not held back by the H100's bytes")
    err = c.end()
    check("its devices are its own" in err and "h100-80gb:2" in err, "the other card's line: %r" % err)
    loner = Probe(None)
    loner("device 0")
    check(loner("alloc %d" % most) == "ok", "no run id: a run of its own")
    loner.end()
    a.end()


def launcher_exports_the_run():
    """The first process that loads the simulated driver (a launcher)
    exports the run to the processes it starts, and removes the table at
    its exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_"))}
    env.update(BASE, LD_PRELOAD=os.path.join(SIMDIR, "libcuda.so.1"))
    out = subprocess.run(["bash", "-c", 'echo "$GPUMEMREC_SIM_RUN"; ls "%s$GPUMEMREC_SIM_RUN"' % SHM], env=env,
                         stdout=subprocess.PIPE, universal_newlines=True, timeout=60).stdout.split()
    check(len(out) == 2 and re.fullmatch(r"[0-9a-f]{32}", out[0]) is not None, "the launcher's run: %s" % out)
    check(len(out) == 2 and out[1] == SHM + out[0], "the table exists while the launcher runs")
    check(len(out) == 2 and not os.path.exists(SHM + out[0]), "the launcher removed its table")


def stale_table_pruned():
    """A table whose maker and processes all died without cleaning up is
    removed by the next run that starts; a LOCAL_RANK past the devices is
    named in one line."""
    run = uuid.uuid4().hex
    a = Probe(run)
    a("device 0")
    a("alloc 1048576")
    a.end("_exit")
    check(os.path.exists(SHM + run), "a dead run's table is left behind")
    b = Probe(uuid.uuid4().hex, LOCAL_RANK="3")
    b("info")
    err = b.end()
    check(not os.path.exists(SHM + run), "the next run removed the dead run's table")
    check("LOCAL_RANK=3 but GPUMEMREC_SIMULATE=h100-80gb:2 presents 2 device(s)" in err, "LOCAL_RANK line: %r" % err)


def started_together():
    """Processes of one run started at once (torchrun's ranks) all join its
    table: one makes it, the others may open it before its maker has sized
    it (a zero-length file) and wait. 20 rounds of 6 processes; each takes
    1 MiB on device 0, and each sees all six in NVML's list."""
    for _ in range(20):
        run = uuid.uuid4().hex
        gate = tempfile.mktemp(prefix="gpumemrec-gate-")
        probes = [Probe(run, gate) for _ in range(6)]
        open(gate, "w").close()  # all six exec at once
        for p in probes:
            p("device 0")
            p("alloc %d" % (1 << 20))
        pids = {p.p.pid for p in probes}
        for p in probes:
            seen = set(p.nvml(0))
            if seen != pids:
                check(False, "started together: pid %d sees %s of %s" % (p.p.pid, sorted(seen), sorted(pids)))
        for p in probes:
            p.end()
        os.unlink(gate)


CASES = [share_capacity, started_together, exit_without_destructors, other_card_and_no_run, launcher_exports_the_run,
         stale_table_pruned]

if __name__ == "__main__":
    start = time.time()
    for case in CASES:
        case()
    print("%d cases, %d failures, %.1f s" % (len(CASES), len(failures), time.time() - start))
    sys.exit(1 if failures else 0)
