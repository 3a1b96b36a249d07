#!/usr/bin/env python3
"""The wheel on an older Linux (ctest compat.debian11): in a Debian 11 root
(glibc 2.31, Python 3.9, pip 20.3), made once per build directory with
mmdebstrap from Debian's archive, the wheel that wheel.build made installs
with pip into a venv, `gpumemrec --version` runs, a program under the
preloaded library starts, and a fake-GPU Python program run through
`gpumemrec run` writes a bundle that `gpumemrec report` reads.

  old_system_test.py --build BUILD --wheel-dir DIR [--suite bullseye]

The root is BUILD/compat/<suite> (scripts/old-root.sh; kept: later runs
and the build's bundled libraries use it). Commands run
inside it with unshare(1) (own mount and PID namespaces, its own /proc).
Exit 0 pass, 1 fail, 77 skip: only when Debian's archive cannot be reached
(or mmdebstrap is not installed: scripts/install-deps.sh installs it).
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
# What mmdebstrap/apt print when the archive cannot be reached.
OFFLINE = re.compile(r"Temporary failure resolving|Could not resolve|Failed to fetch|Network is unreachable|"
                     r"Connection (refused|timed out)|Could not connect")


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def make_root(build, suite, packages=None):
    """BUILD/compat/<suite>, made once by scripts/old-root.sh (which the build's
    bundled libraries may have come from already)."""
    p = subprocess.run([os.path.join(HERE, "..", "..", "scripts", "old-root.sh"), build, suite] + ([packages] if packages else []),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    out, err = p.stdout.decode().strip(), p.stderr.decode("utf-8", "replace")
    if p.returncode == 0:
        return out
    log = err
    if os.path.exists(os.path.join(build, "compat", suite + ".log")):
        log += open(os.path.join(build, "compat", suite + ".log"), errors="replace").read()
    if "mmdebstrap is not installed" in err:
        raise Skip(err.strip())
    if OFFLINE.search(log):
        raise Skip("Debian's archive cannot be reached, no %s root: %s" % (suite, OFFLINE.search(log).group(0)))
    raise Fail("scripts/old-root.sh %s failed: %s" % (suite, log[-2000:]))


def inside(root, script, env):
    """Runs `sh -c script` in the root; (rc, stdout, stderr)."""
    cmd = ["unshare", "--mount", "--pid", "--fork", "--root=" + root, "--mount-proc=/proc", "/usr/bin/env", "-i"]
    cmd += ["%s=%s" % kv for kv in sorted(env.items())] + ["/bin/sh", "-c", script]
    if os.geteuid() != 0:
        cmd.insert(1, "--map-root-user")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def stage(root, build, wheel_dir):
    """The wheel, the fake GPU libraries and the test program into ROOT/gmr."""
    work = os.path.join(root, "gmr")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "fakes"))
    wheels = glob.glob(os.path.join(wheel_dir, "gpumemrec-*.whl"))
    check(len(wheels) == 1, "expected one wheel in %s (did wheel.build run?)" % wheel_dir)
    shutil.copy(wheels[0], work)
    for lib in ("libcuda.so.1", "libcudart.so.13"):
        shutil.copy(os.path.join(build, "tests", "fakes", lib), os.path.join(work, "fakes", lib))
    os.symlink("libcudart.so.13", os.path.join(work, "fakes", "libcudart.so"))
    shutil.copy(os.path.join(HERE, "..", "wheel", "train_fake.py"), work)
    return os.path.basename(wheels[0])


def run_steps(root, wheel):
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/gmr", "LANG": "C.UTF-8"}
    steps = [
        ("venv and pip install", "cd /gmr && python3 -m venv venv && venv/bin/pip install -q --no-index --no-deps "
                                 "--disable-pip-version-check /gmr/%s" % wheel, None),
        ("gpumemrec --version", "/gmr/venv/bin/gpumemrec --version", r"^gpumemrec \d+\.\d+\.\d+"),
        ("a program under LD_PRELOAD", "LD_PRELOAD=$(echo /gmr/venv/lib/python3*/site-packages/gpumemrec/_native/"
                                       "libgpumemrec.so) python3 -c 'print(\"started\")'", r"^started$"),
    ]
    for what, script, want in steps:
        rc, out, err = inside(root, script, base)
        check(rc == 0 and (want is None or re.search(want, out, re.M)),
              "%s: rc=%d\n%s\n%s" % (what, rc, out[-1500:], err[-1500:]))
        print("ok: %s %s" % (what, out.strip().splitlines()[-1] if out.strip() else ""))
    env = dict(base, FAKEGPU_CAPACITY=str(256 * MiB), GMR_CUDART="/gmr/fakes/libcudart.so",
               LD_LIBRARY_PATH="/gmr/fakes")
    rc, out, err = inside(root, "cd /gmr && venv/bin/gpumemrec run --dir /gmr/d -- venv/bin/python train_fake.py", env)
    check(rc == 3 and "OOM rc=2" in out and "1 new bundle" in err,
          "gpumemrec run -- python train_fake.py: rc=%d (want 3)\n%s\n%s" % (rc, out[-800:], err[-1500:]))
    rc, out, err = inside(root, "/gmr/venv/bin/gpumemrec report /gmr/d/oom_dump_*", base)
    # train_fake.py: 4 x 32 MiB, then 16 MiB each until the 256 MiB device is full (8), the 13th call fails.
    check(rc == 0 and "256.00 MiB in 12 allocations" in out and re.search(r"cudaMalloc +12 +0 +1 +0 +0 +13", out),
          "gpumemrec report: rc=%d\n%s\n%s" % (rc, out[-2000:], err[-800:]))
    print("ok: the bundle written in the root reads back:\n%s" % "\n".join(out.splitlines()[:6]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--wheel-dir", required=True)
    ap.add_argument("--suite", default="bullseye")
    a = ap.parse_args()
    try:
        root = make_root(os.path.abspath(a.build), a.suite)
        wheel = stage(root, os.path.abspath(a.build), a.wheel_dir)
        run_steps(root, wheel)
        print("PASS: the wheel on %s" % a.suite)
        return 0
    except Skip as e:
        print("SKIP: %s" % e)
        return SKIP
    except (Fail, subprocess.TimeoutExpired) as e:
        print("FAIL: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
