#!/usr/bin/env python3
"""Signal dumps during an out-of-memory storm: every request (handler run)
is served and accounted for (metadata.json signal_requests).

The program (tests/hardening/oom_signal_burst, signals=0) keeps 4 threads
failing cudaMalloc and says READY once its workers have failed and the
recorder's handler is installed; this test sends the signals from its own
pid. Nothing here waits a fixed time: each step waits for what it needs (a
line, a published bundle), up to a limit only a hang reaches (the storm
keeps the writer busy, and scripts/under-load.sh runs this with every core
busy).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import shutil

from gm_e2e import BUILD, base_env, check, main, preload_env

HARD = os.path.join(BUILD, "tests", "hardening")
WAIT_S = 240  # for one signal bundle during the storm; only a hang reaches it


class Storm:
    """The storm program under the shim, driven through its stdin."""

    def __init__(self, threads=4, episode_ms="0"):
        self.workdir = tempfile.mkdtemp(prefix="gpumemrec-sigreq-")
        self.dumpdir = os.path.join(self.workdir, "dumps")
        env = base_env(16 << 20)
        env.update({"LD_PRELOAD": preload_env(), "GPUMEMREC_DIR": self.dumpdir, "GPUMEMREC_DUMP_SIGNAL": "USR2",
                    "GPUMEMREC_EPISODE_MS": episode_ms, "GPUMEMREC_MAX_DUMPS": "0",
                    "GPUMEMREC_MAX_TOTAL_MB": "0", "GPUMEMREC_STACK_DEPTH": "4",
                    # Small bundles: the storm writes one per failure while the test runs.
                    "GPUMEMREC_RING_EVENTS": "4096"})
        self.proc = subprocess.Popen([os.path.join(HARD, "oom_signal_burst"), str(threads), "0"], env=env,
                                     cwd=self.workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.watchdog = threading.Timer(900, self.proc.kill)
        self.watchdog.start()
        self.known = {}  # bundle name -> its signal_requests (None: not a signal bundle)
        line = self.proc.stdout.readline()
        check(line.strip() == "READY", "the storm did not start: %r" % line)

    def ask(self, what):
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        check(line.startswith("HANDLED runs="), "%s: %r" % (what, line))
        runs = int(line.split("=")[1])
        check(runs >= 0, "the program cannot see the shim's count")
        return runs

    def signal_bundles(self):
        """{name: signal_requests} of the published signal bundles."""
        names = os.listdir(self.dumpdir) if os.path.isdir(self.dumpdir) else []
        for n in names:
            if not n.startswith("oom_dump_") or n in self.known:
                continue
            with open(os.path.join(self.dumpdir, n, "manifest.json")) as f:
                reason = json.load(f)["reason"]
            req = None
            if reason == "signal":
                with open(os.path.join(self.dumpdir, n, "metadata.json")) as f:
                    req = json.load(f).get("signal_requests")
                check(req is not None, "%s: a signal bundle without signal_requests" % n)
            self.known[n] = req
        return {n: r for n, r in self.known.items() if r is not None}

    def wait_for(self, cond, what):
        end = time.monotonic() + WAIT_S
        while time.monotonic() < end:
            check(self.proc.poll() is None, "the program ended while waiting for %s" % what)
            got = self.signal_bundles()
            if cond(got):
                return got
            time.sleep(0.05)  # a poll interval, not a wait for something to happen
        check(False, "no %s within %d s (signal bundles: %s)" % (what, WAIT_S, self.signal_bundles()))

    def finish(self):
        out, err = self.proc.communicate(timeout=600)
        self.watchdog.cancel()
        check(self.proc.returncode == 0 and "TOTAL errors=0" in out,
              "rc %d\n%s\n%s" % (self.proc.returncode, out[-1000:], err[-1500:]))
        left = [n for n in os.listdir(self.dumpdir) if n.startswith(".tmp")]
        check(not left, "temporary bundle left behind: %s" % left)
        return err

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.watchdog.cancel()
        shutil.rmtree(self.workdir, ignore_errors=True)


def check_request(name, req, count):
    check(req["signal"] == signal.SIGUSR2, "%s: signal %r" % (name, req["signal"]))
    check(req["count"] == count, "%s: serves %r requests, expected %d" % (name, req["count"], count))
    check(req["sender_pid"] == os.getpid(), "%s: sender %r, not this test (%d)" % (name, req["sender_pid"],
                                                                                    os.getpid()))
    now_ns = time.time_ns()
    check(0 < req["first_ns"] <= req["last_ns"] <= now_ns, "%s: times %r" % (name, req))


def signal_requests_paced():
    """One signal at a time, the next only once the previous one's bundle is
    published: 3 signals, 3 signal bundles, each serving exactly 1 request
    (a request never waits behind the storm's out-of-memory bundles for
    ever: they yield to it)."""
    s = Storm()
    try:
        for i in range(3):
            s.proc.send_signal(signal.SIGUSR2)
            got = s.wait_for(lambda b: len(b) == i + 1, "signal bundle #%d" % (i + 1))
        check(s.ask("STOP") == 3, "the handler ran other than 3 times")
        got = s.signal_bundles()
        check(len(got) == 3, "expected 3 signal bundles: %s" % got)
        for n, req in got.items():
            check_request(n, req, 1)
        s.finish()
    finally:
        s.cleanup()


def signal_requests_burst():
    """5 signals back to back during the storm: the kernel merges a standard
    signal that is already pending and the dump thread coalesces requests
    that come before a freeze, so 1 to 5 handler runs and at least one
    signal bundle; the bundles' signal_requests.count add up to the handler
    runs, exactly (none lost, none counted twice)."""
    s = Storm()
    try:
        for _ in range(5):
            os.kill(s.proc.pid, signal.SIGUSR2)
        runs = s.ask("STOP")  # no handler run after this (the program blocks the signal)
        check(1 <= runs <= 5, "handler runs %d for 5 signals" % runs)
        got = s.wait_for(lambda b: sum(r["count"] for r in b.values()) >= runs, "%d served requests" % runs)
        total = sum(r["count"] for r in got.values())
        check(total == runs, "signal bundles serve %d requests, the handler ran %d times: %s" % (total, runs, got))
        for n, req in got.items():
            check(req["count"] >= 1, "%s: a signal bundle serving no request" % n)
            check_request(n, req, req["count"])
        print("burst: %d handler runs, %d signal bundles" % (runs, len(got)))
        s.finish()
        check(sum(r["count"] for r in s.signal_bundles().values()) == runs, "a bundle after the end")
    finally:
        s.cleanup()


CASES = {"signal_requests_paced": signal_requests_paced, "signal_requests_burst": signal_requests_burst}

if __name__ == "__main__":
    sys.exit(main(CASES))
