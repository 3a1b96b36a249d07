#!/usr/bin/env python3
"""Python frames with an interpreter this machine does not have (ctest
compat.python3.14): Debian testing's python3.14, in a root made once per
build directory (scripts/old-root.sh), runs the python.* cases
(tests/python/run_case.py: nested, threads, nogil, released, gil_mix, ...:
the GIL held and released) under the shim built here.

  python_root_test.py --build BUILD --python python3.14 --cases nested,threads,...

Debian's python3.14 keeps its evaluation loop's body in a local symbol that
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
    shutil.copytree(os.path.join(build, "tests", "fakes"), os.path.join(work, "fakes"), symlinks=True,
                    ignore=shutil.ignore_patterns("CMakeFiles", "*.cmake", "Makefile", "*.a"))
    shutil.copy(os.path.join(build, "bin", "libgpumemrec.so"), work)
    shutil.copy(os.path.join(build, "tests", "python", "libgmr_native_thread.so"), work)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default="python3.14")
    ap.add_argument("--suite", default="testing")
    ap.add_argument("--cases", required=True)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    packages = "%s,lib%s-dev,gcc,libc6-dev" % (a.python, a.python)
    failed = []
    try:
        root = make_root(build, a.suite, packages)
        stage(root, build)
        for case in a.cases.split(","):
            rc, out, err = inside(root, "cd /tmp && %s /gmr/python/run_case.py --unnamed-eval-loop --case %s "
                                        "--shim /gmr/libgpumemrec.so --fakes /gmr/fakes "
                                        "--native-lib /gmr/libgmr_native_thread.so" % (a.python, case),
                                  {"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
            verdict = [l for l in out.splitlines() if l.startswith(("PASS", "FAIL", "interpreter:"))]
            print("%s: rc=%d %s" % (case, rc, " | ".join(verdict)))
            if rc != 0:
                failed.append(case)
                print(out[-3000:] + err[-2000:])
    except Skip as e:
        print("SKIP: %s" % e)
        return SKIP
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    print("FAIL: %s" % ", ".join(failed) if failed else "PASS: %s with %s" % (a.cases, a.python))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
