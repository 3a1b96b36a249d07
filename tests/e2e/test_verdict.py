#!/usr/bin/env python3
"""The out-of-memory verdict and the writer thread (
docs/reliability.md, section 11): a failure the program recovers from by
freeing its cache and retrying is counted, not dumped (or dumped with
outcome "recovered" under GPUMEMREC_RECOVERED=keep); the failing call does
not wait for the bundle; the bundle is complete whatever the program does
next (exit, abort, SIGSEGV, SIGTERM, SIGKILL one second later, fork, exec).

Each case is one ctest test e2e.<case>. GPUMEMREC_RECOVER_SECONDS sets the
length of recover_minute (default 60, the issue's minute)."""
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

from gm_e2e import (BUILD, PRELOAD_PREFIX, RUN_TIMEOUT_S, TOOL, Bundle, Failure, base_env, check, main, normalized,
                    preload_env, program, run)

HARD = os.path.join(BUILD, "tests", "hardening")
SANITIZED = bool(PRELOAD_PREFIX)
BLOCK = 4 << 20  # caching_alloc's block; the device holds 16 of them
DEVICE = 16 * BLOCK
FINAL = BLOCK * 1024  # caching_alloc's final request, larger than the device
OOM_SIZE = 1 << 40  # after_oom's failing request
CHILD_OOM_SIZE = (1 << 40) + (1 << 20)
# Wide open: pruning must not hide a bundle from the counts.
NO_PRUNE = {"GPUMEMREC_MAX_DUMPS": "0", "GPUMEMREC_MAX_TOTAL_MB": "0"}
# No fake-driver ledger: the death cases never reach the fake's exit-time
# writer, and a forked child must not race its parent for the file.
NO_LEDGER = {"FAKEGPU_LEDGER": ""}
EXIT_LINE = re.compile(r"gpumemrec: warning: (\d+) out-of-memory failure\(s\) recovered without a bundle "
                       r"\(GPUMEMREC_RECOVERED=count\)")
SAID_ONCE = "recovered failures are counted, not dumped (GPUMEMREC_RECOVERED=count; said once)"
OUTCOMES = ("unknown", "recovered", "fatal")


def hard(name):
    path = os.path.join(HARD, name)
    check(os.path.exists(path), "missing " + path)
    return path


def no_core():
    """The death cases must not leave core files in the working directory."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def shim_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("gpumemrec")]


def total(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("TOTAL ")]
    check(len(line) == 1, "no TOTAL line:\n" + stdout[-1500:])
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line[0])}


def exit_count(stderr):
    """N of the exit line "N out-of-memory failure(s) recovered without a
    bundle" (0 when there is no such line; more than one fails)."""
    found = [int(m.group(1)) for m in EXIT_LINE.finditer(stderr)]
    check(len(found) <= 1, "the exit count is said %d times:\n%s" % (len(found), stderr[-2000:]))
    return found[0] if found else 0


DETAIL_START = {"fatal": "not recovered", "recovered": "recovered after freeing"}


def check_outcome(b, outcome, *detail_parts):
    """manifest and metadata carry the same verdict (docs/bundle-format.md),
    and the fields that go with it. outcome_detail is a sentence for people:
    its start and the parts given (a signal's number and name, a time
    limit) are checked, not its wording."""
    m, md = b.manifest, b.metadata
    check(m.get("outcome") == outcome, "%s: manifest outcome %r, expected %r" % (b.name, m.get("outcome"), outcome))
    check(md.get("outcome") == outcome, "%s: metadata outcome %r, manifest %r" % (b.name, md.get("outcome"), outcome))
    detail = md.get("outcome_detail")
    check(isinstance(detail, str) and detail, "%s: outcome_detail %r" % (b.name, detail))
    start = DETAIL_START.get(outcome, "")
    check(detail.startswith(start) and all(p in detail for p in detail_parts),
          "%s: outcome_detail %r: expected %r... with %s" % (b.name, detail, start, detail_parts))
    check("recovery" in md, "%s: metadata lacks recovery" % b.name)
    if outcome == "recovered":
        rec = md["recovery"]
        check(isinstance(rec, dict), "%s: recovered without a recovery object: %r" % (b.name, rec))
        for k, t in (("after_ms", (int, float)), ("freed_bytes", int), ("retry_size", int), ("retry_api", str),
                     ("thread_id", int)):
            check(isinstance(rec.get(k), t) and not isinstance(rec.get(k), bool), "%s: recovery.%s = %r" %
                  (b.name, k, rec.get(k)))
        check(rec["after_ms"] >= 0 and rec["retry_size"] >= md["requested_bytes"], "%s: recovery %r for size %d" %
              (b.name, rec, md["requested_bytes"]))
    else:
        check(md["recovery"] is None, "%s: outcome %s with a recovery object %r" % (b.name, outcome, md["recovery"]))
    # The summary aligns its values in a column: "Outcome:" then spaces.
    line = [l for l in b.summary().splitlines() if l.startswith("Outcome:")]
    check(len(line) == 1 and re.match(r"Outcome: +%s - %s$" % (outcome, re.escape(detail)), line[0]),
          "%s: summary.txt outcome line %r (metadata: %s - %s)" % (b.name, line, outcome, detail))
    check_recovered_failures(b)


def check_recovered_failures(b, sizes=None, tids=None):
    """metadata.recovered_failures: a count and up to 32 entries, oldest
    first, with the documented fields; every stack id is in stacks.json."""
    rf = b.metadata.get("recovered_failures")
    check(isinstance(rf, dict) and isinstance(rf.get("count"), int) and isinstance(rf.get("listed"), list),
          "%s: recovered_failures %r" % (b.name, rf))
    listed, count = rf["listed"], rf["count"]
    check(len(listed) == min(count, 32), "%s: %d listed for a count of %d" % (b.name, len(listed), count))
    times = [e.get("timestamp") for e in listed]
    check(times == sorted(times), "%s: recovered_failures not oldest first: %s" % (b.name, times[:8]))
    stacks = b.stacks
    for e in listed:
        for k, t in (("timestamp", (int, float)), ("device_id", int), ("size", int), ("api", str),
                     ("thread_id", int), ("stack_id", int), ("after_ms", (int, float)), ("freed_bytes", int)):
            check(isinstance(e.get(k), t) and not isinstance(e.get(k), bool), "%s: listed %s = %r in %r" %
                  (b.name, k, e.get(k), e))
        check(e["stack_id"] == 0 or e["stack_id"] in stacks, "%s: listed stack %d not in stacks.json" %
              (b.name, e["stack_id"]))
        check(e["device_id"] == 0 and e["api"] == "cudaMalloc" and e["after_ms"] >= 0, "%s: listed %r" % (b.name, e))
        if sizes is not None:
            check(e["size"] in sizes, "%s: listed size %d, the program asked for %s" % (b.name, e["size"], sizes))
        if tids is not None:
            check((e["thread_id"], e["size"]) in tids, "%s: listed %r: that thread never failed a request of that "
                  "size" % (b.name, e))
    summary = b.summary()
    if count > 0:
        check("Recovered out-of-memory failures since the previous bundle: %d" % count in summary,
              "%s: summary.txt does not give the count %d:\n%s" % (b.name, count, summary[:1500]))
    return count


def request_lines(stdout):
    """caching_alloc log=1: [(kind, tid, size, freed)] in program order."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))) for m in
            re.finditer(r"^(RECOVERED|FAILED) tid=(\d+) size=(\d+) freed=(\d+) attempts=\d+$", stdout, re.M)]


# ---------------------------------------------------------------- 1. recovery loop
# The bound on one training step's wall time while every step recovers from
# out-of-memory failures. Not a speed figure (those are in bench/): a stall
# bound. Before the writer thread the failing thread wrote the bundle itself and the
# first recovered failure stalled its step for the whole dump (~290 ms on
# this machine for this program); the freeze that replaces it is meant to
# take < 5 ms for the default ring. 100 ms is 20 times the freeze target, so
# scheduling noise on a loaded 2-core machine does not reach it while a
# dump on the failing thread (or a wait for the writer) does.
STALL_BOUND_US = 100000
# scripts/under-load.sh runs the suite with a busy loop on every core: a
# thread then waits for a core for up to a few hundred ms at any moment
# (260 ms seen in a failing call), which the shim does not control. The
# bounds are checked 10 times looser there: still far below a dump on the
# failing thread or a wait for the writer (seconds with a full ring under
# that load).
if os.environ.get("GMR_TEST_UNDER_LOAD") == "1":
    STALL_BOUND_US *= 10


def recover_minute():
    """A minute of training steps that each recover from out-of-memory
    failures (caching_alloc, one thread), then a final request that fails
    for good: GPUMEMREC_RECOVERED's default (count) writes no bundle for the
    recovered ones and exactly one, fatal, for the last; the count of
    recovered episodes is the program's own, in the metadata and on
    stderr; no step stalls beyond STALL_BOUND_US."""
    seconds = int(os.environ.get("GPUMEMREC_RECOVER_SECONDS", "60"))
    # A full ring (warmup) when the first failure comes, as in a long job;
    # each step holds its blocks for 1 ms (its "kernels").
    argv = [program("caching_alloc"), "1", "100", str(BLOCK), "1", "seconds=%d" % seconds, "compute_us=1000",
            "warmup=40000"]
    r = run(argv, capacity=DEVICE, timeout=seconds + 240, env_extra=NO_PRUNE)
    check(r.rc == 0, "caching_alloc exited %d:\n%s" % (r.rc, r.stderr[-1500:]))
    t = total(r.stdout)
    print("recover_minute: %d steps in %d s, %d driver failures, %d recovered requests, max step %.1f ms, "
          "p99 %.2f ms, longest failed call %.1f ms" % (t["steps"], seconds, t["driver_ooms"], t["recovered"],
                                                        t["max_step_us"] / 1000.0, t["p99_step_us"] / 1000.0,
                                                        t["max_failed_call_us"] / 1000.0))
    check(t["fatal"] == 1 and t["gave_up"] == 0, "program counts: %s" % t)
    check(t["recovered"] >= 100, "only %d recovered requests: the test needs many" % t["recovered"])
    b = r.only_bundle()  # no bundle for the recovered episodes, no .tmp- left
    b.check_well_formed()
    check_outcome(b, "fatal")
    md = b.metadata
    check(md["requested_bytes"] == FINAL and md["api"] == "cudaMalloc", "the bundle is not the final request's: "
          "%s bytes, %s" % (md["requested_bytes"], md["api"]))
    # One thread: each request that failed and then succeeded is one episode
    # that recovered, so the shim's count is the program's exactly.
    n = check_recovered_failures(b, sizes={BLOCK, BLOCK + 4096})
    check(n == t["recovered"], "metadata counts %d recovered failures, the program recovered %d requests" %
          (n, t["recovered"]))
    check(exit_count(r.stderr) == t["recovered"], "exit line says %d, the program recovered %d:\n%s" %
          (exit_count(r.stderr), t["recovered"], "\n".join(shim_lines(r.stderr))))
    lines = shim_lines(r.stderr)
    bundle_lines = [l for l in lines if "bundle: " in l]
    check(len(bundle_lines) == 1 and "not recovered (fatal)" in bundle_lines[0] and b.path in bundle_lines[0],
          "expected one bundle line, not recovered (fatal), naming %s:\n%s" % (b.path, "\n".join(lines)))
    check(sum(SAID_ONCE in l for l in lines) == 1, "the first recovered failure is not said exactly once:\n%s" %
          "\n".join(lines))
    # What the shim controls is the failing call (the freeze): bounded for
    # every call. A whole step also waits for the scheduler (the writer and
    # other tests share 2 cores): its p99 is bounded, its maximum printed.
    check(SANITIZED or (t["max_failed_call_us"] <= STALL_BOUND_US and t["p99_step_us"] <= STALL_BOUND_US // 2),
          "a failing call took %.1f ms (bound %d ms), p99 step %.2f ms (bound %d ms; max step %.1f ms)" %
          (t["max_failed_call_us"] / 1000.0, STALL_BOUND_US // 1000, t["p99_step_us"] / 1000.0,
           STALL_BOUND_US // 2000, t["max_step_us"] / 1000.0))
    check(len(lines) == 3, "expected 3 lines on stderr (said once, fatal bundle, exit count):\n%s" % "\n".join(lines))


def recover_threads():
    """4 threads share the caching allocator for a few seconds. Several
    threads' failures can fall into one episode, so the count is bounded by
    the program's, not equal to it: at most one recovered episode per request
    that failed (each episode starts with a request of its own). Still one
    bundle (the final request's episode, fatal), no bundle for recovered
    ones, and the count in the metadata equals the one said at exit; every
    listed failure is one a thread of the program really had."""
    argv = [program("caching_alloc"), "4", "100", str(BLOCK), "1", "seconds=5", "compute_us=1000", "log=1"]
    r = run(argv, capacity=DEVICE, timeout=240, env_extra=NO_PRUNE)
    check(r.rc == 0, "caching_alloc exited %d:\n%s" % (r.rc, r.stderr[-1500:]))
    t = total(r.stdout)
    check(t["fatal"] == 1 and t["recovered"] > 10, "program counts: %s" % t)
    reqs = request_lines(r.stdout)
    check(len(reqs) == t["recovered"] + t["gave_up"] + 1, "%d request lines for %s" % (len(reqs), t))
    b = r.only_bundle()
    b.check_well_formed()
    check_outcome(b, "fatal")
    n = check_recovered_failures(b, sizes={BLOCK, BLOCK + 4096}, tids={(tid, size) for _, tid, size, _ in reqs})
    said = exit_count(r.stderr)
    check(said == n, "exit line says %d, the metadata %d" % (said, n))
    check(n <= t["recovered"] + t["gave_up"], "%d recovered episodes for %d failed requests" %
          (n, t["recovered"] + t["gave_up"]))
    bundle_lines = [l for l in shim_lines(r.stderr) if "bundle: " in l]
    check(len(bundle_lines) == 1 and "not recovered (fatal)" in bundle_lines[0], "bundle lines:\n%s" %
          "\n".join(bundle_lines))
    print("recover_threads: %d steps, %d recovered requests, %d failed, %d recovered episodes counted; max step "
          "%.1f ms" % (t["steps"], t["recovered"], t["gave_up"], n, t["max_step_us"] / 1000.0))


def keep_run(extra):
    r = run([program("caching_alloc"), "1", "4", str(BLOCK), "1", "log=1"] + extra, capacity=DEVICE, timeout=240,
            env_extra=dict(NO_PRUNE, GPUMEMREC_RECOVERED="keep"))
    check(r.rc == 0, "caching_alloc exited %d:\n%s" % (r.rc, r.stderr[-1500:]))
    t = total(r.stdout)
    recovered = [q for q in request_lines(r.stdout) if q[0] == "RECOVERED"]
    check(len(recovered) == t["recovered"] >= 4 and t["fatal"] == 1, "program counts: %s" % t)
    bundles = sorted((Bundle(p) for p in r.bundles()), key=lambda b: b.metadata["timestamp"])
    for b in bundles:
        b.check_well_formed()
    return r, t, recovered, bundles


def check_keep_bundle(b, request):
    """A recovered bundle against the program's logged request (one thread:
    nothing else frees between its failure and its retry)."""
    _, tid, size, freed = request
    check_outcome(b, "recovered")
    md, rec = b.metadata, b.metadata["recovery"]
    check(md["requested_bytes"] == size and rec["retry_size"] == size and rec["retry_api"] == "cudaMalloc",
          "%s: size %d, recovery %r; the program's request: size %d" % (b.name, md["requested_bytes"], rec, size))
    check(rec["freed_bytes"] == freed, "%s: freed_bytes %d, the program freed %d before its retry" %
          (b.name, rec["freed_bytes"], freed))
    check(rec["thread_id"] == tid, "%s: recovery.thread_id %d, the program's thread %d" %
          (b.name, rec["thread_id"], tid))
    check(md["recovered_failures"]["count"] == 0, "%s: keep mode, yet %d recovered without a bundle" %
          (b.name, md["recovered_failures"]["count"]))


def recover_keep():
    """GPUMEMREC_RECOVERED=keep: a recovered episode keeps a bundle of its own
    with outcome "recovered" and a recovery object; one thread, so each
    bundle is one of the program's recovered requests, with the bytes the
    program freed before its successful retry.
    Spaced out (0.5 s after each recovery, time for the writer): one bundle
    per recovered request, in order, then the fatal one; one stderr line
    each, "recovered after freeing" or "not recovered (fatal)".
    In a burst (the retry chain's failures microseconds apart) the writer
    cannot keep up: episodes that find both frozen states taken wait as
    records (four at most) and are copied later; when those are full a newer
    failure takes the place of a recovered one's record, so the final, fatal
    episode always has its bundle. Every bundle is one of the program's
    requests, in order, and the counts add up (bundles + said missed)."""
    r, t, recovered, bundles = keep_run(["after_recovery_us=500000"])
    check(len(bundles) == t["recovered"] + 1, "spaced out: %d bundles for %d recovered requests + 1 fatal" %
          (len(bundles), t["recovered"]))
    for b, request in zip(bundles, recovered):
        check_keep_bundle(b, request)
    check(bundles[-1].metadata["requested_bytes"] == FINAL, "the last bundle is not the final request's")
    check_outcome(bundles[-1], "fatal")
    lines = shim_lines(r.stderr)
    rec_lines = [l for l in lines if "recovered after freeing" in l and "bundle: " in l]
    fatal_lines = [l for l in lines if "not recovered (fatal)" in l and "bundle: " in l]
    check(len(rec_lines) == t["recovered"] and len(fatal_lines) == 1 and len(lines) == len(bundles),
          "expected one line per bundle (%d recovered, 1 fatal):\n%s" % (t["recovered"], "\n".join(lines)))
    for l in rec_lines + fatal_lines:
        check(os.path.isdir(l.split("bundle: ", 1)[1].strip()), "stderr names a bundle that is not there: " + l)
    check(exit_count(r.stderr) == 0, "keep mode counts recovered failures as unbundled")
    # The burst.
    r, t, recovered, bundles = keep_run([])
    fatal = [b for b in bundles if b.metadata["requested_bytes"] == FINAL]
    rest = [b for b in bundles if b.metadata["requested_bytes"] != FINAL]
    missed = missed_count(r.stderr)
    print("recover_keep burst: %d recovered requests, %d recovered bundles, %d fatal bundles, %d said missed" %
          (t["recovered"], len(rest), len(fatal), missed))
    check(len(fatal) == 1, "burst: %d fatal bundles (the last episode of a burst always has one)" % len(fatal))
    check_outcome(fatal[0], "fatal")
    i = 0
    for b in rest:  # an ordered subsequence of the program's recovered requests
        while i < len(recovered) and recovered[i][2] != b.metadata["requested_bytes"]:
            i += 1
        check(i < len(recovered), "%s is none of the program's recovered requests (in order)" % b.name)
        check_keep_bundle(b, recovered[i])
        i += 1
    check(len(rest) + missed == t["recovered"],
          "burst: %d recovered bundles + %d missed != %d recovered requests" % (len(rest), missed, t["recovered"]))


def missed_count(stderr):
    m = re.search(r"(\d+) out-of-memory failure\(s\) got no bundle of their own", stderr)
    return int(m.group(1)) if m else 0


BURST = 10


def burst_then_fatal():
    """A burst of episodes microseconds apart, each recovered at once, then
    one that is never retried (tests/hardening/oom_burst.cpp), while each
    bundle takes a while to write (a full ring, 3,000 live allocations).
    The failures never wait for the writer, and the last episode, fatal,
    always gets its bundle however far behind the writer is.
    keep: the first two episodes are frozen at their failure; later ones
    wait as records and are copied when a frozen set comes free, their
    bundles saying how much later (metadata frozen_after_failure_ms,
    summary.txt "State:", `gpumemrec report`); when the records are full,
    newer failures replace recovered ones: bundles + said missed = episodes.
    count (the default): one bundle, the fatal one, counting every
    recovered episode."""
    sizes = [(2 << 20) + i * 4096 for i in range(BURST)]
    r = run([hard("oom_burst"), str(BURST)], env_extra=dict(NO_PRUNE, GPUMEMREC_RECOVERED="keep"), timeout=240)
    check(r.rc == 0 and r.stdout.count("RECOVERED ") == BURST, "oom_burst exited %d:\n%s\n%s" %
          (r.rc, r.stdout[-1000:], r.stderr[-1500:]))
    bundles = sorted((Bundle(p) for p in r.bundles()), key=lambda b: b.metadata["timestamp"])
    fatal = [b for b in bundles if b.metadata["requested_bytes"] == 1 << 40]
    rest = [b for b in bundles if b.metadata["requested_bytes"] != 1 << 40]
    check(len(fatal) == 1, "keep: %d fatal bundles, expected 1: %s" % (len(fatal), [b.name for b in bundles]))
    check_outcome(fatal[0], "fatal")
    got = [b.metadata["requested_bytes"] for b in rest]
    check(all(x in sizes for x in got) and got == sorted(got), "keep: bundles of %s, the program's %s" %
          (got, sizes))
    missed = missed_count(r.stderr)
    check(len(rest) + missed == BURST, "keep: %d recovered bundles + %d said missed != %d episodes" %
          (len(rest), missed, BURST))
    late = 0
    fatal[0].check_well_formed()
    for b in bundles:
        if b is not fatal[0]:
            check_outcome(b, "recovered")
        ms = b.metadata.get("frozen_after_failure_ms")
        with open(os.path.join(b.path, "summary.txt")) as f:
            state_line = "State:        copied" in f.read()
        check(state_line == (ms is not None), "%s: frozen_after_failure_ms %r, summary State: line %s" %
              (b.name, ms, state_line))
        if ms is None:
            continue
        late += 1
        if late == 1 and b is not fatal[0]:
            b.check_well_formed()  # a late copy is as complete (~7 s a bundle: the others are not checked)
        check(0 < ms < 120000, "%s: frozen_after_failure_ms %r" % (b.name, ms))
        if os.path.exists(TOOL):  # the sanitizer builds (scripts/sanitizers.sh) build the shim, not the CLI
            rep = subprocess.run([TOOL, "report", b.path], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
            check(rep.returncode == 0 and "state copied" in rep.stdout, "report of %s:\n%s%s" %
                  (b.name, rep.stdout[-1500:], rep.stderr[-500:]))
    check(late <= len(bundles) - min(2, len(rest)), "%d late bundles of %d: the first two have frozen sets" %
          (late, len(bundles)))
    print("burst_then_fatal keep: %d episodes + 1 fatal: %d bundles (%d copied late), %d said missed" %
          (BURST, len(bundles), late, missed))
    r = run([hard("oom_burst"), str(BURST)], env_extra=NO_PRUNE, timeout=240)
    check(r.rc == 0, "count: oom_burst exited %d:\n%s" % (r.rc, r.stderr[-1500:]))
    b = r.only_bundle()
    b.check_well_formed()
    check(b.metadata["requested_bytes"] == 1 << 40, "count: the bundle is not the fatal failure's")
    check_outcome(b, "fatal")
    n = check_recovered_failures(b, sizes=set(sizes))
    check(n == BURST and exit_count(r.stderr) == BURST, "count: %d recovered listed, %d said at exit, %d episodes" %
          (n, exit_count(r.stderr), BURST))


def burst_keep_retention():
    """GPUMEMREC_RECOVERED=keep under the default retention (MAX_DUMPS=5):
    five recovered episodes and the fatal one. The newest burst is pruned
    latest first, which alone would remove the fatal bundle just written;
    recovered bundles go first (shim/dump/place/bundle_dir.h), so the fatal one
    stays and the latest recovered one goes."""
    n = 5
    r = run([hard("oom_burst"), str(n), "300"], env_extra={"GPUMEMREC_RECOVERED": "keep"}, timeout=240)
    check(r.rc == 0 and r.stdout.count("RECOVERED ") == n, "oom_burst exited %d:\n%s\n%s" %
          (r.rc, r.stdout[-1000:], r.stderr[-1500:]))
    bundles = [Bundle(p) for p in r.bundles()]
    fatal = [b for b in bundles if b.metadata["requested_bytes"] == 1 << 40]
    check(len(fatal) == 1, "keep + MAX_DUMPS=5: %d fatal bundles (%d in all), expected 1:\n%s" %
          (len(fatal), len(bundles), r.stderr[-2500:]))
    check_outcome(fatal[0], "fatal")
    fatal[0].check_well_formed()
    rest = [b for b in bundles if b is not fatal[0]]
    for b in rest:
        check_outcome(b, "recovered")
    missed = missed_count(r.stderr)
    check(len(bundles) == 5 or (len(bundles) < 5 and len(rest) + missed == n),
          "%d bundles left, %d said missed, expected MAX_DUMPS=5" % (len(bundles), missed))
    print("burst_keep_retention: %d bundles left (1 fatal), %d missed" % (len(bundles), missed))


def recover_bogus():
    """GPUMEMREC_RECOVERED=bogus: one warning that names it and the default
    applied, then the default (count) behaviour."""
    r = run([program("caching_alloc"), "1", "4", str(BLOCK), "1"], capacity=DEVICE, timeout=240,
            env_extra=dict(NO_PRUNE, GPUMEMREC_RECOVERED="bogus"))
    check(r.rc == 0, "caching_alloc exited %d" % r.rc)
    t = total(r.stdout)
    warn = [l for l in r.stderr.splitlines() if "GPUMEMREC_RECOVERED=" in l and "bogus" in l]
    check(len(warn) == 1 and "using the default" in warn[0], "expected one warning for GPUMEMREC_RECOVERED=bogus:\n%s"
          % r.stderr[-2000:])
    b = r.only_bundle()
    b.check_well_formed()
    check_outcome(b, "fatal")
    check(b.metadata["recovered_failures"]["count"] == t["recovered"] == exit_count(r.stderr),
          "count: metadata %d, program %d, exit line %d" % (b.metadata["recovered_failures"]["count"],
                                                           t["recovered"], exit_count(r.stderr)))


# ---------------------------------------------------------------- 2. death right after the failure
DEATHS = {  # mode: (exit status as subprocess reports it, what outcome_detail says)
    "exit": (3, "exited"),
    "abort": (-signal.SIGABRT, "signal %d (SIGABRT)" % signal.SIGABRT),
    "segv": (-signal.SIGSEGV, "signal %d (SIGSEGV)" % signal.SIGSEGV),
    "term": (-signal.SIGTERM, "signal %d (SIGTERM)" % signal.SIGTERM),
}


def same_death(argv, expected_rc, env_extra=None):
    """Runs argv without and with the shim: same exit status (or signal) and
    the same output; returns the run with the shim."""
    a = run(argv, preload=False, preexec_fn=no_core, env_extra=NO_LEDGER, timeout=RUN_TIMEOUT_S)
    check(a.rc == expected_rc, "%s without the shim: status %d, expected %d (the test is wrong)\n%s" %
          (argv[1:], a.rc, expected_rc, a.stderr[-800:]))
    b = run(argv, preexec_fn=no_core, env_extra=dict(NO_LEDGER, **(env_extra or {})), timeout=RUN_TIMEOUT_S)
    check(b.rc == a.rc, "%s: status %d with the shim, %d without\n%s" % (argv[1:], b.rc, a.rc, b.stderr[-1500:]))
    check(normalized(a.stdout) == normalized(b.stdout), "%s: output differs with the shim:\n%s\n---\n%s" %
          (argv[1:], a.stdout, b.stdout))
    check("OOM rc=2" in b.stdout, "no out-of-memory failure: " + b.stdout)
    return b


def death_after_oom(mode):
    def case():
        if SANITIZED and mode in ("segv", "abort"):
            return "skip"  # the sanitizer runtime reports SIGSEGV/SIGABRT itself (its own exit status)
        rc, detail = DEATHS[mode]
        # At once, and while the writer is (likely) still writing. The window
        # is 10 minutes: only the death decides, however long a loaded
        # machine (or a sanitizer's deferred signal) makes the 300 ms (it
        # read "no retry within 2000 ms" under TSan with both sanitizer
        # suites running at once).
        for delay in ("0", "300"):
            b = same_death([hard("after_oom"), mode, delay], rc, {"GPUMEMREC_EPISODE_MS": "600000"})
            bundle = b.only_bundle()  # exactly one, complete; no .tmp- left
            bundle.check_well_formed()
            check(bundle.metadata["requested_bytes"] == OOM_SIZE, "not the failure's bundle")
            check_outcome(bundle, "fatal", detail)
        # Dying well after the verdict (GPUMEMREC_EPISODE_MS=500, death at
        # 1.5 s): the bundle was already marked fatal by the timeout, and
        # stays so.
        b = same_death([hard("after_oom"), mode, "1500"], rc, {"GPUMEMREC_EPISODE_MS": "500"})
        bundle = b.only_bundle()
        bundle.check_well_formed()
        check_outcome(bundle, "fatal", "within 500 ms")
    return case


def start(argv, env_extra=None):
    """Popen with run()'s environment (the shim preloaded); returns
    (process, dumpdir)."""
    workdir = tempfile.mkdtemp(prefix="gpumemrec-e2e-")
    dumpdir = os.path.join(workdir, "dumps")
    env = base_env()
    env.update({"LD_PRELOAD": preload_env(), "GPUMEMREC_DIR": dumpdir})
    env.update(env_extra or {})
    p = subprocess.Popen(argv, env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=no_core)
    return p, dumpdir


def death_after_oom_kill():
    """SIGKILL once the bundle is in place, with a verdict window of 10
    minutes: the verdict was never known: outcome "unknown". SIGKILL once
    the stderr line said the verdict, with GPUMEMREC_EPISODE_MS=500: the
    verdict (fatal) was written before it was said. Both wait for what the
    program shows, not for a time (a loaded machine makes the writer slow)."""
    kill_after("bundle", {"GPUMEMREC_EPISODE_MS": "600000"}, "unknown")
    err = kill_after("said", {"GPUMEMREC_EPISODE_MS": "500"}, "fatal")
    lines = [l for l in shim_lines(err) if "bundle: " in l]
    check(len(lines) == 1 and "not recovered (fatal)" in lines[0], "the verdict was not said before the kill:\n%s"
          % err[-1500:])


def published(dumpdir):
    return os.path.isdir(dumpdir) and any(n.startswith("oom_dump_") for n in os.listdir(dumpdir))


# How long the program may take to show what kill_after waits for: only a hang
# reaches it (the writer takes well under a second on a quiet machine).
KILL_AFTER_LIMIT_S = 240


def kill_after(when, env_extra, outcome):
    """Runs after_oom (it fails, then waits for ever) and sends SIGKILL when
    `when` is reached: "bundle" = a bundle is in place (renamed: complete),
    "said" = the shim's stderr line for it came (after its verdict)."""
    p, dumpdir = start([hard("after_oom"), "wait"], dict(NO_LEDGER, **env_extra))
    watchdog = threading.Timer(KILL_AFTER_LIMIT_S, p.kill)
    watchdog.start()
    said = []
    try:
        lines = []
        for line in p.stdout:
            lines.append(line)
            if line.startswith("OOM "):
                break
        check(lines and lines[-1].startswith("OOM rc=2"), "no out-of-memory line: %s" % lines)
        if when == "bundle":
            while p.poll() is None and not published(dumpdir):
                time.sleep(0.01)
        else:
            for line in p.stderr:
                said.append(line)
                if "bundle: " in line:
                    break
        p.kill()
        out, err = p.communicate(timeout=RUN_TIMEOUT_S)
        err = "".join(said) + err
    finally:
        watchdog.cancel()
    check(p.returncode == -signal.SIGKILL, "status %d (expected the SIGKILL)\n%s" % (p.returncode, err[-1500:]))
    names = sorted(os.listdir(dumpdir)) if os.path.isdir(dumpdir) else []
    check(not [n for n in names if n.startswith(".tmp")], "half-written bundle when killed (%s): %s" %
          (when, names))
    bundles = [n for n in names if n.startswith("oom_dump_")]
    check(len(bundles) == 1, "expected one bundle, found %s\n%s" % (names, err[-1500:]))
    b = Bundle(os.path.join(dumpdir, bundles[0]))
    b.check_well_formed()
    check_outcome(b, outcome)
    print("death_after_oom_kill (%s): %s" % (when, [l for l in err.splitlines() if l.startswith("OOMCALL")]))
    return err


def death_after_oom_handlers():
    """The program has its own SIGSEGV/SIGABRT/SIGTERM handler, installed
    before the failure: it still runs, exactly once, and the exit status is
    the program's: its _exit(70), or the signal raised again, as Python's
    faulthandler does (previous disposition put back, raise() inside the
    handler, SA_NODEFER) or with the default action set and the signal
    delivered when the handler returns; the bundle is complete and fatal."""
    for handler in ("exit", "reraise", "default"):
        for mode in ("segv", "abort", "term"):
            if SANITIZED and mode != "term":
                continue  # the sanitizer runtime handles SIGSEGV/SIGABRT first
            sig = {"segv": signal.SIGSEGV, "abort": signal.SIGABRT, "term": signal.SIGTERM}[mode]
            rc = 70 if handler == "exit" else -sig
            b = same_death([hard("after_oom"), mode, "0", handler], rc)
            said = re.findall(r"^HANDLER sig=(\d+) n=(\d+)$", b.stdout, re.M)
            check(said == [(str(int(sig)), "1")], "%s %s: the program's handler said %s (once, n=1 expected)" %
                  (handler, mode, said))
            bundle = b.only_bundle()
            bundle.check_well_formed()
            # The program's handler runs first (it may recover); when it
            # ends the process with _exit() the verdict can name that exit
            # rather than the signal.
            check_outcome(bundle, "fatal")
            detail = bundle.metadata["outcome_detail"]
            check(DEATHS[mode][1] in detail or (handler == "exit" and "exited" in detail),
                  "%s %s: outcome_detail %r names neither %r nor the exit" % (handler, mode, detail, DEATHS[mode][1]))
            print("death_after_oom_handlers %s %s: %s" % (handler, mode, detail))


# ---------------------------------------------------------------- 3. fork right after the failure
# A forked child must not hang on the parent's writer (it does not exist in
# the child); exit waits at most 10 s for a writer, so a child that takes 9 s
# to do nothing waited for one. A hang detector, not a speed figure.
CHILD_HANG_MS = 9000


def fork_after_oom():
    """fork() right after the failure (and 200 ms later), while the parent's
    writer works: a child that _exit()s at once, one that exit()s (its atexit
    handlers run), one that fails itself. One bundle per process that
    failed, each complete, none half-written, nobody hangs."""
    modes = ["fork_exit", "fork_exit_normal", "fork_oom"]
    if SANITIZED:
        # The sanitizers' own allocators are not fork-safe in GCC 12: TSan
        # does not lock its allocator around fork() (llvm/llvm-project#96600
        # added that in 2024), and GCC 12's libasan has no fork interceptor
        # at all (`nm -D libasan.so`: vfork only). A child that allocates
        # while the parent's writer was inside malloc deadlocks in the
        # sanitizer's allocator, not in ours (glibc's malloc is fork-safe:
        # malloc/arena.c, __malloc_fork_lock_parent). Seen in CI as a child
        # taking 12 s (TSan) and 22 s (ASan) to exit; only under sanitizers.
        modes.remove("fork_oom")
        print("fork_after_oom: fork_oom left out under a sanitizer (its allocator is not fork-safe)")
    for mode in modes:
        for delay in ("0", "200"):
            b = same_death([hard("after_oom"), mode, delay], 0)
            check("CHILD status=0" in b.stdout, "%s: child status: %s" % (mode, b.stdout))
            m = re.search(r"CHILDTIME ms=(\d+) pid=(\d+)", b.stderr)
            check(m, "no CHILDTIME on stderr: " + b.stderr[-1000:])
            ms, child = int(m.group(1)), int(m.group(2))
            check(ms < CHILD_HANG_MS, "%s: the child took %d ms to exit: it waited for a writer" % (mode, ms))
            by_pid = {}
            for p in b.bundles():  # no .tmp- left
                bd = Bundle(p)
                by_pid.setdefault(bd.manifest["pid"], []).append(bd)
            parent = [pid for pid in by_pid if pid != child]
            check(len(parent) == 1 and len(by_pid[parent[0]]) == 1, "%s %s: parent bundles %s" %
                  (mode, delay, {k: [x.name for x in v] for k, v in by_pid.items()}))
            pb = by_pid[parent[0]][0]
            pb.check_well_formed()
            check(pb.metadata["requested_bytes"] == OOM_SIZE, "%s: the parent's bundle is not its failure's" % mode)
            check_outcome(pb, "fatal", "exited")
            kids = by_pid.get(child, [])
            if mode == "fork_oom":
                check(len(kids) == 1, "%s %s: the child wrote %d bundles" % (mode, delay, len(kids)))
                kids[0].check_well_formed()
                check(kids[0].metadata["requested_bytes"] == CHILD_OOM_SIZE,
                      "the child's bundle is not its own failure's")
                check_outcome(kids[0], "fatal", "exited")
            else:
                check(not kids, "%s %s: a child that never failed wrote %s (the parent's pending bundle?)" %
                      (mode, delay, [k.name for k in kids]))


# ---------------------------------------------------------------- 4. exec right after the failure
def oom_then_exec():
    """exec("true") right after the failure (0 ms) and later (while the
    writer waits for the verdict or writes): exec ends every thread of the
    old image, the writer too, and the new image knows nothing of the
    bundle. So there is no bundle at all (exec before the writer started
    the directory), a .tmp- directory, or a complete bundle (outcome
    unknown: the verdict never came) - never a half-written oom_dump_*; no
    hang; the exit status is true's. A leftover temporary directory is
    removed by the prune of a later dump in the same directory once it is
    stale (shim/dump/place/bundle_dir.cpp is_stale_tmp: this host, its pid gone,
    untouched for a minute; the test ages it instead of waiting). Delays
    around the writer's start are tried until one leaves a temporary
    directory, so that the removal is exercised."""
    seen = {}
    tmp_delays = ["300", "250", "350", "200", "400", "275", "325", "450"]
    for delay in ["0", "1000"] + tmp_delays:
        if delay in tmp_delays and "tmp" in seen.values():
            break
        b = same_death([hard("after_oom"), "exec", delay], 0)
        names = sorted(os.listdir(b.dumpdir)) if os.path.isdir(b.dumpdir) else []
        tmps = [n for n in names if n.startswith(".tmp-")]
        done = [n for n in names if n.startswith("oom_dump_")]
        check(len(tmps) + len(done) <= 1, "more than one bundle for one failure: %s" % names)
        for n in done:
            bd = Bundle(os.path.join(b.dumpdir, n))
            bd.check_well_formed()
            check_outcome(bd, "unknown")
        seen[delay] = "complete" if done else "tmp" if tmps else "nothing"
        if tmps:
            old = time.time() - 120
            os.utime(os.path.join(b.dumpdir, tmps[0]), (old, old))
            later = run([program("rt_linked"), "cudaMalloc", str(16 << 20)], env_extra={"GPUMEMREC_DIR": b.dumpdir})
            check(later.rc == 0, "the later program exited %d" % later.rc)
            left = sorted(os.listdir(b.dumpdir))
            check(tmps[0] not in left, "the stale %s survived a later dump's prune: %s" % (tmps[0], left))
            check(len([n for n in left if n.startswith("oom_dump_")]) == 1, "the later dump: %s" % left)
    print("oom_then_exec: what exec after <delay> ms left: %s" % seen)
    if "tmp" not in seen.values():
        print("note: no delay left a temporary directory; its removal was not exercised")


# ---------------------------------------------------------------- 5. the exit wait
def exit_wait_off(mode):
    """GPUMEMREC_EXIT_WAIT_S=0: the program ends (exit, or a fatal SIGTERM)
    while its bundle is being written (the verdict window is 10 minutes, so
    the writer's job is still open at the end, whatever the machine's load):
    nothing waits, one stderr line says what was lost, no temporary
    directory is left, and the program ends as it would without the shim."""
    def case():
        rc, _ = DEATHS[mode]
        b = same_death([hard("after_oom"), mode], rc, {"GPUMEMREC_EXIT_WAIT_S": "0",
                                                        "GPUMEMREC_EPISODE_MS": "600000"})
        lines = [l for l in b.stderr.splitlines() if "gave up waiting" in l]
        when = "at exit" if mode == "exit" else "at a fatal signal"
        check(len(lines) == 1 and when in lines[0] and "GPUMEMREC_EXIT_WAIT_S=0" in lines[0],
              "expected one line saying the wait was given up %s:\n%s" % (when, b.stderr[-1500:]))
        left = os.listdir(b.dumpdir) if os.path.isdir(b.dumpdir) else []
        check(not [n for n in left if n.startswith(".tmp")], "temporary directory left: %s" % left)
        for n in left:  # published before the end: complete, its verdict never written
            bd = Bundle(os.path.join(b.dumpdir, n))
            bd.check_well_formed()
            check_outcome(bd, "unknown")
        print("exit_wait_off %s: %s; left %s" % (mode, lines[0], left))
    return case


BIG_LIVE = 2100000


def exit_big_live_set():
    """2.1M live allocations, then an out-of-memory failure, then exit(3) at
    once: exit waits while the writer makes progress (GPUMEMREC_EXIT_WAIT_S,
    60 s), so the bundle is complete, fatal, with every allocation listed;
    no temporary directory, nothing said about giving up."""
    b = run([hard("after_oom"), "exit", "0", "none", str(BIG_LIVE)], preexec_fn=no_core, capacity=64 << 30,
            env_extra=NO_LEDGER, timeout=400)
    check(b.rc == 3, "status %d\n%s" % (b.rc, b.stderr[-1500:]))
    check("gave up" not in b.stderr, "the exit wait gave up:\n%s" % b.stderr[-1500:])
    bundle = b.only_bundle()
    bundle.check_well_formed()
    check_outcome(bundle, "fatal", "exited")
    live = bundle.metadata["live_allocations"]
    check(live >= BIG_LIVE, "%d live allocations in the bundle, the program made %d" % (live, BIG_LIVE))


def term_during_exit_dump():
    """SIGTERM while the exit bundle (GPUMEMREC_DUMP_AT_EXIT=1) is being
    written by the exiting thread itself, as torchrun sends it to the ranks
    that are still ending when one rank fails (found by
    simulate.torchrun_fsdp2_ws4: empty .tmp- directories left). The signal
    waits for the bundle (blocked on the writing thread, delivered when it is
    done), so the program still dies of it, as it would have, and the exit
    bundle is complete. A bigger live set if the directory was not caught."""
    for live in ("20000", "60000", "150000"):
        p, dumpdir = start([hard("after_oom"), "exit", "0", "none", live], dict(NO_LEDGER, GPUMEMREC_DUMP_AT_EXIT="1"))
        watchdog = threading.Timer(KILL_AFTER_LIMIT_S, p.kill)
        watchdog.start()
        try:
            sent = False
            while p.poll() is None and not sent:
                names = os.listdir(dumpdir) if os.path.isdir(dumpdir) else []
                if any(n.startswith("oom_dump_") for n in names) and any(n.startswith(".tmp") for n in names):
                    p.send_signal(signal.SIGTERM)  # the exit bundle's directory is there: it is being written
                    sent = True
                time.sleep(0.001)
            out, err = p.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            watchdog.cancel()
        if sent:
            break
    else:
        raise Failure("the exit bundle was never caught being written: rc %d\n%s" % (p.returncode, err[-1500:]))
    check(p.returncode == -signal.SIGTERM, "status %d (expected the SIGTERM)\n%s" % (p.returncode, err[-1500:]))
    names = sorted(os.listdir(dumpdir))
    check(not [n for n in names if n.startswith(".tmp")], "temporary directory left: %s" % names)
    bundles = {Bundle(os.path.join(dumpdir, n)).manifest["reason"]: n for n in names}
    check(sorted(bundles) == ["exit", "oom"], "expected an out-of-memory and an exit bundle: %s" % names)
    if "exit" in bundles:
        Bundle(os.path.join(dumpdir, bundles["exit"])).check_well_formed()
    print("term_during_exit_dump: caught with %s live allocations" % live)


CASES = {
    "term_during_exit_dump": term_during_exit_dump,
    "recover_minute": recover_minute, "recover_threads": recover_threads, "recover_keep": recover_keep,
    "recover_bogus": recover_bogus, "burst_then_fatal": burst_then_fatal,
    "burst_keep_retention": burst_keep_retention,
    "death_after_oom_exit": death_after_oom("exit"), "death_after_oom_abort": death_after_oom("abort"),
    "death_after_oom_segv": death_after_oom("segv"), "death_after_oom_term": death_after_oom("term"),
    "death_after_oom_kill": death_after_oom_kill, "death_after_oom_handlers": death_after_oom_handlers,
    "fork_after_oom": fork_after_oom, "oom_then_exec": oom_then_exec,
    "exit_wait_off_exit": exit_wait_off("exit"), "exit_wait_off_term": exit_wait_off("term"),
    "exit_big_live_set": exit_big_live_set,
}

if __name__ == "__main__":
    sys.exit(main(CASES))
