#!/usr/bin/env python3
"""Runs one Python-stack test program under LD_PRELOAD=libgpumemrec.so and
checks the bundle it writes (stdlib only; runs with the interpreter under
test, which also runs the program).

  run_case.py --case nested --shim build/bin/libgpumemrec.so \
      --fakes build/tests/fakes --native-lib build/tests/python/libgmr_native_thread.so

Cases: nested, threads, nogil, gen_async, released, reuse, gil_mix
(programs in cases/), disabled (nested with GPUMEMREC_PYTHON_STACKS=0),
not_python (--exe, a C program), cost (prints the added ns per alloc+free
pair at 20 Python frames, GIL held and GIL released).

released builds gmr_nogil_ext.c (a C extension that releases the GIL the way
pybind11 does) against the headers of the interpreter under test.

Expected lines come from "# @site:NAME" markers in the program's source.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
QUALNAMES = sys.version_info >= (3, 11)  # 3.10 code objects carry no qualified name


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def sites(case):
    out = {}
    with open(os.path.join(CASES, case + ".py")) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"# @site:(\w+)", line)
            if m:
                out[m.group(1)] = i
    return out


def fn(qualname):
    return qualname if QUALNAMES else qualname.rsplit(".", 1)[-1]


class Bundle:
    def __init__(self, root):
        dirs = sorted(d for d in glob.glob(os.path.join(root, "*")) if os.path.exists(os.path.join(d, "metadata.json")))
        check(dirs, "no bundle written in %s: %s" % (root, os.listdir(root)))
        self.dir = dirs[0]

        def load(name):
            with open(os.path.join(self.dir, name)) as f:
                return json.load(f)

        self.metadata = load("metadata.json")
        self.allocations = load("allocations.json")
        self.events = load("events.json")
        self.stacks = {s["stack_id"]: s for s in load("stacks.json")}
        with open(os.path.join(self.dir, "summary.txt")) as f:
            self.summary = f.read()

    def stack(self, sid):
        check(sid in self.stacks, "stack %r missing from stacks.json" % sid)
        return self.stacks[sid]

    def oom_stack(self):
        check(self.metadata.get("reason") == "oom", "reason %r" % self.metadata.get("reason"))
        return self.stack(self.metadata["stack_id"])


EVAL_LOOP = re.compile(r"^_PyEval_EvalFrameDefault(\..*)?$")
# --unnamed-eval-loop: the interpreter's evaluation loop has no symbol name in
# its stacks (Debian's python3.14 and 3.15: GCC moved the loop's body out of the
# exported _PyEval_EvalFrameDefault into a local symbol that only the
# separate debug package names), so the Python frames follow
# common/frame_order.h's K = 0 rule: one block at the innermost frame of the
# interpreter's own module.
UNNAMED_LOOP = False
INTERPRETER_MODULE = re.compile(r"^(lib)?python3\.\d+")


def check_merged_order(stack):
    """PyTorch's order (common/frame_order.h): native frames innermost, the
    Python frames just inside CPython's evaluation loop frames: one per loop
    when there are as many loops as Python frames, else all at the outermost
    loop."""
    frames = stack["frames"]
    kinds = [f["kind"] for f in frames]
    if "python" not in kinds or "native" not in kinds:
        return
    desc = ["%s:%s" % (f["kind"][0], f["function"] or "?") for f in frames]
    check(kinds[0] == "native", "innermost frame is not native: %s" % desc)
    loops = [i for i, f in enumerate(frames) if f["kind"] == "native" and EVAL_LOOP.match(f["function"])]
    if not loops and UNNAMED_LOOP:
        check_unnamed_loop_order(frames, kinds, desc)
        return
    check(loops, "no _PyEval_EvalFrameDefault frame among the native frames: %s" % desc)
    pys = [i for i, k in enumerate(kinds) if k == "python"]
    check(pys[-1] < loops[-1], "a Python frame lies outside the outermost evaluation loop: %s" % desc)
    for i in pys:  # each Python frame is followed by a Python frame or by a loop
        check(kinds[i + 1] == "python" or i + 1 in loops, "Python frame not at a loop: %s" % desc)
    natives_between = [k for k in kinds[pys[0]:pys[-1] + 1] if k == "native"]
    if len(loops) < len(pys):
        check(not natives_between, "fewer loops than Python frames, yet Python frames are split: %s" % desc)


def check_unnamed_loop_order(frames, kinds, desc):
    """No loop named: the Python frames in one block just inside the
    innermost frame of the interpreter's module (common/frame_order.h)."""
    pys = [i for i, k in enumerate(kinds) if k == "python"]
    check(pys == list(range(pys[0], pys[-1] + 1)), "Python frames are split: %s" % desc)
    interp = [i for i, f in enumerate(frames)
              if f["kind"] == "native" and INTERPRETER_MODULE.match(os.path.basename(f["module"] or ""))]
    check(interp and interp[0] == pys[-1] + 1,
          "the Python frames are not at the interpreter's innermost frame %s: %s" % (interp[:1], desc))


def py_frames(stack):
    frames = stack["frames"]
    check_merged_order(stack)
    return [(f["function"], f["line"], os.path.basename(f["file"])) for f in frames if f["kind"] == "python"]


def expect_frames(stack, case, expected, what, prefix=True):
    """expected: [(function, site name)] innermost first."""
    s = sites(case)
    want = [(name, s[site], case + ".py") for name, site in expected]
    got = py_frames(stack)
    check(stack["python"] == "captured", "%s: python status %r, want captured" % (what, stack["python"]))
    ok = got[: len(want)] == want if prefix else got == want
    check(ok, "%s: python frames\n  got  %s\n  want %s%s" % (what, got, want, "" if not prefix else " (prefix)"))


def expect_no_python(stack, status, what):
    check(stack["python"] == status, "%s: python status %r, want %r" % (what, stack["python"], status))
    check(not py_frames(stack), "%s: unexpected python frames %s" % (what, py_frames(stack)))


def live(bundle, api=None, size=None):
    return [a for a in bundle.allocations
            if (api is None or a["api"] == api) and (size is None or a["size"] == size)]


MiB = 1 << 20


def run(args, env_extra, argv, tmp):
    env = dict(os.environ)
    env.update({
        "LD_PRELOAD": args.shim,
        "GPUMEMREC_DIR": tmp,
        "FAKEGPU_CAPACITY": str(args.capacity_mib * MiB),
        "GMR_CUDART": os.path.join(args.fakes, "libcudart.so"),
        "GMR_CUDA": os.path.join(args.fakes, "libcuda.so.1"),
        "GMR_NATIVE_LIB": args.native_lib or "",
        "PYTHONPATH": os.pathsep.join([CASES, os.path.join(tmp, "ext")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.pop("GPUMEMREC_PYTHON_STACKS", None)
    env.pop("GPUMEMREC_DISABLE", None)
    env.update(env_extra)
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=120)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    check(p.returncode == 0, "%s exited with %d" % (argv, p.returncode))
    return p.stdout


def program(case):
    return [sys.executable, os.path.join(CASES, case + ".py")]


def case_nested(args, tmp, extra=None):
    run(args, extra or {}, program("nested"), tmp)
    b = Bundle(tmp)
    oom = b.oom_stack()
    expect_frames(oom, "nested", [("leaf", "leaf"), (fn("Model.forward"), "forward"), ("middle", "middle"),
                                  ("main", "main_loop"), ("<module>", "module")], "OOM stack", prefix=False)
    check("leaf (" in b.summary and "[python]" in b.summary, "summary.txt shows no Python frame")
    drv = live(b, api="cuMemAlloc_v2")
    check(len(drv) == 3, "want 3 live driver allocations, got %d" % len(drv))
    for a in drv:
        expect_frames(b.stack(a["stack_id"]), "nested",
                      [("driver_alloc", "driver_alloc"), ("keep_driver_allocations", "keep_driver"),
                       ("main", "main_keep"), ("<module>", "module")], "driver allocation", prefix=False)
    rt = live(b, api="cudaMalloc")
    check(rt, "no live cudaMalloc allocation")
    for a in rt:
        check(py_frames(b.stack(a["stack_id"])) == py_frames(oom), "live cudaMalloc stack differs from the OOM one")
    check_pickle_frames(b, oom)
    check_site_frame(b, oom)


def check_site_frame(b, oom):
    """The user's line names the site (common/site_rules.h): the stack's
    site_frame is the innermost frame of nested.py (the runtime, libffi,
    _ctypes and the interpreter are inside it), the owning library is the
    interpreter (the program: ctypes calls from Python code), and
    summary.txt leads with that line with the ctypes frames folded."""
    leaf = oom["frames"][oom["site_frame"]]
    want_line = sites("nested")["leaf"]
    check(leaf["kind"] == "python" and leaf["function"] == "leaf" and leaf["line"] == want_line,
          "site frame is %r, want leaf at line %d" % (leaf, want_line))
    check(oom["site_frame"] > 0, "the site frame is the innermost frame: native frames were expected inside it")
    lib = oom["library"]
    check(lib.startswith("python") or lib.startswith("libpython"), "library %r, want the interpreter" % lib)
    site_line = "site: leaf (nested.py:%d)" % want_line
    check(site_line in b.summary, "summary.txt does not lead with %r:\n%s" % (site_line, b.summary[:3000]))
    first = b.summary.split("Failing call stack:\n", 1)[1].splitlines()
    check(first[0].strip().startswith(site_line), "failing call stack does not start with the site: %s" % first[:3])
    check(any(l.strip().startswith("[") and "frames in" in l for l in first[1:4]),
          "the runtime and ctypes frames are not folded: %s" % first[:6])


def check_pickle_frames(b, oom):
    """snapshot.pickle lists the OOM's frames in the order of stacks.json
    (innermost first, Python frames at the evaluation loop), as PyTorch's own
    snapshots do, so its flame graph draws <module> under the interpreter and
    above the native callees."""
    import pickle
    with open(os.path.join(b.dir, "snapshot.pickle"), "rb") as f:
        snap = pickle.load(f)
    ooms = [e for tr in snap["device_traces"] for e in tr if e["action"] == "oom"]
    check(ooms, "no oom entry in snapshot.pickle")
    got = [fr["name"] for fr in ooms[-1]["frames"]]
    want = [f["function"] for f in oom["frames"]]  # "" is written as module+0xoffset
    check(len(got) == len(want) and all(w == g for w, g in zip(want, got) if w),
          "snapshot.pickle frames\n  got  %s\n  want %s" % (got, want))
    py = [i for i, fr in enumerate(ooms[-1]["frames"]) if fr["filename"].endswith("nested.py")]
    check(py and py[0] > 0, "snapshot.pickle: the innermost frame is a Python frame: %s" % got)
    check(UNNAMED_LOOP or got[py[-1] + 1].startswith("_PyEval_EvalFrameDefault"),
          "snapshot.pickle: the outermost Python frame is not called by the evaluation loop: %s" % got)


def case_threads(args, tmp):
    run(args, {}, program("threads"), tmp)
    b = Bundle(tmp)
    expect_frames(b.oom_stack(), "threads", [("main_alloc", "main_alloc"), ("main", "main_loop"),
                                             ("<module>", "module")], "OOM stack", prefix=False)
    from_threads = [a for a in live(b, api="cudaMalloc")
                    if py_frames(b.stack(a["stack_id"]))[:1] == [("thread_alloc", sites("threads")["thread_alloc"],
                                                                   "threads.py")]]
    check(len(from_threads) == 12, "want 12 live allocations from the worker threads, got %d" % len(from_threads))
    tids = {a["thread_id"] for a in from_threads}
    check(len(tids) == 4, "want 4 allocating threads, got %s" % tids)
    for a in from_threads:
        st = b.stack(a["stack_id"])
        expect_frames(st, "threads", [("thread_alloc", "thread_alloc"), ("worker", "worker")], "worker allocation")
        third = py_frames(st)[2]
        check(third[0] == fn("Thread.run") and third[2] == "threading.py", "worker caller %s" % (third,))


def case_nogil(args, tmp):
    run(args, {}, program("nogil"), tmp)
    b = Bundle(tmp)
    oom = b.oom_stack()
    expect_no_python(oom, "native_thread", "OOM stack of the native thread")
    natives = [f for f in oom["frames"] if f["kind"] == "native"]
    check(natives, "no native frames on the native thread's stack")
    check(any("native_thread" in os.path.basename(f["module"]) for f in natives),
          "the native thread's stack does not reach the test library: %s" % [f["module"] for f in natives])
    with_gil = live(b, api="cudaMalloc", size=MiB)
    check(len(with_gil) == 1, "want 1 live 1 MiB allocation, got %d" % len(with_gil))
    expect_frames(b.stack(with_gil[0]["stack_id"]), "nogil", [("with_gil", "with_gil"), ("main", "main_with"),
                                                              ("<module>", "module")],
                  "allocation holding the GIL", prefix=False)
    # A thread that released the GIL still has its own frames.
    without = live(b, api="cudaMalloc", size=2 * MiB)
    check(len(without) == 1, "want 1 live 2 MiB allocation, got %d" % len(without))
    expect_frames(b.stack(without[0]["stack_id"]), "nogil",
                  [("without_gil", "without_gil"), ("main", "main_without"), ("<module>", "module")],
                  "allocation through ctypes.CDLL (GIL released)", prefix=False)
    native = live(b, api="cudaMalloc", size=3 * MiB)
    check(native, "no live allocation from the native thread")
    for a in native:
        expect_no_python(b.stack(a["stack_id"]), "native_thread", "native thread allocation")


def build_extension(tmp):
    """Builds gmr_nogil_ext against this interpreter's headers into tmp/ext."""
    import sysconfig
    out = os.path.join(tmp, "ext")
    os.makedirs(out, exist_ok=True)
    target = os.path.join(out, "gmr_nogil_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    inc = sysconfig.get_paths()["include"]
    check(os.path.exists(os.path.join(inc, "Python.h")), "no Python.h under %s (install the -dev package)" % inc)
    argv = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-I" + inc,
            os.path.join(HERE, "gmr_nogil_ext.c"), "-o", target, "-ldl"]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    check(p.returncode == 0, "building the test extension failed: %s\n%s" % (" ".join(argv), p.stdout))


def case_released(args, tmp):
    build_extension(tmp)
    run(args, {}, program("released"), tmp)
    b = Bundle(tmp)
    expect_frames(b.oom_stack(), "released", [("cdll_leaf", "cdll_leaf"), (fn("Layer.forward"), "forward"),
                                              ("main", "main_oom"), ("<module>", "module")],
                  "OOM stack (ctypes.CDLL)", prefix=False)
    KiB = 1 << 10

    def one(size, expected, what, prefix=False):
        got = live(b, api="cudaMalloc", size=size)
        check(len(got) == 1, "%s: want 1 live allocation of %d bytes, got %d" % (what, size, len(got)))
        expect_frames(b.stack(got[0]["stack_id"]), "released", expected, what, prefix)
        return got[0]

    one(200 * KiB, [("cdll_leaf", "cdll_leaf"), (fn("Layer.forward"), "forward"), ("main", "main_forward"),
                    ("<module>", "module")], "ctypes.CDLL from a method")
    one(201 * KiB, [("ext_scoped", "ext_scoped"), ("main", "main_scoped"), ("<module>", "module")],
        "C extension, Py_BEGIN_ALLOW_THREADS")
    tids = set()
    for i in range(4):
        got = live(b, api="cudaMalloc", size=100 * KiB + i * KiB)
        check(len(got) == 3, "thread %d: want 3 live allocations, got %d" % (i, len(got)))
        for a in got:
            tids.add(a["thread_id"])
            st = b.stack(a["stack_id"])
            expect_frames(st, "released", [("ext_saved", "ext_saved"), ("thread_body", "thread_body")],
                          "C extension, PyEval_SaveThread, thread %d" % i)
            third = py_frames(st)[2]
            check(third[0] == fn("Thread.run") and third[2] == "threading.py", "thread caller %s" % (third,))
    check(len(tids) == 4, "want 4 allocating threads, got %s" % tids)
    gen = live(b, api="cudaMalloc", size=202 * KiB)
    check(len(gen) == 2, "want 2 live allocations from the generator, got %d" % len(gen))
    for a in gen:
        expect_frames(b.stack(a["stack_id"]), "released", [("cdll_leaf", "cdll_leaf"), ("gen_allocs", "gen"),
                                                           ("main", "main_gen"), ("<module>", "module")],
                      "generator (GIL released)", prefix=False)
    one(300 * KiB, [("ext_scoped", "ext_scoped"), ("task_alloc", "task")], "asyncio task (GIL released)",
        prefix=True)


def case_reuse(args, tmp):
    out = run(args, {}, program("reuse"), tmp)
    m = re.search(r"REUSED (\d+) of (\d+)", out)
    check(m, "the program did not report address reuse")
    # Not a test of the recorder, of the test: without reuse it proves nothing.
    check(int(m.group(1)) >= 10, "only %s code objects reused an address: the case does not test reuse" % m.group(1))
    b = Bundle(tmp)
    s = sites("reuse")
    base = {"exec": 100000, "lambda": 200000, "closure": 300000}
    seen = {k: 0 for k in base}
    for ev in b.events:
        if ev["event_type"] != "allocation":
            continue
        kind = [k for k, v in base.items() if v <= ev["size"] < v + 1000]
        if not kind:
            continue
        kind, i = kind[0], ev["size"] - base[kind[0]]
        if kind == "exec":
            want = ("fn_%04d" % i, (i % 4) + 2 + (i % 3), "<reuse>")
        elif kind == "lambda":
            want = ("<lambda>", 1, "<lambda-%04d>" % i)
        else:
            want = (fn("outer_%04d.<locals>.inner_%04d" % (i, i)), 3 + (i % 2), "<closure>")
        st = b.stack(ev["stack_id"])
        check(st["python"] == "captured", "event %d: python status %r" % (ev["seq"], st["python"]))
        got = py_frames(st)
        check(got[:2] == [("alloc_free", s["alloc"], "reuse.py"), want],
              "event %d (%s %d): frames\n  got  %s\n  want %s" % (ev["seq"], kind, i, got[:2],
                                                                   [("alloc_free", s["alloc"], "reuse.py"), want]))
        seen[kind] += 1
    for kind, n in seen.items():
        check(n == 300, "want 300 %s allocation events in events.json, got %d" % (kind, n))


def case_gil_mix(args, tmp):
    run(args, {}, program("gil_mix"), tmp)
    b = Bundle(tmp)
    expect_no_python(b.oom_stack(), "native_thread", "OOM stack of the native thread")
    n = 0
    for ev in b.events:
        if ev["event_type"] != "allocation" or not 50000 <= ev["size"] < 50400:
            continue
        expect_frames(b.stack(ev["stack_id"]), "gil_mix",
                      [("a_leaf", "a_leaf"), ("a_mid", "a_mid"), ("allocator", "allocator")],
                      "event %d of the GIL-released thread" % ev["seq"])
        n += 1
    check(n == 400, "want 400 allocation events of the GIL-released thread, got %d" % n)
    native = live(b, api="cudaMalloc", size=3 * MiB)
    check(native, "no live allocation from the native thread")
    for a in native:
        expect_no_python(b.stack(a["stack_id"]), "native_thread", "native thread allocation")


def case_gen_async(args, tmp):
    run(args, {}, program("gen_async"), tmp)
    b = Bundle(tmp)
    expect_frames(b.oom_stack(), "gen_async", [("alloc", "alloc"), ("gen_allocs", "gen"), ("consume", "consume")],
                  "OOM stack (generator)")
    co = live(b, api="cudaMalloc", size=2 * MiB)
    check(len(co) == 3, "want 3 live allocations from the coroutine, got %d" % len(co))
    for a in co:
        expect_frames(b.stack(a["stack_id"]), "gen_async",
                      [("alloc", "alloc"), ("async_alloc", "async_alloc"), ("async_outer", "async_outer")],
                      "coroutine allocation")


def check_context_took_them(args, tmp, case, api, frames, count=None):
    """A context destroyed while the program still held arrays (the case
    prints them as "HELD 0x..."), then arrays until out of memory, at the
    same addresses: the bundle lists only the later arrays (`count` of them,
    when given; which line made each says whether it is a phantom), the
    destroyed context's are freed by `api`, each free's stack led by
    `frames` (the Python frames of the call that destroyed it)."""
    out = run(args, {}, program(case), tmp)
    held = {int(x, 16) for x in re.findall(r"HELD (0x[0-9a-f]+)", out)}
    check(len(held) == 3, "the program held %d arrays" % len(held))
    b = Bundle(tmp)
    s = sites(case)
    callers = [py_frames(b.stack(a["stack_id"]))[1][1] for a in b.allocations]
    check(callers and all(c == s["after"] for c in callers) and (count is None or len(callers) == count),
          "live arrays by the line that made them: %s (held line %d, after line %d)" % (callers, s["held"], s["after"]))
    gone = [e for e in b.events if e["api"] == api and e["event_type"] == "deallocation"]
    check({e["address"] for e in gone} == held, "frees of %s: %s" % (api, [hex(e["address"]) for e in gone]))
    for e in gone:
        expect_frames(b.stack(e["stack_id"]), case, frames, "free by " + api, prefix=True)


def case_numba_close(args, tmp):
    """numba.cuda.close() with arrays still held (cases/numba_close.py): the
    driver frees them with the context, and their frees name the line of the
    primary-context release that destroyed it."""
    check_context_took_them(args, tmp, "numba_close", "cuDevicePrimaryCtxRelease_v2",
                            [(fn("Device.release_primary_context"), "release"), (fn("Device.reset"), "reset")],
                            count=8)


def case_pycuda_detach(args, tmp):
    """A PyCUDA context detached with arrays still held (cases/pycuda_detach.py):
    the last cuCtxDetach destroys the context and the driver frees them; their
    frees name the line of the detach, inside the user's function that let
    the context go."""
    check_context_took_them(args, tmp, "pycuda_detach", "cuCtxDetach",
                            [(fn("Context.detach"), "detach"), (fn("solve_once"), "solve")])


def case_disabled(args, tmp):
    run(args, {"GPUMEMREC_PYTHON_STACKS": "0"}, program("nested"), tmp)
    b = Bundle(tmp)
    check(b.stacks, "no stacks")
    for s in b.stacks.values():
        expect_no_python(s, "disabled", "stack %d" % s["stack_id"])
    check("[python]" not in b.summary, "summary.txt shows Python frames")


def case_not_python(args, tmp):
    check(args.exe, "--exe is required")
    run(args, {}, [args.exe, os.path.join(args.fakes, "libcudart.so")], tmp)
    b = Bundle(tmp)
    check(b.stacks, "no stacks")
    for s in b.stacks.values():
        expect_no_python(s, "not_python", "stack %d" % s["stack_id"])


def case_cost(args, tmp):
    big = {"FAKEGPU_CAPACITY": str(1 << 40)}
    res = {}
    for label, extra in (("off", {"GPUMEMREC_PYTHON_STACKS": "0"}), ("on", {})):
        out = run(args, dict(big, **extra), program("cost") + [str(args.pairs)], tmp)
        res[label] = float(re.search(r"ns_per_pair ([\d.]+)", out).group(1))
    print("python %d.%d: %.0f ns per alloc+free pair with Python stacks, %.0f without: %+.0f ns per pair "
          "(20 Python frames, two events)" % (sys.version_info[0], sys.version_info[1], res["on"], res["off"],
                                              res["on"] - res["off"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--fakes", required=True)
    ap.add_argument("--native-lib")
    ap.add_argument("--exe")
    ap.add_argument("--capacity-mib", type=int, default=32)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--unnamed-eval-loop", action="store_true",
                    help="the interpreter's evaluation loop has no symbol name (see UNNAMED_LOOP)")
    args = ap.parse_args()
    global UNNAMED_LOOP
    UNNAMED_LOOP = args.unnamed_eval_loop
    return run_named_case(args, globals())


def run_named_case(args, cases):
    """Runs cases["case_" + args.case](args, tmp) in a fresh directory;
    prints PASS or FAIL with the bundles' summaries; returns the exit code."""
    print("interpreter: %s %s" % (sys.executable, sys.version.split()[0]))
    with tempfile.TemporaryDirectory(prefix="gmr_py_") as tmp:
        try:
            cases["case_" + args.case](args, tmp)
        except Failure as e:
            print("FAIL (%s): %s" % (args.case, e))
            for d in glob.glob(os.path.join(tmp, "*", "summary.txt")):
                print(open(d).read())
            return 1
    print("PASS (%s)" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
