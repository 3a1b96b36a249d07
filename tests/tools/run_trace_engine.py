#!/usr/bin/env python3
"""The chrome-trace export through a real consumer: Chrome DevTools' trace
engine (npm @paulirish/trace_engine, the Performance panel's trace model
published standalone), in Node.

  run_trace_engine.py --gpumemrec BIN --work DIR [BUNDLE ...]

Installs the package with npm into DIR/trace_engine at test time (never
committed; a second run reuses it), exports each bundle (synthesized with
make_bundle.py when none is given) and runs check_trace_engine.mjs on it.
Exit 0 pass, 1 fail, 77 skip (no node/npm, or the npm registry cannot be
reached). Perfetto's trace processor is not used: it is neither a Debian
package nor on npm, and pip is not reachable from the test machines.
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
PACKAGE = "@paulirish/trace_engine@0.0.65"  # pinned: the package says its API is not stable


def install(engine_dir):
    marker = os.path.join(engine_dir, "node_modules", "@paulirish", "trace_engine", "package.json")
    if os.path.exists(marker):
        return True
    os.makedirs(engine_dir, exist_ok=True)
    try:
        p = subprocess.run(["npm", "install", "--prefix", engine_dir, "--no-audit", "--no-fund", "--ignore-scripts",
                            "--no-save", PACKAGE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    except subprocess.TimeoutExpired:
        print("SKIP: npm install %s timed out (registry unreachable?)" % PACKAGE)
        return False
    if p.returncode != 0 or not os.path.exists(marker):
        print("SKIP: npm could not install %s (registry unreachable?):\n%s" % (PACKAGE, p.stdout.decode()[-2000:]))
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("bundles", nargs="*")
    args = ap.parse_args()
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            print("SKIP: %s is not installed" % tool)
            return SKIP
    work = os.path.abspath(args.work)
    engine_dir = os.path.join(work, "trace_engine")
    if not install(engine_dir):
        return SKIP
    bundles = [os.path.abspath(b) for b in args.bundles]
    if not bundles:
        synth = os.path.join(work, "bundles")
        shutil.rmtree(synth, ignore_errors=True)
        subprocess.run([sys.executable, os.path.join(HERE, "make_bundle.py"), synth, "--events", "3000",
                        "--devices", "2"], check=True, stdout=subprocess.DEVNULL)
        bundles = sorted(os.path.join(synth, x) for x in os.listdir(synth) if x.startswith("oom_dump_"))
    result = 0
    for i, b in enumerate(bundles):
        out = os.path.join(work, "trace%d.json" % i)
        p = subprocess.run([args.gpumemrec, "export", "--format", "chrome-trace", b, "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            print("FAIL: export of %s: %s" % (b, p.stdout.decode()))
            return 1
        p = subprocess.run(["node", os.path.join(HERE, "check_trace_engine.mjs"), engine_dir, out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        print("%s:\n%s" % (os.path.basename(b), p.stdout.decode().strip()))
        if p.returncode != 0:
            result = 1
    return result


if __name__ == "__main__":
    sys.exit(main())
