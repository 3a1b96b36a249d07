#!/usr/bin/env python3
"""Python frames with interpreters this machine does not have (ctest
compat.python_testing): Debian testing's python3.14 and python3.15, in a
root made once per build directory (scripts/old-root.sh), run the python.* cases
(tests/python/run_case.py: nested, threads, nogil, released, gil_mix, ...:
the GIL held and released) under the shim built here.

  python_root_test.py --build BUILD --pythons python3.14,python3.15 --cases nested,threads,...

Debian's python3.14 and 3.15 keep their evaluation loop's body in a local symbol that
only its debug package names, so the cases run with --unnamed-eval-loop
(run_case.py). Exit 0 pass, 1 fail, 77 skip (only when Debian's archive
cannot be reached, or mmdebstrap is not installed).
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from old_system_test import SKIP, Fail, Skip, inside, make_root  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def stage(root, build):
    work = os.path.join(root, "gmr")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "..", "python"), os.path.join(work, "python"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    # symlinks=False: the fakes are links to the simulated libraries (build/bin/simulate), by absolute path.
    shutil.copytree(os.path.join(build, "tests", "fakes"), os.path.join(work, "fakes"), symlinks=False,
                    ignore=shutil.ignore_patterns("CMakeFiles", "*.cmake", "Makefile", "*.a"))
    shutil.copy(os.path.join(build, "bin", "libgpumemrec.so"), work)
    shutil.copy(os.path.join(build, "tests", "python", "libgmr_native_thread.so"), work)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--pythons", default="python3.14,python3.15")
    ap.add_argument("--suite", default="testing")
    ap.add_argument("--cases", required=True)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    pythons = a.pythons.split(",")
    packages = ",".join("%s,lib%s-dev" % (p, p) for p in pythons) + ",gcc,libc6-dev"
    failed = []
    try:
        root = make_root(build, a.suite, packages)
        stage(root, build)
        for python in pythons:
            for case in a.cases.split(","):
                rc, out, err = inside(root, "cd /tmp && %s /gmr/python/run_case.py --unnamed-eval-loop --case %s "
                                            "--shim /gmr/libgpumemrec.so --fakes /gmr/fakes "
                                            "--native-lib /gmr/libgmr_native_thread.so" % (python, case),
                                      {"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
                verdict = [l for l in out.splitlines() if l.startswith(("PASS", "FAIL", "interpreter:"))]
                print("%s %s: rc=%d %s" % (python, case, rc, " | ".join(verdict)))
                if rc != 0:
                    failed.append("%s %s" % (python, case))
                    print(out[-3000:] + err[-2000:])
    except Skip as e:
        print("SKIP: %s" % e)
        return SKIP
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    print("FAIL: %s" % ", ".join(failed) if failed else "PASS: %s with %s" % (a.cases, a.pythons))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
