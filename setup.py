"""Builds the gpumemrec wheel (see pyproject.toml for the command).

The native files come from CMake: libgpumemrec.so (target gpumemrec_shim)
and the self-contained `gpumemrec` command (gpumemrec_portable: SQLite,
zlib, libstdc++ and libgcc linked in). Both go into gpumemrec/_native/, where
the command finds the library beside itself (tools/cmd_run.cpp), with the
Python start-up hook in gpumemrec/_native/python/ beside the library. The wheel is
tagged py3-none-manylinux_2_<N>_x86_64: no CPython extension inside, so one
wheel serves every Python 3; N is the newest glibc version the files need.

GPUMEMREC_CMAKE_BUILD_DIR=DIR uses an already configured CMake build
directory (only the two targets are built there) instead of configuring
build/wheel-cmake; CMAKE names the cmake executable.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
except ImportError:
    from wheel.bdist_wheel import bdist_wheel  # older setuptools (packaging/gpumemrec_build.py checks it is there)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "packaging"))
import wheel_tag  # noqa: E402

NATIVE = {"gpumemrec": os.path.join("bin", "portable", "gpumemrec"), "libgpumemrec.so": os.path.join("bin", "libgpumemrec.so")}


def project_version():
    with open(os.path.join(HERE, "CMakeLists.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("project(gpumemrec VERSION "):
                return line.split()[2]
    raise RuntimeError("no project(gpumemrec VERSION ...) line in CMakeLists.txt")


def cmake_build():
    """Builds the two native targets; returns the CMake build directory."""
    cmake = os.environ.get("CMAKE", "cmake")
    build = os.environ.get("GPUMEMREC_CMAKE_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
    else:
        build = os.path.join(HERE, "build", "wheel-cmake")
        subprocess.check_call([cmake, "-S", HERE, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                               "-DGPUMEMREC_BUILD_TESTS=OFF", "-DGPUMEMREC_BUILD_BENCH=OFF"])
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
    subprocess.check_call([cmake, "--build", build, "--target", "gpumemrec_shim", "gpumemrec_portable",
                           "gpumemrec_simulate", "-j", jobs])
    return build


def copy_native(build, dest):
    """The native files into dest, debug sections dropped (the symbol table
    stays, so the shim's own frames still have names)."""
    os.makedirs(dest, exist_ok=True)
    strip = shutil.which("strip")
    for name, rel in NATIVE.items():
        src, dst = os.path.join(build, rel), os.path.join(dest, name)
        if not os.path.exists(src):
            raise RuntimeError("%s was not built (%s)" % (src, "is libsqlite3-dev installed?" if name == "gpumemrec" else ""))
        if strip:
            subprocess.check_call([strip, "--strip-debug", "-o", dst, src])
        else:
            shutil.copyfile(src, dst)
        os.chmod(dst, 0o755)
    # libunwind and liblzma beside the library, with their copyright files:
    # loaded where the host has none (shim/record/stack_capture.cpp); absent
    # when the build host had none.
    for name in ("libunwind.so.8", "liblzma.so.5"):
        src = os.path.join(build, "bin", name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(dest, name))
        if os.path.exists(src + ".copyright"):
            os.makedirs(os.path.join(dest, "licenses"), exist_ok=True)
            shutil.copyfile(src + ".copyright", os.path.join(dest, "licenses", name + ".copyright"))
    # The simulated CUDA libraries (docs/simulate.md), under their SONAMEs, in
    # simulate/ beside the library, where the recorder and `gpumemrec run
    # --simulate` look for them.
    sim_src, sim_dst = os.path.join(build, "bin", "simulate"), os.path.join(dest, "simulate")
    os.makedirs(sim_dst, exist_ok=True)
    for name in sorted(os.listdir(sim_src)):
        src = os.path.join(sim_src, name)
        if ".so." not in name or os.path.islink(src):
            continue
        if strip:
            subprocess.check_call([strip, "--strip-debug", "-o", os.path.join(sim_dst, name), src])
        else:
            shutil.copyfile(src, os.path.join(sim_dst, name))
    # The Python start-up hook, beside the library as everywhere else
    # (docs/python-hook.md; shim/base/python_hook_env.cpp looks for python/),
    # as the gpumemrec_shim target placed it in the build tree.
    shutil.copytree(os.path.join(build, "bin", "python"), os.path.join(dest, "python"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)


class BuildPy(build_py):
    def run(self):
        super().run()
        copy_native(cmake_build(), os.path.join(self.build_lib, "gpumemrec", "_native"))


class NativeDistribution(Distribution):
    """Native files inside: installed into platlib, a platform wheel
    (Root-Is-Purelib: false), although there is no CPython extension."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    def get_tag(self):
        files = []
        for root, _, names in os.walk(self.bdist_dir):
            if os.path.basename(root) == "_native":
                files += [os.path.join(root, n) for n in names]
        return "py3", "none", wheel_tag.platform_tag(files)


setup(version=project_version(), distclass=NativeDistribution, cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel},
      options={"build": {"build_base": os.path.join("build", "wheel")}})
