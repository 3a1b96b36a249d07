#!/usr/bin/env bash
# The unit and end-to-end suites under AddressSanitizer + UndefinedBehavior-
# Sanitizer (build-asan) and ThreadSanitizer (build-tsan), then the fuzz
# targets (scripts/fuzz.sh). scripts/test.sh runs this after the normal build.
#
# An instrumented libgpumemrec.so preloaded into a program needs the
# sanitizer runtime first in LD_PRELOAD: tests/e2e/gm_e2e.py prepends
# $GPUMEMREC_TEST_PRELOAD_PREFIX, set here.
#   SANITIZERS="asan tsan" (default both), FUZZ_SECONDS (default 60), SKIP_FUZZ=1
#   SANITIZER_SCOPE=full (default): the unit and end-to-end suites, -O2.
#   SANITIZER_SCOPE=e2e (what scripts/test.sh, so CI, runs): the end-to-end
#     suite only (real programs under LD_PRELOAD: the shim's hooks, threads,
#     signals, forks and dumps), compiled -O1 -g1 as the sanitizers' own
#     documentation suggests; on 2 cores the sanitized unit-test builds
#     alone would take CI past its hour. The full scope is a command of its
#     own (docs/reliability.md, "Sanitizers").
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)
WHICH=${SANITIZERS:-asan tsan}
t_start=$(date +%s)
# Only what the unit and e2e suites need (no benchmarks, no Python-stack matrix).
TARGETS=(gpumemrec_shim gpumemrec_unittests gpumemrec_fakes
         gpumemrec_test_programs gpumemrec_hardening_programs dlsym_next)
TESTS='^(unit|e2e)\.'
TSAN_EXCLUDE='^$'
FLAGS=()
if [ "${SANITIZER_SCOPE:-full}" = e2e ]; then
  TARGETS=(gpumemrec_shim gpumemrec_fakes gpumemrec_test_programs gpumemrec_hardening_programs dlsym_next)
  TESTS='^e2e\.'
  # Under TSan, not the family of one-threaded process deaths during a dump
  # (exit, abort, SIGTERM and SIGSEGV while a bundle is written, 1-2 minutes
  # each there): ASan runs them, and TSan runs every case with threads.
  TSAN_EXCLUDE='^e2e\.(death_after_oom_.*|exit_during_dump|exit_big_live_set|term_during_exit_dump)$'
  FLAGS=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
fi

san_run() {  # san_run <name> <GPUMEMREC_SANITIZE> <runtime .so> <tests not run> [env and wrapper...]
  local name=$1 kind=$2 rt=$3 exclude=$4 dir=build-$1
  local t0; t0=$(date +%s)
  echo "== $name: build ($dir)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEMREC_SANITIZE="$kind" \
        -DGPUMEMREC_BUILD_BENCH=OFF "${FLAGS[@]}" >/dev/null
  cmake --build "$dir" -j"$JOBS" --target "${TARGETS[@]}"
  local prefix; prefix="$(gcc -print-file-name="$rt"):"
  echo "== $name: tests ($TESTS)"
  (cd "$dir" && env GPUMEMREC_TEST_PRELOAD_PREFIX="$prefix" "${@:5}" \
     ctest -j"$JOBS" -R "$TESTS" -E "$exclude" --output-on-failure --timeout 600)
  echo "== $name: $(( $(date +%s) - t0 )) s"
}

for s in $WHICH; do
  case $s in
    asan)
      san_run asan address libasan.so '^$' \
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_segv_handler=1" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" ;;
    tsan)
      # setarch -R: no address-space randomisation, which TSan's fixed memory
      # layout needs on kernels with large vm.mmap_rnd_bits.
      san_run tsan thread libtsan.so "$TSAN_EXCLUDE" \
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:report_signal_unsafe=0:suppressions=$PWD/scripts/tsan.supp" \
        setarch "$(uname -m)" -R ;;
    *) echo "unknown sanitizer $s" >&2; exit 2 ;;
  esac
done
echo "== sanitizers: $(( $(date +%s) - t_start )) s"
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  t0=$(date +%s)
  scripts/fuzz.sh
  echo "== fuzz: $(( $(date +%s) - t0 )) s"
fi
