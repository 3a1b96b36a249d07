#!/usr/bin/env python3
"""Synthesize valid gpumemrec bundles (docs/bundle-format.md, schema_version 1).

Used by the tools tests until (and alongside) bundles written by the real
shim. python3 standard library only.

  make_bundle.py OUTDIR [--events N] [--stacks S] [--devices D] [--ranks R]
                 [--pre-ring K] [--seed X] [--outcome V] [--recovered N]

Writes one bundle per rank into OUTDIR (created), named
oom_dump_<UTC>_<pid>_cuda_1_<host>_<random8hex>, and prints their paths.
--outcome recovered|fatal|unknown writes the verdict
(manifest/metadata outcome, outcome_detail, recovery) and --recovered N lists
N recovered failures (recovered_failures, at most 32 listed, as the shim);
without them the bundle looks like one written before verdicts existed. The ring starts after
K older allocations (live in allocations.json, some freed inside the ring)
so readers meet allocations older than the ring and frees of addresses the
ring never saw allocated. Events include cudaMalloc/cudaFree,
cuMemAlloc_v2/cuMemFree_v2, cudaMallocManaged, VMM cuMemCreate/cuMemMap/
cuMemUnmap/cuMemRelease, a non-OOM failure, address reuse, and end with
the OOM on the failing device.
"""
import argparse
import json
import os
import random
import time

MiB = 1 << 20
GiB = 1 << 30


def make_stacks(rng, n):
    stacks = []
    pyfiles = ["/home/u/train.py", "/home/u/model.py", "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"]
    pyfuncs = ["train_step", "forward", "backward_hook", "build_model", "load_batch", "attention"]
    natfuncs = ["at::native::empty_cuda(long)", "c10::cuda::CUDACachingAllocator::malloc(unsigned long)",
                "allocate_buffers(unsigned long)", "cublasLtMatmul", "ncclCommInitRank", ""]
    for sid in range(1, n + 1):
        frames = []
        mode = sid % 4
        python = "captured" if mode != 3 else "no_gil"
        if mode != 3:
            for d in range(1 + sid % 3):
                frames.append({"kind": "python", "module": "", "offset": 0,
                               "function": pyfuncs[(sid + d) % len(pyfuncs)] + ("" if d else "_%d" % sid),
                               "file": pyfiles[(sid + d) % len(pyfiles)], "line": 10 + (sid * 7 + d) % 500})
        for d in range(2 + sid % 4):
            fn = natfuncs[(sid + d) % len(natfuncs)]
            frames.append({"kind": "native", "module": "/usr/lib/x86_64-linux-gnu/libtorch_cuda.so" if fn else "/home/u/app",
                           "offset": 0x1000 + sid * 16 + d, "function": fn,
                           "file": "/src/alloc.cpp" if fn and d % 2 == 0 else "", "line": (30 + d) if fn and d % 2 == 0 else 0})
        stacks.append({"stack_id": sid, "python": python, "frames": frames})
    return stacks


def event_json(e):
    # Hand formatting: json.dumps per event is too slow for a million events.
    return ('{"seq":%d,"timestamp":%.6f,"event_type":"%s","memory_allocated":%d,"memory_reserved":%d,'
            '"memory_change":%d,"device_id":%d,"context":"%s","backend":"cuda","api":"%s","memory_type":"%s",'
            '"address":%d,"size":%d,"result":%d,"thread_id":%d,"stack_id":%d,"duration_ns":%d,"stream":%d}'
            % (e[0], e[1], e[2], e[3], e[3], e[4], e[5], e[6], e[6], e[7], e[8], e[9], e[10], e[11], e[12], e[13], e[14]))


def synth(rng, args, rank, t_end):
    n_events = args.events
    devices = args.devices
    n_stacks = args.stacks
    pre_ring = args.pre_ring
    dt = 50e-6
    t = t_end - n_events * dt
    seq0 = pre_ring * 3 + 1  # older events overwritten
    live = {}  # key (physical, addr) -> [size, dev, api, mtype, ts, tid, sid, seq]
    per_dev = [0] * devices
    next_addr = [0x7f0000000000 + d * 0x10000000000 for d in range(devices)]
    next_handle = [1]
    reuse = {}
    tids = [4243, 4250, 4251]

    def new_addr(dev, size):
        pool = reuse.get((dev, size))
        if pool and rng.random() < 0.5:
            return pool.pop()
        a = next_addr[dev]
        next_addr[dev] += (size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)
        return a

    def rand_size():
        return rng.choice([512, 4096, 65536, MiB, 2 * MiB, 8 * MiB, 32 * MiB, 64 * MiB]) * rng.randint(1, 4)

    # Allocations older than the ring.
    for i in range(pre_ring):
        dev = i % devices
        size = rand_size() * 4
        a = new_addr(dev, size)
        live[(0, a)] = [size, dev, "cudaMalloc", "device", t - 10 + i * 0.01, tids[0], 1 + i % n_stacks, 1 + i * 3]
        per_dev[dev] += size
    pre_keys = list(live.keys())
    rng.shuffle(pre_keys)
    to_free_pre = pre_keys[: len(pre_keys) // 2]
    keep_pre = set(pre_keys[len(pre_keys) // 2:])  # stay live: older than the ring

    events = []
    seq = seq0
    budget = n_events - 1  # last one is the OOM
    api_pairs = [("cudaMalloc", "cudaFree", "device"), ("cuMemAlloc_v2", "cuMemFree_v2", "device"),
                 ("cudaMallocManaged", "cudaFree", "managed")]
    cap_live = max(64, args.live)
    while len(events) < budget:
        t += dt * rng.uniform(0.5, 1.5)
        tid = rng.choice(tids)
        sid = rng.randint(0, n_stacks)
        r = rng.random()
        if to_free_pre and r < 0.01:
            k = to_free_pre.pop()
            size, dev = live[k][0], live[k][1]
            del live[k]
            per_dev[dev] -= size
            reuse.setdefault((dev, size), []).append(k[1])
            events.append((seq, t, "deallocation", per_dev[dev], -size, dev, "cudaFree", "device", k[1], size, 0, tid, sid, 900, 0))
        elif r < 0.012 and budget - len(events) > 4:
            # VMM: create a handle, map it, unmap, keep the handle live.
            dev = rng.randrange(devices)
            size = 2 * MiB * rng.randint(1, 8)
            h = next_handle[0]
            next_handle[0] += 1
            per_dev[dev] += size
            live[(1, h)] = [size, dev, "cuMemCreate", "physical", t, tid, sid, seq]
            events.append((seq, t, "allocation", per_dev[dev], size, dev, "cuMemCreate", "physical", h, size, 0, tid, sid, 2000, 0))
            seq += 1
            va = new_addr(dev, size)
            events.append((seq, t, "map", per_dev[dev], 0, dev, "cuMemMap", "mapping", va, size, 0, tid, sid, 500, 0))
            seq += 1
            events.append((seq, t, "unmap", per_dev[dev], 0, dev, "cuMemUnmap", "mapping", va, size, 0, tid, sid, 500, 0))
        elif r < 0.013:
            dev = rng.randrange(devices)
            events.append((seq, t, "allocation_failed", per_dev[dev], 0, dev, "cudaMalloc", "device", 0, 7, 1, tid, sid, 100, 0))
        elif (r < 0.55 and len(live) < cap_live) or not live:
            api, _, mtype = rng.choice(api_pairs)
            dev = rng.randrange(devices)
            size = rand_size()
            a = new_addr(dev, size)
            per_dev[dev] += size
            live[(0, a)] = [size, dev, api, mtype, t, tid, sid, seq]
            stream = 0 if rng.random() < 0.8 else 0x5555000 + tid
            events.append((seq, t, "allocation", per_dev[dev], size, dev, api, mtype, a, size, 0, tid, sid, 3000, stream))
        else:
            k = rng.choice(list(live.keys())) if len(live) < 4096 else next(iter(live))
            if k in to_free_pre or k in keep_pre or k[0] == 1:
                continue
            size, dev, api, live_mtype = live[k][0], live[k][1], live[k][2], live[k][3]
            free_api = {"cudaMalloc": "cudaFree", "cudaMallocManaged": "cudaFree", "cuMemAlloc_v2": "cuMemFree_v2"}.get(api, "cudaFree")
            del live[k]
            per_dev[dev] -= size
            reuse.setdefault((dev, size), []).append(k[1])
            events.append((seq, t, "deallocation", per_dev[dev], -size, dev, free_api, live_mtype,
                           k[1], size, 0, tid, sid, 800, 0))
        seq += 1
    # The OOM.
    fail_dev = rank % devices
    t += dt
    request = 8 * GiB
    oom_sid = 1
    events.append((seq, t, "oom", per_dev[fail_dev], 0, fail_dev, "cudaMalloc", "device", 0, request, 2, tids[0], oom_sid, 3100, 0))
    return events, live, per_dev, fail_dev, request, oom_sid, t


DETAILS = {"recovered": "recovered after freeing 3.20 GiB of cache (12.3 ms later)",
           "fatal": "not recovered: no retry of the request succeeded within 2000 ms",
           "unknown": "the process ended before the verdict (or it was not known yet)"}


def verdict_fields(args, rng, t, request):
    """metadata.json's verdict keys (docs/bundle-format.md)."""
    out = {}
    if args.outcome != "none":
        out["outcome"] = args.outcome
        out["outcome_detail"] = DETAILS[args.outcome]
        out["recovery"] = None
        if args.outcome == "recovered":
            out["recovery"] = {"after_ms": 12.3, "freed_bytes": 3435973837, "retry_size": request,
                               "retry_api": "cudaMalloc", "thread_id": 4243}
    if args.outcome != "none" or args.recovered:
        listed = []
        for i in range(min(args.recovered, 32)):
            listed.append({"timestamp": round(t - 30 + i * 0.5, 6), "device_id": i % args.devices,
                           "size": (1 + i % 4) * 256 * MiB, "api": ["cudaMalloc", "cuMemAlloc_v2", "cuMemCreate"][i % 3],
                           "thread_id": 4243 + i % 2, "stack_id": 1 + i % args.stacks, "after_ms": round(0.5 + i * 0.25, 3),
                           "freed_bytes": rng.randint(0, 4) * GiB})
        out["recovered_failures"] = {"count": args.recovered, "listed": listed}
    return out


def write_bundle(outdir, args, rank, rng, t_end):
    pid = 4242 + rank * 10
    events, live, per_dev, fail_dev, request, oom_sid, t = synth(rng, args, rank, t_end)
    stacks = make_stacks(rng, args.stacks)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))
    host = "node%d" % (rank // 8)
    name = "oom_dump_%s_%d_cuda_1_%s_%08x" % (stamp, pid, host, rng.getrandbits(32))
    tmp = os.path.join(outdir, ".tmp-" + name)
    final = os.path.join(outdir, name)
    os.makedirs(tmp, mode=0o700, exist_ok=True)

    def w(fname, text):
        p = os.path.join(tmp, fname)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o600)

    with open(os.path.join(tmp, "events.json"), "w") as f:
        f.write("[\n")
        chunk = []
        for i, e in enumerate(events):
            chunk.append(event_json(e))
            if len(chunk) >= 10000:
                f.write(",\n".join(chunk))
                chunk = []
                if i + 1 < len(events):
                    f.write(",\n")
        if chunk:
            f.write(",\n".join(chunk))
        f.write("\n]\n")
    allocs = [{"address": k[1], "size": v[0], "device_id": v[1], "api": v[2], "memory_type": v[3],
               "timestamp": round(v[4], 6), "thread_id": v[5], "stack_id": v[6], "seq": v[7]} for k, v in live.items()]
    allocs.sort(key=lambda a: -a["size"])
    w("allocations.json", json.dumps(allocs, indent=1))
    w("stacks.json", json.dumps(stacks, indent=1))
    live_bytes = sum(per_dev)
    total = per_dev[fail_dev] + 3 * GiB
    custom = {}
    if args.ranks > 1 or args.rank_meta:
        custom = {"rank": rank, "local_rank": rank % 8, "world_size": args.ranks, "job_id": "12345", "hostname": host}
    meta = {"reason": "oom", "api": "cudaMalloc", "error_code": 2, "error_name": "cudaErrorMemoryAllocation",
            "requested_bytes": request, "device_id": fail_dev, "device_free_bytes": total - per_dev[fail_dev],
            "device_total_bytes": total, "live_bytes": live_bytes, "live_allocations": len(live),
            "live_bytes_by_device": {str(d): per_dev[d] for d in range(len(per_dev))}, "thread_id": 4243,
            "stack_id": oom_sid,
            "context": "cudaMalloc(%d) on device %d returned cudaErrorMemoryAllocation" % (request, fail_dev),
            "backend": "cuda", "captured_event_count": len(events), "total_event_count": events[-1][0],
            "failed_calls_before_dump": 0, "timestamp": round(t, 6), "custom_metadata": custom}
    meta.update(verdict_fields(args, rng, t, request))
    w("metadata.json", json.dumps(meta, indent=2))
    env = {"pid": pid, "ppid": 4200, "cwd": "/home/u", "cmdline": ["python", "train.py", "--rank", str(rank)],
           "hostname": host, "uid": 1000, "driver_version": 13000, "runtime_version": 13000,
           "devices": [{"device_id": d, "name": "Fake GPU", "total_bytes": per_dev[d] + 3 * GiB} for d in range(len(per_dev))],
           "modules": ["/usr/bin/python3.12", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"],
           "env": {"CUDA_VISIBLE_DEVICES": "0", "GPUMEMREC_DIR": outdir, "HF_TOKEN": "<redacted>"},
           "config": {"ring_events": args.events, "stack_depth": 32, "episode_ms": 2000}}
    w("environment.json", json.dumps(env, indent=2))
    w("summary.txt", "cudaMalloc(%d) failed on device %d\n" % (request, fail_dev))
    manifest = {"schema_version": 1, "bundle_name": name, "created_at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)),
                "reason": "oom", "backend": "cuda", "event_count": len(events),
                "files": ["metadata.json", "events.json", "allocations.json", "stacks.json", "environment.json",
                          "summary.txt", "manifest.json"],
                "generator": "make_bundle.py", "pid": pid}
    if args.outcome != "none":
        manifest["outcome"] = args.outcome
    w("manifest.json", json.dumps(manifest, indent=2))
    os.rename(tmp, final)
    return final


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--stacks", type=int, default=40)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--live", type=int, default=400, help="soft cap on live allocations")
    ap.add_argument("--pre-ring", type=int, default=20, help="live allocations older than the ring")
    ap.add_argument("--rank-meta", action="store_true", help="write custom_metadata.rank even for one rank")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--outcome", choices=["none", "recovered", "fatal", "unknown"], default="none")
    ap.add_argument("--recovered", type=int, default=0, help="recovered failures since the previous bundle")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    base = 1763733785.0
    for rank in range(args.ranks):
        rng = random.Random(args.seed * 1000 + rank)
        # Rank 1 (or 0 when alone) fails first.
        t_end = base + (0.0 if rank == min(1, args.ranks - 1) else 0.25 + 0.1 * rank)
        print(write_bundle(args.outdir, args, rank, rng, t_end))


if __name__ == "__main__":
    main()
