"""Checks of the real-workload cases (workloads.py) against their bundles.

Each check returns (ok, detail): ok True (PASS), False (FAIL) or None (SKIP).
The bundle files read: manifest.json, metadata.json, stacks.json,
framework.json (its `roles`), peak.json, and `gpumemrec report --json`
(its `advice`); docs/bundle-format.md says what each field means.
"""
import glob
import json
import os
import re
import subprocess


def load(bundle, name):
    with open(os.path.join(bundle, name)) as f:
        return json.load(f)


def own_figures(stdout):
    """The program's own count: lines `OWN_<ROLE> bytes [count]` and
    `NAME value`."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and re.fullmatch(r"[A-Z_]+", parts[0]) and parts[1].lstrip("-").isdigit():
            out[parts[0]] = [int(p) for p in parts[1:] if p.lstrip("-").isdigit()]
    return out


def bundles(dumps):
    return sorted(glob.glob(os.path.join(dumps, "oom_dump_*")))


def failing_stack(bundle):
    md = load(bundle, "metadata.json")
    stacks = {s["stack_id"]: s for s in load(bundle, "stacks.json")}
    return md, stacks.get(md.get("stack_id"), {})


def site_of(stack):
    frames = stack.get("frames", [])
    i = stack.get("site_frame", -1)
    return frames[i] if 0 <= i < len(frames) else {}


def roles_of(bundle):
    man = load(bundle, "manifest.json")
    if "framework.json" not in man.get("files", []):
        return None
    return (load(bundle, "framework.json").get("roles") or None)


def near(got, want, count):
    """The allocator rounds each block up to 512 bytes (c10 kMinBlockSize)."""
    return got is not None and want <= got <= want + 512 * max(count, 1)


def report_json(cli, bundle):
    p = subprocess.run([cli, "report", "--json", bundle], capture_output=True, text=True, timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


def check_backward(dumps, stdout, rc):
    problems = []
    if "OOM_IN backward" not in stdout:
        problems.append("the step ran out in %s, not in backward" % (re.findall(r"OOM_IN (\w+)", stdout) or ["?"])[0])
    if rc == 0:
        problems.append("the uncaught OutOfMemoryError left exit status 0")
    found = bundles(dumps)
    if not found:
        return False, "; ".join(problems + ["no bundle"])
    b = found[-1]
    md, stack = failing_stack(b)
    site = site_of(stack)
    if stack.get("python") != "borrowed":
        problems.append("python=%s (not borrowed from the waiting thread)" % stack.get("python"))
    if "torch_backward" not in site.get("function", ""):
        problems.append("site %s:%s %s" % (site.get("file"), site.get("line"), site.get("function")))
    if load(b, "manifest.json").get("outcome") != "fatal":
        problems.append("outcome %s" % load(b, "manifest.json").get("outcome"))
    roles = roles_of(b)
    if not roles or roles.get("status") != "complete":
        problems.append("roles %s" % (roles or {}).get("status"))
    detail = "site=%s:%s node=%s roles=%s" % (site.get("file", "?").split("/")[-1], site.get("line"),
                                                stack.get("autograd_node"), (roles or {}).get("bytes"))
    return not problems, ("; ".join(problems) + " | " if problems else "") + detail


def check_kv_cache(dumps, stdout):
    own = own_figures(stdout)
    found = bundles(dumps)
    if not found:
        return False, "no bundle"
    roles = roles_of(found[-1]) or {}
    kv = roles.get("bytes", {}).get("kv_cache")
    want = own.get("OWN_KV_CACHE", [0])[0]
    if "KV_CACHE transformers" not in stdout:
        # By hand there is no Cache object to know it by: the walk must not
        # call it KV cache (it is activations or unknown), never a guess.
        return kv == 0, "no transformers: kv_cache role %s (0 expected), cache %d bytes" % (kv, want)
    return near(kv, want, 64), "kv_cache role %s, the program counts %d" % (kv, want)


def check_fragment(dumps, stdout, cli, expandable):
    found = [b for b in bundles(dumps) if load(b, "metadata.json").get("requested_bytes", 0) >= (12 << 20)]
    if expandable:
        # The advice's own test: with expandable segments the request fits.
        return "FITS" in stdout, "expandable_segments: %s" % ("request fit" if "FITS" in stdout else stdout[-80:])
    if "OOM fragment" not in stdout or not found:
        return False, "no out-of-memory for the 12 MiB request (%s)" % stdout.strip()[-80:]
    fw = load(found[-1], "framework.json") if os.path.exists(os.path.join(found[-1], "framework.json")) else {}
    advice = report_json(cli, found[-1]).get("advice", []) if cli else []
    said = any("expandable_segments" in json.dumps(a) for a in advice)
    ok = said and fw.get("largest_free_block", 1 << 62) < (12 << 20)
    return ok, "reserved=%s allocated=%s largest_free=%s advice=%s" % (
        fw.get("reserved_bytes"), fw.get("allocated_bytes"), fw.get("largest_free_block"),
        [a.get("rule") if isinstance(a, dict) else a for a in advice])


def check_peak(dumps, stdout):
    own = own_figures(stdout)
    found = [b for b in glob.glob(os.path.join(dumps, "*")) if os.path.exists(os.path.join(b, "peak.json"))]
    if not found:
        return False, "no bundle with peak.json"
    dev = (load(found[-1], "peak.json").get("devices") or [{}])[0]
    peak = dev.get("peak_bytes", 0)
    reserved = own.get("TORCH_MAX_RESERVED", [0])[0]
    driver = own.get("DRIVER_USED_PEAK", [0])[0]
    ok = dev.get("exact") is True and reserved <= peak <= driver
    return ok, "peak=%d exact=%s torch_max_reserved=%d driver_used_peak=%d sites=%d" % (
        peak, dev.get("exact"), reserved, driver, len(dev.get("sites", [])))


def check_nccl(dumps, stdout):
    if "ALLREDUCE" not in stdout:
        return None, "NCCL did not start: %s" % stdout.strip()[-100:]
    found = bundles(dumps)
    if not found:
        return False, "no bundle"
    b = found[-1]
    stacks = {s["stack_id"]: s for s in load(b, "stacks.json")}
    nccl = [a for a in load(b, "allocations.json")
            if "nccl" in (stacks.get(a.get("stack_id"), {}).get("library") or "")]
    return bool(nccl), "%d allocations of libnccl, %d bytes" % (len(nccl), sum(a["size"] for a in nccl))
