#!/usr/bin/env python3
"""GPUMEMREC_COMPRESS=zstd end to end: the shim writes events.json.zst,
allocations.json.zst and stacks.json.zst (and lists them in the manifest); decompressed, they
are the JSON a plain run writes; every gpumemrec command and the Python
reader read the compressed bundle as they read the same bundle
decompressed; the default (auto) compresses only a bundle that would not fit
GPUMEMREC_MAX_TOTAL_MB plain; a value other than auto/none/zstd is a warning
and the default."""
import json
import os
import shutil
import subprocess
import sys

from gm_e2e import BUILD, TOOL, Bundle, check, main, program, run

CHUNK = 16 << 20
BIG = ["events.json", "allocations.json", "stacks.json"]


def zstd_cat(path):
    zstd = shutil.which("zstd")
    check(zstd, "the zstd command is missing (Debian package zstd: scripts/install-deps.sh)")
    return subprocess.run([zstd, "-dc", path], check=True, capture_output=True).stdout


def decompressed_copy(bundle, where):
    """The bundle with its .zst files decompressed, as a plain bundle."""
    shutil.copytree(bundle.path, where)
    for name in BIG:
        z = os.path.join(where, name + ".zst")
        with open(os.path.join(where, name), "wb") as f:
            f.write(zstd_cat(z))
        os.remove(z)
    m = bundle.manifest
    m["files"] = [f[:-4] if f.endswith(".zst") else f for f in m["files"]]
    with open(os.path.join(where, "manifest.json"), "w") as f:
        json.dump(m, f)
    return where


def tool(*args):
    p = subprocess.run([TOOL] + list(args), capture_output=True, text=True)
    check(p.returncode == 0, "gpumemrec %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-800:]))
    return p.stdout


def compress_zstd():
    r = run([program("mt_alloc"), "4", "3000", str(1 << 20)], capacity=48 << 20,
            env_extra={"GPUMEMREC_COMPRESS": "zstd", "GPUMEMREC_EPISODE_MS": "50"})
    check(r.rc == 0, "mt_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
    b = Bundle(r.bundles()[0])
    files = b.manifest["files"]
    for name in BIG:
        check(name + ".zst" in files and name not in files, "manifest lists %s" % files)
        check(not os.path.exists(os.path.join(b.path, name)), name + " written beside its .zst")
        z = os.path.join(b.path, name + ".zst")
        check(os.stat(z).st_mode & 0o777 == 0o600, name + ".zst is not 0600")
    plain = Bundle(decompressed_copy(b, os.path.join(r.workdir, "plain", b.name)))
    check(len(plain.events) == b.manifest["event_count"], "events.json.zst: %d events, manifest says %d" %
          (len(plain.events), b.manifest["event_count"]))
    check(plain.metadata["live_allocations"] == len(plain.allocations), "allocations.json.zst: live allocations")
    if not os.path.exists(TOOL):  # the sanitizer builds (scripts/sanitizers.sh) build the shim, not the CLI
        return
    # Every command reads the compressed bundle as the plain one.
    for args in (["report", "--json"], ["query", "--json", "SELECT count(*), sum(size), max(seq) FROM events"],
                 ["query", "--json", "SELECT count(*), sum(size) FROM allocations"]):
        got = tool(args[0], *args[1:2], b.path, *args[2:]).replace(b.path, "X")
        want = tool(args[0], *args[1:2], plain.path, *args[2:]).replace(plain.path, "X")
        check(got == want, "gpumemrec %s: the compressed bundle reads differently" % " ".join(args))
    tool("ls", r.dumpdir)
    out = os.path.join(r.workdir, "tables")
    tool("export", "--format", "tables", b.path, "-o", out)
    tool("export", "--format", "memory-viz", b.path, "-o", os.path.join(r.workdir, "s.pickle"))
    # The Python reader (python/gpumemrec), through the command.
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python"),
               GPUMEMREC_CLI=TOOL)
    p = subprocess.run([sys.executable, "-c", "import gpumemrec, sys; b = gpumemrec.open(sys.argv[1]); "
                        "print(len(b.events))", b.path], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and p.stdout.strip() == str(len(plain.events)),
          "gpumemrec.open: %s %s" % (p.stdout, p.stderr[-800:]))
    print("compressed: %s" % ", ".join("%s %d bytes (%d plain)" % (n, os.path.getsize(os.path.join(b.path, n + ".zst")),
                                                                   os.path.getsize(os.path.join(plain.path, n)))
                                       for n in BIG))


def compress_auto():
    """The default, auto: plain JSON where a plain bundle of the full ring fits
    GPUMEMREC_MAX_TOTAL_MB (the default ring and cap), compressed where it
    would not (a 1,048,576-event ring under the default 256 MiB), and plain
    again with no cap (docs/performance.md, "Compressed bundles")."""
    for env, want_zst in (({}, False), ({"GPUMEMREC_RING_EVENTS": "1048576", "GPUMEMREC_MAX_TOTAL_MB": "256"}, True),
                          ({"GPUMEMREC_RING_EVENTS": "1048576", "GPUMEMREC_MAX_TOTAL_MB": "0"}, False)):
        r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], capacity=CHUNK, env_extra=env)
        files = r.only_bundle().manifest["files"]
        for name in BIG:
            check((name + ".zst" in files) == want_zst and (name in files) != want_zst,
                  "%s: manifest lists %s" % (env, files))


def compress_bad_value():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], capacity=CHUNK, env_extra={"GPUMEMREC_COMPRESS": "lz4"})
    check("GPUMEMREC_COMPRESS" in r.stderr and "none" in r.stderr, "no warning: " + r.stderr[-800:])
    b = r.only_bundle()
    check("events.json" in b.manifest["files"], "lz4 did not fall back to plain files: %s" % b.manifest["files"])
    b.check_well_formed()


if __name__ == "__main__":
    sys.exit(main({"compress_zstd": compress_zstd, "compress_auto": compress_auto, "compress_bad_value": compress_bad_value}))
