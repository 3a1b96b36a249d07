#!/usr/bin/env python3
"""Performance check of the gpumemrec tool on a 1,000,000-event bundle.

  perf_report.py --gpumemrec BIN --work DIR [--events N] [--limit-s 2.0]

Synthesizes the bundle once under DIR (make_bundle.py; not committed), then
times `gpumemrec report` (best and median of 5 runs, wall clock, output to
/dev/null), and for information `html`, `export` (both formats) and a
`query`, each with its peak resident memory (the child's ru_maxrss) against
the bundle's size on disk. Checks the HTML of the big bundle stays small and renders in
headless Chromium. Fails when the best report time is over --limit-s or
when a command's peak resident memory is over the bundle's size on disk.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


CPU = []  # (user+sys) of each run of the last timed() call
RSS = []  # peak resident set (bytes) of each run of the last timed() call


def timed(cmd, n):
    ts = []
    del CPU[:]
    del RSS[:]
    for _ in range(n):
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)  # this child's own rusage
        p.returncode = os.waitstatus_to_exitcode(status)
        ts.append(time.perf_counter() - t)
        CPU.append(ru.ru_utime + ru.ru_stime)
        RSS.append(ru.ru_maxrss * 1024)
        if p.returncode != 0:
            raise SystemExit("FAIL: %s: rc=%d %s" % (" ".join(cmd), p.returncode, err.decode()[-500:]))
    return min(ts), statistics.median(ts)


def mib(n):
    return "%.0f MiB" % (n / 2**20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--limit-s", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    d = os.path.join(args.work, "big%d" % args.events)
    bundles = sorted(x for x in os.listdir(d) if x.startswith("oom_dump_")) if os.path.isdir(d) else []
    if not bundles:
        t = time.perf_counter()
        subprocess.run([sys.executable, os.path.join(HERE, "make_bundle.py"), d, "--events", str(args.events),
                        "--stacks", "2000", "--live", "20000", "--pre-ring", "200", "--devices", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        print("synthesized %d events in %.1f s" % (args.events, time.perf_counter() - t))
        bundles = sorted(x for x in os.listdir(d) if x.startswith("oom_dump_"))
    b = os.path.join(d, bundles[0])
    size = os.path.getsize(os.path.join(b, "events.json"))
    total = sum(os.path.getsize(os.path.join(b, f)) for f in os.listdir(b))
    print("bundle: %s (events.json %.0f MiB, bundle %.0f MiB)" % (b, size / 2**20, total / 2**20))
    g = args.gpumemrec
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    best, med = timed([g, "report", b], args.runs)
    cpu = min(CPU)
    print("report:               best %.3f s, median %.3f s wall; best %.3f s CPU (user+sys) (%d runs, load average %s);"
          " peak RSS %s" % (best, med, cpu, args.runs, load, mib(max(RSS))))
    peaks = {"report": max(RSS)}
    html = os.path.join(args.work, "big.html")
    hb, hm = timed([g, "html", b, "-o", html], 3)
    print("html:                 best %.3f s, median %.3f s; %.0f KiB; peak RSS %s"
          % (hb, hm, os.path.getsize(html) / 1024, mib(max(RSS))))
    peaks["html"] = max(RSS)
    pb, pm = timed([g, "export", "-f", "memory-viz", b, "-o", os.path.join(args.work, "big.pickle")], 1)
    print("export memory-viz:    %.3f s; %.0f MiB; peak RSS %s"
          % (pb, os.path.getsize(os.path.join(args.work, "big.pickle")) / 2**20, mib(max(RSS))))
    peaks["export memory-viz"] = max(RSS)
    cb, cm = timed([g, "export", "-f", "chrome-trace", b, "-o", os.path.join(args.work, "big.trace.json")], 1)
    print("export chrome-trace:  %.3f s; %.0f MiB; peak RSS %s"
          % (cb, os.path.getsize(os.path.join(args.work, "big.trace.json")) / 2**20, mib(max(RSS))))
    peaks["export chrome-trace"] = max(RSS)
    qb, qm = timed([g, "query", b, "SELECT api, COUNT(*), SUM(size) FROM events GROUP BY api"], 1)
    print("query (load + SQL):   %.3f s; peak RSS %s" % (qb, mib(max(RSS))))
    peaks["query"] = max(RSS)
    cb_, _ = timed([g, "query", b, "SELECT count(*) FROM events"], 1)
    print("query count(*):       %.3f s; peak RSS %s" % (cb_, mib(max(RSS))))
    peaks["query count(*)"] = max(RSS)
    ok = True
    # No command may hold more memory than the bundle takes on disk
    # (peak RSS is not a timing: it does not move with the machine's load).
    for name, peak in sorted(peaks.items()):
        if peak > total:
            print("FAIL: %s peaked at %s, more than the bundle (%s)" % (name, mib(peak), mib(total)))
            ok = False
    if os.path.getsize(html) > 8 * 2**20:
        print("FAIL: HTML is %.1f MiB; it must not embed every event" % (os.path.getsize(html) / 2**20))
        ok = False
    if os.path.exists("/usr/bin/chromium") or os.environ.get("CHROMIUM"):
        p = subprocess.run([sys.executable, os.path.join(HERE, "check_html.py"), html], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        print(p.stdout.decode().strip())
        if p.returncode not in (0, 77):
            ok = False
    # Wall time on a shared machine measures the neighbours' load too; the
    # pass criterion is the best wall time, or the CPU time when the machine
    # is busy (load average above its core count).
    busy = float(load) > (os.cpu_count() or 1)
    if best > args.limit_s and (not busy or cpu > args.limit_s):
        print("FAIL: report took %.3f s wall, %.3f s CPU (limit %.1f s)" % (best, cpu, args.limit_s))
        ok = False
    elif best > args.limit_s:
        print("NOTE: wall %.3f s over the limit on a busy machine (load %s); CPU %.3f s is within it" % (best, load, cpu))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
