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

from npm_package import npm_install

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
PACKAGE = "@paulirish/trace_engine@0.0.65"  # pinned: the package says its API is not stable


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
    if not npm_install(engine_dir, PACKAGE, "@paulirish/trace_engine"):
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
