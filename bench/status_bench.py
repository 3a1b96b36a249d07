#!/usr/bin/env python3
"""status_bench.py: what the status region (GPUMEMREC_STATUS) and
`gpumemrec top` cost, side by side, in one run (docs/performance.md, "The
status region").

1. The recorder's peak keeper thread at a fixed event rate (bench/status_load
   on the null driver, default 1,000,000 events a second, with a ring of
   --ring events: 1,048,576 by default, so that the keeper keeps up on a
   loaded machine; the default ring's keeper loses events at ~700,000 a
   second there, with or without the region): the CPU time of its thread
   and of the naming thread (gpumemrec-names, there only while watched) with
   GPUMEMREC_STATUS=0, =1, and =1 while `gpumemrec top` watches the process
   (names on), as a share of one core; the repetitions interleaved in a
   shuffled order.
2. The intercepted call: bench/alloc_bench_null's thread CPU time per
   cudaMalloc + cudaFree pair without the shim (the floor), with the shim
   and GPUMEMREC_STATUS=0, and with =1, interleaved, medians.
3. `gpumemrec top` itself watching N processes (default 16, each
   status_load at 2,000 events a second with 1,000 live allocations from 100
   call paths): its CPU time over S seconds at --interval 1, in plain text
   (-b) and on its full screen in tmux (when tmux is there).

  python3 bench/status_bench.py [--build-dir build] [--reps 5] [--rate 1000000] [--seconds 10]
      [--procs 16] [--ring 1048576] [--quick]

Stdlib only. Prints one table.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


class Bench:
    def __init__(self, a):
        self.a = a
        b = os.path.abspath(a.build_dir)
        self.shim = os.path.join(b, "bin", "libgpumemrec.so")
        self.tool = os.path.join(b, "bin", "gpumemrec")
        self.load = os.path.join(b, "bench", "status_load")
        self.pairs = os.path.join(b, "bench", "alloc_bench_null")
        for p in (self.shim, self.tool, self.load, self.pairs):
            if not os.path.exists(p):
                sys.exit("status_bench: missing %s (cmake --build %s --target gpumemrec_bench gpumemrec)" % (p, b))
        self.work = tempfile.mkdtemp(prefix="gpumemrec-status-bench-")
        self.status_dir = os.path.join(self.work, "status")

    def env(self, status, shim=True):
        e = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMREC_")}
        if shim:
            e["LD_PRELOAD"] = self.shim
        e.update({"GPUMEMREC_STATUS": status, "GPUMEMREC_STATUS_DIR": self.status_dir,
                  "GPUMEMREC_DIR": os.path.join(self.work, "dumps"), "GPUMEMREC_STACK_DEPTH": "16",
                  "GPUMEMREC_RING_EVENTS": str(self.a.ring)})
        return e

    def keeper_run(self, mode):
        """One status_load run; the keeper's share of a core and the rate."""
        argv = [self.load, "--rate", str(self.a.rate), "--seconds", str(self.a.seconds), "--live", "1000",
                "--sites", "100"]
        p = subprocess.Popen(argv, env=self.env("0" if mode == "off" else "1"), stdout=subprocess.PIPE, text=True)
        watcher = None
        if mode == "watched":
            watcher = subprocess.Popen([self.tool, "top", "-b", "--interval", "1", "--dir", self.status_dir,
                                        str(p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env=self.env("0", shim=False))
        out = p.communicate()[0]
        if watcher:
            watcher.terminate()
            watcher.wait()
        res = next(kv(l) for l in out.splitlines() if l.startswith("RESULT"))
        threads = {kv(l)["name"]: int(kv(l)["cpu_ns"]) for l in out.splitlines() if l.startswith("THREAD")}
        wall_ns = float(res["seconds"]) * 1e9
        # The update runs on the keeper's thread; the names (only while top
        # watches) on gpumemrec-names: both are the region's background cost.
        ns = threads.get("gpumemrec-peak", 0) + threads.get("gpumemrec-names", 0)
        return 100.0 * ns / wall_ns, float(res["events_per_s"])

    def pair_run(self, mode):
        env = self.env("1" if mode == "status on" else "0", shim=mode != "no shim (floor)")
        out = subprocess.run([self.pairs, "pairs", "--pairs", str(self.a.pairs), "--warmup", "20000"], env=env,
                             capture_output=True, text=True).stdout
        return float(next(kv(l) for l in out.splitlines() if l.startswith("RESULT"))["cpu_ns_per_pair"])

    def interleaved(self, modes, fn):
        got = {m: [] for m in modes}
        for _ in range(self.a.reps):
            order = list(modes)
            random.shuffle(order)
            for m in order:
                got[m].append(fn(m))
        return got

    def top_cost(self):
        """top's CPU share watching N status_load processes, plain and full screen."""
        secs = self.a.seconds
        procs = [subprocess.Popen([self.load, "--rate", "2000", "--seconds", str(secs * 3 + 10), "--live", "1000",
                                   "--sites", "100"], env=self.env("1"), stdout=subprocess.DEVNULL)
                 for _ in range(self.a.procs)]
        rows = []
        try:
            time.sleep(1)
            t0 = time.monotonic()
            top = subprocess.Popen([self.tool, "top", "-b", "--interval", "1", "-n", str(secs), "--dir",
                                    self.status_dir], stdout=subprocess.DEVNULL, env=self.env("0", shim=False))
            _, _, ru = os.wait4(top.pid, 0)
            wall = time.monotonic() - t0
            rows.append(("top -b, %d processes" % self.a.procs, 100.0 * (ru.ru_utime + ru.ru_stime) / wall))
            if shutil.which("tmux"):
                rows.append(("top full screen (tmux), %d processes" % self.a.procs, self.top_in_tmux(secs)))
        finally:
            for p in procs:
                p.kill()
                p.wait()
        return rows

    def top_in_tmux(self, secs):
        sock = os.path.join(self.work, "tmux.sock")
        env = self.env("0", shim=False)
        env.update({"TERM": "screen", "LANG": "C.UTF-8"})
        subprocess.run(["tmux", "-S", sock, "-u", "new-session", "-d", "-x", "80", "-y", "24",
                        "%s top --interval 1 --dir %s" % (self.tool, self.status_dir)], env=env, check=True)
        pid = int(subprocess.run(["tmux", "-S", sock, "list-panes", "-F", "#{pane_pid}"], env=env,
                                 capture_output=True, text=True).stdout.split()[0])

        def cpu():
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        time.sleep(1)
        c0, t0 = cpu(), time.monotonic()
        time.sleep(secs)
        share = 100.0 * (cpu() - c0) / (time.monotonic() - t0)
        subprocess.run(["tmux", "-S", sock, "kill-server"], env=env)
        return share


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rate", type=int, default=1000000)
    ap.add_argument("--ring", type=int, default=1048576, help="GPUMEMREC_RING_EVENTS of the status_load runs")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--pairs", type=int, default=200000)
    ap.add_argument("--quick", action="store_true", help="1 repetition of 2 s, 4 processes: checks that it runs")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.seconds, a.procs, a.pairs = 1, 2, 4, 20000
    b = Bench(a)
    try:
        keeper = b.interleaved(["off", "on", "watched"], b.keeper_run)
        pairs = b.interleaved(["no shim (floor)", "status off", "status on"], b.pair_run)
        tops = b.top_cost()
    finally:
        shutil.rmtree(b.work, ignore_errors=True)
    print("load %.1f, %d cores, %d repetitions, ring %d events" % (os.getloadavg()[0], os.cpu_count(), a.reps,
                                                                     a.ring))
    print("%-44s %12s %14s" % ("keeper + names threads, status_load", "% of a core", "events/s"))
    for m, label in (("off", "GPUMEMREC_STATUS=0"), ("on", "GPUMEMREC_STATUS=1"), ("watched", "=1, top watching")):
        shares = [s for s, _ in keeper[m]]
        print("%-44s %12.2f %14.0f   (runs %s)" % (label, med(shares), med([r for _, r in keeper[m]]),
                                                   " ".join("%.2f" % s for s in shares)))
    print("%-44s %12.2f" % ("added by the status region (median on - off)",
                             med([s for s, _ in keeper["on"]]) - med([s for s, _ in keeper["off"]])))
    print("%-44s %12s" % ("alloc_bench_null, one thread", "ns per pair"))
    for m in ("no shim (floor)", "status off", "status on"):
        print("%-44s %12.0f   (runs %s)" % (m, med(pairs[m]), " ".join("%.0f" % x for x in pairs[m])))
    for label, share in tops:
        print("%-44s %12.2f %% of a core" % (label, share))


if __name__ == "__main__":
    main()
