#!/usr/bin/env python3
"""The Python wheel, end to end (ctest names wheel.*).

  wheel_test.py --step build   --source SRC --build BUILD --work WORK
  wheel_test.py --step install --build BUILD --work WORK --python PY --label L

  wheel_test.py --step auditwheel --build BUILD --work WORK
  wheel_test.py --step readme --source SRC --build BUILD --work WORK

build: `pip wheel --no-build-isolation --no-deps --no-index` (offline, with
Debian's setuptools, wheel and pip) from a copy of the Python parts of SRC,
reusing the CMake build BUILD (GPUMEMREC_CMAKE_BUILD_DIR: only the shim and
gpumemrec_portable are built there). Checks the wheel's file list, entry
point and metadata.
auditwheel: `auditwheel show` from the frameworks venv confirms the tag the
build gave the wheel (manylinux_2_28_x86_64) and that it needs no library
outside the policy (skip without the venv).
readme: the README's first wheel command as written there (build
isolation: pip fetches setuptools and wheel; skip without an index).
install: a fresh venv with PY (Debian's python3 with its system packages, so
pandas when python3-pandas is installed; a pyenv Python), `pip install` of
the wheel, then tests/wheel/train_fake.py (ctypes into the fake CUDA runtime,
until out of memory) through `gpumemrec run -- python train_fake.py` and
`python -m gpumemrec run train_fake.py`; the bundles are read back in the venv
(tests/wheel/read_bundle.py). Exit 0 pass, 1 fail, 77 skip (a tool genuinely
absent: python3-venv, setuptools, wheel, pip, readelf; scripts/install-deps.sh
installs them).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(cmd, env=None, cwd=None, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def copy_python_parts(source, dest):
    """What setup.py needs, so the build writes nothing into the source tree."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "packaging"))
    for f in ("pyproject.toml", "setup.py", "CMakeLists.txt"):
        shutil.copy(os.path.join(source, f), dest)
    for f in ("wheel_tag.py", "gpumemrec_build.py"):
        shutil.copy(os.path.join(source, "packaging", f), os.path.join(dest, "packaging"))
    shutil.copytree(os.path.join(source, "python"), os.path.join(dest, "python"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "_native"))


def skip_without_build_tools():
    rc, _, err = run(["/usr/bin/python3", "-c", "import setuptools, wheel, pip"])
    if rc != 0 or not shutil.which("readelf"):
        raise Skip("Debian's python3-setuptools, python3-wheel, python3-pip and binutils are needed "
                   "(scripts/install-deps.sh): %s" % err.strip()[-200:])


def build_wheel(a):
    py = "/usr/bin/python3"
    skip_without_build_tools()
    src, dist = os.path.join(a.work, "src"), os.path.join(a.work, "dist")
    copy_python_parts(a.source, src)
    shutil.rmtree(dist, ignore_errors=True)
    env = dict(os.environ, GPUMEMREC_CMAKE_BUILD_DIR=a.build, CMAKE=a.cmake, CMAKE_BUILD_PARALLEL_LEVEL="2",
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    rc, out, err = run([py, "-m", "pip", "wheel", src, "--no-build-isolation", "--no-deps", "--no-index", "-w", dist],
                       env=env, timeout=900)
    check(rc == 0, "pip wheel failed:\n%s\n%s" % (out[-2000:], err[-2000:]))
    wheels = glob.glob(os.path.join(dist, "gpumemrec-*.whl"))
    check(len(wheels) == 1, "expected one wheel in %s: %r" % (dist, os.listdir(dist)))
    return wheels[0]


def wheel_platform_tag(whl):
    """The platform tag of a wheel's file name (PEP 427: name-version-py-abi-platform.whl)."""
    return os.path.basename(whl)[:-len(".whl")].split("-")[-1]


def check_wheel(a, whl):
    """The wheel's file list, entry point and metadata. Its tag is checked
    by auditwheel (--step auditwheel): packaging/wheel_tag.py named it."""
    tag = wheel_platform_tag(whl)
    check(tag.startswith("manylinux_2_") and tag.endswith("_x86_64"), "wheel %s" % os.path.basename(whl))
    bundled = [n for n in ("libunwind.so.8", "liblzma.so.5") if os.path.exists(os.path.join(a.build, "bin", n))]
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        info = z.getinfo("gpumemrec/_native/gpumemrec")
        check(info.external_attr >> 16 & 0o111, "gpumemrec/_native/gpumemrec is not executable in the wheel")
        ep = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        wheel_meta = z.read([n for n in names if n.endswith(".dist-info/WHEEL")][0]).decode()
        check(ep and "gpumemrec = gpumemrec.__main__:console_main" in z.read(ep[0]).decode(), "console script")
    for want in ["gpumemrec/__init__.py", "gpumemrec/__main__.py", "gpumemrec/bundle.py",
                 "gpumemrec/_native/libgpumemrec.so", "gpumemrec/_native/python/sitecustomize.py",
                 "gpumemrec/_native/python/gpumemrec_pyhook/torch_hook.py"] + \
            ["gpumemrec/_native/" + n for n in bundled] + \
            ["gpumemrec/_native/licenses/%s.copyright" % n for n in bundled
             if os.path.exists(os.path.join(a.build, "bin", n + ".copyright"))]:
        check(want in names, "%s not in the wheel: %r" % (want, sorted(names)))
    check("Root-Is-Purelib: false" in wheel_meta and "Tag: py3-none-%s" % tag in wheel_meta, wheel_meta)
    print("ok: %s (%d files)" % (os.path.basename(whl), len(names)))


def auditwheel_show(a):
    """`auditwheel show` (pypa/auditwheel, from the frameworks venv) on the
    wheel wheel.build made: the tag it says is the file name's, which is the
    README's manylinux_2_28_x86_64, and it needs no library outside the
    manylinux policy."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "simulate"))
    import frameworks_venv  # tests/simulate: the venv's one finder
    venv = frameworks_venv.find()
    if venv is None:
        raise Skip("the frameworks venv (auditwheel) is absent (make it with scripts/frameworks-venv.sh)")
    auditwheel = str(venv / "bin" / "auditwheel")
    whl = glob.glob(os.path.join(a.work, "dist", "gpumemrec-*.whl"))
    check(len(whl) == 1, "no wheel in %s (did wheel.build run?)" % os.path.join(a.work, "dist"))
    rc, out, err = run([auditwheel, "show", "--json", whl[0]], timeout=300)
    check(rc == 0, "auditwheel show: rc=%d\n%s" % (rc, err[-2000:]))
    shown = json.loads(out)
    tag = wheel_platform_tag(whl[0])
    check(shown["overall_tag"] == tag == "manylinux_2_28_x86_64" and not shown["external_libs"],
          "auditwheel says %s (symbols: %s, external libraries: %s); the wheel is named %s" %
          (shown["overall_tag"], shown["sym_tag"], shown["external_libs"], tag))
    rc, text, _ = run([auditwheel, "show", whl[0]], timeout=300)
    print(" ".join(text.split()))


def readme_command(a):
    """The README's first wheel command, as written there (with build
    isolation: pip fetches setuptools and wheel), in a copy of the Python
    parts of the source; GPUMEMREC_CMAKE_BUILD_DIR (setup.py) reuses this
    build instead of configuring a new one. Skipped when pip cannot reach
    an index."""
    readme = open(os.path.join(a.source, "README.md"), encoding="utf-8").read()
    line = [l for l in readme.splitlines() if l.startswith("python3 -m pip wheel . ")][0]
    argv = line.split("#")[0].split()
    check(argv == ["python3", "-m", "pip", "wheel", ".", "--no-deps", "-w", "dist/"], "README: %r" % argv)
    src = os.path.join(a.work, "readme-src")
    copy_python_parts(a.source, src)
    env = dict(os.environ, GPUMEMREC_CMAKE_BUILD_DIR=a.build, CMAKE=a.cmake, CMAKE_BUILD_PARALLEL_LEVEL="2",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    rc, out, err = run(["/usr/bin/python3"] + argv[1:], env=env, cwd=src, timeout=900)
    if rc != 0 and re.search(r"No matching distribution found for (setuptools|wheel)|Could not fetch|"
                             r"NewConnectionError|Network is unreachable", out + err):
        raise Skip("pip could not fetch the build requirements (no index reachable): %s" % err.strip()[-300:])
    check(rc == 0, "%s failed:\n%s\n%s" % (" ".join(argv), out[-2000:], err[-2000:]))
    whl = glob.glob(os.path.join(src, "dist", "gpumemrec-*.whl"))
    check(len(whl) == 1, "no wheel in dist/: %r" % os.listdir(os.path.join(src, "dist")))
    check_wheel(a, whl[0])
    built = glob.glob(os.path.join(a.work, "dist", "gpumemrec-*.whl"))
    check(not built or os.path.basename(built[0]) == os.path.basename(whl[0]),
          "the isolated build named the wheel %s, the offline one %s" % (os.path.basename(whl[0]), built))


def make_venv(a, venv):
    shutil.rmtree(venv, ignore_errors=True)
    args = [a.python, "-m", "venv"]
    if a.python.startswith("/usr/bin/"):
        args.append("--system-site-packages")  # Debian's python3-pandas
    rc, out, err = run(args + [venv], timeout=300)
    if rc != 0 and ("ensurepip" in err or "No module named venv" in err):
        raise Skip("%s cannot make a venv (Debian: apt install python3-venv): %s" % (a.python, err.strip()[-300:]))
    check(rc == 0, "venv: %s" % err[-1000:])
    py = os.path.join(venv, "bin", "python")
    whl = glob.glob(os.path.join(a.work, "dist", "gpumemrec-*.whl"))
    if not whl:
        skip_without_build_tools()
    check(len(whl) == 1, "no wheel in %s (did wheel.build run?)" % os.path.join(a.work, "dist"))
    rc, out, err = run([py, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", whl[0]],
                       timeout=300)
    check(rc == 0, "pip install: %s\n%s" % (out[-1000:], err[-1000:]))
    return py


def test_env(a):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_", "PYTHON"))}
    env.pop("LD_PRELOAD", None)
    fakes = os.path.join(a.build, "tests", "fakes")
    env.update(FAKEGPU_CAPACITY=str(256 * MiB), GMR_CUDART=os.path.join(fakes, "libcudart.so"),
               LD_LIBRARY_PATH=fakes)
    return env


def one_bundle(dumps, rc, out, err, how):
    check(rc == 3 and "OOM rc=2" in out, "%s: rc=%d (want 3)\n%s\n%s" % (how, rc, out[-800:], err[-1500:]))
    bundles = glob.glob(os.path.join(dumps, "oom_dump_*"))
    check(len(bundles) == 1 and "1 new bundle" in err, "%s: bundles %r\n%s" % (how, bundles, err[-800:]))
    return bundles[0]


def install_and_run(a):
    venv = os.path.join(a.work, "venv-" + a.label)
    py = make_venv(a, venv)
    gmr = os.path.join(venv, "bin", "gpumemrec")
    env = test_env(a)
    lib = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "gpumemrec", "_native", "libgpumemrec.so"))
    check(len(lib) == 1, "libgpumemrec.so not installed in the venv")
    rc, out, err = run([gmr, "run", "--dir", os.path.join(venv, "d0"), "--", "sh", "-c", "echo $LD_PRELOAD"], env=env)
    check(rc == 0 and os.path.realpath(out.strip()) == os.path.realpath(lib[0]),
          "gpumemrec run preloads %r, not the wheel's %s (%s)" % (out.strip(), lib[0], err[-300:]))
    train = os.path.join(HERE, "train_fake.py")
    d1, d2 = os.path.join(venv, "d1"), os.path.join(venv, "d2")
    rc, out, err = run([gmr, "run", "--dir", d1, "--", py, train], env=env, cwd=venv)
    b1 = one_bundle(d1, rc, out, err, "gpumemrec run -- python train_fake.py")
    rc, out, err = run([py, "-m", "gpumemrec", "run", "--dir", d2, train], env=env, cwd=venv)
    b2 = one_bundle(d2, rc, out, err, "python -m gpumemrec run train_fake.py")
    print("ok: both entry points wrote a bundle: %s, %s" % (os.path.basename(b1), os.path.basename(b2)))
    for b in (b1, b2):
        rc, out, err = run([py, os.path.join(HERE, "read_bundle.py"), b, venv], env=env, cwd=venv)
        sys.stdout.write(out)
        check(rc == 0, "read_bundle.py %s: rc=%d\n%s" % (b, rc, err[-1500:]))
    check_parquet_python(gmr, b1, venv, env)
    check_simulate(py, venv, env)


# A program that asks the driver (loaded by name, as a CUDA program does)
# how many cards it has and the first one's name.
DRIVER_PROBE = r"""
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
n, dev, name = ctypes.c_int(), ctypes.c_int(), ctypes.create_string_buffer(128)
assert cu.cuInit(0) == 0 and cu.cuDeviceGetCount(ctypes.byref(n)) == 0
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0 and cu.cuDeviceGetName(name, 128, dev) == 0
print("%d x %s" % (n.value, name.value.decode()))
"""


def check_simulate(py, venv, env):
    """The wheel carries the simulated cards: python -m gpumemrec run
    --simulate finds them beside its own library (no fakes on the path), and
    a bad card name is one line and exit 2."""
    env = {k: v for k, v in env.items() if k not in ("LD_LIBRARY_PATH", "GMR_CUDART", "FAKEGPU_CAPACITY")}
    d = os.path.join(venv, "d-sim")
    rc, out, err = run([py, "-m", "gpumemrec", "run", "--simulate", "h100-80gb:2", "--dir", d, "--", py, "-c",
                        DRIVER_PROBE], env=env, cwd=venv)
    check(rc == 0 and out.strip() == "2 x NVIDIA H100 80GB HBM3",
          "python -m gpumemrec run --simulate h100-80gb:2: rc=%d %r %s" % (rc, out, err[-500:]))
    rc, out, err = run([py, "-m", "gpumemrec", "run", "--simulate", "h100", "--dir", d, "--", py, "-c",
                        "print('started')"], env=env, cwd=venv)
    check(rc == 2 and "started" not in out and len(err.strip().splitlines()) == 1 and "no such simulated card" in err,
          "--simulate h100 (no such card): rc=%d %r %r" % (rc, out, err))
    print("ok: the wheel's simulated cards (python -m gpumemrec run --simulate)")


def check_parquet_python(gmr, bundle, venv, env):
    """The console script hands `export --table-format parquet` its own
    Python (GPUMEMREC_PYTHON): Parquet files where the venv has pyarrow, else
    one line naming the venv's Python."""
    out = os.path.join(venv, "tables")
    rc, _, err = run([gmr, "export", "-f", "tables", "--table-format", "parquet", bundle, "-o", out], env=env)
    if rc == 0:
        check(glob.glob(os.path.join(out, "events", "*.parquet")), "no Parquet file in %s" % out)
    else:
        said = re.search(r"parquet: (\S+) has no pyarrow", err)
        check(rc == 1 and said and said.group(1).startswith(venv + "/"),
              "export --table-format parquet from the wheel: rc=%d %s" % (rc, err[-500:]))
    print("ok: export --table-format parquet uses the venv's Python (%s)" % ("written" if rc == 0 else "no pyarrow"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--step", required=True, choices=["build", "install", "auditwheel", "readme"])
    ap.add_argument("--source")
    ap.add_argument("--build", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--work", required=True)
    ap.add_argument("--python")
    ap.add_argument("--label")
    a = ap.parse_args()
    a.build, a.work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(a.work, exist_ok=True)
    try:
        if a.step == "build":
            check_wheel(a, build_wheel(a))
        elif a.step == "auditwheel":
            auditwheel_show(a)
        elif a.step == "readme":
            readme_command(a)
        else:
            install_and_run(a)
        print("PASS: wheel %s %s" % (a.step, a.label or ""))
        return 0
    except Skip as e:
        print("SKIP: %s" % e)
        return SKIP
    except Fail as e:
        print("FAIL: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
