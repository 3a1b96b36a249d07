#!/usr/bin/env python3
"""A preload that never stops a program (ctest compat.preload).

  preload_test.py --gpumemrec BIN --library LIB

From LIB (the built libgpumemrec.so), two copies the loader cannot use:
one marked as an AArch64 file (e_machine 183) and one whose GLIBC_2.17
version need is renamed GLIBC_2.99 (a glibc this system does not have, as
a library built for a newer glibc looks on an older one). Checks what ld.so
does with each under a bare LD_PRELOAD (another machine: ignored with its
"cannot be preloaded" line, the program runs; a missing version: the
program never starts; glibc elf/rtld.c and elf/dl-version.c), and that
`gpumemrec run` runs the program without the preload, its exit status
passed through, with one warning naming the reason. Exit 0 pass, 1 fail.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def patched_copies(lib, tmp):
    data = open(lib, "rb").read()
    arm, v99 = os.path.join(tmp, "arm64.so"), os.path.join(tmp, "glibc299.so")
    with open(arm, "wb") as f:
        f.write(data[:18] + (183).to_bytes(2, "little") + data[20:])  # e_machine: EM_AARCH64
    check(b"GLIBC_2.17\0" in data, "%s has no GLIBC_2.17 version need to rename" % lib)
    with open(v99, "wb") as f:
        f.write(data.replace(b"GLIBC_2.17\0", b"GLIBC_2.99\0"))
    return arm, v99


def loader_facts(arm, v99):
    prog = ["/bin/sh", "-c", "echo ran"]
    rc, out, err = run(prog, dict(os.environ, LD_PRELOAD=arm))
    check(rc == 0 and out == "ran\n" and re.search(r"object '%s' from LD_PRELOAD cannot be preloaded .*ignored"
                                                   % re.escape(arm), err),
          "ld.so with an AArch64 object in LD_PRELOAD: rc=%d out=%r err=%r" % (rc, out, err))
    rc, out, err = run(prog, dict(os.environ, LD_PRELOAD=v99))
    check(rc != 0 and out == "" and "version `GLIBC_2.99' not found" in err,
          "ld.so with a missing glibc version in LD_PRELOAD (the program does not start): rc=%d out=%r err=%r"
          % (rc, out, err))


def launcher(gmr, lib, arm, v99, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMREC_") and k != "LD_PRELOAD"}
    prog = ["/bin/sh", "-c", 'echo "ran [$LD_PRELOAD]"; exit 5']
    cases = [(arm, "it is an ELF file for machine 183 (class 2), this command runs on x86-64 (machine 62)"),
             (v99, "it needs GLIBC_2.99, this system has glibc %s" % os.confstr("CS_GNU_LIBC_VERSION").split()[1])]
    for bad, reason in cases:
        rc, out, err = run([gmr, "run", "--dir", os.path.join(tmp, "d"), "--library", bad, "--"] + prog, env)
        want = "gpumemrec: warning: %s cannot be preloaded here (%s); running the program without it" % (bad, reason)
        check(rc == 5 and out == "ran []\n" and err.count(want) == 1,
              "gpumemrec run --library %s: rc=%d out=%r err=%r" % (os.path.basename(bad), rc, out, err))
    rc, out, err = run([gmr, "run", "--dir", os.path.join(tmp, "d"), "--library", lib, "--"] + prog, env)
    check(rc == 5 and out == "ran [%s]\n" % lib and "warning" not in err,
          "gpumemrec run --library %s (usable): rc=%d out=%r err=%r" % (lib, rc, out, err))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--library", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gmr-preload-") as tmp:
        arm, v99 = patched_copies(a.library, tmp)
        loader_facts(arm, v99)
        launcher(a.gpumemrec, a.library, arm, v99, tmp)
    for f in failures:
        print("FAIL: %s" % f)
    print("PASS" if not failures else "%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
