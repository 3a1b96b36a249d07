#!/usr/bin/env python3
"""Checks that a change keeps bundles and the tools' outputs byte-identical.

  bundle_corpus.py make SHIM_DIR BUILD_DIR OUT      bundles of fixed runs, normalised
  bundle_corpus.py tools TOOL BUNDLES OUT           the tools' outputs on those bundles
  bundle_corpus.py compare A B                      exit 1 and the differences if any

`make` runs the test programs and the example (BUILD_DIR/tests/programs,
BUILD_DIR/examples, the fake driver of BUILD_DIR/tests/fakes) under
SHIM_DIR/libgpumemrec.so with fixed inputs, one case per bundle shape
(runtime, driver, VMM, HIP, managed, stream-ordered, launcher identity,
limit, exit dump, recovered verdicts kept). Only
deterministic runs: which episodes of a timed run (GPUMEMREC_RECOVERED=count,
a fatal caching allocator) get a bundle depends on the machine's load, and keeps each bundle under
OUT/<case>/<n>/ with what varies from run to run replaced by a placeholder:
times, durations, pids, thread ids, the bundle's name and creation time, the
shim's own path. snapshot.pickle is unpickled and kept as the repr of its
normalised content, plus its size. Everything else is compared byte for
byte.

`tools` runs TOOL (the gpumemrec command) on the bundles `make` left in
BUNDLES/raw (unnormalised copies): ls, report (text, verbose, JSON), export
(memory-viz, chrome-trace), html, query. Those outputs are compared with no
normalisation at all: same input bundles, so same bytes.

Use: build the tree before the change, copy its bin/ aside, make and tools
with it; build after the change, make and tools again; compare.
Standard library only.
"""
import os
import pickle
import re
import shutil
import subprocess
import sys

# Times, ids of the process and its threads, stream handles (heap addresses
# in the fake driver, which ASLR moves), NVML's bytes per process (asked by
# the writer thread, while the program goes on allocating and freeing) and
# the two device_accounting figures computed from them.
VOLATILE_KEYS = ("timestamp", "timestamp_ns", "duration_ns", "pid", "ppid", "thread_id", "created_at_utc",
                 "bundle_name", "after_ms", "frozen_after_failure_ms", "tid", "stream", "used_bytes",
                 "process_unrecorded_bytes", "unaccounted_bytes")
JSON_VOLATILE = re.compile(r'"(%s)":("[^"]*"|-?[0-9.eE+-]+)' % "|".join(VOLATILE_KEYS))
BUNDLE_NAME = re.compile(r"oom_dump_[0-9TZ]+_[0-9]+_[a-z]+_[0-9]+_[A-Za-z0-9.-]+_[0-9a-f]{8}")
SUMMARY_VOLATILE = [(re.compile(r"thread [0-9]+"), "thread N"), (re.compile(r"\([0-9.]+ ms\)"), "(N ms)"),
                    (re.compile(r"[0-9.]+ ms later"), "N ms later"),
                    (re.compile(r"copied [0-9.]+ ms after"), "copied N ms after"),
                    (re.compile(r"holds [^\n]* \(NVML\)"), "holds N (NVML)"),
                    (re.compile(r"^ *-?[0-9.]+ [KMGT]?i?B  (this process, not recorded|unaccounted) ", re.M),
                     r"N  \1 ")]
PICKLE_VOLATILE = {"time_us", "pid", "tid", "thread_id", "stream"}

# (case, program, args, extra environment)
CASES = [
    ("runtime", "tests/programs/rt_linked", ["cudaMalloc"], {}),
    ("runtime_async", "tests/programs/rt_linked", ["cudaMallocAsync"], {}),
    ("runtime_managed", "tests/programs/rt_linked", ["cudaMallocManaged"], {}),
    ("runtime_pitch", "tests/programs/rt_linked", ["cudaMallocPitch"], {}),
    ("driver", "tests/programs/drv_linked", ["cuMemAlloc_v2"], {}),
    ("driver_ptsz", "tests/programs/drv_linked", ["ptsz"], {}),
    ("vmm", "tests/programs/vmm", ["cuMemCreate"], {}),
    ("hip", "tests/programs/hip_linked", ["hipMalloc"], {}),
    ("hip_vmm", "tests/programs/hip_linked", ["hipMemCreate"], {}),
    ("ranks", "tests/programs/rt_linked", ["cudaMalloc"],
     {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "SLURM_JOB_ID": "job \"7\"\u00e9"}),
    ("limit", "tests/programs/rt_linked", ["cudaMalloc"], {"GPUMEMREC_LIMIT": "200MiB"}),
    ("fail_after", "tests/programs/rt_linked", ["cudaMalloc"], {"GPUMEMREC_FAIL_AFTER": "3"}),
    ("exit_dump", "tests/programs/rt_linked", ["cudaMalloc"], {"GPUMEMREC_DUMP_AT_EXIT": "1"}),
    ("nostacks", "tests/programs/rt_linked", ["cudaMalloc"], {"GPUMEMREC_STACK_DEPTH": "0"}),
    ("recovered_keep", "tests/programs/caching_alloc", ["1", "40", "4194304", "0"],
     {"GPUMEMREC_RECOVERED": "keep", "FAKEGPU_CAPACITY": str(64 << 20)}),
    ("example", "examples/train_oom_sim", [str(1 << 20)], {"FAKEGPU_CAPACITY": str(2 << 30)}),
]


def run_case(shim, build, out, case, prog, args, extra):
    work = os.path.join("/tmp", "gpumemrec-corpus-run", case)  # the same path for every build compared
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_"))}
    env.update({"FAKEGPU_CAPACITY": str(256 << 20), "GPUMEMREC_DIR": os.path.join(work, "dumps"),
                "LD_LIBRARY_PATH": os.path.join(build, "tests", "fakes"), "LD_PRELOAD": shim,
                "GPUMEMREC_EPISODE_MS": "500"})
    env.update(extra)
    subprocess.run([os.path.join(build, prog)] + args, env=env, cwd=work, capture_output=True, timeout=120)
    dumps = os.path.join(work, "dumps")
    names = sorted(n for n in os.listdir(dumps) if n.startswith("oom_dump_")) if os.path.isdir(dumps) else []
    names.sort(key=lambda n: int(n.split("_")[5]))  # the process's dump number
    for i, name in enumerate(names):
        src = os.path.join(dumps, name)
        shutil.copytree(src, os.path.join(out, "raw", case, str(i)))
        normalise_bundle(src, os.path.join(out, case, str(i)), shim)
    with open(os.path.join(out, case, "count"), "w") as f:
        f.write("%d bundles\n" % len(names))


def normalise_text(text, shim):
    text = JSON_VOLATILE.sub(lambda m: '"%s":X' % m.group(1), text)
    text = BUNDLE_NAME.sub("BUNDLE", text)
    text = text.replace(shim, "SHIM")
    for pattern, repl in SUMMARY_VOLATILE:
        text = pattern.sub(repl, text)
    return text


def normalise_pickle(obj):
    if isinstance(obj, dict):
        return {k: (0 if k in PICKLE_VOLATILE else normalise_pickle(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [normalise_pickle(v) for v in obj]
    return obj


def normalise_bundle(src, dst, shim):
    os.makedirs(dst)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name.endswith(".pickle"):
            with open(path, "rb") as f:
                data = f.read()
            text = "size %d\n%r\n" % (len(data), normalise_pickle(pickle.loads(data)))
        else:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = normalise_text(f.read(), shim)
        with open(os.path.join(dst, name), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)


def make(shim_dir, build, out):
    shim = os.path.join(os.path.abspath(shim_dir), "libgpumemrec.so")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for case, prog, args, extra in CASES:
        os.makedirs(os.path.join(out, case))
        run_case(shim, os.path.abspath(build), out, case, prog, args, extra)


def tools(tool, bundles, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    raw = os.path.join(bundles, "raw")
    for case in sorted(os.listdir(raw)):
        for n in sorted(os.listdir(os.path.join(raw, case))):
            b = os.path.join(raw, case, n)
            tag = os.path.join(out, "%s_%s" % (case, n))
            commands = {
                "report": ["report", b], "report_v": ["report", "-v", b], "report_json": ["report", "--json", b],
                "memviz": ["export", "-f", "memory-viz", b, "-o", tag + ".memviz.pickle"],
                "trace": ["export", "-f", "chrome-trace", b, "-o", tag + ".trace.json"],
                "html": ["html", b, "-o", tag + ".html"],
                "query": ["query", "--csv", b, "SELECT * FROM events ORDER BY seq"],
                "query_meta": ["query", "--csv", b, "SELECT * FROM metadata ORDER BY key"],
            }
            for what, argv in commands.items():
                p = subprocess.run([tool] + argv, capture_output=True, timeout=300)
                with open("%s.%s.out" % (tag, what), "wb") as f:
                    f.write(b"rc %d\n" % p.returncode + p.stdout + b"\n--stderr--\n" + p.stderr)
    p = subprocess.run([tool, "ls", "--json", raw + "/" + sorted(os.listdir(raw))[0]], capture_output=True)
    with open(os.path.join(out, "ls.out"), "wb") as f:
        f.write(p.stdout + p.stderr)


def compare(a, b):
    p = subprocess.run(["diff", "-r", "-x", "raw", a, b], capture_output=True, text=True)
    sys.stdout.write(p.stdout[:20000])
    print("bundle_corpus: %s" % ("identical" if p.returncode == 0 else "DIFFERENT"))
    return 0 if p.returncode == 0 else 1


def main(argv):
    if len(argv) == 5 and argv[1] == "make":
        return make(argv[2], argv[3], argv[4]) or 0
    if len(argv) == 5 and argv[1] == "tools":
        return tools(argv[2], argv[3], argv[4]) or 0
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
