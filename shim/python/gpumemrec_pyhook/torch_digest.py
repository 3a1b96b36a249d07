"""PyTorch's view for framework.json, from the allocator's snapshot
(torch/cuda/memory.py, _snapshot: "segments", each with its "blocks" and
their "state"), at an out-of-memory (torch_hook.py) or at exit
(torch_exit.py): reserved vs allocated, the largest free block, the
segments that are mostly free cache, memory by role (roles.py) and the
allocator settings (torch_settings.py).
"""
from . import bridge

# A segment is "mostly free cache" when less than this share of it is
# allocated (fragmentation: reserved, cached, but not usable for a request
# bigger than its free blocks).
MOSTLY_FREE = 0.5
LISTED_SEGMENTS = 16


def full_digest(torch, snapshot, device, alloc, device_total, device_free, at):
    """digest_of plus "at", memory by role and the allocator settings."""
    from . import roles, torch_settings

    digest = digest_of(snapshot, device, alloc, device_total, device_free)
    digest["at"] = at
    digest["roles"] = roles.walk(torch, snapshot, int(device))
    digest["memory_fraction"] = bridge.guarded(torch_settings.memory_fraction, torch, int(device))
    digest["expandable_segments"] = bool(bridge.guarded(torch_settings.expandable_segments))
    digest["allocator_backend"] = bridge.guarded(torch_settings.allocator_backend, torch)
    return digest


def mark_walk(digest, started):
    """The walk's moment, for the roles at the peak (peak.json): CLOCK_MONOTONIC
    just before the snapshot and once the walk is done. time.monotonic_ns() is
    clock_gettime(CLOCK_MONOTONIC) on Linux (CPython Python/pytime.c,
    py_get_monotonic_clock), the clock of the recorder's events."""
    import time

    digest["snapshot_mono_ns"] = int(started)
    digest["done_mono_ns"] = int(time.monotonic_ns())


def digest_of(snapshot, device, alloc, device_total, device_free):
    """reserved vs allocated, the largest free block and the mostly-free
    segments of the failing device (framework.json)."""
    segments = [s for s in snapshot.get("segments", []) if s.get("device", device) == device]
    listed = []
    reserved = allocated = largest = 0
    for seg in segments:
        total, used = int(seg.get("total_size", 0)), int(seg.get("allocated_size", 0))
        free_blocks = [int(b.get("size", 0)) for b in seg.get("blocks", []) if b.get("state") == "inactive"]
        seg_largest = max(free_blocks) if free_blocks else 0
        reserved += total
        allocated += used
        largest = max(largest, seg_largest)
        if total and used < total * MOSTLY_FREE:
            listed.append({"address": int(seg.get("address", 0)), "total_size": total, "allocated_size": used,
                           "largest_free_block": seg_largest, "free_blocks": len(free_blocks),
                           "segment_type": seg.get("segment_type", "")})
    listed.sort(key=lambda s: s["total_size"] - s["allocated_size"], reverse=True)
    return {
        "framework": "torch", "device": int(device), "request_bytes": int(alloc),
        "device_total": int(device_total), "device_free": int(device_free),
        "reserved_bytes": reserved, "allocated_bytes": allocated, "largest_free_block": largest,
        "segment_count": len(segments), "mostly_free_segment_count": len(listed),
        "mostly_free_bytes": sum(s["total_size"] - s["allocated_size"] for s in listed),
        "mostly_free_segments": listed[:LISTED_SEGMENTS],
        "history": bool(snapshot.get("device_traces") and any(snapshot["device_traces"])),
    }
