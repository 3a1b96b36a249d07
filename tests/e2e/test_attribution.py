#!/usr/bin/env python3
"""Who holds the memory (docs/design.md, "Who holds the memory"): the site
frame and owning library of every stack, and the accounting of every byte of
the card, on a program whose memory is taken by two "framework" libraries
(tests/programs/fw_app.cpp: a caching allocator over cudaMalloc and an
NCCL-like library over cuMemCreate), with the fake NVML reporting a context
overhead and another process."""
import json
import os
import re
import subprocess

from gm_e2e import TOOL, check, main, program, run

MiB = 1 << 20
CAPACITY = 64 * MiB
CONTEXT = 3 * MiB
OTHER = 5 * MiB
SHARED = {"FAKEGPU_CONTEXT_BYTES": str(CONTEXT), "FAKEGPU_OTHERS_BYTES": str(OTHER),
          "FAKEGPU_NVML_PROCS": "4242:%d:other_job" % OTHER}


def site_of(b, stack_id):
    st = b.stacks[stack_id]
    return st["frames"][st["site_frame"]], st["library"]


def fw_run(env_extra=None, args=()):
    env = dict(SHARED)
    env.update(env_extra or {})
    r = run([program("fw_app"), "oom=1"] + list(args), capacity=CAPACITY, env_extra=env)
    check(r.rc == 0, "fw_app exited %d: %s" % (r.rc, r.stderr[-800:]))
    return r, r.only_bundle()


def tool(*args):
    p = subprocess.run([TOOL] + list(args), capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "gpumemrec %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-800:]))
    return p.stdout


def frameworks():
    """Sites are the program's functions that called the libraries; the
    libraries are the .so files."""
    _, b = fw_run()
    b.check_well_formed()
    want = {"physical": ("setup_communicator", "libnccl_fake.so"), "device": ("train_step", "libc10_fakecuda.so")}
    seen = set()
    for a in b.allocations:
        if a["memory_type"] not in want:
            continue
        frame, lib = site_of(b, a["stack_id"])
        fn, libname = want[a["memory_type"]]
        check(fn in frame["function"] and frame["kind"] == "native" and frame["module"].endswith("/fw_app"),
              "%s allocation named by %r, want %s in fw_app" % (a["memory_type"], frame, fn))
        check(lib.startswith(libname), "%s allocation owned by %r, want %s" % (a["memory_type"], lib, libname))
        seen.add(a["memory_type"])
    check(seen == set(want), "missing allocations: %s" % seen)
    frame, lib = site_of(b, b.metadata["stack_id"])
    check("train_step" in frame["function"] and lib == "libc10_fakecuda.so", "failing call site %r %r" % (frame, lib))
    s = b.summary()
    check("site: (anonymous namespace)::train_step(…) (fw_app.cpp:" in s, "summary.txt does not lead with the site:\n" + s)
    # Three allocator frames; an instrumented build (scripts/sanitizers.sh)
    # adds the sanitizer's interceptor and the shim's own frames to the run.
    check(re.search(r"\[\d+ frames in [^\]\n]*libc10_fakecuda\.so\]", s) is not None,
          "summary.txt does not fold the allocator's frames:\n" + s)
    if not os.path.exists(TOOL):  # the sanitizer builds (scripts/sanitizers.sh) build the shim, not the CLI
        return
    rep = json.loads(tool("report", "--json", b.path))
    for site in rep["sites"]:
        check(site["site"]["library"] in ("libnccl_fake.so.2.0.0", "libc10_fakecuda.so", "libnccl_fake.so.2"),
              "report --json site %r" % site["site"])
        check(site["site"]["frame"]["function"].split("::")[-1].startswith(("train_step", "setup_communicator")),
              "report --json site frame %r" % site["site"]["frame"])
    text = tool("report", b.path)
    check("[3 frames in libc10_fakecuda.so]" in text, "report does not fold:\n" + text)
    full = tool("report", "--all-frames", b.path)
    check("[3 frames in" not in full and "alloc_block" in full, "--all-frames still folds:\n" + full)
    q = tool("query", b.path, "SELECT site, library, bytes FROM sites ORDER BY bytes DESC")
    check("setup_communicator" in q and "libnccl_fake" in q and "train_step" in q, "query sites:\n" + q)


def accounting_adds_up():
    """recorded + this process's unrecorded + others + free + unaccounted =
    total, with the fake's context overhead and other process in their rows."""
    _, b = fw_run()
    acc = b.metadata["device_accounting"]
    check(len(acc) == 1 and acc[0]["device"] == 0, "device_accounting %s" % acc)
    a = acc[0]
    check(a["total_bytes"] == CAPACITY, "total %s" % a["total_bytes"])
    live = sum(x["size"] for x in b.allocations if x["memory_type"] != "mapping")
    check(a["recorded_live_bytes"] == live, "recorded %d, live %d" % (a["recorded_live_bytes"], live))
    check(sum(a["recorded_by_library"].values()) == live, "by library %s" % a["recorded_by_library"])
    check(a["process_unrecorded_bytes"] == CONTEXT, "unrecorded %s, want the context %d" %
          (a["process_unrecorded_bytes"], CONTEXT))
    check(a["other_processes"] == [{"pid": 4242, "name": "other_job", "used_bytes": OTHER}],
          "others %s" % a["other_processes"])
    parts = a["recorded_live_bytes"] + a["process_unrecorded_bytes"] + OTHER + a["free_bytes"] + a["unaccounted_bytes"]
    check(parts == a["total_bytes"], "the figures add up to %d, not %d: %s" % (parts, a["total_bytes"], a))
    check(a["unaccounted_bytes"] == 0 and a["note"] == "", "unaccounted %s, note %r" % (a["unaccounted_bytes"], a["note"]))
    check("Where device 0's 64.00 MiB went:" in b.summary(), "no accounting in summary.txt:\n" + b.summary())
    if not os.path.exists(TOOL):  # the sanitizer builds (scripts/sanitizers.sh) build the shim, not the CLI
        return
    rep = json.loads(tool("report", "--json", b.path))
    check(rep["device_accounting"][0]["process_unrecorded_bytes"] == CONTEXT, "report --json %s" % rep["device_accounting"])
    q = tool("query", b.path, "SELECT process_unrecorded_bytes, other_processes_bytes FROM device_accounting")
    check(str(CONTEXT) in q and str(OTHER) in q, "query device_accounting:\n" + q)


def accounting_after_the_program_freed():
    """The program frees its activations and empties its cache right after
    the failure, before the writer reads NVML (what a CUDA program does on
    its way out: on an H200 this made "this process, not recorded" -138 GiB,
    docs/validation/2026-11-26). The figures are taken back to the failure:
    the context and the other job in their rows, nothing unaccounted, and a
    note that says what changed."""
    r, b = fw_run(args=["release=1"])
    check("DONE live_count=1 " in r.stdout, "fw_app did not release: %s" % r.stdout[-300:])
    a = b.metadata["device_accounting"][0]
    freed = a["recorded_live_bytes"] - 4 * MiB  # all but the communicator's buffer
    check(freed > 0, "nothing to free: %s" % a)
    # The live allocations are the failure's too, though the program freed
    # them before the writer copied the table (the freeze holds it:
    # docs/design.md, "Freeze").
    live = sum(x["size"] for x in b.allocations if x["memory_type"] != "mapping")
    check(live == a["recorded_live_bytes"], "allocations.json holds %d, recorded at the failure %d" %
          (live, a["recorded_live_bytes"]))
    check(a["process_unrecorded_bytes"] == CONTEXT, "unrecorded %s, want the context %d: %s" %
          (a["process_unrecorded_bytes"], CONTEXT, a))
    check(a["unaccounted_bytes"] == 0, "unaccounted %s: %s" % (a["unaccounted_bytes"], a))
    parts = a["recorded_live_bytes"] + a["process_unrecorded_bytes"] + OTHER + a["free_bytes"] + a["unaccounted_bytes"]
    check(parts == a["total_bytes"], "the figures add up to %d, not %d: %s" % (parts, a["total_bytes"], a))
    check("after this process had freed %.2f MiB since the failure" % (freed / MiB) in a["note"], "note %r" % a["note"])


ASYNC = {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}


def accounting_after_pool_frees_kept():
    """PyTorch's cudaMallocAsync backend frees into the driver's pool, which
    keeps the bytes (NVML still counts them) until a synchronization or a
    trim: on an H200 its 139 GiB of frees at exit left NVML's figure as it
    was. Those frees are not taken back; the note says the pool holds them."""
    r, b = fw_run(ASYNC, ["release=2", "block=%d" % (2 * MiB)])
    check("DONE live_count=1 " in r.stdout, "fw_app did not release: %s" % r.stdout[-300:])
    check(b.metadata["api"] == "cudaMallocAsync", "api %s" % b.metadata["api"])
    a = b.metadata["device_accounting"][0]
    check(a["process_unrecorded_bytes"] == CONTEXT, "unrecorded %s, want the context %d: %s" %
          (a["process_unrecorded_bytes"], CONTEXT, a))
    check(a["unaccounted_bytes"] == 0, "unaccounted %s: %s" % (a["unaccounted_bytes"], a))
    check("still held by them: 6.00 MiB" in a["note"] and "taken back" not in a["note"], "note %r" % a["note"])


def accounting_after_pool_released():
    """The same frees, then emptyCache (a synchronization: the pool gives the
    bytes back, as with CUDA's default release threshold of 0): kept, they
    would make this process's share negative, which cannot be, so they count
    as given back."""
    _, b = fw_run(ASYNC, ["release=1", "block=%d" % (2 * MiB)])
    a = b.metadata["device_accounting"][0]
    check(a["process_unrecorded_bytes"] == CONTEXT, "unrecorded %s, want the context %d: %s" %
          (a["process_unrecorded_bytes"], CONTEXT, a))
    check(a["unaccounted_bytes"] == 0, "unaccounted %s: %s" % (a["unaccounted_bytes"], a))
    check("freed 6.00 MiB since the failure" in a["note"] and "pools gave back" in a["note"], "note %r" % a["note"])


def accounting_while_threads_allocate():
    """Another thread allocates during every read of NVML's list (the fake
    NVML makes it: FAKEGPU_NVML_ALLOC_WHILE_LISTING), so the shim's counters
    never hold still around it: this process's figure is left out with a
    note, never compared with a live table of another moment; the driver's
    figures and the other process stay."""
    _, b = fw_run({"FAKEGPU_NVML_ALLOC_WHILE_LISTING": str(64 << 10)})
    a = b.metadata["device_accounting"][0]
    check(a["process_unrecorded_bytes"] is None and a["unaccounted_bytes"] is None,
          "figures from a moving read: %s" % a)
    check("allocated or freed while NVML was read" in a["note"], "note %r" % a["note"])
    check(a["free_bytes"] is not None and a["recorded_live_bytes"] > 0, "driver figures lost: %s" % a)
    check(a["other_processes"] == [{"pid": 4242, "name": "other_job", "used_bytes": OTHER}], "others %s" % a)


def nvml_failing():
    """NVML installed but failing: null figures and one line saying why,
    never a number made up from the rest."""
    _, b = fw_run({"FAKEGPU_NVML_FAIL": "1"})
    a = b.metadata["device_accounting"][0]
    for k in ("process_unrecorded_bytes", "other_processes", "unaccounted_bytes"):
        check(a[k] is None, "%s is %r without NVML" % (k, a[k]))
    check(a["free_bytes"] is not None and a["recorded_live_bytes"] > 0, "driver figures lost: %s" % a)
    check("nvmlInit failed" in a["note"], "note %r" % a["note"])
    check("(nvmlInit failed" in b.summary(), "summary.txt does not say why:\n" + b.summary())


def nvml_absent_hip():
    r = run([program("hip_linked"), "hipMalloc", str(16 * MiB)])
    a = r.only_bundle().metadata["device_accounting"][0]
    check(a["process_unrecorded_bytes"] is None and a["other_processes"] is None and a["unaccounted_bytes"] is None,
          "HIP bundle has NVML figures: %s" % a)
    check("HIP" in a["note"], "note %r" % a["note"])


def site_skip():
    """GPUMEMREC_SITE_SKIP adds patterns (function names too); a value with
    no pattern is one warning and the built-in list."""
    _, b = fw_run({"GPUMEMREC_SITE_SKIP": "*train_step*"})
    frame, _ = site_of(b, b.metadata["stack_id"])
    check(frame["function"] == "main", "with train_step skipped the site is %r, want main" % frame)
    r, b = fw_run({"GPUMEMREC_SITE_SKIP": " , "})
    check("GPUMEMREC_SITE_SKIP" in r.stderr, "no warning for an empty pattern list: %s" % r.stderr[-500:])
    frame, _ = site_of(b, b.metadata["stack_id"])
    check("train_step" in frame["function"], "bad value changed the rule: %r" % frame)
    _, b = fw_run({"GPUMEMREC_SITE_SKIP": "*"})
    st = b.stacks[b.metadata["stack_id"]]
    check(st["site_frame"] == 0, "everything skipped: site %d, want the innermost frame" % st["site_frame"])


CASES = {
    "attrib_frameworks": frameworks,
    "attrib_accounting": accounting_adds_up,
    "attrib_accounting_after_free": accounting_after_the_program_freed,
    "attrib_accounting_pool_kept": accounting_after_pool_frees_kept,
    "attrib_accounting_pool_released": accounting_after_pool_released,
    "attrib_accounting_moving": accounting_while_threads_allocate,
    "attrib_nvml_failing": nvml_failing,
    "attrib_nvml_absent_hip": nvml_absent_hip,
    "attrib_site_skip": site_skip,
}

if __name__ == "__main__":
    raise SystemExit(main(CASES))
