#!/usr/bin/env python3
"""oom_bench.py: what an out-of-memory failure costs the program.

Side by side in one run, WITHOUT and WITH LD_PRELOAD=libgpumemrec.so against
the fake CUDA driver, runs interleaved (order shuffled per repetition):

  * `alloc_bench dump` at each ring size (default 65536 and 1048576 events):
    100k live allocations from 10k call sites, churn until the ring is full,
    then one cudaMalloc larger than the device. Printed per ring:
      - freeze time: wall time of the failing cudaMalloc, measured in the
        program (with a synchronous dump the failing call IS the dump; with a
        dump written by another thread it is the copy taken before returning);
        beside it the floor of a freeze that copies: one memcpy of the ring
        and the live table (ring x 64 + live x 48 bytes) into fresh memory
        and into warm memory, timed in this process; with --old-shim PATH,
        that build's failing call too, in the same interleaved runs;
      - writer time: from the failing call's start until a directory
        oom_dump_* is in the dump directory (renamed into place = complete;
        the program polls it every 0.5 ms, up to 60 s);
      - host memory (/proc/self/status): the process's peak VmHWM without and
        with the shim, VmRSS just before the failing call, the peak rise while
        the bundle is made (VmHWM reset to the RSS just before the call,
        clear_refs 5) and the RSS left after it;
      - the bundle: total and per-file bytes, events.json bytes per event;
      - the floor, measured right after each run with the shim: the time to
        write the same files (same sizes) to the same directory with plain
        write(2) calls of the writer's buffer size, an fsync per file and
        one of the directory, as the writer does; the writer's time over it.
  * GPUMEMREC_COMPRESS=zstd in the same interleaved runs (--no-compress
    leaves it out): its failing call, its writer time and its bundle's size
    beside plain JSON's;
  * the live table: added CPU ns per cudaMalloc+cudaFree pair (stacks off)
    with 1k / 100k / 1M allocations live (`alloc_bench pairs --live`), and
    the table alone (`live_table_bench`).

  python3 bench/oom_bench.py [--build-dir build] [--reps 3] [--quick]
  python3 bench/oom_bench.py --big-live      (the big live set: 2.1M live
      allocations from 10k sites, default ring; the writer's time is the
      figure: docs/performance-log.md, "A big live set")

Printed figures only (no test asserts a timing); docs/performance-log.md,
"Out-of-memory path", keeps them. The machine's load average is
printed before and after: on a shared machine only figures taken at a low
load, side by side, mean anything. Stdlib only; reuses run_bench.py.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (same directory)
from run_bench import Job, med, paired, values  # noqa: E402


def load_line():
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return "load average %.2f, %.2f, %.2f (1/5/15 min) on %d CPUs" % (one, five, fifteen, os.cpu_count() or 0)


def bundle_files(d):
    """(bundle path, {file: bytes}, event_count) of the one bundle in d."""
    names = [n for n in os.listdir(d) if n.startswith("oom_dump_")] if os.path.isdir(d) else []
    if not names:
        return None, {}, None
    b = os.path.join(d, sorted(names)[0])
    sizes = {f: os.path.getsize(os.path.join(b, f)) for f in os.listdir(b)
             if os.path.isfile(os.path.join(b, f))}
    count = None
    try:
        with open(os.path.join(b, "manifest.json")) as f:
            count = json.load(f).get("event_count")
    except (OSError, ValueError):
        pass
    return b, sizes, count


LIVE_ENTRY_BYTES = 48  # sizeof(LiveEntry) (run_bench.py prints it)


def copy_floor_ms(nbytes):
    """The floor of a freeze that copies: one memcpy of `nbytes` (the ring
    and the live table) into memory touched for the first time (what a
    first freeze pays: page faults, and on a VM the hypervisor's first
    touch), and into the same memory again (warm). libc's memmove through
    ctypes; (fresh ms, warm ms)."""
    import ctypes
    import mmap
    src = mmap.mmap(-1, nbytes)
    src.write(b"\x01" * nbytes)
    dst = mmap.mmap(-1, nbytes)
    s = ctypes.addressof(ctypes.c_char.from_buffer(src))
    t = ctypes.addressof(ctypes.c_char.from_buffer(dst))
    res = []
    for _ in range(2):
        t0 = time.perf_counter()
        ctypes.memmove(t, s, nbytes)
        res.append((time.perf_counter() - t0) * 1e3)
    return tuple(res)


# The writer's buffer: shim/dump/dumper.cpp, kWriteBufferBytes less
# kRewriteBufferBytes (256 KiB less 32 KiB); each full buffer is one write(2).
WRITER_CHUNK = 224 * 1024


def write_floor(d, sizes):
    """Seconds to write files of `sizes` ({name: bytes}) into a new directory
    under d with write(2) calls of WRITER_CHUNK bytes, fsync each file, then
    the directory: what the bundle's bytes cost the disk, without making them."""
    floor = os.path.join(d, "floor")
    shutil.rmtree(floor, ignore_errors=True)
    chunk = b"x" * WRITER_CHUNK
    t0 = time.monotonic()
    os.mkdir(floor)
    for name, size in sizes.items():
        fd = os.open(os.path.join(floor, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            left = size
            while left > 0:
                left -= os.write(fd, chunk if left >= WRITER_CHUNK else chunk[:left])
            os.fsync(fd)
        finally:
            os.close(fd)
    dfd = os.open(floor, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    spent = time.monotonic() - t0
    shutil.rmtree(floor, ignore_errors=True)
    return spent


def run_dump_case(r, args, ring):
    """Interleaved baseline/shim runs of `alloc_bench dump` for one ring size."""
    events = max(ring, args.live) + 1000
    argv = [r.cbench, "dump", "--live", str(args.live), "--sites", str(args.sites), "--events", str(events)]
    d = os.path.join(r.tmp, "dumps-%d" % ring)
    base_env = r.base_env()
    base_env["FAKEGPU_CAPACITY"] = str(1 << 30)
    shim_env = dict(base_env)
    shim_env.update({"LD_PRELOAD": r.shim, "GPUMEMREC_DIR": d, "GPUMEMREC_RING_EVENTS": str(ring),
                     "GPUMEMREC_MAX_TOTAL_MB": "0"})
    jobs = [("base", Job(None, argv, base_env, False, "dump")),
            ("shim", Job(None, argv + ["--wait-dir", d, "--wait-s", str(args.wait_s)], shim_env, True, "dump"))]
    if not args.no_compress:  # GPUMEMREC_COMPRESS=zstd beside plain JSON, same runs
        z_env = dict(shim_env, GPUMEMREC_COMPRESS="zstd")
        jobs.append(("zstd", Job(None, argv + ["--wait-dir", d, "--wait-s", str(args.wait_s)], z_env, True, "dump")))
    if args.old_shim:  # another build side by side (the freeze before a change)
        old_env = dict(shim_env)
        old_env["LD_PRELOAD"] = os.path.abspath(args.old_shim)
        jobs.append(("old", Job(None, argv + ["--wait-dir", d, "--wait-s", str(args.wait_s)], old_env, True, "dump")))
    out = {"base": [], "shim": [], "old": [], "zstd": [], "bundle": [], "zbundle": [], "floor": [], "copy_floor": []}
    for rep in range(args.reps):
        order = list(jobs)
        random.Random(2000 + rep + ring).shuffle(order)
        for kind, j in order:
            shutil.rmtree(d, ignore_errors=True)
            kv = r.run_once(j)
            out[kind].append(kv)
            if kind == "shim":
                b, sizes, count = bundle_files(d)
                out["bundle"].append((sizes, count) if b else None)
                if b:
                    shutil.rmtree(b, ignore_errors=True)  # the floor's files take its place
                    out["floor"].append(write_floor(d, sizes))
            if kind == "zstd":
                b, sizes, count = bundle_files(d)
                out["zbundle"].append((sizes, count) if b else None)
        out["copy_floor"].append(copy_floor_ms(ring * 64 + args.live * LIVE_ENTRY_BYTES))
        if args.verbose:
            sys.stderr.write("ring %d: rep %d/%d done\n" % (ring, rep + 1, args.reps))
    shutil.rmtree(d, ignore_errors=True)
    return events, out


def kb(kv, key):
    return int(kv[key]) if kv and key in kv else None


def ms(v):
    return "n/a" if v is None else "%.1f us" % (v * 1000) if v < 1 else "%.1f ms" % v


def mib(x):
    return "n/a" if x is None else "%.1f MiB" % (x / 1024.0)


def report_dump(w, ring, events, out, args):
    base = [x for x in out["base"] if x]
    shim = [x for x in out["shim"] if x]
    w("")
    w("ring %d events (%d made), %d live allocations from %d call sites; %d runs each"
      % (ring, events, args.live, args.sites, args.reps))
    if not base or not shim:
        w("  FAILED: %d baseline and %d shim runs gave a result" % (len(base), len(shim)))
        return
    call = lambda xs: [int(x["oom_call_ns"]) / 1e6 for x in xs]
    w("  failing cudaMalloc (freeze):   without shim %s   with shim %s   (runs, ms: %s)"
      % (ms(med(call(base))), ms(med(call(shim))), ", ".join("%.1f" % v for v in call(shim))))
    old = [x for x in out["old"] if x]
    if old:
        w("    with --old-shim %s   (runs, ms: %s)" % (ms(med(call(old))), ", ".join("%.1f" % v for v in call(old))))
    # The failing thread's CPU time in the call: its work, without the time
    # it waited for a core (on a busy machine most of the wall time).
    cpu = lambda xs: [int(x["oom_call_cpu_ns"]) / 1e6 for x in xs if "oom_call_cpu_ns" in x]
    for label, xs in (("with shim", shim), ("with --old-shim", old)):
        if cpu(xs):
            w("    CPU of the failing thread, %s: %s   (runs, ms: %s)"
              % (label, ms(med(cpu(xs))), ", ".join("%.1f" % v for v in cpu(xs))))
    fl = out["copy_floor"]
    if fl:
        w("    floor, one memcpy of the ring and the live table (%.1f MiB): into fresh memory %s, warm %s"
          % ((ring * 64 + args.live * LIVE_ENTRY_BYTES) / 2.0**20, ms(med([a for a, _ in fl])),
             ms(med([b for _, b in fl]))))
    wr = [int(x["writer_ns"]) / 1e6 for x in shim if int(x.get("writer_ns", -1)) >= 0]
    missing = len(shim) - len(wr)
    w("  writer (failure -> bundle in place): %s   (runs: %s)%s"
      % ("%.0f ms" % med(wr) if wr else "n/a", ", ".join("%.0f" % v for v in wr),
         "; %d run(s) saw no bundle within %d s" % (missing, args.wait_s) if missing else ""))
    report_floor(w, wr, [v * 1000 for v in out["floor"]])
    peak = lambda x: max(kb(x, "hwm_before_kb") or 0, kb(x, "hwm_dump_kb") or 0)
    pb, ps = med([peak(x) for x in base]), med([peak(x) for x in shim])
    w("  process peak VmHWM:            without shim %s   with shim %s   (+%s)" % (mib(pb), mib(ps), mib(ps - pb)))
    rb, rs = med([kb(x, "rss_before_kb") for x in base]), med([kb(x, "rss_before_kb") for x in shim])
    w("  VmRSS before the failing call: without shim %s   with shim %s   (+%s: ring, live table, stacks)"
      % (mib(rb), mib(rs), mib(rs - rb)))
    reset = all(x.get("peak_reset") == "1" for x in shim)
    rise = [kb(x, "hwm_dump_kb") - kb(x, "rss_before_kb") for x in shim]
    left = [kb(x, "rss_after_kb") - kb(x, "rss_before_kb") for x in shim]
    w("  during the dump (with shim):   peak rise %s%s   RSS left after %s   (runs: %s)"
      % (mib(med(rise)), "" if reset else " (VmHWM NOT reset: an upper bound)", mib(med(left)),
         ", ".join("%.1f" % (v / 1024.0) for v in rise)))
    report_zstd(w, out, call, med(call(shim)), wr)
    bundles = [b for b in out["bundle"] if b]
    if not bundles:
        w("  bundle: none found")
        return
    sizes, count = bundles[0]
    total = med([sum(s.values()) for s, _ in bundles])
    per = " ".join("%s %.1f" % (f, sizes[f] / 2**20) for f in sorted(sizes, key=lambda f: -sizes[f]))
    ev = sizes.get("events.json")
    w("  bundle: %.1f MiB (%d bytes; MiB per file: %s)" % (total / 2**20, total, per))
    if ev and count:
        w("  events.json: %d events, %.1f bytes per event" % (count, ev / float(count)))


def report_zstd(w, out, call, plain_call_ms, plain_writer_ms):
    """GPUMEMREC_COMPRESS=zstd beside plain JSON: the failing call, the
    writer, the bundle's size."""
    z = [x for x in out["zstd"] if x]
    if not z:
        return
    w("  GPUMEMREC_COMPRESS=zstd (same runs, interleaved):")
    w("    failing cudaMalloc (freeze):  plain %s   zstd %s   (runs, ms: %s)"
      % (ms(plain_call_ms), ms(med(call(z))), ", ".join("%.1f" % v for v in call(z))))
    zw = [int(x["writer_ns"]) / 1e6 for x in z if int(x.get("writer_ns", -1)) >= 0]
    w("    writer (failure -> bundle):   plain %s   zstd %s   (runs: %s)"
      % ("%.0f ms" % med(plain_writer_ms) if plain_writer_ms else "n/a", "%.0f ms" % med(zw) if zw else "n/a",
         ", ".join("%.0f" % v for v in zw)))
    plain = [b for b in out["bundle"] if b]
    zb = [b for b in out["zbundle"] if b]
    if plain and zb:
        ps, zs = plain[0][0], zb[0][0]
        per = lambda name: "%s %.1f MiB -> %.1f MiB" % (name, ps.get(name, 0) / 2**20, zs.get(name + ".zst", 0) / 2**20)
        w("    bundle: plain %.1f MiB   zstd %.1f MiB   (%s; %s)"
          % (sum(ps.values()) / 2**20, sum(zs.values()) / 2**20, per("events.json"), per("allocations.json")))


def report_floor(w, writer_ms, floor_ms):
    """The floor beside the writer: medians, spreads, the ratio."""
    if not floor_ms:
        w("  floor: n/a (no bundle)")
        return
    spread = lambda xs: "%.0f-%.0f ms" % (min(xs), max(xs))
    w("  floor (the bundle's bytes, write(2) of %d KiB + fsync per file and dir): %.0f ms   (runs: %s; spread %s)"
      % (WRITER_CHUNK // 1024, med(floor_ms), ", ".join("%.0f" % v for v in floor_ms), spread(floor_ms)))
    if writer_ms:
        w("  writer spread %s; writer / floor (medians): %.1fx" % (spread(writer_ms), med(writer_ms) / med(floor_ms)))


def lscpu_head():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ["lscpu: not available"]
    return ["  " + l for l in out.splitlines()[:20]]


def live_table_rows(r, args):
    """Added CPU ns per pair (stacks off) with L allocations live."""
    off = {"GPUMEMREC_STACK_DEPTH": "0", "GPUMEMREC_PYTHON_STACKS": "0"}
    rows = []
    for live in args.live_counts:
        argv = [r.cbench, "pairs", "--threads", "1", "--pairs", str(args.pairs), "--depth", "0",
                "--warmup", "2000", "--live", str(live)]
        rows.append((live, r.job("live", argv, off), r.job("live", argv, None)))
    r.run_all(args.reps, [j for _, a, b in rows for j in (a, b)])
    return rows


def report_live(w, r, rows, args):
    w("")
    w("live table, stacks off: cudaMalloc+cudaFree pairs with L allocations live, CPU ns per pair "
      "(median of %d interleaved runs; added = with - without, same repetition)" % args.reps)
    w("  %10s %14s %14s %12s" % ("live", "without ns", "with shim ns", "added ns"))
    for live, sj, bj in rows:
        b, s, a = med(values(bj, "cpu_ns_per_pair")), med(values(sj, "cpu_ns_per_pair")), \
            paired(sj, bj, "cpu_ns_per_pair")
        f = lambda v: "n/a" if v is None else "%.0f" % v
        w("  %10d %14s %14s %12s" % (live, f(b), f(s), f(a)))
    lt = os.path.join(r.build, "bench", "live_table_bench")
    if args.quick or not os.path.exists(lt):
        return
    p = subprocess.run([lt, str(args.reps)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=1200)
    w("the table alone (live_table_bench %d):" % args.reps)
    for line in p.stdout.splitlines():
        w("  " + line)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(run_bench.REPO, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rings", default="65536,1048576", help="ring sizes, comma-separated")
    ap.add_argument("--live", type=int, default=100000, help="live allocations at the failure")
    ap.add_argument("--sites", type=int, default=10000, help="distinct allocation call sites")
    ap.add_argument("--wait-s", type=int, default=60, help="how long the program waits for the bundle")
    ap.add_argument("--pairs", type=int, default=200000, help="timed pairs per live-table run")
    ap.add_argument("--live-counts", default="1000,100000,1000000")
    ap.add_argument("--no-dump", action="store_true")
    ap.add_argument("--no-live-table", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke mode: tiny runs, numbers meaningless")
    ap.add_argument("--big-live", action="store_true",
                    help="the big live set: --live 2100000 --rings 65536 --no-live-table")
    ap.add_argument("--shim", default=None, help="another libgpumemrec.so to measure (default: the build's)")
    ap.add_argument("--old-shim", default=None,
                    help="a second libgpumemrec.so whose failing call is measured side by side (dump rows)")
    ap.add_argument("--no-compress", action="store_true",
                    help="leave out the GPUMEMREC_COMPRESS=zstd runs (measured beside plain JSON by default)")
    ap.add_argument("--python", default=None)
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.rings, args.live, args.sites = 1, "4096", 2000, 100
        args.pairs, args.live_counts, args.wait_s = 2000, "1000,5000", 30
    if args.big_live:
        args.live, args.rings, args.no_live_table, args.wait_s = 2100000, "65536", True, 120
    args.live_counts = [int(x) for x in str(args.live_counts).split(",") if x]
    r = run_bench.Runner(args)
    if args.shim:
        r.shim = os.path.abspath(args.shim)
    out = []
    w = out.append
    w("gpumemrec out-of-memory path benchmark; fake CUDA driver; with vs without the shim")
    w("shim: %s" % r.shim)
    w("at start: %s" % load_line())
    w("lscpu | head -20:")
    for line in lscpu_head():
        w(line)
    t0 = time.time()
    try:
        if not args.no_dump:
            for ring in [int(x) for x in args.rings.split(",") if x]:
                need = 2 * 600 * max(ring, args.live)
                free = shutil.disk_usage(r.tmp).free
                if free < need:
                    w("")
                    w("ring %d: skipped: %d MiB free under %s, the bundle needs ~%d MiB"
                      % (ring, free >> 20, r.tmp, need >> 21))
                    continue
                events, res = run_dump_case(r, args, ring)
                report_dump(w, ring, events, res, args)
        if not args.no_live_table:
            report_live(w, r, live_table_rows(r, args), args)
    finally:
        shutil.rmtree(r.tmp, ignore_errors=True)
    w("")
    w("at end: %s; %.0f s" % (load_line(), time.time() - t0))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
