#!/usr/bin/env python3
"""The dump layer, end to end: one consistent history in events.json under
8 threads, metadata and environment fields (docs/bundle-format.md), secrets
kept out of environment.json, snapshot.pickle from the in-memory snapshot,
and the symbolizer across a library unloaded and replaced at the same
address."""
import os
import subprocess
import sys

from gm_e2e import BUILD, Bundle, check, main, program, run

CHUNK = 16 << 20


def replay_problems(b):
    """Replays events.json in its order (time order: seq increases within a
    thread, not across threads): timestamps never go back, each device's
    memory_allocated moves by exactly the event's memory_change, and the last
    total of each device is what allocations.json holds.
    One exception, documented in bundle-format.md ("Order of events"): an
    address allocated again with no free in between in the bundle (a free
    still in flight when the window was copied: its thread had freed but not
    yet published the event) drops the earlier allocation's bytes just before
    the re-allocation. A thread has at most one event in flight, so a bundle
    may show at most one such re-allocation per thread that recorded."""
    bad = []
    last_ts = None
    totals = {}
    prev_seq = {}
    open_allocs = {}  # (address, physical) -> (seq, device, size)
    freed = set()  # keys whose last event in the bundle is a free
    implied = []
    for e in b.events:
        if e["seq"] <= prev_seq.get(e["thread_id"], 0):
            bad.append("thread %d: seq %d after %d" % (e["thread_id"], e["seq"], prev_seq[e["thread_id"]]))
        prev_seq[e["thread_id"]] = e["seq"]
        if last_ts is not None and e["timestamp"] < last_ts:
            bad.append("seq %d: timestamp %.6f before %.6f" % (e["seq"], e["timestamp"], last_ts))
        last_ts = e["timestamp"]
        d = e["device_id"]
        key = (e["address"], e["memory_type"] == "physical")
        if e["address"] and e["memory_change"] > 0 and key in open_allocs:
            seq0, d0, size0 = open_allocs[key]
            totals[d0] = totals.get(d0, 0) - size0
            implied.append("seq %d: %#x allocated again after seq %d with no free between" %
                           (e["seq"], e["address"], seq0))
        if e["address"] and e["memory_change"] > 0:
            open_allocs[key] = (e["seq"], d, e["memory_change"])
            freed.discard(key)
        elif e["address"] and e["memory_change"] < 0:
            # A free whose address was freed before with no allocation
            # between: the re-allocation that came between them in time is
            # placed after this free (the time order broke under reuse).
            if key in freed:
                bad.append("seq %d: %#x freed again with no allocation between" % (e["seq"], e["address"]))
            freed.add(key)
            open_allocs.pop(key, None)
        if d in totals and e["memory_allocated"] != totals[d] + e["memory_change"]:
            bad.append("seq %d: memory_allocated %d != %d %+d" % (e["seq"], e["memory_allocated"], totals[d],
                                                                 e["memory_change"]))
        totals[d] = e["memory_allocated"]
    threads = len(set(e["thread_id"] for e in b.events))
    if len(implied) > threads:
        bad.append("%d re-allocations without a free, more than one in-flight free per thread (%d):\n    %s" %
                   (len(implied), threads, "\n    ".join(implied[:4])))
    live = {}
    for a in b.allocations:
        if a["memory_type"] != "mapping":
            live[a["device_id"]] = live.get(a["device_id"], 0) + a["size"]
    for d, t in totals.items():
        if t != live.get(d, 0):
            bad.append("device %d: history ends at %d, allocations.json holds %d" % (d, t, live.get(d, 0)))
    return bad


def history_8_threads(ring=262144, name="history_8_threads"):
    # Small device: the threads run into out-of-memory while others allocate,
    # so the mid-run bundles are cut while 8 threads are recording. The
    # fake driver hands a freed address to the next allocation, whatever
    # its thread: replay_problems checks that every reuse is in order.
    r = run([program("mt_alloc"), "8", "20000", str(1 << 20)], capacity=48 << 20, timeout=300,
            env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1", "GPUMEMREC_RING_EVENTS": str(ring),
                       "GPUMEMREC_EPISODE_MS": "50", "GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0",
                       "GPUMEMREC_STACK_DEPTH": "4"})
    check(r.rc == 0, "mt_alloc exited %d: %s" % (r.rc, r.stderr[-800:]))
    bundles = [Bundle(p) for p in r.bundles()]
    mids = [b for b in bundles if b.metadata["reason"] == "oom"]
    check(mids, "no out-of-memory bundle written while the threads ran")
    check(any(b.metadata["reason"] == "exit" for b in bundles), "no exit bundle")
    for b in bundles:
        # mt_alloc frees only what it allocated: every free found its
        # allocation in the live table (a free of size 0 is one the table
        # had lost: test_live_table_hold.cpp, RandomHoldsAgainstAModel).
        unknown = [e["seq"] for e in b.events if e["event_type"] == "deallocation" and e["size"] == 0]
        check(not unknown, "%s: %d frees of allocations the live table had lost (seq %s)" %
              (b.name, len(unknown), unknown[:8]))
        bad = replay_problems(b)
        check(not bad, "%s: events.json is not one history (%d problems):\n  %s" %
              (b.name, len(bad), "\n  ".join(bad[:8])))
        if b.metadata["total_event_count"] > 2 * ring:
            # A wrapped ring is cut by time (bundle-format.md, "Order of
            # events"): it keeps most of the ring, not a sliver.
            check(len(b.events) >= ring // 2, "%s: %d events kept of a ring of %d" % (b.name, len(b.events), ring))
    print("%s: %d bundles replayed, %d events in the largest" %
          (name, len(bundles), max(len(b.events) for b in bundles)))


def history_small_ring():
    # The ring wraps many times: each bundle's window is cut by time at its
    # start (claim_marks.h), and still one history.
    history_8_threads(ring=8192, name="history_small_ring")


def metadata_fields():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], capacity=CHUNK)
    b = r.only_bundle()
    m = b.metadata
    check(m["exception_type"] == m["error_name"] == "cudaErrorMemoryAllocation", "exception_type %s" % m)
    check(m["exception_module"] == "cuda_runtime", "exception_module %s" % m["exception_module"])
    check(m["exception_message"] == m["context"] and "cudaMalloc(" in m["exception_message"], m["exception_message"])
    check(m["pid"] == b.manifest["pid"] and m["pid"] > 0, "pid %s" % m.get("pid"))
    check(m["failed_calls_before_dump"] == 0, "failed_calls_before_dump %s" % m["failed_calls_before_dump"])
    env = b.json("environment.json")
    s = env["system"]
    check(s["platform"] == "Linux" and s["architecture"] and s["cpu_count"] >= 1 and s["memory_total"] > 0, s)
    check(s["gpu_count"] == len(env["devices"]), "gpu_count %s vs devices %s" % (s["gpu_count"], env["devices"]))
    check(s["detected_backend"] == m["backend"], "detected_backend %s" % s["detected_backend"])
    # snapshot.pickle (made in memory) is listed, and the manifest lists itself last.
    files = b.manifest["files"]
    check("snapshot.pickle" in files and files[-1] == "manifest.json", "manifest files %s" % files)
    with open(os.path.join(b.path, "snapshot.pickle"), "rb") as f:
        head = f.read(2)
    check(head == b"\x80\x02", "snapshot.pickle does not start with PROTO 2: %r" % head)
    # A driver-level failure names the driver.
    d = run([program("drv_linked"), "cuMemAlloc_v2", str(CHUNK)], capacity=CHUNK).only_bundle()
    check(d.metadata["exception_module"] == "cuda_driver", "driver module %s" % d.metadata["exception_module"])


def cmdline_redacted():
    secrets = ["sk-live-0123456789", "tok456", "pw789", "hf_abcdef"]
    argv = [program("rt_linked"), "cudaMalloc", str(CHUNK), "--api-key=" + secrets[0], "--token", secrets[1],
            "https://alice:%s@example.com/x" % secrets[2], "HF_TOKEN=" + secrets[3], "--lr", "0.1"]
    r = run(argv, capacity=CHUNK, env_extra={"HF_TOKEN": "hf_fromenv"})
    b = r.only_bundle()
    env = b.json("environment.json")
    cmd = env["cmdline"]
    check(cmd[1:3] == ["cudaMalloc", str(CHUNK)] and cmd[-2:] == ["--lr", "0.1"], "cmdline mangled: %s" % cmd)
    check("--api-key=<redacted>" in cmd and "https://alice:<redacted>@example.com/x" in cmd, cmd)
    with open(os.path.join(b.path, "environment.json")) as f:
        text = f.read()
    for s in secrets + ["hf_fromenv"]:
        check(s not in text, "secret %s in environment.json" % s)
    for name in os.listdir(b.path):
        with open(os.path.join(b.path, name), "rb") as f:
            data = f.read()
        for s in secrets:
            check(s.encode() not in data, "secret %s in %s" % (s, name))


def symbolizer_reload():
    r = run([program("dl_reload")], capacity=256 << 20, env_extra={"GPUMEMREC_EPISODE_MS": "0"})
    check(r.rc == 0, "dl_reload exited %d: %s %s" % (r.rc, r.stdout, r.stderr[-800:]))
    calls = [l.split() for l in r.stdout.splitlines() if l.startswith("CALL ")]
    check(len(calls) == 2 and all(c[3] == "rc=2" for c in calls), "unexpected output:\n" + r.stdout)
    if calls[0][2] != calls[1][2]:
        print("symbolizer_reload: the second library was mapped elsewhere (%s, %s); nothing to test" %
              (calls[0][2], calls[1][2]))
        return "skip"
    bundles = [Bundle(p) for p in r.bundles()]
    check(len(bundles) == 2, "expected two bundles, found %d" % len(bundles))
    bundles.sort(key=lambda b: int(b.name.split("_")[5]))  # <seq>: docs/bundle-format.md
    for b, mine, other in ((bundles[0], "alpha_alloc", "omega_alloc"), (bundles[1], "omega_alloc", "alpha_alloc")):
        fns = b.functions(b.metadata["stack_id"])
        check(mine in fns, "%s: failing stack lacks %s: %s" % (b.name, mine, fns))
        check(other not in fns, "%s: failing stack names %s (a stale symbol): %s" % (b.name, other, fns))


def pickle_matches_export():
    """snapshot.pickle, made from the dump's in-memory model, is byte for
    byte what `gpumemrec export --format memory-viz` makes from the bundle's
    files (the same converter fed the same state)."""
    cli = os.path.join(BUILD, "bin", "gpumemrec")
    if not os.path.exists(cli):
        return "skip"  # the sanitizer builds make the shim and the programs, not the CLI
    runs = [run([program("mt_alloc"), "4", "3000", str(1 << 20)], capacity=48 << 20,
                env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1", "GPUMEMREC_EPISODE_MS": "100000"}),
            run([program("vmm"), "cuMemCreate", str(CHUNK)], capacity=CHUNK,
                env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1"})]
    n = 0
    for r in runs:
        for path in r.bundles():
            b = Bundle(path)
            check("snapshot.pickle" in b.manifest["files"], "%s: no snapshot.pickle" % b.name)
            out = os.path.join(r.workdir, "export.pickle")
            p = subprocess.run([cli, "export", "-f", "memory-viz", "-o", out, path], capture_output=True, text=True)
            check(p.returncode == 0, "export failed: %s" % p.stderr)
            with open(out, "rb") as f1, open(os.path.join(path, "snapshot.pickle"), "rb") as f2:
                check(f1.read() == f2.read(), "%s: snapshot.pickle differs from gpumemrec export" % b.name)
            n += 1
    check(n >= 3, "only %d bundles compared" % n)


CASES = {
    "history_8_threads": history_8_threads, "history_small_ring": history_small_ring,
    "metadata_fields": metadata_fields, "cmdline_redacted": cmdline_redacted,
    "symbolizer_reload": symbolizer_reload, "pickle_matches_export": pickle_matches_export,
}

if __name__ == "__main__":
    sys.exit(main(CASES))
