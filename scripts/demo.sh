#!/usr/bin/env bash
# THE main job (README "Quick start"): builds gpumemrec and runs a program
# into a GPU out-of-memory under the recorder, then shows the dump.
# On a machine with an NVIDIA GPU and nvcc the program is built with nvcc and
# runs on the real GPU. Otherwise the real PyTorch (its CUDA build, installed
# into a cached virtual environment by scripts/frameworks-venv.sh) trains a
# GPT-2-small-shaped model at batch 64 on a simulated H100 80GB
# (`gpumemrec run --simulate h100-80gb`, docs/simulate.md) and runs out of
# memory there; without PyPI it falls back to a small C++ program on the
# simulated driver (2 GiB device).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)
BUILD=${BUILD_DIR:-build}
GPUMEMREC_SKIP_CHROMIUM=1 scripts/install-deps.sh
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target gpumemrec_shim gpumemrec gpumemrec_simulate train_oom_sim >/dev/null
DUMPS=$BUILD/demo-dumps
rm -rf "$DUMPS"
set +e
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "== real GPU: $(nvidia-smi -L | head -1)"
  mkdir -p "$BUILD/demo"
  /usr/local/cuda/bin/nvcc -g -O1 -x cu examples/train_oom.cpp -o "$BUILD/demo/train_oom"
  total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1)
  scale=$(( total * 1024 * 1024 / 2048 ))   # weights+optimizer ~ 1/3 of the card
  "$BUILD/bin/gpumemrec" run --dir "$DUMPS" -- "$BUILD/demo/train_oom" "$scale"
elif venv=$(scripts/frameworks-venv.sh 2>"$BUILD/demo-venv.log"); then
  echo "== no GPU here: the real PyTorch on a simulated H100 80GB (gpumemrec run --simulate h100-80gb)"
  "$BUILD/bin/gpumemrec" run --simulate h100-80gb --dir "$DUMPS" -- "$venv/bin/python" examples/train_gpt.py --batch 64
else
  echo "== no GPU and no PyTorch ($(tail -1 "$BUILD/demo-venv.log")): a C++ program on the simulated driver (2 GiB device)"
  FAKEGPU_CAPACITY=$((2 << 30)) "$BUILD/bin/gpumemrec" run --dir "$DUMPS" -- "$BUILD/examples/train_oom_sim" $((1 << 20))
fi
rc=$?
set -e
echo "== program exited with $rc (the recorder never changes it)"
bundle=$(ls -d "$DUMPS"/oom_dump_* 2>/dev/null | head -1)
if [ -z "$bundle" ]; then
  echo "demo: no bundle was written" >&2
  exit 1
fi
echo "== $bundle/summary.txt"
cat "$bundle/summary.txt"
echo
echo "== gpumemrec report $bundle"
"$BUILD/bin/gpumemrec" report "$bundle"
