#!/usr/bin/env python3
"""The honest manylinux platform tag of the native files a wheel carries.

  wheel_tag.py FILE...      prints e.g. manylinux_2_34_x86_64, or one
                            error line per reason it cannot be manylinux

PEP 600 (manylinux_x_y) asks two things of every ELF file in a wheel: it
needs only libraries every such Linux has (or that the wheel carries beside
it, as auditwheel's repair vendors them), and no glibc symbol version newer
than x.y. The lists are auditwheel's (pypa/auditwheel,
src/auditwheel/policy/manylinux-policy.json: "lib_whitelist" for x86_64,
the same in every policy from manylinux_2_17 on). The tag is needed while
the wheel is built, before auditwheel could read it (and auditwheel is not
packaged in Debian 12, nor fetched by an offline build), so this script
names it from the files gpumemrec ships, with binutils' readelf: the
DT_NEEDED entries (`readelf -d`) and the version needs (`readelf -V`,
section .gnu.version_r). libstdc++ and libgcc are linked in statically
(tools/CMakeLists.txt, shim/CMakeLists.txt), so a GLIBCXX/CXXABI/GCC version
need is refused rather than matched against the per-policy lists, as
auditwheel's policy would. `auditwheel show` confirms the finished wheel's
tag in the tests (tests/wheel/wheel_test.py --step auditwheel): the files'
processor, the policy's full symbol lists and every ELF file of the wheel
are its to check.
"""
import os
import re
import subprocess
import sys

# Libraries a manylinux host provides (auditwheel's lib_whitelist, the part
# that glibc itself ships; the dynamic loader is the ELF interpreter).
GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libanl.so.1",
              "libutil.so.1", "libresolv.so.2", "ld-linux-x86-64.so.2"}
ARCH = "x86_64"


class TagError(Exception):
    pass


def readelf(args, path):
    p = subprocess.run(["readelf", "--wide"] + args + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise TagError("%s: readelf %s failed: %s" % (path, " ".join(args), p.stderr.strip()))
    return p.stdout


def needed_libraries(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf(["-d"], path))


def version_needs(path):
    """{library: {version names}} from .gnu.version_r."""
    needs, current = {}, None
    text = readelf(["-V"], path)
    section = text.split("Version needs section", 1)
    if len(section) < 2:
        return needs
    for line in section[1].splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            current = needs.setdefault(m.group(1), set())
            continue
        m = re.search(r"Name: (\S+)", line)
        if m and current is not None:
            current.add(m.group(1))
    return needs


def glibc_minor(version):
    """GLIBC_2.34 -> 34; other names (GLIBC_PRIVATE, GLIBC_ABI_DT_RELR) -> None."""
    m = re.fullmatch(r"GLIBC_2\.(\d+)(?:\.\d+)?", version)
    return int(m.group(1)) if m else None


def check_file(path, shipped=()):
    """The highest glibc 2.x minor `path` needs; raises TagError otherwise.
    `shipped`: names of the libraries the wheel carries beside it."""
    foreign = [lib for lib in needed_libraries(path) if lib not in GLIBC_LIBS and lib not in shipped]
    if foreign:
        raise TagError("%s needs %s, which a manylinux host need not have: link it statically"
                       % (path, ", ".join(foreign)))
    highest = 17  # the oldest policy gpumemrec can name (manylinux2014)
    for lib, versions in version_needs(path).items():
        for v in versions:
            if v.startswith(("GLIBCXX_", "CXXABI_", "GCC_")):
                raise TagError("%s needs %s from %s: libstdc++/libgcc must be linked statically" % (path, v, lib))
            if v == "GLIBC_ABI_DT_RELR":
                raise TagError("%s uses DT_RELR relocations (glibc 2.36+ only): link without -z pack-relative-relocs"
                               % path)
            if v == "GLIBC_PRIVATE":
                raise TagError("%s needs GLIBC_PRIVATE symbols, tied to one glibc build" % path)
            minor = glibc_minor(v)
            if minor is not None:
                highest = max(highest, minor)
    return highest


def platform_tag(paths):
    """manylinux_2_<N>_x86_64 for the newest glibc version any file needs."""
    if not paths:
        raise TagError("no native files to tag")
    shipped = {os.path.basename(p) for p in paths}
    return "manylinux_2_%d_%s" % (max(check_file(p, shipped) for p in paths), ARCH)


def main(argv):
    try:
        print(platform_tag(argv[1:]))
        return 0
    except TagError as e:
        print("wheel_tag: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
