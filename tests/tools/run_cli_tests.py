#!/usr/bin/env python3
"""End-to-end tests of the gpumemrec command-line tool.

  run_cli_tests.py --gpumemrec BIN --work DIR --test NAME [BUNDLE ...]

NAME is one of: help, report, ls, multirank, export_memviz, export_chrome,
query, html, run, bad_input, roles, ..., or all. Without BUNDLE arguments the tests
synthesize bundles with make_bundle.py under DIR; given BUNDLE paths (e.g.
bundles written by the real shim in an end-to-end test) the per-bundle tests
(report, export_*, query, html) run on those instead.
Exit 0 pass, 1 fail, 77 skip (html without Chromium).
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Ctx:
    def __init__(self, binary, work, bundles):
        self.bin = binary
        self.work = work
        self.given = bundles

    def gmr(self, *args, env=None, timeout=300, input=None):
        e = dict(os.environ)
        if env:
            e.update(env)
        p = subprocess.run([self.bin] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                           timeout=timeout, input=input)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def synth(self, name, *extra):
        d = os.path.join(self.work, name)
        if not os.path.isdir(d) or not any(x.startswith("oom_dump_") for x in os.listdir(d)):
            shutil.rmtree(d, ignore_errors=True)
            subprocess.run([sys.executable, os.path.join(HERE, "make_bundle.py"), d] + list(extra), check=True,
                           stdout=subprocess.DEVNULL)
        return sorted(os.path.join(d, x) for x in os.listdir(d) if x.startswith("oom_dump_"))

    def bundles(self):
        if self.given:
            return self.given
        return self.synth("single", "--events", "5000", "--stacks", "50") + \
            self.synth("onedev", "--events", "800", "--devices", "1", "--pre-ring", "0", "--seed", "7")


def load(bundle, name):
    with open(os.path.join(bundle, name)) as f:
        return json.load(f)


def human(n):
    """As common/format.h's format_bytes: binary units, two decimals."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    if n < 1024:
        return "%d B" % n
    v, u = float(n), 0
    while v >= 1024 and u < 6:
        v /= 1024
        u += 1
    return "%.2f %s" % (v, units[u])


# ---------------------------------------------------------------------------

def t_help(c):
    rc, out, err = c.gmr("--help")
    check(rc == 0 and "Exit codes" in out and "bad input" in out, "root --help lacks exit codes: rc=%d" % rc)
    for sub in ("run", "ls", "report", "html", "export", "query", "diff", "top"):
        rc, out, err = c.gmr(sub, "--help")
        check(rc == 0 and "--help" in out, "%s --help failed: rc=%d %s" % (sub, rc, err))
    rc, out, err = c.gmr("frobnicate")
    check(rc == 2, "unknown subcommand: rc=%d, expected 2" % rc)
    rc, out, err = c.gmr()
    check(rc == 2, "no subcommand: rc=%d, expected 2" % rc)
    rc, out, err = c.gmr("--version")
    check(rc == 0 and "gpumemrec" in out, "--version")


def t_report(c):
    for b in c.bundles():
        meta = load(b, "metadata.json")
        rc, out, err = c.gmr("report", b)
        check(rc == 0, "report %s: rc=%d %s" % (b, rc, err))
        for s in ("WHAT FAILED", "TOP ALLOCATION SITES", "MEMORY ON", "OLDEST LIVE ALLOCATIONS", "EVENTS BY API"):
            check(s in out, "report lacks section %r" % s)
        if meta.get("api"):
            check(meta["api"] in out and human(meta["requested_bytes"]) in out, "report lacks the failed call")
        check(human(meta["live_bytes"]) in out, "report lacks live bytes %s" % human(meta["live_bytes"]))
        check(err == "", "report wrote to stderr when it is not a terminal: %r" % err[:200])
        stacks = {s["stack_id"]: s for s in load(b, "stacks.json")}
        allocs = load(b, "allocations.json")
        if allocs:
            by = {}
            for a in allocs:
                by[a["stack_id"]] = by.get(a["stack_id"], 0) + a["size"]
            top = max(by.items(), key=lambda kv: (kv[1], -kv[0]))
            check("#1  %s" % human(top[1]) in out, "top site should be %s bytes (stack %d)" % (human(top[1]), top[0]))
            fr = stacks.get(top[0], {}).get("frames", [])
            if fr and fr[0].get("function"):
                # Short C++ names: the part before the parameter/template list is shown.
                check(re.split(r"[<(]", fr[0]["function"])[0] in out, "top site's first frame %r not shown" % fr[0]["function"])
        rc, out2, err = c.gmr("report", "--ascii", "--top", "3", "--width", "40", b)
        check(rc == 0 and all(ord(ch) < 128 for ch in out2.split("MEMORY ON")[1].split("OLDEST")[0]), "--ascii plot not ASCII")


def t_ls(c):
    bundles = c.synth("ranks3", "--ranks", "3", "--events", "300")
    d = os.path.dirname(bundles[0])
    os.makedirs(os.path.join(d, ".tmp-oom_dump_20990101T000000Z_1_cuda_1"), exist_ok=True)
    rc, out, err = c.gmr("ls", d)
    check(rc == 0, "ls rc=%d %s" % (rc, err))
    lines = out.strip().splitlines()
    check(lines[0].split()[:3] == ["TIME", "HOST", "PID"], "ls header: %r" % lines[0])
    check(len(lines) == 4, "ls should list 3 bundles, got:\n" + out)
    check(".tmp-" not in out, "ls lists a .tmp- directory")
    times = [load(b, "metadata.json")["timestamp"] for b in bundles]
    names = [os.path.basename(b) for b in bundles]
    order = [n for _, n in sorted(zip(times, names), reverse=True)]
    got = [l.split()[-1] for l in lines[1:]]
    check(got == order, "ls not newest first: %r vs %r" % (got, order))
    for l in lines[1:]:
        check("cudaMalloc" in l and "8.00 GiB" in l, "ls row lacks api/size: %r" % l)
    rc, out, err = c.gmr("ls", "--json", d)
    rows = json.loads(out)
    check(rc == 0 and [r["bundle"] for r in rows] == order, "ls --json order: %r" % [r.get("bundle") for r in rows])
    for r, b in zip(rows, sorted(bundles, key=lambda b: -load(b, "metadata.json")["timestamp"])):
        m = load(b, "metadata.json")
        for k in ("bundle", "path", "error", "timestamp", "time_utc", "host", "pid", "rank", "reason", "api",
                  "requested_bytes", "live_bytes", "live_allocations"):
            check(k in r, "ls --json lacks %r" % k)
        check(r["error"] is None and r["live_bytes"] == m["live_bytes"] and r["requested_bytes"] == m["requested_bytes"]
              and r["rank"] == m["custom_metadata"]["rank"], "ls --json row wrong: %r" % r)
    broken = os.path.join(d, "oom_dump_20000101T000000Z_1_cuda_1")
    shutil.copytree(bundles[0], broken)
    with open(os.path.join(broken, "metadata.json"), "w") as f:
        f.write("{broken")
    rc, out, err = c.gmr("ls", "--json", d)
    rows = json.loads(out)
    shutil.rmtree(broken)
    bad = [r for r in rows if r["bundle"] == os.path.basename(broken)]
    check(rc == 0 and len(rows) == 4 and bad and "metadata.json" in bad[0]["error"], "ls --json with a broken bundle: %r" % bad)
    empty = os.path.join(c.work, "empty")
    os.makedirs(empty, exist_ok=True)
    rc, out, err = c.gmr("ls", empty)
    check(rc == 0 and out == "", "ls of an empty dir: rc=%d out=%r" % (rc, out))
    rc, out, err = c.gmr("ls", "--json", empty)
    check(rc == 0 and json.loads(out) == [], "ls --json of an empty dir: %r" % out)
    rc, out, err = c.gmr("ls", os.path.join(c.work, "no-such-dir"))
    check(rc == 2 and err.count("\n") == 1, "ls of a missing dir: rc=%d err=%r" % (rc, err))


def t_multirank(c):
    bundles = c.synth("ranks4", "--ranks", "4", "--events", "400")
    d = os.path.dirname(bundles[0])
    rc, out, err = c.gmr("report", d)
    check(rc == 0, "report DIR rc=%d %s" % (rc, err))
    metas = [load(b, "metadata.json") for b in bundles]
    first = min(metas, key=lambda m: m["timestamp"])
    rank = first["custom_metadata"]["rank"]
    check("FIRST FAILURE" in out and re.search(r"rank %d on node" % rank, out), "first failing rank %d not named:\n%s" % (rank, out[:800]))
    sect = out.split("RANKS")[1].split("DETAILS")[0]
    rows = [l for l in sect.splitlines()[2:] if l.strip()]
    check(len(rows) == 4, "RANKS table should have 4 rows:\n" + sect)
    check("<- first" in rows[0] and rows[0].split()[0] == str(rank), "first row is not the first failure:\n" + sect)
    check("DEV0" in sect and "DEV1" in sect, "per-device live bytes columns missing")
    for m in metas:
        check(human(m["live_bytes"]) in sect, "live bytes of rank %s missing" % m["custom_metadata"]["rank"])
    check("WHAT FAILED" in out.split("DETAILS")[1], "details of the first failure missing")


def t_export_memviz(c):
    for i, b in enumerate(c.bundles()):
        out = os.path.join(c.work, "snap%d.pickle" % i)
        rc, o, err = c.gmr("export", "--format", "memory-viz", b, "-o", out)
        check(rc == 0, "export memory-viz rc=%d %s" % (rc, err))
        p = subprocess.run([sys.executable, os.path.join(HERE, "check_pickle.py"), out, b], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        print(p.stdout.decode().strip())
        check(p.returncode == 0, "check_pickle failed")
        if os.path.exists(os.path.join(b, "snapshot.pickle")):
            p = subprocess.run([sys.executable, os.path.join(HERE, "check_pickle.py"), os.path.join(b, "snapshot.pickle"), b],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            print(p.stdout.decode().strip())
            check(p.returncode == 0, "check_pickle of the bundle's own snapshot.pickle failed")


def t_export_chrome(c):
    for i, b in enumerate(c.bundles()):
        out = os.path.join(c.work, "trace%d.json" % i)
        rc, o, err = c.gmr("export", "--format", "chrome-trace", b, "-o", out)
        check(rc == 0, "export chrome-trace rc=%d %s" % (rc, err))
        with open(out) as f:
            tr = json.load(f)
        evs = tr["traceEvents"]
        events = load(b, "events.json")
        meta = [e for e in evs if e["ph"] == "M"]
        check(any(e["name"] == "process_name" for e in meta), "no process_name metadata")
        tids = {e["thread_id"] for e in events}
        check({e["tid"] for e in meta if e["name"] == "thread_name"} == tids, "thread_name metadata incomplete")
        check(all(e["ph"] in ("M", "X", "I", "C") for e in evs), "unexpected phases %s" % {e["ph"] for e in evs})
        calls = [e for e in evs if e["ph"] == "X"]
        check(len(calls) == len(events), "%d complete events for %d events" % (len(calls), len(events)))
        # A span starts where its call started: a free's timestamp is its
        # call's start, every other event's is its return
        # (docs/bundle-format.md, `timestamp`).
        # (Microseconds after the first event: whole timestamps in double
        # are only good to ~0.25 us; the frees of this fixture last 0.9 us.)
        def start_us(e):
            back = 0 if e["event_type"] in ("deallocation", "deallocation_failed", "unmap") else e["duration_ns"] / 1e3
            return (e["timestamp"] - events[0]["timestamp"]) * 1e6 - back
        for x, e in zip(calls, events):
            check(x["args"]["seq"] == e["seq"], "complete events not in event order")
            check(abs(x["dur"] - e["duration_ns"] / 1e3) < 1e-3, "dur %s for duration_ns %s" % (x["dur"], e["duration_ns"]))
            check(abs((x["ts"] - calls[0]["ts"]) - (start_us(e) - start_us(events[0]))) < 0.5,
                  "seq %d: span starts at %s, its call at %s" % (e["seq"], x["ts"], start_us(e)))
        n_oom = sum(1 for e in events if e["event_type"] == "oom")
        check(sum(1 for e in evs if e["ph"] == "I" and e["cat"] == "oom" and e["s"] == "p") == n_oom,
              "OOM instants missing")
        for e in calls[:50]:
            for k in ("seq", "size", "address", "api", "device"):
                check(k in e["args"], "complete event without args.%s" % k)
        cnt = [e for e in evs if e["ph"] == "C"]
        last = {}
        for e in events:
            if e["device_id"] >= 0:
                last[e["device_id"]] = e["memory_allocated"]
        for dev, v in last.items():
            cs = [e for e in cnt if e["name"] == "live bytes device %d" % dev]
            check(cs and cs[-1]["args"]["bytes"] == v, "last counter of device %d is not %d" % (dev, v))
        ts = [e["ts"] for e in evs if "ts" in e]
        check(all(t >= 0 for t in ts), "negative timestamps")
        check(abs(min(ts) - 1) < 0.01, "t0 is not 1 us before the earliest instant: min ts %s" % min(ts))


def rows_of(c, b, sql, fmt="--json"):
    rc, out, err = c.gmr("query", fmt, b, sql)
    check(rc == 0, "query %r rc=%d %s" % (sql, rc, err))
    return json.loads(out) if fmt == "--json" else out


def t_query(c):
    rc, out, err = c.gmr("query", "--schema")
    check(rc == 0 and "CREATE TABLE events" in out and "CREATE TABLE intervals" in out and "frames" in out, "--schema")
    for b in c.bundles():
        events = load(b, "events.json")
        allocs = load(b, "allocations.json")
        stacks = load(b, "stacks.json")
        r = rows_of(c, b, "SELECT COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM events")
        check(r == [{"n": len(events), "lo": events[0]["seq"] if events else None, "hi": events[-1]["seq"] if events else None}],
              "events count: %r" % r)
        r = rows_of(c, b, "SELECT COUNT(*) AS n, SUM(size) AS s FROM allocations")
        check(r[0]["n"] == len(allocs) and (r[0]["s"] or 0) == sum(a["size"] for a in allocs), "allocations: %r" % r)
        r = rows_of(c, b, "SELECT COUNT(*) AS n FROM frames")
        check(r[0]["n"] == sum(len(s["frames"]) for s in stacks), "frames count")
        r = rows_of(c, b, "SELECT event_type, COUNT(*) AS n FROM events GROUP BY event_type ORDER BY event_type")
        want = {}
        for e in events:
            want[e["event_type"]] = want.get(e["event_type"], 0) + 1
        check({x["event_type"]: x["n"] for x in r} == want, "event_type counts")
        # Allocations alive at time T (documented idiom) against a replay here.
        if events:
            T = events[len(events) // 2]["timestamp"]
            r = rows_of(c, b, "SELECT address, size FROM intervals WHERE (start_time IS NULL OR start_time <= %.6f) "
                              "AND (end_time IS NULL OR end_time > %.6f)" % (T, T))
            got = sorted((x["address"], x["size"]) for x in r)
            alive = {}
            for a in allocs:
                if a["timestamp"] <= T:
                    alive[a["address"] * 2 + (a["memory_type"] == "physical")] = (a["address"], a["size"])
            freed_later = {}
            opened = {}
            for e in events:
                if e["result"] != 0 or e["address"] == 0:
                    continue
                key = e["address"] * 2 + (e["memory_type"] == "physical")
                if e["event_type"] == "allocation":
                    opened[key] = (e["timestamp"], e["size"])
                elif e["event_type"] == "deallocation":
                    st = opened.pop(key, None)
                    start = st[0] if st else None
                    size = st[1] if st else e["size"]
                    if (start is None or start <= T) and e["timestamp"] > T:
                        freed_later.setdefault(key, []).append((e["address"], size))
            want = sorted(list(alive.values()) + [x for v in freed_later.values() for x in v])
            check(got == want, "alive at T: %d rows, expected %d" % (len(got), len(want)))
        # Allocations whose stack contains X, largest first.
        fn = next((f["function"] for s in stacks for f in s["frames"] if f.get("function")), None)
        if fn:
            r = rows_of(c, b, "SELECT a.size, a.stack_id FROM allocations a WHERE a.stack_id IN "
                              "(SELECT stack_id FROM frames WHERE function = '%s') ORDER BY a.size DESC" % fn.replace("'", "''"))
            ids = {s["stack_id"] for s in stacks if any(f.get("function") == fn for f in s["frames"])}
            want = sorted((a["size"] for a in allocs if a["stack_id"] in ids), reverse=True)
            check([x["size"] for x in r] == want, "stack-contains query")
        out = rows_of(c, b, "SELECT seq, api FROM events ORDER BY seq LIMIT 3", "--csv")
        rows = list(csv.reader(io.StringIO(out)))
        check(rows[0] == ["seq", "api"] and len(rows) == 1 + min(3, len(events)), "--csv output: %r" % out)
        out = rows_of(c, b, "SELECT seq, api FROM events ORDER BY seq LIMIT 3", "--csv")
        rc, out, err = c.gmr("query", b, "SELECT stack_id, count, bytes FROM sites LIMIT 5")
        check(rc == 0 and out.splitlines()[0].split() == ["stack_id", "count", "bytes"] and out.rstrip().endswith("rows)"),
              "table output: %r" % out[:300])
        rc, out, err = c.gmr("query", b, "SELEC nonsense")
        check(rc == 2 and err.startswith("gpumemrec: error: SQL:") and err.count("\n") == 1, "bad SQL: rc=%d %r" % (rc, err))


def t_html(c):
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for i, b in enumerate(c.bundles()):
        out = os.path.join(c.work, "report%d.html" % i)
        rc, o, err = c.gmr("html", b, "-o", out)
        check(rc == 0, "html rc=%d %s" % (rc, err))
        with open(out, encoding="utf-8") as f:
            page = f.read()
        check(not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page), "the page references the network")
        check("gmr-data" in page and "<svg" not in page.split("gmr-data")[0][:0] + "", "no data block")
        if not os.path.exists(chromium):
            print("SKIP: chromium not found at %s" % chromium)
            return SKIP
        p = subprocess.run([sys.executable, os.path.join(HERE, "check_html.py"), out, "--chromium", chromium,
                            "--png", os.path.join(c.work, "report%d.png" % i)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        print(p.stdout.decode().strip())
        if p.returncode == SKIP:
            return SKIP
        check(p.returncode == 0, "check_html failed")


def full_label(f):
    """format_frame of common/bundle_model.cpp: the full label of a frame."""
    line = ":%d" % f["line"] if f.get("line", 0) > 0 else ""
    if f.get("function"):
        if f.get("file"):
            return "%s (%s%s)" % (f["function"], f["file"], line)
        if f["kind"] == "native" and f.get("module"):
            return "%s (%s)" % (f["function"], os.path.basename(f["module"]))
        return f["function"]
    if f.get("file"):
        return "?? (%s%s)" % (f["file"], line)
    return "%s+0x%x" % (os.path.basename(f["module"]) if f.get("module") else "??", f["offset"])


def own_oom(events, meta):
    """Index (among the OOM events) of the bundle's own failure: the last OOM
    on the thread, device and size of metadata.json; None without one."""
    ooms = [e for e in events if e["event_type"] == "oom"]
    if not meta.get("api"):
        return None
    for i in range(len(ooms) - 1, -1, -1):
        e = ooms[i]
        if (e["thread_id"], e["device_id"], e["size"]) == (meta.get("thread_id"), meta.get("device_id"),
                                                          meta.get("requested_bytes")):
            return i
    return None


def bundle_outcome(b):
    """docs/cli.md: metadata's verdict unless it is "unknown" and the
    manifest's is decided; "" when the bundle has none."""
    md, mf = load(b, "metadata.json").get("outcome") or "", load(b, "manifest.json").get("outcome") or ""
    if md and md != "unknown":
        return md
    if mf and mf != "unknown":
        return mf
    return md or mf


def recovered_ooms(events, meta=None, outcome=""):
    """docs/cli.md: an OOM is recovered when the same thread later allocates at
    least as many bytes successfully before its next OOM; the bundle's own
    failure follows the bundle's verdict (outcome) when it has one."""
    out, sizes, open_ = [], [], {}
    for e in events:
        if e["event_type"] == "oom":
            open_[e["thread_id"]] = len(out)
            out.append(False)
            sizes.append(e["size"])
        elif e["event_type"] == "allocation" and e["result"] == 0:
            i = open_.get(e["thread_id"])
            if i is not None and e["size"] >= sizes[i]:
                out[i] = True
                del open_[e["thread_id"]]
    own = own_oom(events, meta or {}) if outcome else None
    if own is not None and outcome in ("recovered", "fatal"):
        out[own] = outcome == "recovered"
    return out


def with_recovered_oom(c, src, name):
    """A copy of bundle src where a successful allocation that the same thread
    follows with a larger successful one is turned into an OOM (recovered)."""
    d = os.path.join(c.work, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    events = load(d, "events.json")
    for i, e in enumerate(events):
        if e["event_type"] != "allocation" or e["result"] != 0:
            continue
        later = [x for x in events[i + 1:] if x["thread_id"] == e["thread_id"] and x["event_type"] in ("allocation", "oom")]
        if later and later[0]["event_type"] == "allocation" and later[0]["result"] == 0 and later[0]["size"] >= e["size"]:
            e.update(event_type="oom", result=2, address=0, memory_change=0)
            break
    with open(os.path.join(d, "events.json"), "w") as f:
        json.dump(events, f)
    return d


def t_report_json(c):
    for b in c.bundles() + [with_recovered_oom(c, c.bundles()[0], "recovered")]:
        meta = load(b, "metadata.json")
        allocs = load(b, "allocations.json")
        events = load(b, "events.json")
        rc, out, err = c.gmr("report", "--json", "--top", "5", "--frames", "3", b)
        check(rc == 0, "report --json rc=%d %s" % (rc, err))
        r = json.loads(out)
        for k in ("schema", "bundle", "path", "host", "pid", "rank", "backend", "reason", "timestamp", "time_utc", "command",
                  "failure", "device", "failed_calls_before_dump", "live", "sites_total", "sites", "curve", "ring", "ooms",
                  "oldest", "apis"):
            check(k in r, "report --json lacks %r" % k)
        check(r["schema"] == "gpumemrec.report/1", "schema %r" % r["schema"])
        check(r["live"]["bytes"] == meta["live_bytes"] and r["live"]["allocations"] == meta["live_allocations"], "live")
        if meta.get("api"):
            check(r["failure"]["api"] == meta["api"] and r["failure"]["requested_bytes"] == meta["requested_bytes"], "failure")
        by = {}
        for a in allocs:
            by[a["stack_id"]] = by.get(a["stack_id"], 0) + a["size"]
        want = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        check([(s["stack_id"], s["bytes"]) for s in r["sites"]] == want, "sites %r != %r" % (r["sites"][:2], want[:2]))
        check(all(len(s["frames"]) <= 3 for s in r["sites"]), "--frames not applied")
        check(r["sites_total"] == len(by), "sites_total")
        check(r["ring"]["events"] == len(events), "ring.events")
        # Older events not kept: none when the bundle starts at seq 1 (every
        # event since the start is in it), else the seqs handed out minus the
        # events kept (docs/cli.md, `ring`).
        first = min(e["seq"] for e in events)
        want = 0 if first == 1 else meta["total_event_count"] - len(events)
        check(r["ring"]["overwritten"] == want and r["ring"]["first_seq"] == first,
              "ring %s: overwritten should be %d, first_seq %d" % (r["ring"], want, first))
        rec = recovered_ooms(events, meta, bundle_outcome(b))
        check([o["recovered"] for o in r["ooms"]] == rec, "ooms recovered %r != %r" % ([o["recovered"] for o in r["ooms"]], rec))
        if "recovered" in b:
            check(any(rec), "the recovered-OOM variant has no recovered OOM")
            rc, out, err = c.gmr("report", b)
            check("OOMs in the ring: %d (%d recovered" % (len(rec), sum(rec)) in out, "text report lacks the recovered count")
    d = os.path.dirname(c.synth("ranks3j", "--ranks", "3", "--events", "300")[0])
    rc, out, err = c.gmr("report", "--json", d)
    r = json.loads(out)
    check(rc == 0 and r["schema"] == "gpumemrec.report-dir/1" and len(r["bundles"]) == 3, "report --json DIR")
    firsts = [x for x in r["bundles"] if x["first"]]
    check(len(firsts) == 1 and r["first_failure"]["bundle"] == firsts[0]["bundle"], "first failure")
    check(firsts[0]["timestamp"] == min(x["timestamp"] for x in r["bundles"]), "first is not the earliest")


def t_names(c):
    """Short C++ names in report, full ones with --verbose; the native_thread status."""
    src = c.synth("single-names", "--events", "400", "--stacks", "12")[0]
    d = os.path.join(c.work, "names-bundle")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    allocs = load(d, "allocations.json")
    by = {}
    for a in allocs:
        by[a["stack_id"]] = by.get(a["stack_id"], 0) + a["size"]
    top = max(by.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    stacks = load(d, "stacks.json")
    full = "(anonymous namespace)::allocate_optimizer_state(std::vector<void*, std::allocator<void*> >*, int)"
    tmpl = "std::_Function_handler<void (int), Foo::operator()(int) const::{lambda(int)#1}>::_M_invoke(std::_Any_data const&, int&&)"
    for s in stacks:
        if s["stack_id"] == top:
            s["python"] = "native_thread"
            s["frames"] = [{"kind": "native", "module": "/opt/app/bin/train", "offset": 4096, "function": full,
                            "file": "/src/optim/state.cpp", "line": 42},
                           {"kind": "native", "module": "/opt/app/bin/train", "offset": 8192, "function": tmpl,
                            "file": "/usr/include/c++/12/bits/std_function.h", "line": 290},
                           {"kind": "native", "module": "/opt/app/bin/train", "offset": 9000, "function": "operator<<(std::ostream&, X const&)",
                            "file": "", "line": 0}]
    with open(os.path.join(d, "stacks.json"), "w") as f:
        json.dump(stacks, f)
    rc, out, err = c.gmr("report", d)
    check(rc == 0, "report rc=%d %s" % (rc, err))
    short = "(anonymous namespace)::allocate_optimizer_state(\u2026) (state.cpp:42)"
    check(short in out, "short name %r not in the report" % short)
    check(full not in out, "the full name is shown without --verbose")
    check("std::_Function_handler<\u2026>::_M_invoke(\u2026) (std_function.h:290)" in out, "template collapsed: %r" %
          [l for l in out.splitlines() if "_M_invoke" in l])
    check("operator<<(\u2026) (train)" in out, "operator<< kept: %r" % [l for l in out.splitlines() if "operator" in l])
    check("no Python frames on this thread (native thread)" in out, "native_thread status not shown")
    rc, out, err = c.gmr("report", "--verbose", d)
    check(full + " (/src/optim/state.cpp:42)" in out, "--verbose lacks the full name")
    rc, out, err = c.gmr("report", "--json", d)
    s0 = json.loads(out)["sites"][0]
    check(s0["frames"][0]["function"] == full and s0["frames"][0]["short"] == short and s0["python"] == "native_thread",
          "report --json frame names: %r" % s0["frames"][0])
    # A hostile symbol name is text in the HTML report, never markup.
    evil = "evil<img src=x onerror=\"document.title='pwned'\">::f</script><b>x</b>"
    for s in stacks:
        if s["stack_id"] == top:
            s["frames"][0]["function"] = evil
    with open(os.path.join(d, "stacks.json"), "w") as f:
        json.dump(stacks, f)
    page = os.path.join(c.work, "names.html")
    rc, out, err = c.gmr("html", d, "-o", page)
    check(rc == 0, "html rc=%d %s" % (rc, err))
    chromium = chromium_or_skip()
    if chromium:
        sys.path.insert(0, HERE)
        import check_html
        status, attrs, t, secs, dom = check_html.render(page, chromium, "#gmr-selftest=evil")
        check(status == "gmr-render-ok" and t and t["search"]["highlighted"] > 0, "hostile name: %r %r" % (status, t))
        check("<img" not in dom and "<b>x</b>" not in dom and "pwned" not in dom.split("<title>")[1].split("</title>")[0],
              "a symbol name became markup in the HTML report")


def renumbered(c, src, name, grow_stack, extra_bytes):
    """A copy of src where every stack id and address differs (as in another
    run) and the site of stack grow_stack holds extra_bytes more; the site of
    the last stack is dropped (gone) and one new site appears."""
    d = os.path.join(c.work, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    stacks = load(d, "stacks.json")
    allocs = load(d, "allocations.json")
    remap = {s["stack_id"]: s["stack_id"] + 100000 for s in stacks}
    live_ids = sorted({a["stack_id"] for a in allocs if a["stack_id"] in remap and a["stack_id"] != grow_stack})
    gone = live_ids[-1]
    allocs = [a for a in allocs if a["stack_id"] != gone]
    for s in stacks:
        s["stack_id"] = remap[s["stack_id"]]
    new_id = 999999
    stacks.append({"stack_id": new_id, "python": "captured", "frames": [
        {"kind": "python", "module": "", "offset": 0, "function": "brand_new_cache", "file": "/home/u/cache.py", "line": 7}]})
    for a in allocs:
        a["stack_id"] = remap.get(a["stack_id"], a["stack_id"])
        a["address"] += 1 << 40
    grow = [a for a in allocs if a["stack_id"] == remap[grow_stack]]
    grow[0]["size"] += extra_bytes
    allocs.append(dict(grow[0], address=grow[0]["address"] + (1 << 39), size=3 << 20, stack_id=new_id))
    for f, v in (("stacks.json", stacks), ("allocations.json", allocs)):
        with open(os.path.join(d, f), "w") as fh:
            json.dump(v, fh)
    return d, gone


def t_diff(c):
    old = c.synth("single-diff", "--events", "600", "--stacks", "30")[0]
    allocs = load(old, "allocations.json")
    by = {}
    for a in allocs:
        by[a["stack_id"]] = by.get(a["stack_id"], 0) + a["size"]
    ids = {s["stack_id"] for s in load(old, "stacks.json")}
    grow = sorted(x for x in by if x in ids)[0]
    new, gone = renumbered(c, old, "diff-new", grow, 5 << 30)
    rc, out, err = c.gmr("diff", "--json", "--top", "1000", old, new)
    check(rc == 0, "diff --json rc=%d %s" % (rc, err))
    r = json.loads(out)
    check(r["schema"] == "gpumemrec.diff/1", "schema")
    st = {}
    for s in r["sites"]:
        st.setdefault(s["status"], []).append(s)
    check(len(st.get("grew", [])) == 1 and st["grew"][0]["delta_bytes"] == 5 << 30,
          "exactly one site grew by 5 GiB (stack ids and addresses differ): %r" % {k: len(v) for k, v in st.items()})
    check(r["sites"][0]["status"] == "grew", "largest growth not first")
    check(len(st.get("new", [])) == 1 and st["new"][0]["frames"][0]["function"] == "brand_new_cache", "new site")
    check(len(st.get("gone", [])) == 1 and st["gone"][0]["old_bytes"] == by[gone], "gone site")
    check("shrank" not in st and "same" not in st, "unchanged sites listed without --all")
    check(r["delta_bytes"] == r["new"]["live_bytes"] - r["old"]["live_bytes"] == (5 << 30) + (3 << 20) - by[gone], "delta_bytes")
    rc, out, err = c.gmr("diff", "--json", "--all", "--top", "1000", old, new)
    check(sum(1 for s in json.loads(out)["sites"] if s["status"] == "same") == len(by) - 2, "--all: unchanged sites")
    rc, out, err = c.gmr("diff", old, new)
    check(rc == 0 and "1 grew, 1 new, 0 shrank, 1 gone" in out and "+5.00 GiB" in out and "brand_new_cache" in out,
          "diff text:\n" + out[:1500])
    rc, out, err = c.gmr("diff", old, old)
    check(rc == 0 and "no site changed" in out, "diff of a bundle with itself")
    # Directories: all bundles of each side summed.
    od = os.path.dirname(c.synth("ranks2-diff", "--ranks", "2", "--events", "300")[0])
    rc, out, err = c.gmr("diff", "--json", od, od)
    r = json.loads(out)
    check(rc == 0 and len(r["old"]["bundles"]) == 2 and r["sites"] == [], "diff of a directory with itself")
    rc, out, err = c.gmr("diff", old, os.path.join(c.work, "nope"))
    check(rc == 2 and err.count("\n") == 1, "diff with a missing NEW: rc=%d %r" % (rc, err))
    # html --baseline shows it.
    page = os.path.join(c.work, "diff.html")
    rc, out, err = c.gmr("html", new, "--baseline", old, "-o", page)
    check(rc == 0, "html --baseline rc=%d %s" % (rc, err))
    with open(page, encoding="utf-8") as f:
        data = json.loads(f.read().split('id="gmr-data">')[1].split("</script>")[0])
    check(data["baseline"] and sorted(s["status"] for s in data["baseline"]["sites"]) == ["gone", "grew", "new"],
          "html baseline rows: %r" % data.get("baseline"))


def t_query_dir(c):
    bundles = c.synth("ranks3q", "--ranks", "3", "--events", "300")
    d = os.path.dirname(bundles[0])
    r = rows_of(c, d, "SELECT bundle, COUNT(*) AS n FROM events GROUP BY bundle ORDER BY bundle")
    check([(x["bundle"], x["n"]) for x in r] == [(os.path.basename(b), len(load(b, "events.json"))) for b in bundles],
          "events per bundle: %r" % r)
    for table in ("events", "allocations", "stacks", "frames", "intervals", "metadata", "sites"):
        r = rows_of(c, d, "SELECT COUNT(DISTINCT bundle) AS n FROM %s" % table)
        check(r[0]["n"] == 3, "%s: bundle column covers %r bundles" % (table, r))
    r = rows_of(c, d, "SELECT bundle, value FROM metadata WHERE key = 'live_bytes' ORDER BY bundle")
    check([x["value"] for x in r] == [load(b, "metadata.json")["live_bytes"] for b in bundles], "live_bytes per bundle")
    r = rows_of(c, d, "SELECT bundle, SUM(bytes) AS b FROM sites GROUP BY bundle ORDER BY bundle")
    check([x["b"] for x in r] == [sum(a["size"] for a in load(b, "allocations.json")) for b in bundles], "sites per bundle")
    # Same stack ids in every bundle: the stacks table keeps one row per (bundle, stack_id).
    r = rows_of(c, d, "SELECT COUNT(*) AS n FROM stacks")
    check(r[0]["n"] == sum(len(load(b, "stacks.json")) for b in bundles), "stacks rows: %r" % r)
    rc, out, err = c.gmr("query", os.path.join(c.work, "empty-q"), "SELECT 1")
    check(rc == 2, "query of a missing directory: rc=%d" % rc)


def chromium_or_skip():
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    return chromium if os.path.exists(chromium) else None


def t_html_flame(c):
    chromium = chromium_or_skip()
    if not chromium:
        print("SKIP: chromium not found")
        return SKIP
    sys.path.insert(0, HERE)
    import check_html
    for i, b in enumerate(c.bundles() + [with_recovered_oom(c, c.bundles()[0], "recovered-html")]):
        page = os.path.join(c.work, "flame%d.html" % i)
        rc, o, err = c.gmr("html", b, "-o", page)
        check(rc == 0, "html rc=%d %s" % (rc, err))
        meta = load(b, "metadata.json")
        allocs = load(b, "allocations.json")
        stacks = {s["stack_id"]: s for s in load(b, "stacks.json")}
        events = load(b, "events.json")
        term = next((f["function"].split("(")[0] for s in stacks.values() for f in s["frames"]
                     if f["kind"] == "native" and f.get("function") and "::" not in f["function"]), "train_step")
        status, attrs, t, secs, dom = check_html.render(page, chromium, "#gmr-selftest=" + term)
        check(status == "gmr-render-ok" and t, "page did not render: %r" % status)
        print("html_flame: %s: rendered in %s ms; clicked %r" % (os.path.basename(b), attrs.get("data-render-ms"),
                                                                   t.get("clicked", {}).get("label")))
        total = sum(a["size"] for a in allocs)
        check(t["root_bytes"] == total, "flame root %d != sum of live allocations %d" % (t["root_bytes"], total))
        if meta["live_bytes"] == total:
            check(t["root_bytes"] == meta["live_bytes"], "flame root != metadata live_bytes")
        by = {}
        for a in allocs:
            by[a["stack_id"]] = by.get(a["stack_id"], 0) + a["size"]
        # Clicking a child of the root narrows the tables to the sites under it.
        label = t["clicked"]["label"]
        under = {sid for sid in by if stacks.get(sid, {}).get("frames") and full_label(stacks[sid]["frames"][-1]) == label}
        check(set(t["sites_after"]) == under, "after the click the sites table holds %r, expected %r" %
              (sorted(t["sites_after"])[:10], sorted(under)[:10]))
        check(sum(by[s] for s in under) == t["clicked"]["bytes"], "clicked node's bytes != its sites' bytes")
        check(len(under) < t["sites_before"], "the click did not narrow the sites table")
        check(t["sites_after_dom"] == min(len(under), 300), "DOM rows after the click: %d" % t["sites_after_dom"])
        if len(allocs) <= 2000:
            check(t["allocs_after"] == sum(1 for a in allocs if a["stack_id"] in under), "allocations after the click")
        # Search: the frames whose label holds the term light up; bytes = sites with such a frame.
        hit = {sid for sid in by if any(term.lower() in full_label(f).lower() for f in stacks.get(sid, {}).get("frames", []))}
        check(t["search"]["bytes"] == sum(by[s] for s in hit) and (t["search"]["highlighted"] > 0) == bool(hit),
              "search %r: %r, expected %d bytes" % (term, t["search"], sum(by[s] for s in hit)))
        # Time axis: one unit that fits the span, ticks that differ.
        span = max(e["timestamp"] for e in events) - min(e["timestamp"] for e in events)
        unit = "\u00b5s" if span < 2e-3 else "ms" if span < 2 else "s" if span < 180 else "min"
        check(t["ticks"] and all(x.endswith(" " + unit) for x in t["ticks"]) and len(set(t["ticks"])) > 2,
              "time ticks for a %.4f s span: %r" % (span, t["ticks"][:8]))
        rec = recovered_ooms(events, meta, bundle_outcome(b))
        oom_devs = [e["device_id"] for e in events if e["event_type"] == "oom"]
        check(t["ooms"] + t["ooms_recovered"] == len(oom_devs) and t["ooms_recovered"] == sum(rec),
              "OOM marks: %d + %d recovered, expected %d (%d recovered)" % (t["ooms"], t["ooms_recovered"], len(oom_devs), sum(rec)))


def t_html_200k(c):
    """A 200,000-event bundle renders quickly (< 3 s is the goal; this fails only
    past 10x that, so load on the machine cannot make it flake)."""
    chromium = chromium_or_skip()
    if not chromium:
        print("SKIP: chromium not found")
        return SKIP
    sys.path.insert(0, HERE)
    import check_html
    import time
    b = c.synth("big200k", "--events", "200000", "--stacks", "2000")[0]
    page = os.path.join(c.work, "big200k.html")
    t0 = time.time()
    rc, o, err = c.gmr("html", b, "-o", page)
    gen = time.time() - t0
    check(rc == 0, "html rc=%d %s" % (rc, err))
    status, attrs, t, secs, dom = check_html.render(page, chromium)
    check(status == "gmr-render-ok", "200k page did not render: %r" % status)
    load_ms = float(attrs.get("data-load-ms", "nan"))
    print("html_200k: gpumemrec html %.2f s, page %d KiB; in Chromium: script %s ms, %.0f ms from navigation start to laid "
          "out; chromium process %.2f s" % (gen, os.path.getsize(page) // 1024, attrs.get("data-render-ms"), load_ms, secs))
    check(load_ms < 30000, "200k-event page took %.0f ms to render (goal 3000 ms, fails past 10x)" % load_ms)


def t_run(c):
    dummy = "/lib/x86_64-linux-gnu/libm.so.6"  # any loadable library stands in for the shim
    if not os.path.exists(dummy):
        dummy = os.path.join(c.work, "no-such-libgpumemrec.so")
    env = {"GPUMEMREC_LIBRARY": dummy}
    dumps = os.path.join(c.work, "run-dumps")
    shutil.rmtree(dumps, ignore_errors=True)
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "sh", "-c", "exit 7", env=env)
    check(rc == 7, "exit code not passed through: %d (%s)" % (rc, err))
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "sh", "-c", "echo $LD_PRELOAD", env=dict(env, LD_PRELOAD=""))
    check(rc == 0 and out.strip() == dummy, "LD_PRELOAD=%r, expected %r" % (out.strip(), dummy))
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "sh", "-c", "echo $LD_PRELOAD", env=dict(env, LD_PRELOAD="/x/old.so"))
    check(out.strip() == dummy + ":/x/old.so", "existing LD_PRELOAD not kept after ours: %r" % out)
    rc, out, err = c.gmr("run", "--library", dummy, "--dir", dumps, "--ring-events", "123", "--stack-depth", "9",
                         "--episode-ms", "50", "--max-dumps", "3", "--max-total-mb", "64", "--log-level", "debug",
                         "--no-python-stacks", "--no-python-hook", "--limit", "0:24GiB,1:40GiB", "--fail-after", "5", "--dump-signal", "USR2",
                         "--dump-at-exit", "--", "sh", "-c", "env | grep ^GPUMEMREC_ | sort")
    got = dict(l.split("=", 1) for l in out.split("\n") if "=" in l)
    want = {"GPUMEMREC_DIR": os.path.abspath(dumps), "GPUMEMREC_RING_EVENTS": "123", "GPUMEMREC_STACK_DEPTH": "9",
            "GPUMEMREC_EPISODE_MS": "50", "GPUMEMREC_MAX_DUMPS": "3", "GPUMEMREC_MAX_TOTAL_MB": "64",
            "GPUMEMREC_LOG_LEVEL": "debug", "GPUMEMREC_PYTHON_STACKS": "0", "GPUMEMREC_PYTHON_HOOK": "0",
            "GPUMEMREC_LIMIT": "0:24GiB,1:40GiB",
            "GPUMEMREC_FAIL_AFTER": "5", "GPUMEMREC_DUMP_SIGNAL": "USR2", "GPUMEMREC_DUMP_AT_EXIT": "1"}
    for k, v in want.items():
        check(got.get(k) == v, "%s=%r, expected %r" % (k, got.get(k), v))
    # Without "--".
    rc, out, err = c.gmr("run", "--dir", dumps, "sh", "-c", "exit 3", env=env)
    check(rc == 3, "run without --: rc=%d" % rc)
    # Killed by a signal: 128+N.
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "sh", "-c", "kill -TERM $$", env=env)
    check(rc == 143, "killed child: rc=%d, expected 143" % rc)
    # Forwarding: SIGTERM to gpumemrec reaches the child.
    e = dict(os.environ, **env)
    p = subprocess.Popen([c.bin, "run", "--dir", dumps, "--", "sleep", "30"], env=e, stderr=subprocess.PIPE)
    import time
    time.sleep(0.5)
    p.terminate()
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Fail("SIGTERM was not forwarded (child still running)")
    check(rc == 143, "forwarded SIGTERM: rc=%d, expected 143" % rc)
    # Program not found.
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "/no/such/program", env=env)
    check(rc == 127 and "cannot run" in err, "missing program: rc=%d %r" % (rc, err))
    # New bundles are listed at the end.
    src = c.synth("single-run", "--events", "50")[0]
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "cp", "-r", src, dumps + "/", env=env)
    check(rc == 0 and "1 new bundle" in err and os.path.basename(src) in err, "new bundle not reported: %r" % err)
    rc, out, err = c.gmr("run", "--dir", dumps, "--", "true", env=env)
    check(rc == 0 and "no new bundles" in err, "no-new-bundles message: %r" % err)
    # No program.
    rc, out, err = c.gmr("run", env=env)
    check(rc == 2, "run without a program: rc=%d" % rc)
    # Library lookup without the override: next to the binary, else a clear error.
    e2 = {k: v for k, v in os.environ.items() if k != "GPUMEMREC_LIBRARY"}
    p = subprocess.run([c.bin, "run", "--dir", dumps, "--", "sh", "-c", "echo $LD_PRELOAD"], env=dict(e2, LD_PRELOAD=""),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    next_to = os.path.join(os.path.dirname(os.path.realpath(c.bin)), "libgpumemrec.so")
    if os.path.exists(next_to):
        check(p.returncode == 0 and os.path.realpath(p.stdout.decode().strip()) == os.path.realpath(next_to),
              "did not preload %s: %r" % (next_to, p.stdout))
    else:
        check(p.returncode == 1 and b"cannot find libgpumemrec.so" in p.stderr, "missing library: rc=%d" % p.returncode)


def t_bad_input(c):
    good = c.synth("single-bad", "--events", "200")[0]
    base = os.path.join(c.work, "bad")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)

    def variant(name, mutate):
        d = os.path.join(base, name)
        shutil.copytree(good, d)
        mutate(d)
        return d

    def write(d, f, text):
        with open(os.path.join(d, f), "w") as fh:
            fh.write(text)

    def truncate(d, f, frac=0.5):
        p = os.path.join(d, f)
        with open(p, "rb") as fh:
            data = fh.read()
        with open(p, "wb") as fh:
            fh.write(data[: int(len(data) * frac)])

    a_file = os.path.join(base, "a_file.txt")
    write(base, "a_file.txt", "hello\n")
    cases = [
        ("missing dir", os.path.join(base, "nope"), "nope"),
        ("a file", a_file, "a_file.txt"),
        ("no manifest", variant("nomanifest", lambda d: os.remove(os.path.join(d, "manifest.json"))), "manifest.json"),
        ("truncated events", variant("trunc", lambda d: truncate(d, "events.json")), "events.json"),
        ("invalid json", variant("invalid", lambda d: write(d, "metadata.json", "{\"reason\": oom,}")), "metadata.json"),
        ("schema 99", variant("schema", lambda d: write(d, "manifest.json", json.dumps(
            dict(load(good, "manifest.json"), schema_version=99)))), "schema_version 99"),
        ("empty stacks", variant("empty", lambda d: write(d, "stacks.json", "")), "stacks.json"),
        ("missing events", variant("noevents", lambda d: os.remove(os.path.join(d, "events.json"))), "events.json"),
        ("wrong type", variant("wrongtype", lambda d: write(d, "events.json", '[{"seq": "one"}]')), "events.json"),
        ("events not array", variant("notarray", lambda d: write(d, "events.json", '{"seq": 1}')), "events.json"),
        ("truncated allocations", variant("trunca", lambda d: truncate(d, "allocations.json", 0.3)), "allocations.json"),
        ("garbage after", variant("garbage", lambda d: write(d, "metadata.json", '{"reason":"oom"} xx')), "metadata.json"),
    ]
    cmds = [["report"], ["html", "-o", os.path.join(c.work, "bad.html")],
            ["export", "--format", "memory-viz", "-o", os.path.join(c.work, "bad.pickle")],
            ["export", "--format", "chrome-trace", "-o", os.path.join(c.work, "bad.json")], ["query", "SELECT 1"]]
    for label, path, needle in cases:
        for cmd in cmds:
            args = cmd[:1] + ([path] if cmd[0] != "query" else [path]) + cmd[1:]
            rc, out, err = c.gmr(*args)
            lines = err.splitlines()
            check(rc == 2, "%s / %s: rc=%d, expected 2 (stderr %r)" % (label, cmd[0], rc, err[-300:]))
            check(len(lines) == 1 and lines[0].startswith("gpumemrec: error: "), "%s / %s: not one error line: %r" % (label, cmd[0], err))
            check(needle in lines[0], "%s / %s: error does not name %r: %r" % (label, cmd[0], needle, lines[0]))
        print("ok: %-22s -> %s" % (label, lines[0]))
    rc, out, err = c.gmr("report", "--top", "notanumber", good)
    check(rc == 2, "bad option value: rc=%d" % rc)
    rc, out, err = c.gmr("export", "--format", "svg", good, "-o", "/tmp/x")
    check(rc == 2, "bad --format: rc=%d" % rc)
    rc, out, err = c.gmr("export", "--format", "chrome-trace", good, "-o", "/no/such/dir/x.json")
    check(rc == 1 and err.count("\n") == 1, "unwritable output: rc=%d %r" % (rc, err))


def t_bad_structure(c):
    """Hostile structure: deep nesting in every file, special
    files in place of a JSON file (FIFO, symlink to /dev/zero), absurd numbers.
    Every command answers with one error line and exit 2 (or, for input that
    is odd but valid, exit 0), within a timeout (a hang fails) and under an
    address-space limit (reading until memory runs out fails)."""
    import resource
    good = c.synth("single-struct", "--events", "200")[0]
    base = os.path.join(c.work, "struct")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    n = [0]

    def variant(f, make):
        n[0] += 1
        d = os.path.join(base, "v%02d" % n[0])
        shutil.copytree(good, d)
        p = os.path.join(d, f)
        os.remove(p)
        make(p)
        return d

    def text(t):
        def make(p):
            with open(p, "w") as fh:
                fh.write(t)
        return make

    def edit(f, old, new_):
        with open(os.path.join(good, f)) as fh:
            t = fh.read()
        check(re.search(old, t), "make_bundle output changed: %r not in %s" % (old, f))
        return text(re.sub(old, new_, t))

    deep = 300000
    files = ["manifest.json", "metadata.json", "events.json", "allocations.json", "stacks.json", "environment.json"]
    must_fail = []   # (label, dir, needle)
    may_pass = []    # odd but valid: exit 0 or one error line with exit 2
    for f in files:
        must_fail.append(("open [ x%d %s" % (deep, f), variant(f, text("[" * deep)), f))
        must_fail.append(("open {\"a\": x%d %s" % (deep, f), variant(f, text('{"a":' * deep)), f))
        must_fail.append(("FIFO %s" % f, variant(f, os.mkfifo), f))
        must_fail.append(("-> /dev/zero %s" % f, variant(f, lambda p: os.symlink("/dev/zero", p)), f))
        may_pass.append(("closed [ x%d %s" % (deep, f), variant(f, text("[" * deep + "]" * deep))))
    must_fail.append(("event nested x%d" % deep, variant("events.json", text('[{"seq": 1, "x": ' + "[" * deep + "]" * deep + "}]")),
                      "events.json"))
    for v in ["2147483647", "4294967296", "18446744073709551615", "-2", "1e300"]:
        must_fail.append(("event device_id %s" % v, variant("events.json", edit("events.json", r'"device_id": ?0', '"device_id": ' + v)),
                          "device_id"))
    must_fail.append(("allocation device_id", variant("allocations.json", edit("allocations.json", r'"device_id": ?0', '"device_id": 2147483647')),
                      "device_id"))
    must_fail.append(("metadata device_id", variant("metadata.json", edit("metadata.json", r'"device_id": ?0', '"device_id": 2147483647')),
                      "device_id"))
    must_fail.append(("live_bytes_by_device key", variant("metadata.json", edit("metadata.json", r'"live_bytes_by_device": ?\{', '"live_bytes_by_device": {"2147483647": 1, ')),
                      "live_bytes_by_device"))
    for v in ["1e308", "18446744073709551615", "-1e308"]:
        may_pass.append(("event size %s" % v, variant("events.json", edit("events.json", r'"size": ?\d+', '"size": ' + v))))
        may_pass.append(("event timestamp %s" % v, variant("events.json", edit("events.json", r'"timestamp": ?[\d.]+', '"timestamp": ' + v))))

    def limit():  # 2 GiB of address space: far above what a 200-event bundle needs
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    cmds = [["report"], ["html", "-o", os.path.join(c.work, "s.html")],
            ["export", "--format", "memory-viz", "-o", os.path.join(c.work, "s.pickle")],
            ["export", "--format", "chrome-trace", "-o", os.path.join(c.work, "s.json")], ["query", "SELECT count(*) FROM events"]]
    for label, d, needle in must_fail + [(l, d, None) for l, d in may_pass]:
        for cmd in cmds:
            try:
                p = subprocess.run([c.bin, cmd[0], d] + cmd[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=60, preexec_fn=limit)
            except subprocess.TimeoutExpired:
                raise Fail("%s / %s: no answer in 60 s (hangs)" % (label, cmd[0]))
            err = p.stderr.decode("utf-8", "replace")
            lines = err.splitlines()
            if needle is None and p.returncode == 0:
                continue
            check(p.returncode == 2, "%s / %s: rc=%d, expected 2 (stderr %r)" % (label, cmd[0], p.returncode, err[-300:]))
            check(len(lines) == 1 and lines[0].startswith("gpumemrec: error: "),
                  "%s / %s: not one error line: %r" % (label, cmd[0], err[-300:]))
            check(needle is None or needle in lines[0], "%s / %s: error does not name %r: %r" % (label, cmd[0], needle, lines[0]))
        print("ok: %-36s -> %s" % (label, lines[0] if p.returncode else "exit 0"))


VERDICT_KINDS = {"recovered": 40, "fatal": 3, "unknown": 0, "none": 0}  # --outcome -> --recovered


def verdict_bundles(c):
    """One bundle per verdict (and one without: as written before verdicts existed), plus
    a signal dump (no verdict), all in one directory: {kind: path}."""
    d = os.path.join(c.work, "verdicts")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    out = {}
    for i, (v, n) in enumerate(sorted(VERDICT_KINDS.items())):
        src = c.synth("verdict-" + v, "--events", "300", "--devices", "1", "--outcome", v, "--recovered", str(n),
                      "--seed", str(21 + i))[0]
        out[v] = os.path.join(d, os.path.basename(src))
        shutil.copytree(src, out[v])
    sig = out["none"] + "sig"
    shutil.copytree(out["none"], sig)
    edit_json(sig, "metadata.json", lambda m: m.update(reason="signal", api="", requested_bytes=0, error_code=0,
                                                       error_name="", stack_id=0))
    edit_json(sig, "manifest.json", lambda m: m.update(reason="signal"))
    out["signal"] = sig
    return d, out


def edit_json(b, name, fn):
    v = load(b, name)
    r = fn(v)
    with open(os.path.join(b, name), "w") as f:
        json.dump(v if r is None else r, f)


def expected_outcome(kind):
    return None if kind in ("none", "signal") else kind


def check_verdict_ls(c, d, bundles):
    rc, out, err = c.gmr("ls", d)
    check(rc == 0, "ls rc=%d %s" % (rc, err))
    lines = out.strip().splitlines()
    check(lines[0].split()[5] == "OUTCOME", "ls header: %r" % lines[0])
    cells = {l.split()[-1]: l.split()[6] for l in lines[1:]}  # TIME is two words
    for kind, b in bundles.items():
        want = expected_outcome(kind) or "-"
        check(cells.get(os.path.basename(b)) == want, "ls OUTCOME of %s: %r, expected %r\n%s" %
              (kind, cells.get(os.path.basename(b)), want, out))
    rc, out, err = c.gmr("ls", "--json", d)
    rows = {r["bundle"]: r for r in json.loads(out)}
    for kind, b in bundles.items():
        r = rows[os.path.basename(b)]
        check(r["outcome"] == expected_outcome(kind), "ls --json outcome of %s: %r" % (kind, r["outcome"]))
        check(r["recovered_failures"] == VERDICT_KINDS.get(kind, 0), "ls --json recovered_failures of %s: %r" %
              (kind, r["recovered_failures"]))


def check_verdict_report(c, kind, b):
    meta = load(b, "metadata.json")
    rc, out, err = c.gmr("report", b)
    check(rc == 0, "report %s rc=%d %s" % (kind, rc, err))
    head = out.split("WHAT FAILED")[0]
    want = expected_outcome(kind)
    if want:
        check("  outcome: %s - %s\n" % (want, meta["outcome_detail"]) in head, "%s: no outcome line before WHAT FAILED:\n%s" %
              (kind, head))
    else:
        check("outcome:" not in out, "%s: an outcome line for a bundle without one" % kind)
    rec_line = ("  recovered: cudaMalloc(8.00 GiB) on thread 4243 succeeded 12.3 ms after the failure; "
                "3.20 GiB freed before it\n")
    check((rec_line in out) == (kind == "recovered"), "%s: recovery line %s" % (kind, "missing" if kind == "recovered" else "shown"))
    n = VERDICT_KINDS.get(kind, 0)
    title = "Recovered out-of-memory failures since the previous bundle: %d\n" % n
    check((title in out) == (n > 0) and (("RECOVERED OUT-OF-MEMORY FAILURES" in out) == (n > 0)),
          "%s: recovered-failures section (N=%d)" % (kind, n))
    rc, js, err = c.gmr("report", "--json", b)
    r = json.loads(js)
    check(r["outcome"] == want and r["outcome_detail"] == (meta.get("outcome_detail") if want else None),
          "%s: report --json outcome %r / %r" % (kind, r["outcome"], r["outcome_detail"]))
    # report --json always names the handler: null when the allocation's own retry recovered
    want_recovery = meta.get("recovery") and dict({"handler": None}, **meta["recovery"])
    check(r["recovery"] == want_recovery, "%s: report --json recovery %r" % (kind, r["recovery"]))
    listed = meta.get("recovered_failures", {}).get("listed", [])
    rf = r["recovered_failures"]
    check(rf["count"] == n and len(rf["listed"]) == len(listed), "%s: recovered_failures %r" % (kind, rf["count"]))
    for x, m in zip(rf["listed"], listed):
        for k in ("timestamp", "size", "api", "thread_id", "stack_id", "after_ms", "freed_bytes"):
            check(x[k] == m[k], "%s: recovered_failures.listed %s: %r != %r" % (kind, k, x[k], m[k]))
        check(x["device"] == m["device_id"], "listed device")
    if listed:
        sect = out.split("RECOVERED OUT-OF-MEMORY FAILURES")[1].split("TOP ALLOCATION SITES")[0]
        rows = [l for l in sect.splitlines()[3:] if l.startswith("  20")]
        check(len(rows) == min(32, len(listed)), "%s: %d listed rows, expected %d\n%s" % (kind, len(rows), len(listed), sect))
        for row, x in zip(rows, rf["listed"]):
            check(human(x["size"]) in row and x["api"] in row and str(x["thread_id"]) in row and row.endswith(x["site"]),
                  "%s: listed row %r lacks %r" % (kind, row, x))
        if n > len(listed):
            check("... %d more not listed in the bundle" % (n - len(listed)) in sect, "%s: the unlisted ones" % kind)
    own = own_oom(load(b, "events.json"), meta)
    ooms = r["ooms"]
    check(own is not None or kind == "signal", "%s: the failing OOM is not in the ring" % kind)
    if own is not None:
        check(ooms[own]["verdict"] == want, "%s: own OOM verdict %r" % (kind, ooms[own]["verdict"]))
        if want in ("recovered", "fatal"):
            check(ooms[own]["recovered"] == (want == "recovered"), "%s: own OOM recovered flag" % kind)
    check(all(o["verdict"] is None for i, o in enumerate(ooms) if i != own), "%s: other OOMs took the verdict" % kind)
    return r


def check_verdict_html(c, kind, b):
    page = os.path.join(c.work, "verdict-%s.html" % kind)
    rc, o, err = c.gmr("html", b, "-o", page)
    check(rc == 0, "html %s rc=%d %s" % (kind, rc, err))
    with open(page, encoding="utf-8") as f:
        data = json.loads(f.read().split('id="gmr-data">')[1].split("</script>")[0])
    meta = load(b, "metadata.json")
    want = expected_outcome(kind)
    m = data["meta"]
    check(m["outcome"] == (want or "") and m["recovered_failures"] == VERDICT_KINDS.get(kind, 0),
          "%s: html meta %r" % (kind, {k: m.get(k) for k in ("outcome", "recovered_failures")}))
    check((m["recovery"] is not None) == (kind == "recovered"), "%s: html recovery %r" % (kind, m["recovery"]))
    rec = recovered_ooms(load(b, "events.json"), meta, want or "")
    check([x["recovered"] for x in data["ooms"]] == rec, "%s: html OOM marks %r != %r" % (kind, data["ooms"], rec))
    chromium = chromium_or_skip()
    if not chromium:
        return
    sys.path.insert(0, HERE)
    import check_html
    status, attrs, t, secs, dom = check_html.render(page, chromium, "#gmr-selftest=train")
    check(status == "gmr-render-ok" and t, "%s: page did not render: %r" % (kind, status))
    check(t["outcome"] == want, "%s: page shows outcome %r" % (kind, t["outcome"]))
    check(t["oom_verdicts"] == ([want] if want else []), "%s: verdict marks %r" % (kind, t["oom_verdicts"]))
    check(t["ooms_recovered"] == sum(rec), "%s: dashed (recovered) marks %d != %d" % (kind, t["ooms_recovered"], sum(rec)))


def check_verdict_query_diff(c, bundles):
    for kind, b in bundles.items():
        r = rows_of(c, b, "SELECT key, value FROM metadata WHERE key IN ('outcome', 'recovered_failures') "
                          "OR key LIKE 'recovery.%' ORDER BY key")
        got = {x["key"]: x["value"] for x in r}
        want = {"recovered_failures": VERDICT_KINDS.get(kind, 0)}
        if expected_outcome(kind):
            want["outcome"] = kind
        if kind == "recovered":
            rv = load(b, "metadata.json")["recovery"]
            want.update({"recovery." + k: v for k, v in rv.items()})
        check(got == want, "%s: query metadata %r != %r" % (kind, got, want))
        listed = load(b, "metadata.json").get("recovered_failures", {}).get("listed", [])
        r = rows_of(c, b, "SELECT size, stack_id FROM recovered_failures ORDER BY rowid")
        check([(x["size"], x["stack_id"]) for x in r] == [(x["size"], x["stack_id"]) for x in listed],
              "%s: recovered_failures table %r" % (kind, r[:3]))
    rc, out, err = c.gmr("diff", bundles["recovered"], bundles["fatal"])
    check(rc == 0 and re.search(r"old: .*%s \(recovered\)\n" % os.path.basename(bundles["recovered"]), out) and
          re.search(r"new: .*%s \(fatal\)\n" % os.path.basename(bundles["fatal"]), out), "diff sides lack the outcome:\n" + out[:600])
    rc, out, err = c.gmr("diff", "--json", bundles["none"], bundles["unknown"])
    r = json.loads(out)
    check(r["old"]["outcomes"] == [None] and r["new"]["outcomes"] == ["unknown"], "diff --json outcomes %r %r" %
          (r["old"]["outcomes"], r["new"]["outcomes"]))


def check_verdict_first_failure(c, bundles):
    """report DIR: a failure the program recovered from is not the first failure
    when a later one did not recover."""
    d = os.path.join(c.work, "verdict-dir")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    rec, fat = os.path.join(d, os.path.basename(bundles["recovered"])), os.path.join(d, os.path.basename(bundles["fatal"]))
    shutil.copytree(bundles["recovered"], rec)
    shutil.copytree(bundles["fatal"], fat)
    t = load(fat, "metadata.json")["timestamp"]
    edit_json(rec, "metadata.json", lambda m: m.update(timestamp=t - 10))
    rc, out, err = c.gmr("report", "--json", d)
    r = json.loads(out)
    check(rc == 0 and r["first_failure"]["bundle"] == os.path.basename(fat), "first failure %r, expected the fatal one" %
          r["first_failure"]["bundle"])
    check([x["outcome"] for x in r["bundles"]] == ["recovered", "fatal"], "report --json DIR outcomes")
    rc, out, err = c.gmr("report", d)
    sect = out.split("RANKS")[1].split("DETAILS")[0]
    check("OUTCOME" in sect and "(fatal)" in out.split("RANKS")[0], "report DIR text:\n" + out[:900])


def t_verdict(c):
    """The verdict (outcome, outcome_detail, recovery, recovered_failures)
    in ls, report, html, query and diff, for recovered, fatal and unknown
    bundles and for bundles without one (older, signal)."""
    d, bundles = verdict_bundles(c)
    check_verdict_ls(c, d, bundles)
    for kind, b in sorted(bundles.items()):
        check_verdict_report(c, kind, b)
        check_verdict_html(c, kind, b)
    check_verdict_query_diff(c, bundles)
    check_verdict_first_failure(c, bundles)


def t_verdict_hostile(c):
    """Hostile verdict fields: a wrong type is one error line naming the file
    and key (exit 2; ls lists the bundle as unreadable), absurd numbers and a
    million listed entries are read within bounds (exit 0), never a crash."""
    import resource
    good = c.synth("verdict-h", "--events", "200", "--devices", "1", "--outcome", "recovered", "--recovered", "5")[0]
    base = os.path.join(c.work, "verdict-hostile")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    n = [0]

    def variant(fname, fn):
        n[0] += 1
        d = os.path.join(base, "oom_dump_20260101T000000Z_%d_cuda_1_h_0000000%d" % (n[0], n[0] % 10))
        shutil.copytree(good, d)
        edit_json(d, fname, fn)
        return d

    def md(**kw):
        return lambda m: m.update(kw)

    def rf(**kw):
        return lambda m: m["recovered_failures"].update(kw)

    must_fail = [
        ("outcome 42", variant("metadata.json", md(outcome=42)), "metadata.json", "'outcome' is not a string"),
        ("outcome object", variant("metadata.json", md(outcome={"v": "fatal"})), "metadata.json", "'outcome'"),
        ("manifest outcome list", variant("manifest.json", md(outcome=["fatal"])), "manifest.json", "'outcome'"),
        ("outcome_detail 1", variant("metadata.json", md(outcome_detail=1)), "metadata.json", "'outcome_detail'"),
        ("recovery string", variant("metadata.json", md(recovery="yes")), "metadata.json", "'recovery'"),
        ("recovery.after_ms string", variant("metadata.json", lambda m: m["recovery"].update(after_ms="x")),
         "metadata.json", "recovery: key 'after_ms'"),
        ("recovered_failures list", variant("metadata.json", md(recovered_failures=[1])), "metadata.json",
         "'recovered_failures'"),
        ("count -5", variant("metadata.json", rf(count=-5)), "metadata.json", "'count' is negative"),
        ("count string", variant("metadata.json", rf(count="5")), "metadata.json", "'count' is not a number"),
        ("listed string", variant("metadata.json", rf(listed="many")), "metadata.json", "'listed' is not an array"),
        ("listed entry 7", variant("metadata.json", rf(listed=[7])), "metadata.json", "listed #0 is not a JSON object"),
        ("listed device 2^31", variant("metadata.json", rf(listed=[{"device_id": 2147483648}])), "metadata.json",
         "device_id"),
    ]
    huge = variant("metadata.json", rf(count=1e300))
    big_n = 10 ** 6
    million = variant("metadata.json", rf(count=5, listed=[{"size": i, "stack_id": 1} for i in range(big_n)]))
    evil = variant("metadata.json", md(outcome="<img src=x onerror=\"document.title='pwned'\">",
                                       outcome_detail="</script><b>x</b>"))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    def run(*args):
        try:
            p = subprocess.run([c.bin] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                               preexec_fn=limit)
        except subprocess.TimeoutExpired:
            raise Fail("%s: no answer in 120 s" % (args,))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    cmds = [["report"], ["report", "--json"], ["html", "-o", os.path.join(c.work, "vh.html")],
            ["query", "SELECT count(*) FROM recovered_failures"]]
    for label, d, fname, needle in must_fail:
        for cmd in cmds:
            rc, out, err = run(cmd[0], d, *cmd[1:])
            lines = err.splitlines()
            check(rc == 2 and len(lines) == 1 and lines[0].startswith("gpumemrec: error: "),
                  "%s / %s: rc=%d, expected 2 and one error line: %r" % (label, cmd[0], rc, err[-300:]))
            check(fname in lines[0] and needle in lines[0], "%s / %s: error does not name %s %r: %r" %
                  (label, cmd[0], fname, needle, lines[0]))
        print("ok: %-24s -> %s" % (label, lines[0]))
    rc, out, err = run("ls", "--json", base)
    rows = {r["bundle"]: r for r in json.loads(out)}
    for label, d, fname, needle in must_fail:
        r = rows[os.path.basename(d)]
        check(r["error"] and needle in r["error"], "ls --json: %s not unreadable: %r" % (label, r["error"]))
    rc, out, err = run("ls", base)
    check(rc == 0 and out.count("unreadable") == len(must_fail), "ls text: %d unreadable rows" % out.count("unreadable"))
    rc, out, err = run("report", huge)
    check(rc == 0 and "since the previous bundle: %d\n" % (2 ** 64 - 1) in out, "count 1e300: rc=%d %s" % (rc, err))
    rc, out, err = run("report", million)
    check(rc == 0 and "since the previous bundle: %d\n" % big_n in out and "(report --json lists 1024)" in out,
          "a million listed: rc=%d %s" % (rc, err[-300:]))
    rc, out, err = run("report", "--json", million)
    r = json.loads(out)["recovered_failures"]
    check(r["count"] == big_n and len(r["listed"]) == 1024 and r["listed"][-1]["size"] == 1023,
          "a million listed, --json: count %r, %d listed" % (r["count"], len(r["listed"])))
    rc, out, err = run("query", million, "SELECT count(*) AS n FROM recovered_failures")
    check(rc == 0 and "1024" in out, "a million listed, query: %r" % out)
    page = os.path.join(c.work, "verdict-evil.html")
    rc, out, err = run("html", evil, "-o", page)
    check(rc == 0, "hostile outcome string: html rc=%d %s" % (rc, err))
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check("</script><b>" not in text.split('id="gmr-data">')[1].split("</script>")[0], "the outcome closes the data block")
    chromium = chromium_or_skip()
    if chromium:
        sys.path.insert(0, HERE)
        import check_html
        status, attrs, t, secs, dom = check_html.render(page, chromium, "#gmr-selftest=x")
        check(status == "gmr-render-ok" and t and t["outcome"].startswith("<img"), "hostile outcome: %r %r" % (status, t))
        check("<img" not in dom and "<b>x</b>" not in dom and "pwned" not in dom.split("<title>")[1].split("</title>")[0],
              "an outcome string became markup in the HTML report")


# ---- memory by role, the peak, what to try (tools/role_view.h) ---------------

GiB = 1 << 30


def roles_bundle(c, name, *flags):
    """A make_bundle.py bundle with roles_bundle.py's scenario (its docstring
    has the figures)."""
    src = c.synth("roles-src", "--events", "300", "--devices", "1", "--pre-ring", "0", "--seed", "3")[0]
    dst = os.path.join(c.work, name, os.path.basename(src))
    shutil.rmtree(os.path.dirname(dst), ignore_errors=True)
    shutil.copytree(src, dst)
    subprocess.run([sys.executable, os.path.join(HERE, "roles_bundle.py"), dst] + list(flags), check=True)
    return dst


def report_json(c, b):
    rc, out, err = c.gmr("report", "--json", b)
    check(rc == 0, "report --json rc=%d %s" % (rc, err))
    return json.loads(out)


FULL_ROWS = [("weights", 10 * GiB), ("gradients", 10 * GiB), ("optimizer_state", 20 * GiB), ("kv_cache", 0),
             ("activations", 10 * GiB), ("allocator_cache", 10 * GiB), ("unknown", 0), ("library", 2 * GiB),
             ("context", GiB), ("other_process", 16 * GiB), ("free", GiB // 2), ("unaccounted", GiB // 2)]


def check_roles_report(c, b):
    rc, out, err = c.gmr("report", b)
    check(rc == 0, "report rc=%d %s" % (rc, err))
    for line in ["Memory by role on device 0 (of 80.00 GiB), framework roles (complete):",
                 "     20.00 GiB  [framework] optimizer state", "      2.00 GiB  [driver]    library libnccl.so.2",
                 "     16.00 GiB  [driver]    pid 777 python3 other.py", "What to try:",
                 "  - PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fragmentation)",
                 "      because asked 2.00 GiB; PyTorch holds 10.00 GiB reserved but unallocated, its largest free "
                 "block is 1.00 GiB",
                 "      because optimizer state 20.00 GiB is 2.0x the weights (10.00 GiB)",
                 "  - stop or move pid 777, or give this job another device",
                 "      because libnccl.so.2 holds 2.00 GiB of device 0",
                 "Peak on device 0: 70.00 GiB live at ", "not exact: the ring dropped 1000 older events",
                 "  live now 62.00 GiB; 300 events replayed",
                 "weights 10.00 GiB, gradients 10.00 GiB, optimizer state 20.00 GiB, activations 10.00 GiB, "
                 "allocator cache 15.00 GiB, outside the framework 5.00 GiB",
                 "  By library: libc10_cuda.so 65.00 GiB, libcublas.so.13 5.00 GiB",
                 "  Since the last gap (1 gap(s), 1000 events lost): replayed from "]:
        check(line in out, "report lacks %r:\n%s" % (line, out[:4000]))
    check("[driver]    library libc10_cuda.so" not in out, "PyTorch's segments counted twice (roles and library)")
    r = report_json(c, b)
    t = r["roles"]["tables"]
    check(len(t) == 1 and t[0]["device"] == 0 and t[0]["total_bytes"] == 80 * GiB, "roles tables: %r" % t)
    check([(x["role"], x["bytes"]) for x in t[0]["rows"]] == FULL_ROWS, "roles rows: %r" % t[0]["rows"])
    check(r["roles"]["framework"]["bytes"]["optimizer_state"] == 20 * GiB and r["roles"]["problem"] is None,
          "roles.framework: %r" % r["roles"])
    check([a["rule"] for a in r["advice"]] == ["expandable_segments", "optimizer_state", "other_process", "nccl"],
          "advice rules: %r" % r["advice"])
    p = r["peak"]["devices"][0]
    first = load(b, "stacks.json")[0]["stack_id"]
    check(p["peak_bytes"] == 70 * GiB and p["exact"] is False and p["live_now_bytes"] == 62 * GiB and
          p["sites"][0]["stack_id"] == first and p["sites"][0]["bytes"] == 5 * GiB and p["sites"][0]["site"],
          "peak: %r" % r["peak"])
    check(p["by_library"][0] == {"library": "libc10_cuda.so", "bytes": 65 * GiB, "count": 30} and
          p["after_gap"]["exact"] is True and p["after_gap"]["sites"][0]["site"] and
          p["roles"]["known"] is True and p["roles"]["bytes"]["outside_framework"] == 5 * GiB,
          "peak's libraries, gap, roles: %r" % r["peak"])


def check_roles_query(c, b):
    r = rows_of(c, b, "SELECT role, bytes FROM roles ORDER BY rowid")
    check([(x["role"], x["bytes"]) for x in r] == FULL_ROWS, "query roles: %r" % r)
    r = rows_of(c, b, "SELECT p.bytes, p.count, s.library FROM peak_sites p JOIN stacks s USING (bundle, stack_id)")
    check(r == [{"bytes": 5 * GiB, "count": 3, "library": "libtorch_cuda.so"}], "query peak_sites: %r" % r)
    r = rows_of(c, b, "SELECT peak_bytes, exact, live_now_bytes FROM peak")
    check(r == [{"peak_bytes": 70 * GiB, "exact": 0, "live_now_bytes": 62 * GiB}], "query peak: %r" % r)
    r = rows_of(c, b, "SELECT rule FROM advice ORDER BY rowid")
    check([x["rule"] for x in r] == ["expandable_segments", "optimizer_state", "other_process", "nccl"],
          "query advice: %r" % r)
    rc, out, err = c.gmr("query", "--schema")
    check(all("CREATE TABLE %s " % t in out for t in ("roles", "peak", "peak_sites", "advice")), "--schema tables")


def check_roles_html(c, b):
    page = os.path.join(c.work, "roles.html")
    rc, out, err = c.gmr("html", b, "-o", page)
    check(rc == 0, "html rc=%d %s" % (rc, err))
    with open(page, encoding="utf-8") as f:
        data = json.loads(f.read().split('id="gmr-data">')[1].split("</script>")[0])
    check([x[1] for x in data["roles"][0]["rows"]] == [v for _, v in FULL_ROWS], "html roles: %r" % data["roles"])
    check(len(data["advice"]) == 4 and data["peak"][0]["bytes"] == 70 * GiB, "html advice/peak")
    chromium = chromium_or_skip()
    if chromium:
        sys.path.insert(0, HERE)
        import check_html
        status, attrs, t, secs, dom = check_html.render(page, chromium)
        check(status == "gmr-render-ok", "html render: %r" % status)
        check(dom.count('class="role"') == 10 and 'class="rolebar"' in dom, "no role bar of 10 parts (the non-zero rows)")
        check('class="peak"' in dom and "peak 70.0 GiB" in dom, "the peak is not marked on the curve")
        check('id="advice"' in dom and "expandable_segments:True" in dom, "no What to try in the page")


def check_roles_python(c, b):
    code = ("import json,gpumemrec;b=gpumemrec.open(%r);print(json.dumps([b.roles['tables'][0]['rows'][2]['bytes'],"
            "[a['rule'] for a in b.advice],b.peak['devices'][0]['peak_bytes'],"
            "b.peak_roles(0)['optimizer_state'],b.peak_roles(1)]))" % b)
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"), GPUMEMREC_CLI=c.bin)
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    check(p.returncode == 0, "python reader: %s" % p.stderr.decode()[-500:])
    got = json.loads(p.stdout)
    check(got == [20 * GiB, ["expandable_segments", "optimizer_state", "other_process", "nccl"], 70 * GiB,
                  20 * GiB, None], "python reader: %r" % got)


def check_roles_none(c):
    """No digest: the driver level only; balanced roles: no advice at all."""
    b = roles_bundle(c, "roles-driver", "--no-framework", "--no-peak")
    rc, out, err = c.gmr("report", b)
    check(rc == 0 and "Memory by role on device 0: roles unknown: no framework digest (framework.json); only what "
          "the driver level tells (libraries, this process's context, other processes); the driver level's figures "
          "are above" in out and "[framework]" not in out and "[driver]" not in out, "driver-only roles:\n" + out[:3000])
    r = report_json(c, b)
    check([(x["role"], x["name"], x["bytes"]) for x in r["roles"]["tables"][0]["rows"]][:2] ==
          [("library", "libc10_cuda.so", 60 * GiB), ("library", "libnccl.so.2", 2 * GiB)], "driver-only rows: %r" % r["roles"])
    check([a["rule"] for a in r["advice"]] == ["other_process", "nccl"] and r["peak"] is None,
          "driver-only advice/peak: %r %r" % (r["advice"], r["peak"]))
    bal = roles_bundle(c, "roles-balanced", "--balanced")
    rc, out, err = c.gmr("report", bal)
    check(rc == 0 and "What to try" not in out and "Memory by role on device 0" in out, "balanced:\n" + out[:3000])
    check(report_json(c, bal)["advice"] == [], "balanced roles gave advice")
    return bal


def check_roles_diff(c, old, new):
    rc, out, err = c.gmr("diff", "--json", old, new)
    check(rc == 0, "diff rc=%d %s" % (rc, err))
    d = {x["role"]: x["change_bytes"] for x in json.loads(out)["roles"]}
    check(d.get("optimizer_state") == 8 * GiB and d.get("weights") == -2 * GiB and d.get("library libnccl.so.2") == 2 * GiB
          and d.get("other_process pid 777 python3 other.py") == 16 * GiB, "role deltas: %r" % d)
    rc, out, err = c.gmr("diff", old, new)
    check(rc == 0 and "By role" in out and "optimizer_state" in out and "+8.00 GiB" in out, "diff text:\n" + out[-2000:])


BAD_ROLES = [("weights -5", lambda r: r["bytes"].update(weights=-5), "roles.bytes.weights is not a non-negative integer"),
             ("weights 'x'", lambda r: r["bytes"].update(weights="x"), "roles.bytes.weights is not a number"),
             ("no kv_cache", lambda r: r["bytes"].pop("kv_cache"), "roles.bytes.kv_cache is missing"),
             ("status done", lambda r: r.update(status="done"), "roles.status is not complete, partial or failed"),
             ("tensors []", lambda r: r.update(tensors=[]), "roles.tensors is not an object")]


def check_roles_bad(c, good):
    for label, spoil, msg in BAD_ROLES + [("roles []", None, "roles is not an object")]:
        b = roles_bundle(c, "roles-bad", "--no-peak")
        def edit(d):
            if spoil:
                spoil(d["roles"])
            else:
                d["roles"] = []
        edit_json(b, "framework.json", edit)
        rc, out, err = c.gmr("report", b)
        check(rc == 0 and "framework.json: %s (roles left out; the rest of the report stands)" % msg in out and
              "TOP ALLOCATION SITES" in out and "PyTorch tensors (roles unknown)" in out,
              "%s: rc=%d %s\n%s" % (label, rc, err, out[:3000]))
        r = report_json(c, b)
        check(r["roles"]["problem"] == msg and r["roles"]["framework"] is None and
              [a["rule"] for a in r["advice"]] == ["expandable_segments", "other_process", "nccl"],
              "%s --json: %r %r" % (label, r["roles"], r["advice"]))
    for label, text, msg in [("garbage", "{nope", "peak.json: not a JSON object with a devices array"),
                             ("negative", json.dumps({"schema": 1, "devices": [{"device": 0, "peak_bytes": -1}]}),
                              "peak.json: peak_bytes is not a non-negative integer")]:
        b = roles_bundle(c, "roles-badpeak")
        with open(os.path.join(b, "peak.json"), "w") as f:
            f.write(text)
        rc, out, err = c.gmr("report", b)
        check(rc == 0 and "Peak: " + msg in out and "TOP ALLOCATION SITES" in out, "%s peak: %s\n%s" % (label, err, out[:2000]))
        check(report_json(c, b)["peak"]["problem"] == msg, "%s peak --json" % label)
    # Hostile files: a FIFO (would block a plain read), 300,000-level nesting.
    b = roles_bundle(c, "roles-hostile")
    for name in ("peak.json", "framework.json"):
        os.remove(os.path.join(b, name))
        os.mkfifo(os.path.join(b, name))
    rc, out, err = c.gmr("report", b, timeout=60)
    check(rc == 0 and "Peak: peak.json: not a regular file, not read" in out and "roles unknown" in out,
          "FIFOs: rc=%d %s\n%s" % (rc, err, out[:2000]))
    for name in ("peak.json", "framework.json"):
        os.remove(os.path.join(b, name))
    write_text(os.path.join(b, "framework.json"), '{"framework":"torch","roles":' + "[" * 300000 + "]" * 300000 + "}")
    write_text(os.path.join(b, "peak.json"), '{"devices":' + "[" * 300000 + "]" * 300000 + "}")
    for cmd in (["report", b], ["query", b, "SELECT count(*) FROM roles"], ["html", b, "-o", os.path.join(c.work, "deep.html")]):
        rc, out, err = c.gmr(*cmd, timeout=60)
        check(rc == 0, "300,000-level nesting: %s rc=%d %s" % (cmd[0], rc, err[-300:]))


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def check_roles_exit(c):
    """An exit digest (framework.json at: exit, PyTorch's own peaks) and
    stacks.json's borrowed-Python fields (python "borrowed", python_thread,
    autograd_node) read as any other bundle."""
    b = roles_bundle(c, "roles-exit")

    def at_exit(d):
        d.update({"at": "exit", "request_bytes": 0, "torch_peak_allocated": 65 * GiB, "torch_peak_reserved": 72 * GiB})
    edit_json(b, "framework.json", at_exit)

    def borrowed(stacks):
        stacks[0].update({"python": "borrowed", "python_thread": 12345, "autograd_node": "MmBackward0"})
    edit_json(b, "stacks.json", borrowed)
    rc, out, err = c.gmr("report", b)
    check(rc == 0 and "PyTorch at exit (framework.json) on device 0" in out and
          "  PyTorch's own peaks (its exit digest): allocated 65.00 GiB, reserved 72.00 GiB" in out and
          "Peak on device 0: 70.00 GiB" in out and "expandable_segments" not in out,
          "exit digest: rc=%d %s\n%s" % (rc, err, out[:4000]))
    r = report_json(c, b)["peak"]
    check(r["torch_peak_allocated"] == 65 * GiB and r["torch_peak_reserved"] == 72 * GiB and
          r["devices"][0]["sites"][0]["site"], "exit peaks --json: %r" % r)
    for cmd in (["query", b, "SELECT count(*) FROM peak_sites"], ["html", b, "-o", os.path.join(c.work, "exit.html")]):
        rc, out, err = c.gmr(*cmd)
        check(rc == 0, "borrowed stacks: %s rc=%d %s" % (cmd[0], rc, err))


def t_roles(c):
    b = roles_bundle(c, "roles-full")
    check_roles_report(c, b)
    check_roles_query(c, b)
    check_roles_python(c, b)
    bal = check_roles_none(c)
    check_roles_diff(c, bal, b)
    check_roles_bad(c, b)
    check_roles_exit(c)
    return check_roles_html(c, b)


TESTS = {"help": t_help, "report": t_report, "report_json": t_report_json, "names": t_names, "ls": t_ls,
         "query_dir": t_query_dir, "html_flame": t_html_flame, "html_200k": t_html_200k, "diff": t_diff,
         "multirank": t_multirank, "export_memviz": t_export_memviz, "export_chrome": t_export_chrome,
         "query": t_query, "html": t_html, "run": t_run, "bad_input": t_bad_input, "bad_structure": t_bad_structure,
         "verdict": t_verdict, "verdict_hostile": t_verdict_hostile, "roles": t_roles}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--test", default="all", choices=sorted(TESTS) + ["all"])
    ap.add_argument("bundles", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    c = Ctx(os.path.abspath(args.gpumemrec), os.path.abspath(args.work), [os.path.abspath(b) for b in args.bundles])
    names = sorted(TESTS) if args.test == "all" else [args.test]
    result = 0
    for n in names:
        try:
            r = TESTS[n](c)
            if r == SKIP:
                print("SKIP: %s" % n)
                result = result or (SKIP if len(names) == 1 else 0)
            else:
                print("PASS: %s" % n)
        except Fail as e:
            print("FAIL: %s: %s" % (n, e))
            result = 1
    return result


if __name__ == "__main__":
    sys.exit(main())
