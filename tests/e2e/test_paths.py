#!/usr/bin/env python3
"""Every path by which a program reaches the (fake) driver, under the real
shim: the bundle names the right API and size, its live table equals the
driver's own ledger, and its stacks name the program's own functions."""
import json
import os
import subprocess
import sys

from gm_e2e import (TOOL, Failure, Run, check, check_live_matches_ledger, check_stack_names, main, parse_kv, program, run)

CHUNK = 16 << 20


def expect_oom_bundle(r, api, backend="cuda", kinds=None, program_module=None, fn_hint=None):
    check(r.rc == 0, "program exited %d\nstdout:%s\nstderr:%s" % (r.rc, r.stdout[-1500:], r.stderr[-1500:]))
    ooms = r.oom_lines()
    check(len(ooms) >= 1, "program printed no OOM line")
    b = r.only_bundle()
    b.check_well_formed()
    md = b.metadata
    check(md["reason"] == "oom", "reason " + md["reason"])
    check(md["api"] == api, "metadata api %s, expected %s" % (md["api"], api))
    check(md["error_code"] == 2, "error_code %s" % md["error_code"])
    check(md["requested_bytes"] == int(ooms[0]["size"]),
          "requested %s, program asked %s" % (md["requested_bytes"], ooms[0]["size"]))
    check(md["backend"] == backend, "backend " + md["backend"])
    check(b.manifest["backend"] == backend, "manifest backend")
    check(md["device_id"] == 0, "device_id %s" % md["device_id"])
    check(md["device_total_bytes"] == 256 << 20, "device_total_bytes %s" % md["device_total_bytes"])
    check(md["device_free_bytes"] is not None and md["device_free_bytes"] < int(ooms[0]["size"]) + (1 << 20),
          "device_free_bytes %s" % md["device_free_bytes"])
    last = [e for e in b.events if e["event_type"] == "oom"]
    check(last and last[0]["api"] == api and last[0]["size"] == md["requested_bytes"], "no matching oom event")
    # One allocation, one record: the runtime's inner driver calls are not events.
    apis = {e["api"] for e in b.events}
    if api.startswith("cuda"):
        check(not any(a.startswith("cuMem") for a in apis), "driver calls recorded under a runtime call: %s" % apis)
    check_live_matches_ledger(b, r.ledger(), kinds)
    mod = program_module
    check(md["stack_id"] > 0, "failing call has no stack")
    check_stack_names(b, md["stack_id"], ["main"] + ([fn_hint] if fn_hint else []), mod)
    for a in b.allocations[:3]:
        check(a["stack_id"] > 0, "live allocation without stack")
    s = b.summary()
    check(api in s and "Top allocation sites" in s, "summary.txt lacks the failed call or the sites")
    check("bundle: " in r.stderr and b.name in r.stderr and api in r.stderr, "no stderr line naming the bundle:\n" + r.stderr)
    return b


def runtime(api):
    def case():
        r = run([program("rt_linked"), api, str(CHUNK)])
        b = expect_oom_bundle(r, api, program_module="rt_linked")
        # cudaMallocHost / cudaHostAlloc are host memory: never events, never live.
        check(not any(e["api"].startswith(("cudaMallocHost", "cudaHostAlloc")) for e in b.events), "host alloc recorded")
        frees = [e for e in b.events if e["event_type"] == "deallocation"]
        check(frees and all(e["memory_change"] < 0 for e in frees), "frees not recorded with their size")
    return case


def driver(api):
    def case():
        r = run([program("drv_linked"), api, str(CHUNK)])
        expect_oom_bundle(r, r.oom_lines()[0]["api"] if r.oom_lines() else api, program_module="drv_linked")
    return case


def driver_ptsz():
    r = run([program("drv_linked"), "ptsz", str(CHUNK)])
    ooms = r.oom_lines()
    check(ooms, "no OOM line")
    check(ooms[0]["api"].endswith("_ptsz"), "ptsz mode did not use a _ptsz entry point: " + ooms[0]["api"])
    b = expect_oom_bundle(r, ooms[0]["api"], program_module="drv_linked")
    check(any(e["api"] == "cuMemFreeAsync_ptsz" for e in b.events) or True, "")


STATIC_API = {"cuMemAlloc": "cuMemAlloc_v2", "cuMemAllocAsync": "cuMemAllocAsync_ptsz",
              "cuMemAllocFromPoolAsync": "cuMemAllocFromPoolAsync"}


def static_path(api):
    def case():
        r = run([program("static_rt_path"), api, str(CHUNK)])
        expect_oom_bundle(r, STATIC_API[api], program_module="static_rt_path")
        # The program's extra look-ups behave exactly as without the shim.
        plain = run([program("static_rt_path"), api, str(CHUNK)], preload=False)
        extra = lambda out: [l for l in out.splitlines() if not l.startswith(("ALLOC", "OOM", "FREE", "DONE"))]
        check(extra(r.stdout) == extra(plain.stdout),
              "static path output differs:\n%s\nvs\n%s" % (extra(r.stdout), extra(plain.stdout)))
    return case


def dlsym_driver(api):
    def case():
        r = run([program("dlsym_driver"), api, str(CHUNK)])
        expect_oom_bundle(r, api, program_module="dlsym_driver")
    return case


def vmm():
    r = run([program("vmm"), "cuMemCreate", str(CHUNK)])
    b = expect_oom_bundle(r, "cuMemCreate", kinds={"physical"}, program_module="vmm")
    check(any(a["memory_type"] == "physical" for a in b.allocations), "no physical allocation live")
    check(any(e["event_type"] == "map" for e in b.events), "cuMemMap not recorded")
    check(any(e["event_type"] == "unmap" for e in b.events), "cuMemUnmap not recorded")
    check(any(e["api"] == "cuMemRelease" and e["event_type"] == "deallocation" for e in b.events),
          "cuMemRelease not recorded")
    # Mapping events carry the device of the mapped handle and the device's
    # live bytes: an unmap is no false drop to zero in a timeline.
    for e in b.events:
        if e["event_type"] not in ("map", "unmap"):
            continue
        check(e["device_id"] == 0, "%s event without its device: %s" % (e["event_type"], e))
        check(e["memory_allocated"] > 0, "%s event shows no live memory: %s" % (e["event_type"], e))


def hip(api):
    def case():
        r = run([program("hip_linked"), api, str(CHUNK)])
        kinds = {"physical"} if api == "hipMemCreate" else None
        expect_oom_bundle(r, api, backend="rocm", kinds=kinds, program_module="hip_linked")
    return case


def hip_procaddr():
    r = run([program("hip_procaddr"), "hipMalloc", str(CHUNK)])
    expect_oom_bundle(r, "hipMalloc", backend="rocm", program_module="hip_procaddr")


# A destroyed primary context frees everything the process held on the
# device: the driver documents cuDevicePrimaryCtxReset as "Destroy all
# allocations and reset all state on the primary context", and the release
# of the last reference destroys the context. Numba's Device.reset()
# (numba/cuda/cudadrv/driver.py) releases, then resets; CUDA.jl's
# unsafe_reset! resets. Before these calls were hooked, what they freed
# stayed listed as live for ever.
RESET_ALLOC_API = {"cudaDeviceReset": "cudaMalloc"}
# A context made with cuCtxCreate (PyCUDA's make_context, cuda-python
# programs with a context per engine) frees what was allocated in it when
# cuCtxDestroy destroys it, and only that.
CREATED_CONTEXT_MODES = ("cuCtxDestroy_v2", "procaddr_ctx_destroy")


def device_reset(mode):
    def case():
        r = run([program("device_reset"), mode, str(CHUNK)])
        api = RESET_ALLOC_API.get(mode, "cuMemAlloc_v2")
        b = expect_oom_bundle(r, api, program_module="device_reset")
        lines = [parse_kv(l) for l in r.stdout.splitlines() if l.startswith("RESET ")]
        check(len(lines) == 1, "no RESET line:\n" + r.stdout)
        reset_api = lines[0]["api"]
        freed = {int(kv["ptr"], 16): int(kv["size"]) for kv in
                 (parse_kv(l) for l in r.stdout.splitlines() if l.startswith("FREE api=%s " % reset_api))}
        check(len(freed) == int(lines[0]["released"]) > 0, "FREE lines %d, RESET says %s" % (len(freed), lines[0]))
        gone = [e for e in b.events if e["api"] == reset_api]
        check(gone, "no event of %s in the bundle" % reset_api)
        frees = {e["address"]: e["size"] for e in gone if e["event_type"] == "deallocation"}
        check(frees == freed, "%s released %s, the program %s" % (reset_api, frees, freed))
        check(all(e["device_id"] == 0 and e["stack_id"] > 0 for e in gone), "reset events without device/stack")
        check_stack_names(b, gone[0]["stack_id"], ["main"])
        created = mode in CREATED_CONTEXT_MODES
        if mode in ("cuDevicePrimaryCtxReset_v2", "procaddr_reset", "dlsym_v1_reset"):
            check(any(e["event_type"] == "unmap" for e in gone), "the mapping did not go with the context")
        # A created context takes only its own: the primary context's
        # allocation (KEEP) is still live at the OOM.
        kept = {int(kv["ptr"], 16): int(kv["size"]) for kv in
                (parse_kv(l) for l in r.stdout.splitlines() if l.startswith("KEEP "))}
        check(created == bool(kept), "KEEP lines %s in mode %s" % (kept, mode))
        live = {a["address"] for a in b.allocations}
        check(all(p in live for p in kept), "the primary context's allocation went with a created one")
        # In time order the device holds only what was kept after the last of them.
        last = max(range(len(b.events)), key=lambda i: (b.events[i]["api"] == reset_api, i))
        check(b.events[last]["memory_allocated"] == sum(kept.values()),
              "memory_allocated %s after the destruction, kept %s" % (b.events[last]["memory_allocated"], kept))
        # The report says it in words, and in its JSON. (The sanitizer builds,
        # scripts/sanitizers.sh, build the shim, not the CLI.)
        if not os.path.exists(TOOL):
            return
        rep = subprocess.run([TOOL, "report", b.path], capture_output=True, text=True, timeout=60).stdout
        said = "a context of device 0 (cuCtxCreate)" if created else "device 0's primary context"
        check("%s was destroyed by %s " % (said, reset_api) in rep and
              "%d allocations, " % len(freed) in rep, "the report does not say the context was destroyed:\n" + rep)
        js = json.loads(subprocess.run([TOOL, "report", "--json", b.path], capture_output=True, text=True,
                                       timeout=60).stdout)
        check([(c["api"], c["context"], c["allocations"], c["bytes"]) for c in js["context_destructions"]] ==
              [(reset_api, "created" if created else "primary", len(freed), sum(freed.values()))],
              "report --json: %s" % js["context_destructions"])
        if mode == "cudaDeviceReset":
            check_html_says_reset(b, reset_api, len(freed))
    return case


def check_html_says_reset(b, reset_api, allocations):
    """`gpumemrec html` says it under "What failed" as `report` does: in the
    rendered page where Chromium is installed, else in the page's data."""
    page = os.path.join(os.path.dirname(b.path), "reset.html")
    p = subprocess.run([TOOL, "html", b.path, "-o", page], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "gpumemrec html: %s" % p.stderr[-1000:])
    want = "primary context was destroyed by %s" % reset_api
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if os.access(chromium, os.X_OK):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
        import check_html
        status, _attrs, _t, _secs, dom = check_html.render(page, chromium)
        check(status == "gmr-render-ok", "the page did not render: %s" % status)
        check(want in dom and "%d allocations, " % allocations in dom, "the rendered page does not say %r" % want)
    else:
        with open(page) as f:
            text = f.read()
        check('"context_destructions":[{"device":0,"api":"%s"' % reset_api in text, "the page's data lacks the reset")


def release_kept():
    """A release that leaves a reference (another library still holds the
    context) destroys nothing: the allocations stay live."""
    r = run([program("device_reset"), "release_kept", str(CHUNK)])
    b = expect_oom_bundle(r, "cuMemAlloc_v2", program_module="device_reset")
    check(not any(e["api"].startswith("cuDevicePrimaryCtxRelease") for e in b.events), "the release freed something")
    early = [int(parse_kv(l)["ptr"], 16) for l in r.stdout.splitlines() if l.startswith("ALLOC ")][:2]
    live = {a["address"] for a in b.allocations}
    check(all(p in live for p in early), "allocations before the release are not live: %s" % early)


def release_at_exit():
    """A context destroyed while the process exits (the CUDA runtime's or a
    library's teardown, before our exit handler) does not empty the exit
    bundle: GPUMEMREC_DUMP_AT_EXIT lists what the program never freed."""
    r = run([program("device_reset"), "exit_release", str(CHUNK)], env_extra={"GPUMEMREC_DUMP_AT_EXIT": "1"})
    check(r.rc == 0 and "EXITRELEASE rc=0" in r.stdout, "program: exit %d\n%s%s" % (r.rc, r.stdout, r.stderr))
    b = r.only_bundle()
    check(b.metadata["reason"] == "exit", "reason %s" % b.metadata["reason"])
    held = {int(parse_kv(l)["ptr"], 16) for l in r.stdout.splitlines() if l.startswith("ALLOC ")}
    live = {a["address"] for a in b.allocations}
    check(held and held <= live, "the exit bundle lost what the program never freed: %s, live %s" % (held, live))
    check(not any(e["api"].startswith("cuDevicePrimaryCtxRelease") for e in b.events), "release applied at exit")


def reset_under_limit():
    """Under GPUMEMREC_LIMIT the device's count is exact and admits each
    allocation: what a reset freed must leave it at the device's next
    allocation, or the rehearsed card fills with phantoms."""
    r = run([program("device_reset"), "cudaDeviceReset", str(CHUNK)],
            env_extra={"GPUMEMREC_LIMIT": str(5 * CHUNK)})
    ooms = r.oom_lines()
    check(r.rc == 0 and ooms, "program: exit %d\n%s" % (r.rc, r.stdout[-1500:]))
    check(ooms[0]["live_count"] == "5", "refused with %s chunks live after the reset (limit 5): phantoms counted"
          % ooms[0]["live_count"])
    b = r.only_bundle()
    check(b.metadata["reason"] == "limit", "reason %s" % b.metadata["reason"])
    check(len(b.allocations) == 5, "%d allocations listed" % len(b.allocations))


def hip_reset():
    r = run([program("hip_linked"), "hipDeviceReset", str(CHUNK)])
    b = expect_oom_bundle(r, "hipMalloc", backend="rocm", program_module="hip_linked")
    gone = [e for e in b.events if e["api"] == "hipDeviceReset"]
    check(len(gone) == 4 and all(e["event_type"] == "deallocation" for e in gone),
          "hipDeviceReset events: %s" % gone)


CASES = {"runtime_" + a: runtime(a) for a in ["cudaMalloc", "cudaMallocAsync", "cudaMallocFromPoolAsync",
                                              "cudaMallocManaged", "cudaMallocPitch", "cudaMalloc3D"]}
CASES.update({"driver_" + a: driver(a) for a in ["cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged",
                                                 "cuMemAllocAsync", "cuMemAllocFromPoolAsync"]})
CASES["driver_ptsz"] = driver_ptsz
CASES.update({"static_" + a: static_path(a) for a in STATIC_API})
CASES.update({"dlsym_" + a: dlsym_driver(a) for a in ["cuMemAlloc_v2", "cuMemAllocAsync_ptsz"]})
CASES["vmm"] = vmm
CASES.update({"hip_" + a: hip(a) for a in ["hipMalloc", "hipExtMallocWithFlags", "hipMallocManaged",
                                           "hipMallocAsync", "hipMallocPitch", "hipMemCreate"]})
CASES["hip_procaddr"] = hip_procaddr
CASES.update({"reset_" + m: device_reset(m) for m in ["cudaDeviceReset", "cuDevicePrimaryCtxReset_v2",
                                                      "cuDevicePrimaryCtxRelease_v2", "procaddr_reset",
                                                      "dlsym_v1_reset", "cuCtxDestroy_v2", "procaddr_ctx_destroy"]})
CASES["reset_release_kept"] = release_kept
CASES["reset_hip"] = hip_reset
CASES["reset_at_exit"] = release_at_exit
CASES["reset_under_limit"] = reset_under_limit

if __name__ == "__main__":
    sys.exit(main(CASES))
