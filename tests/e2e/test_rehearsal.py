#!/usr/bin/env python3
"""OOM rehearsal (GPUMEMREC_LIMIT, GPUMEMREC_FAIL_AFTER) and "who else is on
the GPU" (NVML), on the fake drivers."""
import sys

from gm_e2e import check, main, normalized, program, run

CHUNK = 16 << 20
LIMIT = 96 << 20


def program_view(out):
    # What the program saw, minus the device's own free/total figures (the
    # real card is bigger than the rehearsed limit).
    return [l for l in normalized(out).splitlines() if not l.startswith(("MEMINFO", "DEVICE"))]


def limit_like_real(prog, api, backend, runtime_error_line=None):
    def case():
        real = run([program(prog), api, str(CHUNK)], preload=False, capacity=LIMIT)
        rehearsed = run([program(prog), api, str(CHUNK)], capacity=256 << 20,
                        env_extra={"GPUMEMREC_LIMIT": "0:96MiB"})
        check(real.rc == rehearsed.rc, "exit code %d on a real small card, %d under the limit" % (real.rc, rehearsed.rc))
        check(program_view(real.stdout) == program_view(rehearsed.stdout),
              "the program saw something else under GPUMEMREC_LIMIT:\n--- real\n%s\n--- limit\n%s" %
              (real.stdout[-1500:], rehearsed.stdout[-1500:]))
        b = rehearsed.only_bundle()
        b.check_well_formed()
        md = b.metadata
        check(md["reason"] == "limit" and b.manifest["reason"] == "limit", "reason %s" % md["reason"])
        check(md["api"] == api and md["error_code"] == 2, "api/error %s/%s" % (md["api"], md["error_code"]))
        check(md["backend"] == backend, "backend %s" % md["backend"])
        check("GPUMEMREC_LIMIT" in md["context"] and "GPUMEMREC_LIMIT" in b.summary(), "limit not named")
        # "What to try" (common/advice.h): the limit is below the card's 256 MiB.
        check("What to try:" in b.summary() and "unset GPUMEMREC_LIMIT for the real card" in b.summary() and
              "caps device 0 at 96.00 MiB of 256.00 MiB" in b.summary(), "no advice on the limit:\n" + b.summary())
        check(md["live_bytes"] + md["requested_bytes"] > LIMIT, "refused below the limit")
        # The driver never saw the refused request: its ledger has what is live.
        check(sum(a["size"] for a in rehearsed.ledger()["allocations"]) == md["live_bytes"], "ledger mismatch")
    return case


def fail_after():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], env_extra={"GPUMEMREC_FAIL_AFTER": "3"})
    lines = r.stdout.splitlines()
    first_oom = next(i for i, l in enumerate(lines) if l.startswith("OOM "))
    allocs_before = [l for l in lines[:first_oom] if l.startswith("ALLOC ")]
    check(len(allocs_before) == 2, "FAIL_AFTER=3 let %d allocations through" % len(allocs_before))
    b = r.only_bundle()
    check(b.metadata["reason"] == "fail_after", "reason %s" % b.metadata["reason"])
    check(any("LASTERROR rc=2" in l for l in lines), "the runtime's last error is not the OOM")


def nvml_other_processes():
    r = run([program("rt_linked"), "cudaMalloc", str(CHUNK)],
            env_extra={"FAKEGPU_NVML_PROCS": "4242:47244640256:python,5151:1048576:worker"})
    b = r.only_bundle()
    md = b.metadata
    procs = md.get("gpu_processes")
    check(isinstance(procs, list), "no gpu_processes in metadata: %s" % md.get("gpu_processes_note"))
    by_pid = {p["pid"]: p for p in procs}
    check(4242 in by_pid and by_pid[4242]["used_bytes"] == 47244640256 and by_pid[4242]["name"] == "python",
          "pid 4242 not reported right: %s" % procs)
    check(5151 in by_pid, "second process missing")
    check(procs[0]["pid"] == 4242, "not largest first")
    s = b.summary()
    check("pid 4242 (python) holds 44.00 GiB" in s, "summary does not name the other process:\n" + s)
    # "What to try" names the process over 1 GiB, not the 1 MiB one.
    check("stop or move pid 4242" in s and "pid 5151" not in s.split("What to try:")[1].split("\n\n")[0],
          "advice on other processes:\n" + s)


def nvml_absent():
    r = run([program("hip_linked"), "hipMalloc", str(CHUNK)])
    md = r.only_bundle().metadata
    check(md.get("gpu_processes") is None, "HIP bundle claims NVML data")


CASES = {
    "limit_runtime": limit_like_real("rt_linked", "cudaMalloc", "cuda"),
    "limit_driver": limit_like_real("drv_linked", "cuMemAlloc_v2", "cuda"),
    "limit_hip": limit_like_real("hip_linked", "hipMalloc", "rocm"),
    "fail_after": fail_after,
    "nvml_other_processes": nvml_other_processes,
    "nvml_absent": nvml_absent,
}

if __name__ == "__main__":
    sys.exit(main(CASES))
