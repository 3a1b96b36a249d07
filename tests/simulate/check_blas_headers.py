#!/usr/bin/env python3
"""simulate.cublas_headers: compiles every source of simulate/blas/ and the
cuBLAS self-tests against NVIDIA's own cublas_api.h and cublasLt.h (the
nvidia-cublas wheel in the frameworks venv) instead of simulate/blas/types.h,
and asserts that every enum value simulate/blas/enums.h lists and the
version in simulate/blas/version.h are NVIDIA's. A function whose signature
differs from NVIDIA's declaration is a compile error (extern "C" functions
cannot be overloaded). Skips (77) without the venv.

Usage: check_blas_headers.py CXX CUDA_INCLUDE_DIR
"""
import pathlib
import subprocess
import sys
import tempfile

import frameworks_venv

HERE = pathlib.Path(__file__).resolve().parent
SIMULATE = HERE.parents[1] / "simulate"

# NVIDIA's headers and the standard ones, parsed once (a precompiled header):
# about 0.2 s of CPU a file instead of 1.2 s.
PRELUDE = """#include <cublasLt.h>
#include <cuda.h>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
"""

VALUES = """
#include "blas/enums.h"
#include "blas/version.h"
#define SIM_SAME(name, value) static_assert(name == (value), #name " differs from NVIDIA's header");
SIM_CUBLAS_STATUS(SIM_SAME) SIM_CUBLAS_FILL_MODE(SIM_SAME) SIM_CUBLAS_DIAG_TYPE(SIM_SAME)
SIM_CUBLAS_SIDE_MODE(SIM_SAME) SIM_CUBLAS_OPERATION(SIM_SAME) SIM_CUBLAS_POINTER_MODE(SIM_SAME)
SIM_CUBLAS_ATOMICS_MODE(SIM_SAME) SIM_CUBLAS_GEMM_ALGO(SIM_SAME) SIM_CUBLAS_MATH(SIM_SAME)
SIM_CUBLAS_COMPUTE_TYPE(SIM_SAME) SIM_CUBLASLT_MATRIX_LAYOUT_ATTRIBUTE(SIM_SAME)
SIM_CUBLASLT_MATMUL_DESC_ATTRIBUTE(SIM_SAME) SIM_CUBLASLT_MATMUL_PREFERENCE_ATTRIBUTE(SIM_SAME)
SIM_CUBLASLT_ALGO_CONFIG_ATTRIBUTE(SIM_SAME) SIM_CUBLASLT_ORDER(SIM_SAME) SIM_CUBLASLT_EPILOGUE(SIM_SAME)
SIM_CUBLASLT_SEARCH(SIM_SAME) SIM_CUBLASLT_REDUCTION_SCHEME(SIM_SAME)
static_assert(sim::blas::kVerMajor == CUBLAS_VER_MAJOR && sim::blas::kVerMinor == CUBLAS_VER_MINOR &&
              sim::blas::kVerPatch == CUBLAS_VER_PATCH && sim::blas::kVerBuild == CUBLAS_VER_BUILD &&
              sim::blas::kVersion == CUBLAS_VERSION, "version.h differs from cublas_api.h");
"""


def main():
    cxx, cuda_include = sys.argv[1], sys.argv[2]
    venv = frameworks_venv.find()
    if venv is None:
        frameworks_venv.skip("the frameworks venv (NVIDIA's cuBLAS headers) is absent")
    include = frameworks_venv.site_packages(venv) / "nvidia" / "cu13" / "include"
    if not (include / "cublasLt.h").exists():
        frameworks_venv.skip("no cublasLt.h in %s" % include)
    sources = sorted(SIMULATE.glob("blas/*.cpp")) + sorted(HERE.glob("selftest_cublas*.cpp"))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="blas-headers-") as tmp:
        flags = [cxx, "-std=c++17", "-DSIM_BLAS_REAL_HEADERS", "-I", str(include), "-I", str(SIMULATE), "-I", str(HERE),
                 "-I", str(HERE.parent / "fakes"), "-I", cuda_include]
        prelude = pathlib.Path(tmp, "prelude.h")
        prelude.write_text(PRELUDE)
        subprocess.run(flags + ["-x", "c++-header", str(prelude), "-o", str(prelude) + ".gch"], check=True)
        values = pathlib.Path(tmp, "values.cpp")
        values.write_text('#include "blas/types.h"\n' + VALUES)
        for src in [values] + sources:
            cmd = flags + ["-fsyntax-only", "-include", str(prelude), str(src)]
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            if proc.returncode != 0:
                failed += 1
                print("FAIL %s\n%s" % (src.name, proc.stdout[-4000:]))
    print("%d of %d files differ from NVIDIA's headers" % (failed, len(sources) + 1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
