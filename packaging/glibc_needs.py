#!/usr/bin/env python3
"""Which symbols of an ELF file need a glibc newer than a floor.

  glibc_needs.py [--max 2.28] FILE...

prints one line per symbol above the floor ("FILE: pthread_create@GLIBC_2.34")
and per version need with no symbol to blame (GLIBC_ABI_DT_RELR,
GLIBC_PRIVATE), and a libstdc++/libgcc version need (GLIBCXX_, CXXABI_,
GCC_: a system older than the build host may lack it); exit 1 if there is
any, 0 otherwise. gpumemrec ships files that need glibc 2.28 at most
(common/glibc_floor/floor.h): tests/compat/ runs this on each of them, and
shim/CMakeLists.txt on the libraries it would bundle. Uses binutils'
readelf: the dynamic symbols (`--dyn-syms`, whose undefined entries carry
the version they need) and the version needs (`-V`, .gnu.version_r).
"""
import argparse
import re
import sys

from wheel_tag import TagError, readelf, version_needs  # one reader of readelf's output (this folder)

CXX_PREFIXES = ("GLIBCXX_", "CXXABI_", "GCC_")


def parse_version(text):
    """'2.28' or 'GLIBC_2.2.5' -> (2, 28) / (2, 2, 5); None for other names."""
    m = re.fullmatch(r"(?:GLIBC_)?(\d+(?:\.\d+)+)", text)
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def undefined_versions(path):
    """[(symbol, version)] of the undefined dynamic symbols that name one."""
    out = []
    for line in readelf(["--dyn-syms"], path).splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] == "UND" and "@" in f[7]:
            name, _, version = f[7].partition("@")
            out.append((name, version.lstrip("@").split(" ")[0]))
    return out


def needed_versions(path):
    return set().union(*version_needs(path).values())


def too_new(path, floor):
    """What `path` needs beyond glibc `floor` (a tuple), as printable strings."""
    bad = []
    for name, version in undefined_versions(path):
        v = parse_version(version)
        if (v and version.startswith("GLIBC_") and v > floor) or version.startswith(CXX_PREFIXES):
            bad.append("%s@%s" % (name, version))
    blamed = {b.split("@", 1)[1] for b in bad}
    for version in needed_versions(path) - blamed:
        v = parse_version(version)
        if (v and version.startswith("GLIBC_") and v > floor) or version in ("GLIBC_ABI_DT_RELR", "GLIBC_PRIVATE") \
                or version.startswith(CXX_PREFIXES):
            bad.append("(version need) %s" % version)
    return sorted(set(bad))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max", default="2.28", help="the newest glibc allowed (default 2.28)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    floor = parse_version(a.max)
    if not floor:
        ap.error("--max wants a version like 2.28, not %r" % a.max)
    rc = 0
    for path in a.files:
        try:
            bad = too_new(path, floor)
        except (OSError, TagError) as e:
            print("%s: cannot read: %s" % (path, e))
            rc = 1
            continue
        for b in bad:
            print("%s: %s needs more than glibc %s" % (path, b, a.max))
        rc = rc or (1 if bad else 0)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
