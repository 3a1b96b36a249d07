#!/usr/bin/env python3
"""Compiles a simulated library's sources and self-tests against NVIDIA's own
headers (from the wheel in the frameworks venv) instead of the declarations
the simulation carries, and the value checks of VALUES (a C++ file of
static_asserts). A type, signature or enum value that differs from NVIDIA's is
a compile error. Skips (77) without the venv or the headers.

Usage: check_headers.py DEFINE HEADER VALUES CXX CUDA_INCLUDE_DIR GLOB...
  DEFINE   the macro that makes the sources include NVIDIA's headers
  HEADER   the header, relative to site-packages (nvidia/cudnn/include/cudnn.h)
  VALUES   the static_asserts, compiled after the sources' own types.h
  GLOB     sources relative to the repository (simulate/dnn/*.cpp)
"""
import pathlib
import subprocess
import sys
import tempfile

import frameworks_venv

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# The standard headers the sources use, parsed once with NVIDIA's (a
# precompiled header): about 0.2 s of CPU a file instead of 1.2 s.
STANDARD = ["atomic", "cstdint", "cstring", "initializer_list", "map", "memory", "mutex", "new", "string", "thread",
            "unordered_map", "unordered_set", "utility", "vector"]


def main():
    define, header, values, cxx, cuda_include = sys.argv[1:6]
    venv = frameworks_venv.find()
    if venv is None:
        frameworks_venv.skip("the frameworks venv (NVIDIA's headers) is absent")
    path = frameworks_venv.site_packages(venv) / header
    if not path.exists():
        frameworks_venv.skip("no %s" % path)
    sources = sorted(p for g in sys.argv[6:] for p in ROOT.glob(g))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sim-headers-") as tmp:
        flags = [cxx, "-std=c++17", "-D" + define, "-I", str(path.parent), "-I", str(ROOT / "simulate"),
                 "-I", str(HERE), "-I", str(HERE.parent / "fakes"), "-I", cuda_include]
        prelude = pathlib.Path(tmp, "prelude.h")
        prelude.write_text("#include <%s>\n" % path.name + "".join("#include <%s>\n" % h for h in STANDARD))
        subprocess.run(flags + ["-x", "c++-header", str(prelude), "-o", str(prelude) + ".gch"], check=True)
        for src in [pathlib.Path(values)] + sources:
            cmd = flags + ["-fsyntax-only", "-include", str(prelude), str(src)]
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            if proc.returncode != 0:
                failed += 1
                print("FAIL %s\n%s" % (src.name, proc.stdout[-4000:]))
    print("%d of %d files differ from NVIDIA's headers" % (failed, len(sources) + 1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
