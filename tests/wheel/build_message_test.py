#!/usr/bin/env python3
"""The offline wheel build in a Python that lacks what it needs (ctest
wheel.offline_message): one line saying what is missing, not a traceback.

  build_message_test.py --source SRC --work WORK

A venv of Debian's python3 without the system packages, as a pyenv or
conda Python is: as made (pip and setuptools from ensurepip, no `wheel`:
setuptools 66 needs it), then with setuptools removed too (Python 3.12+
venvs have none). In each, `pip wheel SRC --no-build-isolation` must
fail before CMake runs, with packaging/gpumemrec_build.py's line.
Exit 0 pass, 1 fail, 77 skip (no python3-venv).
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wheel_test import copy_python_parts  # noqa: E402

SKIP = 77


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                       env=dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1"))
    return p.returncode, p.stdout.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    src = os.path.join(a.work, "src")
    copy_python_parts(a.source, src)
    failures = []
    venv = os.path.join(a.work, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    rc, out = run(["/usr/bin/python3", "-m", "venv", venv])
    if rc != 0:
        print("SKIP: Debian's python3 cannot make a venv (apt install python3-venv): %s" % out.strip()[-300:])
        return SKIP
    py = os.path.join(venv, "bin", "python")
    # One venv: first as made, then with setuptools removed.
    for label, remove in (("no-wheel", []), ("no-setuptools", ["setuptools"])):
        if remove:
            rc, out = run([py, "-m", "pip", "uninstall", "-y", "-q"] + remove)
            if rc != 0:
                failures.append("%s: pip uninstall %s: %s" % (label, remove, out[-500:]))
                continue
        rc, out = run([py, "-m", "pip", "wheel", src, "--no-build-isolation", "--no-deps", "-w",
                       os.path.join(a.work, "dist-" + label)])
        want = {"no-wheel": "lacks wheel (%s -m pip install 'wheel')" % py,
                "no-setuptools": "lacks setuptools>=61 and wheel (%s -m pip install 'setuptools>=61' 'wheel')" % py}
        line = "gpumemrec: cannot build the wheel: %s %s, or build with build isolation" % (py, want[label])
        ok = rc != 0 and line in out and "Traceback" not in out and "cmake" not in out.lower()
        print("%s: %s" % ("ok" if ok else "FAIL", label))
        if not ok:
            failures.append("%s: rc=%d, want the line %r and no traceback:\n%s" % (label, rc, line, out[-3000:]))
    for f in failures:
        print("FAIL: %s" % f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
