"""Runs inside the test's virtual environment (its python, the installed
wheel): opens a bundle of train_fake.py with gpumemrec.open and checks real
values; then bad copies of it, whose BundleError must be the one line the
command's reader prints for them.

  read_bundle.py BUNDLE WORKDIR
Exit 0 pass, 1 fail (one line per failed check).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import gpumemrec
from gpumemrec.__main__ import RUN_VALUE_OPTIONS, rewrite_run

MiB = 1 << 20
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def python_functions(stack):
    """Python function names, innermost first, without the class (3.11+
    record co_qualname: "Block.forward")."""
    return [f.function.rsplit(".", 1)[-1] for f in stack.frames if f.kind == "python"]


def check_values(b):
    check(b.failure is not None and b.failure.api == "cudaMalloc", "failure.api: %r" % (b.failure,))
    check(b.failure.requested_bytes == 16 * MiB, "requested_bytes %d" % b.failure.requested_bytes)
    check(b.failure.error_code == 2 and b.failure.error_name == "cudaErrorMemoryAllocation", "error %r" % (b.failure,))
    check(b.reason == "oom" and b.backend == "cuda", "reason/backend %s/%s" % (b.reason, b.backend))
    check(b.outcome == "fatal", "outcome %r (%r)" % (b.outcome, b.outcome_detail))
    check(b.device.total_bytes == 256 * MiB and b.device.free_bytes == 0, "device %r" % (b.device,))
    check(b.live_bytes == 256 * MiB and b.live_allocations == 12, "live %d in %d" % (b.live_bytes, b.live_allocations))
    check(b.live_bytes_by_device == {0: 256 * MiB}, "by device %r" % (b.live_bytes_by_device,))
    check(os.path.basename(b.command[-1]) == "train_fake.py" if b.command else False, "command %r" % (b.command,))
    fns = python_functions(b.failure.stack)
    check(fns[:3] == ["cuda_malloc", "forward", "train_step"], "failure's Python frames %r" % fns)
    # By Python caller: one site each, or more where the interpreter's own
    # native frames differ (3.13 calls the first time through an
    # unspecialized CALL, at another native return address).
    by_caller = {}
    for s in b.sites:
        names = python_functions(s.stack)
        caller = "load_weights" if "load_weights" in names else "forward" if "forward" in names else repr(names)
        n, total = by_caller.get(caller, (0, 0))
        by_caller[caller] = (n + s.count, total + s.bytes)
        check(s.site_frame is None or s.site_frame in s.stack.frames, "site_frame not one of the stack's frames")
    check(by_caller == {"load_weights": (4, 128 * MiB), "forward": (8, 128 * MiB)}, "sites by caller %r" % by_caller)
    check(all(s.stack.python == "captured" for s in b.sites), "python state %r" % [s.stack.python for s in b.sites])


def check_tables(b):
    ev = b.events
    kinds = [e.event_type for e in ev]
    check(kinds == ["allocation"] * 12 + ["oom"], "event types %r" % kinds)
    check([e.seq for e in ev] == list(range(1, 14)), "event seqs %r" % [e.seq for e in ev])
    check(ev[-1].size == 16 * MiB and ev[-1].result == 2 and ev[-1].memory_allocated == 256 * MiB,
          "oom event %r" % (ev[-1],))
    al = b.allocations
    check(len(al) == 12 and sum(a.size for a in al) == 256 * MiB, "allocations %d, %d bytes" % (len(al), sum(a.size for a in al)))
    check(al[0].size == 32 * MiB and al[-1].size == 16 * MiB, "allocations not largest first")
    stacks = b.stacks
    check(all(a.stack_id in stacks for a in al), "an allocation's stack is not in stacks")
    check(stacks[b.failure.stack.stack_id].frames[0].function == b.failure.stack.frames[0].function,
          "stacks disagree with the report")
    md = b.metadata
    check(md.get("requested_bytes") == 16 * MiB and md.get("outcome") == "fatal", "metadata %r" % md)
    try:
        import pandas  # noqa: F401
    except ImportError:
        try:
            b.to_pandas()
            check(False, "to_pandas without pandas did not raise")
        except ImportError as e:
            check("pip install pandas" in str(e), "to_pandas without pandas: %s" % e)
        print("ok: no pandas here: to_pandas says how to get it")
        return
    df = b.to_pandas("events")
    check(df.shape[0] == 13 and int(df["size"].sum()) == 4 * 32 * MiB + 9 * 16 * MiB, "events frame %r" % (df.shape,))
    df = b.to_pandas()
    check(int(df["size"].sum()) == 256 * MiB and list(df.columns)[:2] == ["address", "size"], "allocations frame")
    df = b.to_pandas("sites")
    check(df.shape[0] == len(b.sites) and int(df["bytes"].sum()) == 256 * MiB, "sites frame %r" % (df.shape,))
    print("ok: to_pandas with pandas %s" % pandas.__version__)


def check_html(b):
    h = b._repr_html_()
    check(h.startswith("<iframe") and "srcdoc=" in h and "gpumemrec report" in h, "repr_html %r" % h[:200])
    check(b.html().lstrip().lower().startswith("<!doctype html"), "html() is not the report page")


def reader_error(path):
    p = subprocess.run([gpumemrec.command(), "report", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    lines = [l for l in p.stderr.splitlines() if l.startswith("gpumemrec: error: ")]
    return p.returncode, lines[-1][len("gpumemrec: error: "):] if lines else p.stderr


def spoil(good, work, name, how):
    bad = os.path.join(work, "bad-" + name)
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(good, bad)
    how(bad)
    return bad


def truncate(path, keep):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:keep])


def edit_json(path, key, value):
    with open(path) as f:
        d = json.load(f)
    d[key] = value
    with open(path, "w") as f:
        json.dump(d, f)


BAD = {
    "events_truncated": (lambda d: truncate(os.path.join(d, "events.json"), 100), "events.json"),
    "no_manifest": (lambda d: os.remove(os.path.join(d, "manifest.json")), "manifest.json"),
    "metadata_type": (lambda d: edit_json(os.path.join(d, "metadata.json"), "requested_bytes", "many"), "metadata.json"),
    "schema_version": (lambda d: edit_json(os.path.join(d, "manifest.json"), "schema_version", 99), "manifest.json"),
    "stacks_garbage": (lambda d: truncate(os.path.join(d, "stacks.json"), 0), "stacks.json"),
}


def check_bad(good, work):
    for name, (how, file) in BAD.items():
        bad = spoil(good, work, name, how)
        rc, want = reader_error(bad)
        try:
            gpumemrec.open(bad)
            got = None
        except gpumemrec.BundleError as e:
            got = str(e)
        check(rc == 2 and file in want, "%s: the command said rc=%d %r" % (name, rc, want))
        check(got == want, "%s: gpumemrec.open said %r, the reader %r" % (name, got, want))
        print("ok: %s -> %s" % (name, got))
    try:
        gpumemrec.open(os.path.join(work, "no-such-bundle"))
        check(False, "a missing path opened")
    except gpumemrec.BundleError as e:
        check("no such file or directory" in str(e), "missing path: %s" % e)


def check_odd_paths(good, work):
    """A bundle whose name starts with '-' (not an option of the command),
    and a directory of bundles (refused as `gpumemrec html` refuses it)."""
    odd = os.path.join(work, "-odd bundle")
    shutil.rmtree(odd, ignore_errors=True)
    shutil.copytree(good, odd)
    here = os.getcwd()
    os.chdir(work)
    try:
        b = gpumemrec.open("-odd bundle")
        check(b.failure.requested_bytes == 16 * MiB and len(b.events) == 13, "bundle named '-odd bundle'")
    finally:
        os.chdir(here)
    many = os.path.join(work, "many")
    shutil.rmtree(many, ignore_errors=True)
    for name in ("oom_dump_a", "oom_dump_b"):
        shutil.copytree(good, os.path.join(many, name))
    try:
        gpumemrec.open(many)
        check(False, "a directory of bundles opened")
    except gpumemrec.BundleError as e:
        check("is a directory of bundles" in str(e), "directory of bundles: %s" % e)


def check_run_options():
    """__main__'s list of value-taking run options against the command's --help."""
    out = subprocess.run([gpumemrec.command(), "run", "--help"], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    taking = set(re.findall(r"^\s+(--[a-z-]+) (?:TEXT|UINT|INT|FLOAT|NUMBER)\b", out, re.M))
    check(taking == RUN_VALUE_OPTIONS, "run options with a value: --help %r, __main__ %r" % (sorted(taking),
                                                                                          sorted(RUN_VALUE_OPTIONS)))


def check_rewrite():
    """How `python -m gpumemrec run` makes the program explicit."""
    py = sys.executable
    cases = [(["t.py", "--lr", "1"], ["--", py, "t.py", "--lr", "1"]),
             (["--dir", "d", "--limit", "1GiB", "t.py"], ["--dir", "d", "--limit", "1GiB", "--", py, "t.py"]),
             (["--dir=d", "-m", "pkg.mod", "x"], ["--dir=d", "--", py, "-m", "pkg.mod", "x"]),
             (["--", "python", "t.py"], ["--", "python", "t.py"]),  # a command: untouched
             (["--", "t.py"], ["--", py, "t.py"]),
             (["--no-python-stacks", "./prog", "-x"], ["--no-python-stacks", "--", "./prog", "-x"]),
             (["--help"], ["--help"])]
    for args, want in cases:
        got = rewrite_run(args)
        check(got == want, "rewrite_run(%r) = %r, want %r" % (args, got, want))


def main():
    bundle, work = sys.argv[1], sys.argv[2]
    check(gpumemrec.__file__.startswith(sys.prefix), "gpumemrec imported from %s, not the venv" % gpumemrec.__file__)
    check(gpumemrec.command().startswith(sys.prefix), "command %s is not the wheel's" % gpumemrec.command())
    b = gpumemrec.open(bundle)
    check_values(b)
    check_tables(b)
    check_html(b)
    check_bad(bundle, work)
    check_odd_paths(bundle, work)
    check_run_options()
    check_rewrite()
    for f in failures:
        print("FAIL: %s" % f)
    if not failures:
        print("ok: %s read from %s with Python %s" % (b.name, gpumemrec.__file__, sys.version.split()[0]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
