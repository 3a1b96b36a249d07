#!/usr/bin/env python3
"""Run a test program against the fake GPU drivers and check the outcome.

Usage:
  check_program.py [options] -- PROGRAM [ARGS...]

The program runs WITHOUT any preload (LD_PRELOAD is removed from the
environment) with FAKEGPU_CAPACITY / FAKEGPU_DEVICES set and FAKEGPU_LEDGER
pointing at a temporary file. Checks:
  * exit status (default 0)
  * an "OOM api=... rc=<oom-rc>" line (unless --no-oom)
  * every --expect REGEX matches some line, no --forbid REGEX matches any
  * the ledger exists, is well-formed JSON, is non-empty, per-device totals
    equal live_bytes_by_device and are <= capacity, device/managed ranges are
    256-byte aligned and do not overlap (unless --no-ledger)
  * with --compare-live: the DONE line's live_count/live_bytes equal the ledger
  * with --host-not-in-ledger: no HOST ptr= address lies in any ledger range
  * with --kinds K1,K2: the set of ledger kinds is exactly that set

Exit status 0 when all checks pass; prints the reasons otherwise.
Standard library only.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg, out=None, err=None):
    print("CHECK FAILED: " + msg)
    if out is not None:
        print("---- stdout ----")
        print(out)
    if err:
        print("---- stderr ----")
        print(err)
    sys.exit(1)


def check_ledger(path, capacity, devices, out, err, args):
    if not os.path.exists(path):
        fail("ledger %s was not written" % path, out, err)
    with open(path) as f:
        text = f.read()
    try:
        ledger = json.loads(text)
    except ValueError as e:
        fail("ledger is not valid JSON (%s): %r" % (e, text[:500]), out, err)
    allocs = ledger.get("allocations")
    by_dev = ledger.get("live_bytes_by_device")
    if not isinstance(allocs, list) or not isinstance(by_dev, dict):
        fail("ledger lacks allocations/live_bytes_by_device: %r" % text[:500], out, err)
    if not allocs and not args.allow_empty_ledger:
        fail("ledger has no live allocations", out, err)
    sums = {}
    ranges = []
    kinds = set()
    for a in allocs:
        for key in ("address", "size", "device", "kind"):
            if key not in a:
                fail("ledger entry lacks %s: %r" % (key, a), out, err)
        if a["kind"] not in ("device", "managed", "physical"):
            fail("bad kind in %r" % a, out, err)
        if a["size"] <= 0:
            fail("non-positive size in %r" % a, out, err)
        if not 0 <= a["device"] < max(devices, 1):
            fail("bad device in %r" % a, out, err)
        kinds.add(a["kind"])
        sums[a["device"]] = sums.get(a["device"], 0) + a["size"]
        if a["kind"] != "physical":
            if a["address"] % 256:
                fail("address not 256-byte aligned: %r" % a, out, err)
            ranges.append((a["address"], a["address"] + a["size"]))
    ranges.sort()
    for (s1, e1), (s2, e2) in zip(ranges, ranges[1:]):
        if s2 < e1:
            fail("overlapping allocations [%#x,%#x) and [%#x,%#x)" % (s1, e1, s2, e2), out, err)
    for dev, total in sums.items():
        if int(by_dev.get(str(dev), -1)) != total:
            fail("live_bytes_by_device[%d]=%s but entries sum to %d" % (dev, by_dev.get(str(dev)), total), out, err)
    for dev, total in by_dev.items():
        if int(total) > capacity:
            fail("device %s holds %s bytes > capacity %d" % (dev, total, capacity), out, err)
        if int(total) != sums.get(int(dev), 0):
            fail("live_bytes_by_device[%s]=%s but entries sum to %d" % (dev, total, sums.get(int(dev), 0)), out, err)
    if args.kinds is not None:
        want = set(k for k in args.kinds.split(",") if k)
        if kinds != want:
            fail("ledger kinds %s, expected %s" % (sorted(kinds), sorted(want)), out, err)
    return allocs, ranges


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--capacity", type=int, default=1 << 30)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--env", action="append", default=[], help="extra KEY=VALUE for the program")
    p.add_argument("--expect-rc", type=int, default=0)
    p.add_argument("--oom-rc", type=int, default=2)
    p.add_argument("--no-oom", action="store_true", help="do not require an OOM line")
    p.add_argument("--no-ledger", action="store_true", help="do not require/check a ledger")
    p.add_argument("--allow-empty-ledger", action="store_true")
    p.add_argument("--expect", action="append", default=[], help="regex that must match a line")
    p.add_argument("--forbid", action="append", default=[], help="regex that must not match any line")
    p.add_argument("--compare-live", action="store_true")
    p.add_argument("--host-not-in-ledger", action="store_true")
    p.add_argument("--kinds", default=None)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        p.error("no program given")

    with tempfile.TemporaryDirectory(prefix="fakegpu-check-") as tmp:
        ledger = os.path.join(tmp, "ledger.json")
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env["FAKEGPU_CAPACITY"] = str(args.capacity)
        env["FAKEGPU_DEVICES"] = str(args.devices)
        env["FAKEGPU_LEDGER"] = ledger
        for kv in args.env:
            k, _, v = kv.partition("=")
            env[k] = v
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            fail("timed out after %ss: %s" % (args.timeout, " ".join(cmd)))
        out, err = proc.stdout, proc.stderr
        lines = out.splitlines()
        if proc.returncode != args.expect_rc:
            fail("exit status %d, expected %d" % (proc.returncode, args.expect_rc), out, err)
        if not args.no_oom:
            oom = [l for l in lines if l.startswith("OOM ")]
            if not oom:
                fail("no OOM line printed", out, err)
            m = re.search(r"\brc=(-?\d+)", oom[-1])
            if not m or int(m.group(1)) != args.oom_rc:
                fail("OOM line has rc != %d: %s" % (args.oom_rc, oom[-1]), out, err)
        for rx in args.expect:
            if not any(re.search(rx, l) for l in lines):
                fail("no line matches %r" % rx, out, err)
        for rx in args.forbid:
            bad = [l for l in lines if re.search(rx, l)]
            if bad:
                fail("line matches forbidden %r: %s" % (rx, bad[0]), out, err)
        if args.no_ledger:
            print("OK (%d lines)" % len(lines))
            return
        allocs, ranges = check_ledger(ledger, args.capacity, args.devices, out, err, args)
        if args.compare_live:
            done = [l for l in lines if l.startswith("DONE ")]
            if not done:
                fail("no DONE line", out, err)
            m = re.search(r"live_count=(\d+) live_bytes=(\d+)", done[-1])
            if not m:
                fail("malformed DONE line: " + done[-1], out, err)
            count, total = int(m.group(1)), int(m.group(2))
            ledger_total = sum(a["size"] for a in allocs)
            if count != len(allocs) or total != ledger_total:
                fail("program reports %d allocations / %d bytes live, ledger has %d / %d"
                     % (count, total, len(allocs), ledger_total), out, err)
        if args.host_not_in_ledger:
            hosts = [int(m.group(1), 16) for l in lines if l.startswith("HOST ")
                     for m in [re.search(r"ptr=0x([0-9a-fA-F]+)", l)] if m]
            if not hosts:
                fail("no HOST line with a pointer", out, err)
            for h in hosts:
                for s, e in ranges:
                    if s <= h < e:
                        fail("host pointer %#x lies in ledger range [%#x,%#x)" % (h, s, e), out, err)
                if any(a["address"] == h for a in allocs):
                    fail("host pointer %#x is in the ledger" % h, out, err)
        print("OK (%d lines, %d live allocations, %d bytes)"
              % (len(lines), len(allocs), sum(a["size"] for a in allocs)))


if __name__ == "__main__":
    main()
