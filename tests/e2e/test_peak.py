#!/usr/bin/env python3
"""peak.json end to end (docs/bundle-format.md): the exact high-water mark of
a program that allocates up to a known peak, frees and allocates less, in its
exit bundle; the same after the ring wrapped since the peak (the keeper kept
up: still exact); a burst a tiny ring cannot follow (exact: false, never a
wrong exact figure); the keeper going on after that gap (the peak since it,
exact); many threads at once."""
from gm_e2e import check, main, program, run

MiB = 1 << 20


def peak_bundle(argv, env_extra=None):
    env = {"GPUMEMREC_DUMP_AT_EXIT": "1"}
    env.update(env_extra or {})
    r = run(argv, env_extra=env, capacity=1 << 30)
    check(r.rc == 0, "exit %d\n%s" % (r.rc, r.stderr[-2000:]))
    b = r.only_bundle()
    check(b.manifest["reason"] == "exit", "reason " + b.manifest["reason"])
    b.check_well_formed()
    p = b.json("peak.json")
    check(p["schema"] == 1, "schema %r" % p["schema"])
    devs = {d["device"]: d for d in p["devices"]}
    check(list(devs) == [0], "devices %s" % list(devs))
    return b, devs[0]


def site_functions(b, site):
    return b.functions(site["stack_id"])


def check_steps_peak(b, d):
    check(d["peak_bytes"] == 96 * MiB, "peak %d" % d["peak_bytes"])
    check(d["live_now_bytes"] == 48 * MiB, "live now %d" % d["live_now_bytes"])
    check([(s["bytes"], s["count"]) for s in d["sites"]] == [(64 * MiB, 1), (32 * MiB, 1)],
          "sites %s" % d["sites"])
    check("alloc_peak_a" in site_functions(b, d["sites"][0]), "first site %s" % site_functions(b, d["sites"][0]))
    check("alloc_peak_b" in site_functions(b, d["sites"][1]), "second site %s" % site_functions(b, d["sites"][1]))
    # The peak is the allocation of B: its seq and time are an event's.
    check(d["peak_seq"] > 0 and d["peak_time_ns"] > 0, "peak moment %s" % d)


def peak_steps():
    b, d = peak_bundle([program("peak_alloc"), "steps", "0"])
    check(d["exact"] is True and d["why_inexact"] is None, "not exact: %s" % d["why_inexact"])
    check_steps_peak(b, d)
    ev = [e for e in b.events if e["seq"] == d["peak_seq"]]
    check(len(ev) == 1 and ev[0]["memory_allocated"] == 96 * MiB, "peak event %s" % ev)


def peak_wrapped():
    # 20,000 pairs through a 4096-event ring (ten laps), paced: the peak's events are
    # long gone from the window, the keeper kept them.
    b, d = peak_bundle([program("peak_alloc"), "steps", "20000"], {"GPUMEMREC_RING_EVENTS": "4096"})
    check(all(e["seq"] != d["peak_seq"] for e in b.events), "the peak is still in the window")
    check(d["exact"] is True, "not exact: %s" % d["why_inexact"])
    check(d["events_replayed"] == 3 + 1 + 40000, "replayed %d" % d["events_replayed"])
    check_steps_peak(b, d)


def peak_burst():
    # 200,000 pairs at full speed through a 16-event ring: the keeper cannot
    # follow. Whatever it says, a figure it calls exact is the true one.
    b, d = peak_bundle([program("peak_alloc"), "burst", "200000"], {"GPUMEMREC_RING_EVENTS": "16"})
    if d["exact"]:
        check_steps_peak(b, d)
    else:
        check(d["why_inexact"], "inexact without a reason")
        check(d["peak_bytes"] <= 96 * MiB, "a peak above the true one: %d" % d["peak_bytes"])
    check(d["live_now_bytes"] == 48 * MiB, "live now %d" % d["live_now_bytes"])
    check(not d["exact"], "a 16-event ring followed 400,000 events: the test no longer tests anything")


def peak_gap():
    # The keeper loses the burst (a 16-event ring), goes on, and says the peak
    # since the gap exactly: 160 MiB (B and D), where the run's own figure is
    # only a lower bound (the burst is not known).
    b, d = peak_bundle([program("peak_alloc"), "gap", "200000"], {"GPUMEMREC_RING_EVENTS": "16"})
    check(d["exact"] is False and d["why_inexact"], "exact after a gap: %s" % d)
    a = d["after_gap"]
    check(a is not None and a["exact"] is True, "after_gap %s" % a)
    check(a["gaps"] >= 1 and a["lost_events"] > 0 and a["from_time_ns"] > 0, "after_gap %s" % a)
    check(a["peak_bytes"] == 160 * MiB, "peak since the gap %d" % a["peak_bytes"])
    check([(s["bytes"], s["count"]) for s in a["sites"]] == [(128 * MiB, 1), (32 * MiB, 1)], "sites %s" % a["sites"])
    check("alloc_after_gap" in site_functions(b, a["sites"][0]), "first site %s" % site_functions(b, a["sites"][0]))
    check("alloc_peak_b" in site_functions(b, a["sites"][1]), "second site %s" % site_functions(b, a["sites"][1]))
    check(a["peak_until_ns"] is not None and a["peak_until_ns"] > a["peak_time_ns"] > a["from_time_ns"],
          "the stretch %s" % a)
    check(d["peak_bytes"] == 160 * MiB and d["sites"] == a["sites"], "the run's figure %s" % d)
    check(d["live_now_bytes"] == 48 * MiB, "live now %d" % d["live_now_bytes"])
    check(sum(l["bytes"] for l in a["by_library"]) == 160 * MiB, "by_library %s" % a["by_library"])


def peak_threads():
    n = 32
    b, d = peak_bundle([program("peak_alloc"), "threads", str(n), str(MiB)])
    check(d["exact"] is True, "not exact: %s" % d["why_inexact"])
    check(d["peak_bytes"] == n * MiB, "peak %d" % d["peak_bytes"])
    check(d["live_now_bytes"] == MiB, "live now %d" % d["live_now_bytes"])
    check(sum(s["count"] for s in d["sites"]) == n and sum(s["bytes"] for s in d["sites"]) == n * MiB,
          "sites %s" % d["sites"])
    check(all("thread_alloc" in site_functions(b, s) for s in d["sites"]), "sites %s" % d["sites"])


if __name__ == "__main__":
    raise SystemExit(main({"peak_steps": peak_steps, "peak_wrapped": peak_wrapped, "peak_burst": peak_burst,
                           "peak_gap": peak_gap, "peak_threads": peak_threads}))
