#!/usr/bin/env python3
"""`gpumemrec export --format tables`, JSON Lines against Parquet, on one
large bundle (docs/performance.md, "Tables: JSON Lines and Parquet").

  python3 bench/tables_bench.py [--build-dir build] [--events 1000000] [--reps 3] [--work DIR] [--bundle B]

Makes one bundle with tests/tools/make_bundle.py, then, in each repetition
and in a shuffled order: the floor (gzip -1 of the bundle's events.json and
allocations.json, what the JSON Lines export does at the least: read them,
compress them), the JSON Lines export, and the Parquet export (pyarrow, in
the Python of the frameworks venv: scripts/frameworks-venv.sh). Each run's
wall time, CPU time (user + system of the process and its children) and peak
RSS come from wait4; the tables' sizes follow. Then one query over the
events table (count and bytes by event type) in DuckDB and in polars, on
each format, median of --reps. Prints a table; figures vary with the
machine's load: only the side-by-side comparison means much.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "simulate"))
import frameworks_venv  # noqa: E402  (the venv's one finder)


def timed(cmd, env=None, stdout=subprocess.DEVNULL):
    """(wall s, CPU s, peak RSS MiB) of one command and its children."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status:
        sys.exit("%s failed (status %d)" % (" ".join(cmd), status))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def size_mib(folder):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(folder) for n in ns) / float(1 << 20)


def query_times(out, fmt, reps):
    import duckdb
    import polars as pl
    src = "'%s/events/*.%s'" % (out, "jsonl.gz" if fmt == "jsonl" else "parquet")
    reader = "read_json" if fmt == "jsonl" else "read_parquet"
    sql = "SELECT event_type, count(*), sum(size) FROM %s(%s) GROUP BY 1" % (reader, src)
    scan = pl.scan_ndjson if fmt == "jsonl" else pl.scan_parquet
    times = {"duckdb": [], "polars": []}
    for _ in range(reps):
        t0 = time.perf_counter()
        duckdb.connect().execute(sql).fetchall()
        times["duckdb"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scan(src.strip("'")).group_by("event_type").agg(pl.len(), pl.col("size").sum()).collect()
        times["polars"].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default=None)
    ap.add_argument("--bundle", default=None, help="an existing bundle instead of a new one")
    a = ap.parse_args()
    frameworks_venv.reexec_in_venv()
    gmr = os.path.join(os.path.abspath(a.build_dir), "bin", "gpumemrec")
    work = a.work or tempfile.mkdtemp(prefix="gmr_tables_bench_")
    os.makedirs(work, exist_ok=True)
    bundle = a.bundle
    if not bundle:
        bundles = os.path.join(work, "bundles")
        shutil.rmtree(bundles, ignore_errors=True)
        bundle = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools", "make_bundle.py"), bundles,
                                 "--events", str(a.events)], check=True, stdout=subprocess.PIPE,
                                universal_newlines=True).stdout.split()[0]
    env = dict(os.environ, GPUMEMREC_PYTHON=sys.executable)
    outs = {f: os.path.join(work, f) for f in ("jsonl", "parquet")}
    runs = {"floor": [], "jsonl": [], "parquet": []}
    floor = "gzip -1 -c %s/events.json %s/allocations.json > /dev/null" % (bundle, bundle)
    for _ in range(a.reps):
        order = list(runs)
        random.shuffle(order)
        for what in order:
            if what == "floor":
                runs[what].append(timed(["sh", "-c", floor]))
                continue
            shutil.rmtree(outs[what], ignore_errors=True)
            runs[what].append(timed([gmr, "export", "-f", "tables", "--table-format", what, bundle, "-o", outs[what]],
                                    env=env))
    with open(os.path.join(bundle, "manifest.json")) as f:
        events = json.load(f)["event_count"]
    print("bundle: %s (%d events; events.json %.0f MiB, allocations.json %.0f MiB)" % (
        os.path.basename(bundle), events, os.path.getsize(os.path.join(bundle, "events.json")) / 2.0 ** 20,
        os.path.getsize(os.path.join(bundle, "allocations.json")) / 2.0 ** 20))
    print("%-8s %10s %10s %10s %10s %10s" % ("", "wall s", "CPU s", "RSS MiB", "events MiB", "allocs MiB"))
    for what, rs in runs.items():
        med = [statistics.median(r[i] for r in rs) for i in range(3)]
        sizes = ("%10.1f %10.1f" % (size_mib(os.path.join(outs[what], "events")),
                                    size_mib(os.path.join(outs[what], "allocations")))) if what in outs else ""
        print("%-8s %10.2f %10.2f %10.1f %s" % (what, med[0], med[1], med[2], sizes))
    for fmt, out in outs.items():
        q = query_times(out, fmt, a.reps)
        print("query %-8s duckdb %.2f s, polars %.2f s (events by type)" % (fmt, q["duckdb"], q["polars"]))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
