#!/usr/bin/env python3
"""The fleet questions of docs/fleet.md, run as written there on the tables
of `gpumemrec export --format tables`, in DuckDB from npm; the export's
contract (a corrupt bundle skipped, hostile keys, compressed bundles,
--table-format parquet refused in one line without pyarrow).
The other engines (DuckDB's Python package, pandas, polars, Dask, and the
Parquet tables) are fleet_engines.py's, with this file's bundles and
answers.

  run_fleet_queries.py --gpumemrec BIN --work DIR

Synthesizes the bundles of four ranks (make_bundle.py) and changes them so
each question has one right answer: rank 3 fails at another site, rank 2
holds 24 GiB more (the outlier), every rank has a peak.json and the
framework's roles; a fifth, corrupt bundle must be skipped with exit code
2 and leave nothing in the tables. Each answer is checked against the
bundles' own files. DuckDB comes from npm (@duckdb/node-api, installed into
DIR/duckdb at test time, reused by later runs). Exit 0 pass, 1 fail, 77
skip (no node/npm, or the registry cannot be reached: the export's checks
still run first).
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

from npm_package import npm_install

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "fleet.md")
SKIP = 77
PACKAGE = "@duckdb/node-api@1.5.6-r.1"  # pinned: the engine comes with it
GiB = 1 << 30
TABLES = ("bundles", "events", "allocations", "sites")
ROLES = ["weights", "gradients", "optimizer_state", "kv_cache", "activations", "allocator_cache", "unknown"]
failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))
        print("FAIL", failures[-1])
    else:
        print("ok  ", what)


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def rank_of(bundle):
    return load(os.path.join(bundle, "metadata.json"))["custom_metadata"]["rank"]


def make_bundles(work):
    src = os.path.join(work, "bundles")
    shutil.rmtree(src, ignore_errors=True)
    out = subprocess.run([sys.executable, os.path.join(HERE, "make_bundle.py"), src, "--ranks", "4", "--events", "3000"],
                         check=True, stdout=subprocess.PIPE).stdout.decode().split()
    by_rank = {rank_of(b): b for b in out}
    md3 = os.path.join(by_rank[3], "metadata.json")
    m = load(md3)
    m["stack_id"] = 2  # rank 3 fails elsewhere
    save(md3, m)
    allocs = load(os.path.join(by_rank[2], "allocations.json"))
    allocs.insert(0, {"address": 0x7e0000000000, "size": 24 * GiB, "device_id": 0, "api": "cudaMalloc",
                      "memory_type": "device", "timestamp": 1.0, "thread_id": 1, "stack_id": 5, "seq": 1})
    save(os.path.join(by_rank[2], "allocations.json"), allocs)
    md2 = os.path.join(by_rank[2], "metadata.json")
    m = load(md2)
    m["live_bytes"] += 24 * GiB
    save(md2, m)
    for r, b in by_rank.items():
        dev = load(os.path.join(b, "metadata.json"))["device_id"]
        save(os.path.join(b, "peak.json"), {"schema": 1, "devices": [
            {"device": dev + 1, "peak_bytes": 1, "exact": True},
            {"device": dev, "peak_bytes": (40 + r) * GiB, "exact": r != 1}]})
        save(os.path.join(b, "framework.json"), {"framework": "torch", "roles": {
            "status": "complete", "bytes": {k: (r + 1) * (i + 1) * GiB for i, k in enumerate(ROLES)}}})
    bad = os.path.join(src, "oom_dump_20251121T140305Z_9999_cuda_1_node9_00000000")
    shutil.copytree(by_rank[0], bad)
    with open(os.path.join(bad, "events.json"), "w") as f:
        f.write('[{"seq": 1, "timestamp": 1.0}, {"seq": "two"')
    return src, by_rank, bad


def table_files(out):
    """Every file in OUT's table folders."""
    return [n for t in TABLES if os.path.isdir(os.path.join(out, t)) for n in os.listdir(os.path.join(out, t))]


def check_hostile(gpumemrec, good, work):
    """A key of the wrong type, an entry that is not an object, nesting
    deeper than the reader allows: one line naming the file, the entry and
    the key; exit 2; nothing of the bundle left in the tables."""
    cases = {"wrong type": ('[{"seq": 1}, {"seq": "two"}]', "event #1: key 'seq' is not a number"),
             "not an object": ('[{"seq": 1}, 7]', "event #1 is not a JSON object"),
             "too deep": ('[{"seq": 1, "x": %s1%s}]' % ("[" * 100, "]" * 100), "event #0 nests too deep")}
    for what, (text, want) in cases.items():
        b = os.path.join(work, "hostile", what.replace(" ", "_"), os.path.basename(good))
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)
        shutil.copytree(good, b)
        with open(os.path.join(b, "events.json"), "w") as f:
            f.write(text)
        out = os.path.join(work, "hostile-tables")
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run([gpumemrec, "export", "-f", "tables", b, "-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        left = table_files(out) if os.path.isdir(out) else []
        check("export of events.json with %s: exit 2, the reason, nothing left" % what,
              (p.returncode, want in p.stderr.decode(), left), (2, True, []))


def check_parquet_refused(gpumemrec, good, work):
    """--table-format parquet without a Python that has pyarrow (this
    test's python3 has none; a path that is no program; a program that ends
    without a word; one that ends after its first word, as a writer killed
    while it writes): one line saying so, exit 1, no table file written and
    no staging folder left."""
    out = os.path.join(work, "parquet-refused")
    dies = os.path.join(work, "python-that-dies")
    with open(dies, "w") as f:
        f.write("#!/bin/sh\necho 'ready pyarrow 0'\n")
    os.chmod(dies, 0o755)
    for python, want in ((sys.executable if not has_pyarrow() else None, "has no pyarrow"),
                         ("/nonexistent/python3", "could not be run"), ("/bin/true", "ended without a word"),
                         (dies, "ended")):
        if python is None:
            continue
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run([gpumemrec, "export", "-f", "tables", "--table-format", "parquet", good, "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           env=dict(os.environ, GPUMEMREC_PYTHON=python))
        left = table_files(out) + [n for n in (os.listdir(out) if os.path.isdir(out) else []) if n.startswith(".")]
        check("parquet with GPUMEMREC_PYTHON=%s: exit 1, one line (%s), nothing written" % (python, want),
              (p.returncode, p.stderr.count("\n"), want in p.stderr, left), (1, 1, True, []))


def has_pyarrow():
    try:
        import pyarrow  # noqa: F401
        return True
    except ImportError:
        return False


def export(gpumemrec, src, out, bad):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([gpumemrec, "export", "--format", "tables", src, "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = p.stdout.decode()
    check("export exit code with one corrupt bundle", p.returncode, 2)
    check("the corrupt bundle is named", os.path.basename(bad) in text and "events.json" in text, True)
    names = sorted(os.listdir(os.path.join(out, "events")))
    check("nothing of the corrupt bundle in the tables", any(os.path.basename(bad) in n for n in names), False)
    check("one events file per good bundle", len(names), 4)
    check("no temporary files left", [n for n in table_files(out) + os.listdir(out) if n.startswith(".")], [])
    check("OUT/schema.json written", os.path.isfile(os.path.join(out, "schema.json")), True)


def zstd_bundle(plain, where):
    """The bundle with events.json, allocations.json and stacks.json compressed as the
    shim writes them with GPUMEMREC_COMPRESS=zstd (the zstd command)."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(plain, where)
    for name in ("events.json", "allocations.json", "stacks.json"):
        subprocess.run(["zstd", "-q", "--rm", os.path.join(where, name)], check=True)
    m = load(os.path.join(where, "manifest.json"))
    m["files"] = [f + ".zst" if f in ("events.json", "allocations.json", "stacks.json") else f for f in m["files"]]
    save(os.path.join(where, "manifest.json"), m)
    return where


def check_compressed(gpumemrec, plain, work):
    """export --format tables reads a compressed bundle as the plain one."""
    if not shutil.which("zstd"):
        failures.append("no zstd command (scripts/install-deps.sh)")
        print("FAIL", failures[-1])
        return None
    z = zstd_bundle(plain, os.path.join(work, "zst", os.path.basename(plain)))
    rows = {}
    for b in (plain, z):
        out = os.path.join(work, "zst-tables" if b == z else "plain-tables")
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([gpumemrec, "export", "-f", "tables", b, "-o", out], check=True)
        rows[b] = [gzip.open(os.path.join(out, t, os.path.basename(b) + ".jsonl.gz")).read()
                   for t in ("events", "allocations", "bundles")]
    check("tables of a compressed bundle", rows[z], rows[plain])
    # A truncated and a corrupt .zst: one line naming the file, exit 2.
    for cut, what in ((lambda b: b[:len(b) // 2], "truncated"), (lambda b: b[:64] + b"x" * 64 + b[128:], "corrupt")):
        bad = zstd_bundle(plain, os.path.join(work, "zst-" + what, os.path.basename(plain)))
        ev = os.path.join(bad, "events.json.zst")
        data = open(ev, "rb").read()
        with open(ev, "wb") as f:
            f.write(cut(data))
        p = subprocess.run([gpumemrec, "report", bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = p.stderr.decode()
        check("report of a %s events.json.zst: exit 2, one line naming it" % what,
              (p.returncode, err.count("\n"), "events.json.zst" in err), (2, 1, True))
    return z


def doc_blocks():
    text = open(DOC, encoding="utf-8").read()
    return dict(re.findall(r"```(?:sql|python) fleet:(\w+)\n(.*?)```", text, re.S))


def site_names(out):
    """{(bundle_id, stack_id): site text} of the exported sites table."""
    site = {}
    for fn in os.listdir(os.path.join(out, "sites")):
        with gzip.open(os.path.join(out, "sites", fn), "rt") as f:
            for line in f:
                row = json.loads(line)
                site[(row["bundle_id"], row["stack_id"])] = row["site"]
    return site


def expected(by_rank, out):
    """The answers, from the bundles' files (and the exported site names)."""
    meta = {r: load(os.path.join(b, "metadata.json")) for r, b in by_rank.items()}
    first = min(meta, key=lambda r: (meta[r]["timestamp"], r))
    lives = sorted(m["live_bytes"] for m in meta.values())
    median = (lives[1] + lives[2]) / 2
    outlier = max(meta, key=lambda r: (abs(meta[r]["live_bytes"] - median), -r))
    site = site_names(out)
    per = {}
    for r in (0, outlier):
        bid = os.path.basename(by_rank[r])
        for a in load(os.path.join(by_rank[r], "allocations.json")):
            s = site.get((bid, a["stack_id"]), "(no stack)")
            per.setdefault(s, {0: 0, outlier: 0})[r] += a["size"]
    diff = sorted(((v[outlier] - v[0], s) for s, v in per.items()), key=lambda x: (-abs(x[0]), x[1]))
    ooms = {r: 0 for r in by_rank}
    for r, b in by_rank.items():
        ooms[r] = sum(1 for e in load(os.path.join(b, "events.json")) if e["event_type"] == "oom")
    groups = {}
    for r in sorted(by_rank):
        groups.setdefault(site[(os.path.basename(by_rank[r]), meta[r]["stack_id"])], []).append(r)
    return {"first": first, "outlier": outlier, "diff": diff[:10], "ooms": ooms,
            "site_groups": sorted(groups.values(), key=lambda g: (-len(g), g))}


def check_duckdb(rows, exp, by_rank, engine="duckdb"):
    """The answers of the SQL blocks: {query name: [row as a dict]}."""
    check("%s: first failing rank" % engine, int(rows["first_failure"][0]["rank"]), exp["first"])
    check("%s: ranks by failing site" % engine, [r["which_ranks"] and [int(x) for x in r["which_ranks"]]
                                                 for r in rows["same_site"]], exp["site_groups"])
    check("%s: outlier rank" % engine, int(rows["outlier"][0]["rank"]), exp["outlier"])
    check("%s: outlier vs rank 0 by site" % engine,
          [(int(r["difference"]), r["site"]) for r in rows["outlier_vs_rank0"]], exp["diff"])
    check("%s: roles and peak" % engine, [(int(r["rank"]), int(r["roles_optimizer_state"]), int(r["peak_bytes"]))
                                          for r in rows["roles"]],
          [(r, (r + 1) * 3 * GiB, (40 + r) * GiB) for r in range(4)])
    check("%s: failed calls per rank" % engine,
          {int(r["rank"]): int(r["failed_calls"]) for r in rows["failed_calls"]}, exp["ooms"])


def check_pandas_answers(ns, exp):
    """The names docs/fleet.md's pandas block leaves in `ns`."""
    check("pandas: first failing rank", int(ns["first_failure"]["rank"]), exp["first"])
    check("pandas: ranks by failing site", sorted([list(v) for v in ns["same_site"].values], key=lambda g: -len(g)),
          exp["site_groups"])
    check("pandas: outlier rank", int(ns["outlier"]["rank"]), exp["outlier"])
    d = ns["difference"]
    got = sorted(((int(v), s) for s, v in d.items()), key=lambda x: (-abs(x[0]), x[1]))[:10]
    check("pandas: outlier vs rank 0 by site", got, exp["diff"])
    check("pandas: roles", [int(x) for x in ns["roles"]["roles_optimizer_state"]], [(r + 1) * 3 * GiB for r in range(4)])


def install_duckdb(work):
    engine = os.path.join(work, "duckdb")
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            print("SKIP: %s is not installed" % tool)
            return None
    return engine if npm_install(engine, PACKAGE, "@duckdb/node-api") else None


def run_duckdb(engine, blocks, out, exp, by_rank, work, zbundle):
    sub = lambda sql: sql.replace("'OUT/", "'" + out + "/")
    sql = "\n".join(l for l in sub(blocks["setup"]).splitlines() if not l.startswith("--"))
    setup = [s.strip() for s in sql.split(";\n") if s.strip()]
    names = ["first_failure", "same_site", "outlier", "outlier_vs_rank0", "roles", "failed_calls"]
    queries = {n: sub(blocks[n]) for n in names}
    if zbundle:  # DuckDB reads a compressed bundle file as it is
        queries["zst_events"] = "SELECT count(*) AS n FROM read_json('%s/events.json.zst')" % zbundle
    qpath = os.path.join(work, "queries.json")
    save(qpath, {"setup": setup, "queries": queries})
    p = subprocess.run(["node", os.path.join(HERE, "fleet_duckdb.mjs"), engine, qpath], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    if p.returncode != 0:
        failures.append("duckdb: " + p.stdout.decode()[-3000:])
        print("FAIL", failures[-1])
        return
    rows = json.loads(p.stdout)
    check_duckdb(rows, exp, by_rank)
    if zbundle:
        check("duckdb: events.json.zst read directly", int(rows["zst_events"][0]["n"]),
              load(os.path.join(by_rank[0], "manifest.json"))["event_count"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    src, by_rank, bad = make_bundles(work)
    out = os.path.join(work, "tables")
    export(args.gpumemrec, src, out, bad)
    check_hostile(args.gpumemrec, by_rank[1], work)
    check_parquet_refused(args.gpumemrec, by_rank[1], work)
    blocks = doc_blocks()
    exp = expected(by_rank, out)
    zbundle = check_compressed(args.gpumemrec, by_rank[0], work)
    engine = install_duckdb(work)
    if engine:
        run_duckdb(engine, blocks, out, exp, by_rank, work, zbundle)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0 if engine else SKIP


if __name__ == "__main__":
    sys.exit(main())
