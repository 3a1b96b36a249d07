#!/usr/bin/env python3
"""Installation tests: `cmake --install` into a temporary prefix, and the
Debian package made by cpack.

  install_test.py --build BUILD --cmake CMAKE --test install|deb

install: installs into PREFIX, checks the layout (CLI, library under
lib/gpumemrec/, man pages, bash completion, docs), then runs the *installed*
`gpumemrec run` on an unmodified test program (tests/programs/rt_linked)
against the fake driver: the installed library must be the one preloaded
(found relative to the executable, with no GPUMEMREC_LIBRARY), a bundle
must appear and the installed `gpumemrec report` must read it. The prefix
is then moved elsewhere (relocated) and must still work; with the library
removed, `run` must fail with exit code 1 and say where it looked.
deb: cpack -G DEB into a temporary directory, checks `dpkg-deb -c` (file
list) and `dpkg-deb -f` (Depends), extracts it with dpkg-deb -x and runs the
extracted CLI the same way. Exit 0 pass, 1 fail, 77 skip (no cpack/dpkg-deb).
"""
import argparse
import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def clean_env(build):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_"))}
    env.pop("LD_PRELOAD", None)
    env["FAKEGPU_CAPACITY"] = str(256 << 20)
    env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "fakes")
    return env


def check_layout(prefix):
    for rel in ("bin/gpumemrec", "lib/gpumemrec/libgpumemrec.so", "lib/gpumemrec/python/sitecustomize.py",
                "lib/gpumemrec/python/gpumemrec_pyhook/torch_hook.py", "share/man/man1/gpumemrec.1.gz",
                "share/man/man1/gpumemrec-run.1.gz", "share/man/man1/gpumemrec-diff.1.gz",
                "share/bash-completion/completions/gpumemrec", "share/doc/gpumemrec/cli.md",
                "share/doc/gpumemrec/README.md"):
        check(os.path.exists(os.path.join(prefix, rel)), "not installed: %s" % rel)
    with gzip.open(os.path.join(prefix, "share/man/man1/gpumemrec-report.1.gz"), "rt") as f:
        page = f.read()
    check(page.startswith(".TH GPUMEMREC-REPORT 1") and "\\-\\-json" in page, "man page of report lacks --json")
    comp = os.path.join(prefix, "share/bash-completion/completions/gpumemrec")
    script = ('source "%s"; COMP_WORDS=(gpumemrec rep); COMP_CWORD=1; _gpumemrec; echo "${COMPREPLY[@]}"; '
              'COMP_WORDS=(gpumemrec diff --js); COMP_CWORD=2; _gpumemrec; echo "${COMPREPLY[@]}"' % comp)
    rc, out, err = run(["bash", "-c", script])
    check(rc == 0 and out.split("\n")[:2] == ["report", "--json"], "bash completion: rc=%d %r %r" % (rc, out, err))


def run_installed(prefix, build, work):
    """The installed CLI preloads the installed library into a test program."""
    gmr = os.path.join(prefix, "bin", "gpumemrec")
    lib = os.path.join(prefix, "lib", "gpumemrec", "libgpumemrec.so")
    env = clean_env(build)
    dumps = os.path.join(work, "dumps")
    shutil.rmtree(dumps, ignore_errors=True)
    rc, out, err = run([gmr, "run", "--dir", dumps, "--", "sh", "-c", "echo $LD_PRELOAD"], env=env)
    check(rc == 0 and os.path.realpath(out.strip()) == os.path.realpath(lib),
          "installed run preloads %r, expected %r (rc=%d %s)" % (out.strip(), lib, rc, err))
    prog = os.path.join(build, "tests", "programs", "rt_linked")
    rc, out, err = run([gmr, "run", "--dir", dumps, "--", prog], env=env)
    check(rc == 0 and "OOM " in out, "test program under the installed run: rc=%d\n%s\n%s" % (rc, out[-800:], err[-800:]))
    bundles = sorted(glob.glob(os.path.join(dumps, "oom_dump_*")))
    check(len(bundles) == 1, "expected one bundle, found %r (stderr %s)" % (bundles, err[-500:]))
    check("1 new bundle" in err, "run did not list the new bundle: %r" % err[-300:])
    rc, out, err = run([gmr, "report", bundles[0]], env=env)
    check(rc == 0 and "WHAT FAILED" in out and "cudaMalloc" in out, "installed report: rc=%d %s" % (rc, err))
    print("ok: installed gpumemrec run -> %s" % os.path.basename(bundles[0]))


def t_install(a, work):
    prefix = os.path.join(work, "prefix")
    shutil.rmtree(prefix, ignore_errors=True)
    rc, out, err = run([a.cmake, "--install", a.build, "--prefix", prefix])
    check(rc == 0, "cmake --install failed: %s" % err[-1000:])
    check_layout(prefix)
    run_installed(prefix, a.build, work)
    moved = os.path.join(work, "moved-prefix")
    shutil.rmtree(moved, ignore_errors=True)
    shutil.move(prefix, moved)
    run_installed(moved, a.build, work)
    os.remove(os.path.join(moved, "lib", "gpumemrec", "libgpumemrec.so"))
    gmr = os.path.join(moved, "bin", "gpumemrec")
    rc, out, err = run([gmr, "run", "--", "true"], env=clean_env(a.build))
    if os.path.exists(os.path.join(moved, "bin", "libgpumemrec.so")):
        return
    check(rc == 1 and "cannot find libgpumemrec.so" in err and "lib/gpumemrec" in err,
          "missing installed library: rc=%d %r" % (rc, err))


def t_deb(a, work):
    cpack = shutil.which("cpack") or os.path.join(os.path.dirname(a.cmake), "cpack")
    if not (os.path.exists(cpack) and shutil.which("dpkg-deb")):
        print("SKIP: cpack or dpkg-deb not found")
        return SKIP
    out_dir = os.path.join(work, "deb")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    rc, out, err = run([cpack, "-G", "DEB", "--config", os.path.join(a.build, "CPackConfig.cmake"), "-B", out_dir],
                       timeout=600)
    check(rc == 0, "cpack failed: %s\n%s" % (out[-1000:], err[-1000:]))
    debs = glob.glob(os.path.join(out_dir, "gpumemrec_*.deb"))
    check(len(debs) == 1, "expected one gpumemrec_*.deb in %s: %r" % (out_dir, os.listdir(out_dir)))
    rc, listing, err = run(["dpkg-deb", "-c", debs[0]])
    check(rc == 0, "dpkg-deb -c: %s" % err)
    names = {l.split()[-1] for l in listing.splitlines() if l.strip()}
    for want in ("./usr/bin/gpumemrec", "./usr/lib/gpumemrec/libgpumemrec.so", "./usr/share/man/man1/gpumemrec.1.gz",
                 "./usr/share/man/man1/gpumemrec-run.1.gz", "./usr/share/bash-completion/completions/gpumemrec",
                 "./usr/share/doc/gpumemrec/cli.md"):
        check(want in names, "%s not in the package:\n%s" % (want, listing))
    check(not any("/tests/" in n or "/include/" in n for n in names), "test or header files in the package")
    rc, depends, err = run(["dpkg-deb", "-f", debs[0], "Depends"])
    check("libc6" in depends and "libsqlite3" in depends, "Depends: %r" % depends)
    root = os.path.join(work, "deb-root")
    shutil.rmtree(root, ignore_errors=True)
    rc, out, err = run(["dpkg-deb", "-x", debs[0], root])
    check(rc == 0, "dpkg-deb -x: %s" % err)
    run_installed(os.path.join(root, "usr"), a.build, work)
    print("ok: %s (%d files), Depends: %s" % (os.path.basename(debs[0]), len(names), depends.strip()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cmake", required=True)
    ap.add_argument("--test", required=True, choices=["install", "deb"])
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="gmr-install-")
    try:
        r = {"install": t_install, "deb": t_deb}[a.test](a, work)
        print("SKIP" if r == SKIP else "PASS: %s" % a.test)
        return r or 0
    except Fail as e:
        print("FAIL: %s: %s" % (a.test, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
