#!/usr/bin/env bash
# Makes a small, self-contained copy of a build for a GPU machine that has no
# package registry (scripts/gpu-validate.sh with GPUMEMREC_BUILD=.gpubuild):
# the shim and the portable CLI without debug sections, the Python start-up
# hook, and libdw/libelf for symbolization in case that machine lacks them
# (put .gpubuild/lib on LD_LIBRARY_PATH only there, where ldconfig has none).
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
for so in libdw.so.1 libelf.so.1; do
  path=$(ldconfig -p | awk -v n="$so" '$1 == n && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] && cp -L "$path" "$OUT/lib/$so"
done
du -sh "$OUT"
