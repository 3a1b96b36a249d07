#!/usr/bin/env bash
# THE test command (README "Tests"; .ci/run calls it): installs what it needs,
# builds, and runs every suite: unit, fakes, end-to-end under LD_PRELOAD,
# tools, Python stacks, then the sanitizer builds (ASan+UBSan, TSan).
# Usage: scripts/test.sh [--quick]   (--quick skips the sanitizer builds)
#        scripts/test.sh --under-load  (builds, then the end-to-end and
#        hardening tests three times with a busy loop on every core:
#        scripts/under-load.sh; docs/reliability.md, "Under load")
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
UNDER_LOAD=0
[ "${1:-}" = "--quick" ] && QUICK=1
[ "${1:-}" = "--under-load" ] && UNDER_LOAD=1
JOBS=$(nproc 2>/dev/null || echo 2)

scripts/install-deps.sh

# The real frameworks (PyTorch's CUDA build, transformers, JAX, ...) for the
# tests that run them on the simulated card: made while the build runs (it
# is mostly unpacking), waited for before the tests. A machine that keeps
# ~/.cache makes it once (scripts/frameworks-venv.sh). Without it those
# tests say why and are skipped.
mkdir -p build
scripts/frameworks-venv.sh > build/frameworks-venv.log 2>&1 &
VENV_PID=$!

build() {  # build <dir> [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$JOBS"
}

# Debian 11's libunwind and liblzma, bundled beside the library (Debian 12's
# need glibc 2.34; the shipped files need 2.28 at most: docs/compatibility.md).
# Without Debian's archive the build goes on without them.
BUNDLE=()
echo "== a Debian 11 root (scripts/old-root.sh)"
if root=$(scripts/old-root.sh build bullseye); then
  BUNDLE=(-DGPUMEMREC_BUNDLE_ROOT="$PWD/$root")
fi
echo "== build (RelWithDebInfo)"
build build "${BUNDLE[@]}"
if [ "$UNDER_LOAD" = 1 ]; then
  echo "== end-to-end and hardening tests under load"
  exec scripts/under-load.sh build 3
fi
echo "== the frameworks venv (scripts/frameworks-venv.sh)"
if ! wait "$VENV_PID"; then
  echo "frameworks venv: not made (the tests that need it are skipped):"
  tail -5 build/frameworks-venv.log
fi
echo "== tests"
# Timing checks (label perf) are benchmarks, not tests: `ctest -L perf` runs them.
(cd build && ctest -j"$JOBS" -LE perf --output-on-failure --timeout 300)

# The end-to-end suite under ASan+UBSan and TSan, and each fuzz target for
# 30 s: the unit suites under the sanitizers are `scripts/sanitizers.sh`
# (SANITIZER_SCOPE=full), a command of its own (docs/reliability.md).
if [ "$QUICK" = 0 ] && [ -x scripts/sanitizers.sh ]; then
  SANITIZER_SCOPE=${SANITIZER_SCOPE:-e2e} FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/sanitizers.sh
fi
