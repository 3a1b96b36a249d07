#!/usr/bin/env bash
# Makes (once) and prints the path of a root of another Debian release, from
# Debian's archive with mmdebstrap, for what needs an older system than the
# build host:
#   - the libraries the build bundles beside libgpumemrec.so (libunwind8,
#     liblzma5): Debian 12's need glibc 2.34, Debian 11's need 2.28 at most,
#     so scripts/test.sh configures with
#     -DGPUMEMREC_BUNDLE_LIBDIR=<root>/usr/lib/x86_64-linux-gnu;
#   - compat.debian11 (tests/compat/old_system_test.py): the wheel installed
#     and run there (python3, python3-venv);
#   - compat.python_testing (tests/compat/python_root_test.py): Debian testing's
#     python3.14 and python3.15 with their headers and gcc (PACKAGES given).
# Usage: scripts/old-root.sh BUILD_DIR [SUITE [PACKAGES]]
#   SUITE: bullseye (default), or e.g. testing; PACKAGES: comma-separated,
#   default python3,python3-venv,libunwind8,liblzma5.
# Prints the root's path on stdout; exit 1 with the reason on stderr when
# it cannot be made (no network to the archive, no mmdebstrap).
set -euo pipefail
build=$1
suite=${2:-bullseye}
packages=${3:-python3,python3-venv,libunwind8,liblzma5}
root=$build/compat/$suite
# The marker holds the package list: a root made with other packages is made again.
if [ "$(cat "$root/.gpumemrec-root-complete" 2>/dev/null)" = "$packages" ]; then
  echo "$root"
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "old-root: mmdebstrap is not installed (scripts/install-deps.sh)" >&2; exit 1; }
rm -rf "$root"
mkdir -p "$(dirname "$root")"
mode=()
[ "$(id -u)" -ne 0 ] && mode=(--mode=unshare)
# A frozen or older mirror's Release file may be past its Valid-Until date.
if ! mmdebstrap "${mode[@]}" --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
    --include="$packages" "$suite" "$root" >"$root.log" 2>&1; then
  rm -rf "$root"
  echo "old-root: mmdebstrap $suite failed (log: $root.log): $(grep -E '^E:' "$root.log" | head -1)" >&2
  exit 1
fi
echo "$packages" > "$root/.gpumemrec-root-complete"
echo "$root"
