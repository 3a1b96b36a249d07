#!/usr/bin/env python3
"""docs/fleet.md in the engines of the frameworks venv (scripts/frameworks-venv.sh):
the tables of `gpumemrec export --format tables`, as JSON Lines and as
Parquet (--table-format parquet, written by the venv's pyarrow), loaded and
questioned by one engine per run, with the code of docs/fleet.md, extracted
from it (never copied).

  fleet_engines.py --engine duckdb|pandas|polars|dask --gpumemrec BIN --work DIR

Every engine: the bundles of four ranks of run_fleet_queries.py; the
answers equal the bundles' own files (run_fleet_queries.expected) and the
figures of `gpumemrec report --json` (each bundle's bytes asked, failing
stack, live bytes, and each site's live bytes and allocations); every
column has the type
docs/bundle-format.md gives it, OUT/schema.json says the same, and the
engine loads it as docs/fleet.md's "Types" table says.
  duckdb   the SQL blocks, on JSON Lines and on Parquet (read_parquet); the
           Parquet files' types (DESCRIBE)
  pandas   the pandas block; its frames' dtypes; pd.read_parquet gives the
           same frames
  polars   the polars block (lazy, gzip); its schema; scan_parquet's
  dask     the Dask block (read_json, one partition per file); its dtypes;
           dd.read_parquet's
Exit 0 pass, 1 fail, 77 skip (no frameworks venv).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "simulate"))
import frameworks_venv  # noqa: E402  (tests/simulate: the venv's one finder)

import run_fleet_queries as fq  # noqa: E402  (this folder: the bundles, the expected answers)

ROOT = os.path.dirname(os.path.dirname(HERE))
ENGINES = ("duckdb", "pandas", "polars", "dask")


def documented_columns():
    """{table: [(column, type)]} from docs/bundle-format.md, "Bundles as tables"."""
    text = open(os.path.join(ROOT, "docs", "bundle-format.md"), encoding="utf-8").read()
    section = text[text.index("## Bundles as tables"):text.index("## Out-of-memory verdicts")]
    out = {}
    for table, body in re.findall(r"^`(\w+)`, one row per.*?\n\n(\|.*?)\n\n", section, re.S | re.M):
        cols = []
        for row in body.splitlines()[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            names = re.findall(r"`(\w+)`", cells[0])
            types = [t.strip() for t in cells[1].split(",")]
            fq.check("docs: %s row %s names as many types" % (table, names), len(names), len(types))
            cols += list(zip(names, types))
        out[table] = cols
    return out


def documented_engine_types():
    """{engine: {schema type: engine type}} from docs/fleet.md's "Types" table."""
    text = open(os.path.join(ROOT, "docs", "fleet.md"), encoding="utf-8").read()
    body = re.search(r"^## Types\n.*?\n(\|.*?)\n\n", text, re.S | re.M).group(1).splitlines()
    head = [c.strip() for c in body[0].strip("|").split("|")]
    rows = [[c.strip() for c in r.strip("|").split("|")] for r in body[2:]]
    return {engine: {r[0]: r[i] for r in rows} for i, engine in enumerate(head) if i}


def export(gpumemrec, src, out, fmt):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, GPUMEMREC_PYTHON=sys.executable)
    p = subprocess.run([gpumemrec, "export", "-f", "tables", "--table-format", fmt, src, "-o", out], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    fq.check("export %s: exit 2 (the corrupt bundle skipped), nothing else said" % fmt,
             (p.returncode, len(p.stderr.strip().splitlines())), (2, 3))
    names = sorted(n for n in os.listdir(os.path.join(out, "events")))
    fq.check("%s: one file per good bundle, nothing hidden left" % fmt,
             (len(names), [n for n in os.listdir(out) if n.startswith(".")]), (4, []))
    return out


def check_schema(out, fmt, docs):
    with open(os.path.join(out, "schema.json")) as f:
        schema = json.load(f)
    fq.check("%s: OUT/schema.json is docs/bundle-format.md's" % fmt,
             {t: [tuple(c) for c in cols] for t, cols in schema["tables"].items()}, docs)
    return schema["tables"]


def report_figures(gpumemrec, by_rank):
    """{bundle_id: figures} as `gpumemrec report --json` gives them: the
    bytes asked, the failing stack, the live bytes, and each site's stacks,
    live bytes and allocations."""
    out = {}
    for b in by_rank.values():
        p = subprocess.run([gpumemrec, "report", "--json", "--top", "100000", b], stdout=subprocess.PIPE,
                           universal_newlines=True, check=True, timeout=120)
        r = json.loads(p.stdout)
        fq.check("report lists every site of %s" % os.path.basename(b), len(r["sites"]), r["sites_total"])
        out[os.path.basename(b)] = {
            "bundle": (r["failure"]["requested_bytes"], r["failure"]["stack_id"], r["live"]["bytes"]),
            "sites": sorted((tuple(sorted(s["stack_ids"])), s["bytes"], s["count"]) for s in r["sites"])}
    return out


def check_report(what, ctx, bundle_rows, per_stack):
    """The engine's figures against `gpumemrec report`: bundle_rows
    {bundle_id: (asked_bytes, failing_stack_id, live_bytes)}, per_stack
    {(bundle_id, stack_id): (bytes, allocations)} from the allocations table."""
    got = {}
    for bid, fig in ctx["figs"].items():
        sites = sorted((ids, sum(int(per_stack.get((bid, i), (0, 0))[0]) for i in ids),
                        sum(int(per_stack.get((bid, i), (0, 0))[1]) for i in ids)) for ids, _, _ in fig["sites"])
        got[bid] = {"bundle": tuple(int(x) for x in bundle_rows[bid]), "sites": sites}
    check_map("%s: each bundle's asked, failing stack, live bytes and sites as gpumemrec report (got, want)" % what,
              got, ctx["figs"])


def expected_live_by_site(by_rank, out):
    """{(bundle_id, site text): bytes}: allocations.json of each bundle with
    the site names of the exported sites table."""
    site = fq.site_names(out)
    want = {}
    for b in by_rank.values():
        bid = os.path.basename(b)
        for a in fq.load(os.path.join(b, "allocations.json")):
            key = (bid, site.get((bid, a["stack_id"])) or "(no stack)")
            want[key] = want.get(key, 0) + a["size"]
    return want


def check_map(what, got, want):
    """fq.check for two dicts, naming only the keys where they differ."""
    diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
    fq.check(what, sorted(diff.items(), key=str)[:6], [])


def same_types(what, got, schema, engine_types):
    check_map("%s: the documented types (got, want)" % what, got, {c: engine_types[t] for c, t in schema})


def check_live_by_site(what, got, ctx):
    check_map("%s: live bytes by site, per bundle (got, want)" % what,
              {(b, s if isinstance(s, str) else "(no stack)"): int(n) for (b, s), n in got.items()}, ctx["by_site"])


def expected_failed_calls(exp):
    return {r: n for r, n in exp["ooms"].items() if n}


def run_duckdb(ctx):
    import duckdb
    for fmt, out in ctx["outs"].items():
        con = duckdb.connect()
        sub = (lambda sql: sql.replace("'OUT/", "'" + out + "/")) if fmt == "jsonl" else \
            (lambda sql: re.sub(r"read_json\('OUT/(\w+)/\*\.jsonl\.gz'\)", r"read_parquet('%s/\1/*.parquet')" % out, sql))
        setup = "\n".join(l for l in sub(ctx["blocks"]["setup"]).splitlines() if not l.startswith("--"))
        for stmt in (s for s in setup.split(";\n") if s.strip()):
            con.execute(stmt)
        rows = {}
        for name in ("first_failure", "same_site", "outlier", "outlier_vs_rank0", "roles", "failed_calls"):
            cur = con.execute(sub(ctx["blocks"][name]))
            cols = [d[0] for d in cur.description]
            rows[name] = [dict(zip(cols, r)) for r in cur.fetchall()]
        fq.check_duckdb(rows, ctx["exp"], ctx["by_rank"], engine="duckdb (%s)" % fmt)
        per_stack = {(b, s): (n, c) for b, s, n, c in con.execute(
            "SELECT bundle_id, stack_id, sum(size), count(*) FROM allocations GROUP BY ALL").fetchall()}
        rows = {r[0]: r[1:] for r in con.execute(
            "SELECT bundle_id, asked_bytes, failing_stack_id, live_bytes FROM bundles").fetchall()}
        check_report("duckdb (%s)" % fmt, ctx, rows, per_stack)
        if fmt == "parquet":
            for table, schema in ctx["schema"].items():
                desc = con.execute("DESCRIBE SELECT * FROM read_parquet('%s/%s/*.parquet')" % (out, table)).fetchall()
                same_types("duckdb: Parquet %s" % table, {r[0]: r[1] for r in desc}, schema, ctx["types"]["DuckDB"])


def pandas_namespace(ctx, out):
    ns = {"OUT": out}
    exec(compile(ctx["blocks"]["pandas"], "docs/fleet.md (pandas)", "exec"), ns)
    return ns


def run_pandas(ctx):
    import pandas as pd
    ns = pandas_namespace(ctx, ctx["outs"]["jsonl"])
    fq.check_pandas_answers(ns, ctx["exp"])
    for table, schema in ctx["schema"].items():
        frame = ns["table"](table)
        same_types("pandas: %s" % table, {c: str(t) for c, t in frame.dtypes.items()}, schema, ctx["types"]["pandas"])
        pq = pd.read_parquet(os.path.join(ctx["outs"]["parquet"], table), dtype_backend="numpy_nullable")
        key = [c for c, _ in schema if c != "frames"]
        same = pq.sort_values(key).reset_index(drop=True).astype(str).equals(
            frame.sort_values(key).reset_index(drop=True).astype(str))
        fq.check("pandas: read_parquet of %s gives the JSON Lines' frame" % table,
                 (same, {c: str(t) for c, t in pq.dtypes.items()}), (True, {c: str(t) for c, t in frame.dtypes.items()}))
    g = ns["allocations"].groupby(["bundle_id", "stack_id"])["size"]
    per_stack = {k: (n, c) for (k, n), c in zip(g.sum().items(), g.count().values)}
    rows = {r.bundle_id: (r.asked_bytes, r.failing_stack_id, r.live_bytes) for r in ns["bundles"].itertuples()}
    check_report("pandas", ctx, rows, per_stack)


def run_polars(ctx):
    import polars as pl
    ns = {"OUT": ctx["outs"]["jsonl"]}
    exec(compile(ctx["blocks"]["polars"], "docs/fleet.md (polars)", "exec"), ns)
    exp = ctx["exp"]
    fq.check("polars: first failing rank", ns["first_failure"]["rank"][0], exp["first"])
    fq.check("polars: ranks by failing site", [list(r) for r in ns["same_site"]["ranks"]], exp["site_groups"])
    fq.check("polars: outlier rank", ns["outlier"]["rank"][0], exp["outlier"])
    fq.check("polars: failed calls per rank", dict(ns["failed_calls"].iter_rows()), expected_failed_calls(exp))
    check_live_by_site("polars", {(b, st): n for b, st, n in ns["live_by_site"].iter_rows()}, ctx)
    per_stack = {(b, st): (n, c) for b, st, n, c in ns["allocations"].group_by(["bundle_id", "stack_id"]).agg(
        pl.col("size").sum(), pl.len()).collect().iter_rows()}
    rows = {r[0]: r[1:] for r in ns["bundles"].select("bundle_id", "asked_bytes", "failing_stack_id",
                                                         "live_bytes").collect().iter_rows()}
    check_report("polars", ctx, rows, per_stack)
    for table, schema in ctx["schema"].items():
        got = ns["table"](table).collect_schema()
        same_types("polars: %s" % table, {c: str(t) for c, t in got.items()}, schema, ctx["types"]["polars"])
        pq = pl.scan_parquet(os.path.join(ctx["outs"]["parquet"], table, "*.parquet")).collect_schema()
        fq.check("polars: scan_parquet's %s schema" % table, dict(pq), dict(got))


def run_dask(ctx):
    import dask.dataframe as dd
    ns = pandas_namespace(ctx, ctx["outs"]["jsonl"])  # read_table_file
    exec(compile(ctx["blocks"]["dask"], "docs/fleet.md (dask)", "exec"), ns)
    fq.check("dask: failed calls per rank", {int(k): int(v) for k, v in ns["failed_calls"].items()},
             expected_failed_calls(ctx["exp"]))
    check_live_by_site("dask", dict(ns["live_by_site"].items()), ctx)
    g = ns["allocations"].groupby(["bundle_id", "stack_id"])["size"]
    sums, counts = g.sum().compute(), g.count().compute()
    per_stack = {k: (v, counts[k]) for k, v in sums.items()}
    b = ns["bundles"].compute()
    check_report("dask", ctx, {r.bundle_id: (r.asked_bytes, r.failing_stack_id, r.live_bytes)
                               for r in b.itertuples()}, per_stack)
    for table, schema in ctx["schema"].items():
        frame = ns["dask_table"](table)
        fq.check("dask: %s has one partition per file" % table, frame.npartitions, 4)
        same_types("dask: %s" % table, {c: str(t) for c, t in frame.dtypes.items()}, schema, ctx["types"]["pandas"])
        pq = dd.read_parquet(os.path.join(ctx["outs"]["parquet"], table), dtype_backend="numpy_nullable")
        fq.check("dask: read_parquet's %s dtypes" % table, {c: str(t) for c, t in pq.dtypes.items()},
                 {c: str(t) for c, t in frame.dtypes.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=ENGINES, required=True)
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    frameworks_venv.reexec_in_venv()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    src, by_rank, _ = fq.make_bundles(work)
    outs = {fmt: export(args.gpumemrec, src, os.path.join(work, fmt), fmt) for fmt in ("jsonl", "parquet")}
    docs = documented_columns()
    ctx = {"outs": outs, "by_rank": by_rank, "blocks": fq.doc_blocks(), "types": documented_engine_types(),
           "exp": fq.expected(by_rank, os.path.join(work, "jsonl")), "figs": report_figures(args.gpumemrec, by_rank),
           "by_site": expected_live_by_site(by_rank, outs["jsonl"])}
    ctx["schema"] = {t: [tuple(c) for c in cols] for t, cols in check_schema(outs["jsonl"], "jsonl", docs).items()}
    check_schema(outs["parquet"], "parquet", docs)
    globals()["run_" + args.engine](ctx)
    if fq.failures:
        print("%d check(s) failed" % len(fq.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
