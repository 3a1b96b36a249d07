#!/usr/bin/env bash
# Makes (once) and prints the path of the virtual environment with the real
# frameworks the tests run: tests/requirements-frameworks.txt (PyTorch's CUDA
# build, transformers, accelerate, Lightning, JAX, flax, optax, DuckDB, pandas,
# polars, pyarrow, Dask, auditwheel), then tests/requirements-deepspeed.txt
# (DeepSpeed from its source: --no-build-isolation, DS_BUILD_OPS=0).
#
# The environment is cached by the requirements' hash under
# ${GPUMEMREC_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpumemrec}: a machine
# that keeps its cache makes it once; a fresh one builds it from pip's sources
# (the local wheel cache first). A half-made environment (no stamp) is made
# again; two runs at once wait for each other (flock).
#
# Usage: scripts/frameworks-venv.sh          -> prints the venv's directory
#        scripts/frameworks-venv.sh --check  -> exit 0 if it exists, 1 if not
#        scripts/frameworks-venv.sh --path   -> prints its directory if it exists,
#                                               exit 1 if not (never makes it: the
#                                               tests that use it: tests/simulate/frameworks_venv.py)
set -euo pipefail
cd "$(dirname "$0")/.."
REQ=tests/requirements-frameworks.txt
REQ_BUILT=tests/requirements-deepspeed.txt
PY=${GPUMEMREC_VENV_PYTHON:-python3}
hash=$( { cat "$REQ" "$REQ_BUILT"; "$PY" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
cache=${GPUMEMREC_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpumemrec}
venv="$cache/frameworks-$hash"
if [ "${1:-}" = "--check" ]; then
  [ -f "$venv/.complete" ] && exit 0 || exit 1
fi
if [ "${1:-}" = "--path" ]; then
  [ -f "$venv/.complete" ] && echo "$venv" && exit 0 || exit 1
fi
mkdir -p "$cache"
exec 9>"$cache/frameworks-$hash.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  echo "frameworks-venv: making $venv (about 5 minutes, 7 GB)" >&2
  start=$(date +%s)
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >&2 || true
  "$venv/bin/pip" install -q -r "$REQ" >&2
  DS_BUILD_OPS=0 "$venv/bin/pip" install -q --no-build-isolation -r "$REQ_BUILT" >&2
  date -u +%FT%TZ > "$venv/.complete"
  echo "frameworks-venv: done in $(( $(date +%s) - start )) s" >&2
fi
echo "$venv"
