#!/usr/bin/env bash
# Makes a small, self-contained copy of a build for a GPU machine that has no
# package registry (scripts/gpu-validate.sh with GPUMEMREC_BUILD=.gpubuild):
# the shim and the portable CLI without debug sections, the Python start-up
# hook, and libdw/libelf for symbolization in case that machine lacks them
# (put .gpubuild/lib on LD_LIBRARY_PATH only there, where ldconfig has none).
# With the benchmark built (target gpumemrec_bench), also what
# `bench/run_bench.py --build-dir .gpubuild --only-null` needs: the null-driver
# rows on that machine's cores (the programs find their runtime by $ORIGIN).
#
#   scripts/gpu-carry.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-.gpubuild}
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
strip --strip-debug -o "$OUT/bin/libgpumemrec.so" "$BUILD/bin/libgpumemrec.so"
cli="$BUILD/bin/portable/gpumemrec"
[ -x "$cli" ] || cli="$BUILD/bin/gpumemrec"
strip --strip-debug -o "$OUT/bin/gpumemrec" "$cli"
cp -r "$BUILD/bin/python" "$OUT/bin/python"
for f in libunwind.so.8 libunwind.so.8.copyright liblzma.so.5 liblzma.so.5.copyright; do
  if [ -f "$BUILD/bin/$f" ]; then cp "$BUILD/bin/$f" "$OUT/bin/$f"; fi
done
for so in libdw.so.1 libelf.so.1; do
  path=$(ldconfig -p | awk -v n="$so" '$1 == n && /x86-64/ {print $NF; exit}')
  if [ -n "$path" ]; then cp -L "$path" "$OUT/lib/$so"; fi
done
if [ -x "$BUILD/bench/alloc_bench_null" ]; then
  mkdir -p "$OUT/bench/null" "$OUT/tests/fakes"
  cp "$BUILD/bench/alloc_bench" "$BUILD/bench/alloc_bench_null" "$OUT/bench/"
  if [ -x "$BUILD/bench/ring_floor" ]; then cp "$BUILD/bench/ring_floor" "$OUT/bench/"; fi
  cp -P "$BUILD"/bench/null/libcudart.so* "$OUT/bench/null/"
  cp -P "$BUILD"/tests/fakes/libcudart.so* "$BUILD"/tests/fakes/libcuda.so* "$OUT/tests/fakes/"
fi
du -sh "$OUT"
