#!/usr/bin/env bash
# Installs the Debian 12 packages gpumemrec builds and tests with. Only what is
# missing is installed; `apt-get update` runs only when something is.
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config python3
  dpkg-dev  # cpack -G DEB: dpkg-shlibdeps for the package's Depends (tools.deb)
  libgtest-dev libgmock-dev libbenchmark-dev
  libunwind-dev libdw-dev libelf-dev
  rapidjson-dev libspdlog-dev libfmt-dev libcli11-dev libsqlite3-dev zlib1g-dev
  libncurses-dev  # gpumemrec top's full-screen view (ncursesw)
  tmux  # the tests drive gpumemrec top's screen in it (tools.top_screen)
  libamdhip64-dev
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer targets
  python3-setuptools python3-wheel python3-pip python3-venv  # the Python wheel, built offline (wheel.*)
  zstd  # GPUMEMREC_COMPRESS=zstd: the tests decompress bundle files with it (libzstd1 comes with it)
  mmdebstrap  # scripts/old-root.sh: a Debian 11 root (bundled libunwind, compat.debian11)
  patchelf  # the bundled libunwind.so.8 finds the liblzma.so.5 beside it (RUNPATH $ORIGIN; shim/CMakeLists.txt)
)
# Optional: the HTML report test renders the page in Chromium; the
# chrome-trace test runs DevTools' trace engine (from npm) in Node.
# python3-pandas: Bundle.to_pandas() in the wheel tests.
OPTIONAL=(chromium nodejs python3-pandas)
# Debian's npm is a package of its own; NodeSource's nodejs carries npm and
# conflicts with it.
command -v npm >/dev/null 2>&1 || OPTIONAL+=(npm)
[ "${GPUMEMREC_SKIP_CHROMIUM:-0}" = 1 ] && OPTIONAL=()

missing=()
for p in "${PACKAGES[@]}" "${OPTIONAL[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
