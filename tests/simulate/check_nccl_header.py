#!/usr/bin/env python3
"""simulate.nccl_header: simulate/nccl against NVIDIA's NCCL (the
nvidia-nccl-cu13 wheel of the frameworks venv).

- every source of simulate/nccl/ compiles against NVIDIA's nccl.h instead of
  simulate/nccl/types.h (SIM_NCCL_REAL_HEADER): a function whose signature
  differs from NVIDIA's declaration is an error (extern "C" cannot overload);
- every value types.h lists (SIM_NCCL_* X-macros) is NVIDIA's;
- the simulated library exports every function NVIDIA's does, and each
  modeled one as NVIDIA's: pnccl<Name> GLOBAL, nccl<Name> WEAK at the same
  address (readelf --dyn-syms).

Usage: check_nccl_header.py CXX CUDA_INCLUDE_DIR SIMULATED_LIBNCCL. Exit 77
without the venv.
"""
import glob
import pathlib
import subprocess
import sys
import tempfile

import frameworks_venv

HERE = pathlib.Path(__file__).resolve().parent
SIMULATE = HERE.parents[1] / "simulate"
VALUES = """
#include "nccl/types.h"
#define SIM_SAME(name, value) static_assert(name == (value), #name " differs from NVIDIA's nccl.h");
SIM_NCCL_RESULTS(SIM_SAME) SIM_NCCL_RED_OPS(SIM_SAME) SIM_NCCL_DATA_TYPES(SIM_SAME) SIM_NCCL_SCALARS(SIM_SAME)
SIM_NCCL_MEM_STATS(SIM_SAME) SIM_NCCL_CONSTANTS(SIM_SAME)
"""
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def dyn_symbols(lib):
    """{name: (binding, value)} of the functions a library defines."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            syms[f[7].split("@")[0]] = (f[4], f[1])
    return syms


def main():
    cxx, cuda_include, libnccl = sys.argv[1:4]
    venv = frameworks_venv.find()
    if venv is None:
        frameworks_venv.skip("the frameworks venv is absent")
    sp = frameworks_venv.site_packages(venv)
    include = sp / "nvidia" / "nccl" / "include"
    real = sp / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    flags = ["-std=c++17", "-fsyntax-only", "-DSIM_NCCL_REAL_HEADER", "-I" + str(SIMULATE), "-I" + str(include),
             "-I" + cuda_include]
    with tempfile.TemporaryDirectory() as tmp:
        values = pathlib.Path(tmp, "values.cpp")
        values.write_text(VALUES)
        for src in sorted(glob.glob(str(SIMULATE / "nccl" / "*.cpp"))) + [str(values)]:
            p = subprocess.run([cxx] + flags + [src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            check(p.returncode == 0, "%s against NVIDIA's nccl.h %s" % (pathlib.Path(src).name, p.stdout[-600:]))
    ours, theirs = dyn_symbols(libnccl), dyn_symbols(str(real))
    wanted = {n for n in theirs if n.startswith(("nccl", "pnccl"))}
    check(wanted <= set(ours), "every function NVIDIA's exports: missing %s" % sorted(wanted - set(ours))[:10])
    modeled = [n[1:] for n, (bind, _) in ours.items() if n.startswith("pnccl") and bind == "GLOBAL"]
    check(len(modeled) >= 30, "%d modeled functions" % len(modeled))
    for name in modeled:
        alias = ours.get(name)
        check(alias is not None and alias[0] == "WEAK" and alias[1] == ours["p" + name][1] and
              theirs.get(name, ("WEAK",))[0] == "WEAK" and theirs.get("p" + name, ("GLOBAL",))[0] == "GLOBAL",
              "%s: WEAK alias of GLOBAL p%s, as NVIDIA's" % (name, name))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
