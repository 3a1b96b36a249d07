#!/usr/bin/env python3
"""Check a PyTorch memory snapshot pickle written by `gpumemrec export
--format memory-viz` (or snapshot.pickle in a bundle).

  check_pickle.py SNAPSHOT.pickle [BUNDLE_DIR]

- only opcodes PyTorch's memory viewer knows (pickletools.genops scan),
  protocol 2;
- unpickles with the standard pickle module; top-level keys and the keys
  every segment, block and trace entry must carry;
- replays each device's trace backwards from the final segments the way the
  viewer's "Allocator State History" does (must never meet an unknown
  address), then forwards from the state that gives (must end exactly in the
  final segments);
- with BUNDLE_DIR: the segments are exactly the live non-mapping
  allocations of allocations.json (device and size), and there is an `oom`
  entry for every oom event of events.json.
Exit 0 when all hold, 1 with a message otherwise.
"""
import collections
import json
import os
import pickle
import pickletools
import sys

ALLOWED = {"PROTO", "FRAME", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "MARK", "SETITEM", "SETITEMS", "APPEND",
           "APPENDS", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "DICT", "BININT", "BININT1", "BININT2", "LONG1",
           "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE", "NONE", "NEWTRUE", "NEWFALSE", "BINGET", "LONG_BINGET",
           "BINPUT", "LONG_BINPUT", "MEMOIZE", "STOP"}


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def _scan_table():
    """{opcode byte: (name, fixed argument bytes, length-prefix bytes)} for
    the ALLOWED opcodes, from pickletools' own descriptions."""
    lengths = {pickletools.TAKEN_FROM_ARGUMENT1: 1, pickletools.TAKEN_FROM_ARGUMENT4: 4,
               pickletools.TAKEN_FROM_ARGUMENT4U: 4, pickletools.TAKEN_FROM_ARGUMENT8U: 8}
    table = {}
    for op in pickletools.opcodes:
        if op.name not in ALLOWED:
            continue
        n = op.arg.n if op.arg is not None else 0
        table[ord(op.code)] = (op.name, n, 0) if n >= 0 else (op.name, 0, lengths[n])
    return table


def check_opcodes(raw):
    """Every opcode is one the viewer knows, protocol 2. A scan of the
    ALLOWED opcodes' argument layouts (pickletools.genops, which decodes
    every argument, takes seconds on a bundle's pickle); an opcode outside
    them is named by pickletools."""
    table = _scan_table()
    fixed_len = [None] * 256  # by opcode byte: argument bytes, or -prefix bytes
    for code, (_, fixed, prefix) in table.items():
        fixed_len[code] = -prefix if prefix else fixed
    counts = [0] * 256
    stop = ord(pickle.STOP)
    pos, end = 0, len(raw)
    check(end >= 2 and raw[0] == 0x80, "no PROTO opcode first")
    check(raw[1] == 2, "protocol %r, expected 2" % raw[1])
    from_bytes = int.from_bytes
    while pos < end:
        code = raw[pos]
        n = fixed_len[code]
        if n is None:
            bad = next(op.name for op, _, at in pickletools.genops(raw) if at == pos)
            check(False, "opcodes the viewer does not know: %s at %d" % (bad, pos))
        counts[code] += 1
        pos += 1
        if n < 0:
            n = from_bytes(raw[pos:pos - n], "little") - n
        pos += n
        if code == stop:
            break
    check(pos == end and counts[stop] == 1, "the pickle does not end at its STOP (at %d of %d)" % (pos, end))
    return collections.Counter({table[c][0]: k for c, k in enumerate(counts) if k})


def check_structure(snap):
    check(isinstance(snap, dict), "top level is not a dict")
    for k in ("segments", "device_traces"):
        check(k in snap, "missing top-level key %r" % k)
    check(isinstance(snap["segments"], list) and isinstance(snap["device_traces"], list), "segments/device_traces not lists")
    for s in snap["segments"]:
        for k in ("device", "address", "total_size", "stream", "blocks", "segment_type", "allocated_size",
                  "active_size", "requested_size", "frames"):
            if k not in s:
                check(False, "segment without %r: %r" % (k, s))
        for b in s["blocks"]:
            for k in ("address", "size", "state", "requested_size", "frames"):
                if k not in b:
                    check(False, "block without %r" % k)
            check(s["address"] <= b["address"] and b["address"] + b["size"] <= s["address"] + s["total_size"],
                  "block outside its segment")
        for f in s["frames"]:
            if not set(f) >= {"filename", "line", "name"}:
                check(False, "frame without filename/line/name: %r" % f)
    actions = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
               "segment_unmap", "oom", "snapshot"}
    n = 0
    for dev, trace in enumerate(snap["device_traces"]):
        check(isinstance(trace, list), "device_traces[%d] is not a list" % dev)
        for e in trace:
            n += 1
            if e.get("action") not in actions:
                check(False, "unknown action %r" % e.get("action"))
            for k in ("size", "stream", "time_us", "frames"):
                if k not in e:
                    check(False, "trace entry without %r: %r" % (k, e))
            if e["action"] == "oom":
                check("device_free" in e, "oom entry without device_free")
            else:
                check("addr" in e, "trace entry without addr: %r" % e)
    return n


def replay(snap):
    """Backward replay like MemoryViz.js, then forward; per device."""
    by_dev = collections.defaultdict(dict)  # dev -> addr -> [size, block_state]
    for s in snap["segments"]:
        check(s["address"] not in by_dev[s["device"]], "two segments at %#x" % s["address"])
        by_dev[s["device"]][s["address"]] = [s["total_size"], s["blocks"][0]["state"] if s["blocks"] else "inactive"]
    for dev, trace in enumerate(snap["device_traces"]):
        final = {a: list(v) for a, v in by_dev.get(dev, {}).items()}
        state = {a: list(v) for a, v in final.items()}
        # Backward.
        for i in range(len(trace) - 1, -1, -1):
            e = trace[i]
            a, act = e.get("addr"), e["action"]
            where = "device %d trace[%d] %s %#x" % (dev, i, act, a or 0)
            if act == "segment_free":
                check(a not in state, where + ": undo segment_free over an existing segment")
                state[a] = [e["size"], "inactive"]
            elif act == "free_completed":
                check(a in state and state[a][1] == "inactive", where + ": undo free_completed of unknown block")
                state[a][1] = "active_pending_free"
            elif act == "free_requested":
                check(a in state and state[a][1] == "active_pending_free", where + ": undo free_requested of unknown block")
                state[a][1] = "active_allocated"
            elif act == "alloc":
                check(a in state and state[a][1] == "active_allocated", where + ": undo alloc of a block not allocated")
                state[a][1] = "inactive"
            elif act == "segment_alloc":
                check(a in state and state[a][1] == "inactive", where + ": undo segment_alloc of unknown segment")
                del state[a]
        # Forward from the initial state found above.
        for i, e in enumerate(trace):
            a, act = e.get("addr"), e["action"]
            where = "device %d trace[%d] %s %#x" % (dev, i, act, a or 0)
            if act == "segment_alloc":
                check(a not in state, where + ": segment_alloc over a live segment")
                state[a] = [e["size"], "inactive"]
            elif act == "alloc":
                check(a in state and state[a][1] == "inactive", where + ": alloc outside a free segment")
                state[a][1] = "active_allocated"
            elif act == "free_requested":
                check(a in state and state[a][1] == "active_allocated", where + ": free of unknown address")
                state[a][1] = "active_pending_free"
            elif act == "free_completed":
                check(a in state and state[a][1] == "active_pending_free", where + ": free_completed without request")
                state[a][1] = "inactive"
            elif act == "segment_free":
                check(a in state and state[a][1] == "inactive", where + ": segment_free of unknown/busy segment")
                del state[a]
        check(state == final, "device %d: forward replay ends with %d segments, snapshot has %d (or they differ)"
              % (dev, len(state), len(final)))
    devs_with_segments = {s["device"] for s in snap["segments"]}
    check(all(d < len(snap["device_traces"]) for d in devs_with_segments), "segment on a device with no trace list")


def check_against_bundle(snap, bundle):
    with open(os.path.join(bundle, "allocations.json")) as f:
        allocs = json.load(f)
    want = collections.Counter((max(a["device_id"], 0), a["size"]) for a in allocs
                               if a.get("memory_type") != "mapping" and a["address"] != 0)
    got = collections.Counter((s["device"], s["total_size"]) for s in snap["segments"])
    check(want == got, "segments (%d) differ from live allocations in allocations.json (%d): missing %s, extra %s" % (
        sum(got.values()), sum(want.values()), list((want - got).items())[:5], list((got - want).items())[:5]))
    with open(os.path.join(bundle, "events.json")) as f:
        events = json.load(f)
    n_oom = sum(1 for e in events if e["event_type"] == "oom")
    got_oom = sum(1 for t in snap["device_traces"] for e in t if e["action"] == "oom")
    check(n_oom == got_oom, "%d oom events in events.json, %d oom trace entries" % (n_oom, got_oom))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    path = sys.argv[1]
    with open(path, "rb") as f:
        raw = f.read()
    try:
        ops = check_opcodes(raw)
        snap = pickle.loads(raw)
        n = check_structure(snap)
        replay(snap)
        if len(sys.argv) > 2:
            check_against_bundle(snap, sys.argv[2])
    except Fail as e:
        print("check_pickle: FAIL: %s: %s" % (path, e))
        return 1
    print("check_pickle: ok: %s: %d segments, %d trace entries on %d device(s), opcodes %s" % (
        path, len(snap["segments"]), n, len(snap["device_traces"]), ",".join(sorted(ops))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
