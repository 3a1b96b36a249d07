#!/usr/bin/env python3
"""Turns a make_bundle.py bundle into one with the framework's roles
(framework.json "roles", docs/bundle-format.md), the card accounting
(metadata.json device_accounting) and the peak (peak.json), to the exact
contracts the shim and the Python hook write. python3 standard library only.

  roles_bundle.py BUNDLE [--balanced] [--no-framework] [--no-peak]

The default scenario, device 0 of 80 GiB (GiB throughout):
  PyTorch reserved 60, allocated 50, largest free block 1, asked 2
    -> expandable_segments
  roles: weights 10, gradients 10, optimizer_state 20, activations 10,
         allocator_cache 10 (sum 60 = reserved)  -> optimizer_state (2.0x)
  libc10_cuda.so 60 recorded, libnccl.so.2 2 -> nccl
  context 1; pid 777 "python3 other.py" 16 -> other_process; free 0.5
  peak.json: 70 live at the ring's middle event, not exact; one site of 5
  (the first stack of stacks.json), live now 62; libc10_cuda.so 65,
  libcublas.so.13 5; since the gap (1000 events lost) exactly 70; roles at
  the peak from the exit walk: weights 10, gradients 10, optimizer state 20,
  activations 10, allocator cache 15, outside the framework 5
--balanced: weights = gradients = optimizer_state = activations = 12,
allocator_cache 12, request 512 KiB: no advice at all.
"""
import argparse
import json
import os

GiB = 1 << 30
MiB = 1 << 20
ROLE_KEYS = ["weights", "gradients", "optimizer_state", "kv_cache", "activations", "allocator_cache", "unknown"]


def roles(balanced):
    if balanced:
        b = {"weights": 12 * GiB, "gradients": 12 * GiB, "optimizer_state": 12 * GiB, "kv_cache": 0,
             "activations": 12 * GiB, "allocator_cache": 12 * GiB, "unknown": 0}
    else:
        b = {"weights": 10 * GiB, "gradients": 10 * GiB, "optimizer_state": 20 * GiB, "kv_cache": 0,
             "activations": 10 * GiB, "allocator_cache": 10 * GiB, "unknown": 0}
    tensors = {k: (8 if v else 0) for k, v in b.items() if k not in ("allocator_cache", "activations")}
    return {"status": "complete", "elapsed_ms": 12.5, "objects": 4321, "budget_ms": 2000, "device": 0,
            "bytes": b, "tensors": tensors,
            "top": [{"role": "optimizer_state", "owner": "AdamW", "name": "exp_avg_sq[lm_head.weight]",
                     "bytes": 2 * GiB}],
            "sharding": None, "notes": []}


def digest(balanced):
    return {"framework": "torch", "device": 0, "request_bytes": 512 * 1024 if balanced else 2 * GiB,
            "device_total": 80 * GiB, "device_free": GiB // 2, "reserved_bytes": 60 * GiB,
            "allocated_bytes": 48 * GiB if balanced else 50 * GiB,
            "largest_free_block": 4 * GiB if balanced else GiB, "segment_count": 30,
            "mostly_free_segment_count": 0, "mostly_free_bytes": 0, "mostly_free_segments": [],
            "history": False, "memory_fraction": None, "expandable_segments": False, "roles": roles(balanced)}


def accounting(balanced):
    libs = {"libc10_cuda.so": 60 * GiB}
    others = []
    if not balanced:
        libs["libnccl.so.2"] = 2 * GiB
        others = [{"pid": 777, "name": "python3 other.py", "used_bytes": 16 * GiB}]
    rec = sum(libs.values())
    total, free = 80 * GiB, GiB // 2
    used_others = sum(p["used_bytes"] for p in others)
    return [{"device": 0, "total_bytes": total, "free_bytes": free, "recorded_live_bytes": rec,
             "recorded_by_library": libs, "process_unrecorded_bytes": GiB, "other_processes": others,
             "unaccounted_bytes": total - free - rec - GiB - used_others, "note": ""}]


def peak(first_stack, event):
    t = int(round(event["timestamp"] * 1e9))
    sites = [{"stack_id": first_stack, "bytes": 5 * GiB, "count": 3}]
    libs = [{"library": "libc10_cuda.so", "bytes": 65 * GiB, "count": 30},
            {"library": "libcublas.so.13", "bytes": 5 * GiB, "count": 3}]
    return {"schema": 1, "devices": [{"device": 0, "peak_bytes": 70 * GiB, "peak_time_ns": t,
                                      "peak_seq": event["seq"], "peak_until_ns": None, "exact": False,
                                      "why_inexact": "the ring dropped 1000 older events",
                                      "live_now_bytes": 62 * GiB, "events_replayed": 300,
                                      "sites": sites, "by_library": libs,
                                      "after_gap": {"gaps": 1, "lost_events": 1000, "from_seq": 2000,
                                                    "from_time_ns": t - 1000, "exact": True, "why_inexact": None,
                                                    "start_bytes": 60 * GiB, "peak_bytes": 70 * GiB,
                                                    "peak_time_ns": t, "peak_seq": event["seq"],
                                                    "peak_until_ns": t + 1000, "sites": sites, "by_library": libs},
                                      "roles": {"known": True, "why_not_known": None, "framework": "torch",
                                                "walk": "exit", "walk_status": "complete", "walk_time_ns": t + 10,
                                                "bytes": {"weights": 10 * GiB, "gradients": 10 * GiB,
                                                          "optimizer_state": 20 * GiB, "kv_cache": 0,
                                                          "activations": 10 * GiB, "allocator_cache": 15 * GiB,
                                                          "unknown": 0, "outside_framework": 5 * GiB}}}]}


def edit(bundle, name, fn):
    p = os.path.join(bundle, name)
    with open(p) as f:
        d = json.load(f)
    fn(d)
    with open(p, "w") as f:
        json.dump(d, f)


def write(bundle, name, obj):
    with open(os.path.join(bundle, name), "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))

    def listed(m):
        if name not in m["files"]:
            m["files"].append(name)
    edit(bundle, "manifest.json", listed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("--balanced", action="store_true")
    ap.add_argument("--no-framework", action="store_true")
    ap.add_argument("--no-peak", action="store_true")
    a = ap.parse_args()

    def meta(m):
        m["device_accounting"] = accounting(a.balanced)
        m["device_id"] = 0
        m["device_total_bytes"] = 80 * GiB
    edit(a.bundle, "metadata.json", meta)
    if not a.no_framework:
        write(a.bundle, "framework.json", digest(a.balanced))
    if not a.no_peak:
        with open(os.path.join(a.bundle, "stacks.json")) as f:
            first = json.load(f)[0]["stack_id"]
        with open(os.path.join(a.bundle, "events.json")) as f:
            events = json.load(f)
        write(a.bundle, "peak.json", peak(first, events[len(events) // 2]))


if __name__ == "__main__":
    main()
