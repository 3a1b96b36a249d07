#!/usr/bin/env bash
# Real-GPU validation of the compatibility matrix (docs/compatibility.md).
# On a machine with an NVIDIA GPU: builds gpumemrec (or uses an existing
# build), runs every case into a real out-of-memory under the shim, checks
# each bundle, and prints one pass/fail table; logs and bundles go to LOG_DIR.
#
#   scripts/gpu-validate.sh [LOG_DIR] [--only case1,case2]
#
# The GPU machines reach no package registry: nothing is installed here. If
# the build's header-only dependencies are missing, carry a build made on a
# development machine (build/bin/libgpumemrec.so and build/bin/gpumemrec) and
# name it with GPUMEMREC_BUILD; scripts/gpu-carry.sh makes a small one.
# GPUMEMREC_VALIDATE_TAR=FILE.tar.gz also packs LOG_DIR into one archive
# (the bundles' large files left out), for a machine that hands back only a
# few files.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${1:-gpu-validation-logs}
shift || true
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-validate: no NVIDIA GPU here (nvidia-smi finds none); nothing to validate" >&2
  exit 2
fi
export PATH=/usr/local/cuda/bin:$PATH
BUILD=${GPUMEMREC_BUILD:-build}   # a carried build: GPUMEMREC_BUILD=<dir holding bin/>
if [ ! -f "$BUILD/bin/libgpumemrec.so" ]; then
  BUILD=build
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEMREC_BUILD_TESTS=OFF -DGPUMEMREC_BUILD_BENCH=OFF \
    && cmake --build build -j"$(nproc)" || { echo "gpu-validate: build failed; carry build/ from a dev machine" >&2; exit 2; }
fi
mkdir -p "$LOGS"
{ nvidia-smi; nvcc --version; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1;
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1; python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1;
} > "$LOGS/machine.txt" 2>&1
python3 scripts/gpu_validate/validate.py --build "$BUILD" --logs "$LOGS" "$@"
rc=$?
if [ -n "${GPUMEMREC_VALIDATE_TAR:-}" ]; then
  tar -czf "$GPUMEMREC_VALIDATE_TAR" --exclude=events.json --exclude=allocations.json --exclude=stacks.json \
    --exclude='*.pickle' --exclude='*.pb.gz' -C "$(dirname "$LOGS")" "$(basename "$LOGS")"
fi
exit $rc
