#!/usr/bin/env python3
"""simulate.torchrun_*: the real PyTorch 2.14.1 trains a small transformer
with FSDP2 (fully_shard), DDP (DistributedDataParallel) or DeepSpeed 0.19.8
ZeRO-2 (over torch's AdamW, DS_BUILD_OPS=0) under torchrun,
every rank a process on its LOCAL_RANK's simulated H100, the recorder
preloaded; device 1 is given less memory (GPUMEMREC_LIMIT), so rank 1 runs
out first.

Checked, against the program's own counts (train_ranks.py writes them):
- every rank leaves a bundle with its rank, local rank and world size
  (rank 1's for its out-of-memory, the others' at exit);
- rank 1's failing site is the program's backward line (loss.backward(), or
  model.backward(loss) for DeepSpeed, whose gradient hook allocates on the
  autograd thread: the waiting thread's frames are lent as its callers);
- NCCL's memory is libnccl.so.2's in the card accounting and the sites:
  exactly NCCL 2.30.7's on an H100 SXM (simulate/nccl/plan.h): 196 MiB at
  init and 288 MiB for the ring, the ring's taken on NCCL's proxy thread;
- roles at exit equal the program's sums: FSDP2's by shard (its DTensors'
  local tensors: weights and optimizer state); DDP's weights, optimizer
  state, and its gradient buckets as gradients (what DDP's constructor
  added to torch.cuda.memory_allocated()); ZeRO-2's flat 16-bit groups as
  weights, its fp32 partition and the AdamW state as optimizer state;
- the job's bundles -> export --format tables -> DuckDB, with
  docs/fleet.md's SQL: rank 1 failed first, every rank's last bundle has
  its site row, what each rank held equals the program's counts, and only
  rank 1 had failed calls.

The limits, measured (both world sizes): FSDP2's forward allocates at most
494 MiB and its backward 558 MiB, DDP's 581 and 645 MiB (its buckets and
the gradients' first 64 MiB); plus NCCL's 484 MiB, 1010 MiB and 1112 MiB
let the forward through and not the backward, after PyTorch has freed its
cache and retried. DDP runs because the simulated runtime keeps small copies
into device memory and NCCL leaves in them what every rank sending the same
would (docs/simulate-ranks.md): DDP's start-up reads back the ranks'
parameter counts and shapes.

With `killed` instead of a world size (FSDP2): two ranks, rank 1 killed by
SIGKILL after its forward pass once rank 0 (device 0 limited) has begun its
out-of-memory bundle in its backward: rank 0's bundle is complete (torchrun
ends rank 0 with SIGTERM once it sees rank 1 die; a bundle being written
then is finished first: docs/reliability.md, "The exit wait"), and
`gpumemrec report` reads it.

Usage: test_torchrun.py BUILD_BIN_DIR fsdp2|ddp|zero2 WORLD_SIZE|killed. Exit 77
without the frameworks venv or the simulated cuBLAS (the transformer's
matmuls).
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import frameworks_venv

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM = os.path.join(HERE, "train_ranks.py")
MiB = 1 << 20
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def load(path):
    with open(path) as f:
        return json.load(f)


def run_job(bindir, world, work, limit="1:1010MiB", extra=(), wrap="fsdp2"):
    sim = os.path.join(bindir, "simulate")
    libs = ["libcudart.so.13", "libcuda.so.1", "libnvidia-ml.so.1", "libnccl.so.2", "libcublas.so.13",
            "libcublasLt.so.13"]
    if not os.path.exists(os.path.join(sim, "libcublas.so.13")):
        frameworks_venv.skip("no simulated cuBLAS in %s" % sim)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_", "NCCL_"))}
    env.update(GPUMEMREC_SIMULATE="h100-80gb:8", GPUMEMREC_LIMIT=limit, GPUMEMREC_DUMP_AT_EXIT="1",
               GPUMEMREC_DIR=os.path.join(work, "dumps"), GPUMEMREC_MAX_DUMPS="0",
               LD_PRELOAD=":".join([os.path.join(bindir, "libgpumemrec.so")] + [os.path.join(sim, l) for l in libs]))
    venv = frameworks_venv.python_or_skip()
    torchrun = os.path.join(os.path.dirname(venv), "torchrun")
    out = os.path.join(work, "counts")
    os.makedirs(out)
    p = subprocess.run([torchrun, "--standalone", "--nproc-per-node", str(world), PROGRAM, wrap, out, "1"] + list(extra),
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=900)
    counts = {}
    for name in os.listdir(out):
        if name.endswith(".json"):
            c = load(os.path.join(out, name))
            counts[c["rank"]] = c
    check(p.returncode != 0, "torchrun reports the failed rank (exit %d)" % p.returncode)
    if "CUDA out of memory" not in p.stdout:
        print(p.stdout[-3000:])
    return counts


def rank_bundles(work):
    """{rank: {reason: bundle}}: rank 1 leaves its out-of-memory bundle and,
    as the exception ends it, an exit bundle; the others an exit bundle."""
    out = {}
    d = os.path.join(work, "dumps")
    for name in sorted(os.listdir(d)):
        meta = load(os.path.join(d, name, "metadata.json"))
        rank = meta.get("custom_metadata", {}).get("rank")
        if rank is not None:  # torchrun's own processes (no launcher variables) leave exit bundles too
            out.setdefault(rank, {})[meta["reason"]] = os.path.join(d, name)
    return out


def line_of(text):
    with open(PROGRAM) as f:
        return next(i for i, l in enumerate(f, 1) if l.strip() == text)


def failing_stack(bundle):
    meta = load(os.path.join(bundle, "metadata.json"))
    return {s["stack_id"]: s for s in load(os.path.join(bundle, "stacks.json"))}[meta["stack_id"]]


def failing_site(bundle):
    meta = load(os.path.join(bundle, "metadata.json"))
    stack = {s["stack_id"]: s for s in load(os.path.join(bundle, "stacks.json"))}[meta["stack_id"]]
    return stack["frames"][stack["site_frame"]]


BACKWARD_LINE = {"fsdp2": "loss.backward()", "ddp": "loss.backward()", "zero2": "model.backward(loss)"}
LIMIT = {"fsdp2": "1:1010MiB", "ddp": "1:1112MiB", "zero2": "1:1800MiB"}
# NCCL's device memory on rank 1's device: the world's communicator (its
# init and its ring) and, for DeepSpeed, its data-parallel group's (init only).
NCCL_BYTES = {"fsdp2": 196 * MiB + 288 * MiB, "ddp": 196 * MiB + 288 * MiB, "zero2": 2 * 196 * MiB + 288 * MiB}
SHARDING = {"fsdp2": "fsdp2", "ddp": None, "zero2": "deepspeed_zero1_2"}


def check_ranks(by_rank, world, counts, wrap):
    check(sorted(by_rank) == list(range(world)), "bundles of every rank: %s" % sorted(by_rank))
    for rank, bundles in by_rank.items():
        check(("limit" in bundles) == (rank == 1) and "exit" in bundles, "rank %d: bundles %s" % (rank, sorted(bundles)))
        for b in bundles.values():
            c = load(os.path.join(b, "metadata.json"))["custom_metadata"]
            check((c["local_rank"], c["world_size"]) == (rank, world), "rank %d: local rank, world size %s" % (rank, c))
    if "limit" not in by_rank.get(1, {}):
        return
    site = failing_site(by_rank[1]["limit"])
    if wrap == "zero2":
        # DeepSpeed's gradient hook runs Python on the autograd engine's
        # thread and allocates there: its own frames are DeepSpeed's, and the
        # frames of the thread waiting in model.backward(loss) are lent as
        # their callers (docs/design.md, "Borrowed Python frames").
        st = failing_stack(by_rank[1]["limit"])
        check(st.get("python_borrow") == "outer" and
              any(f.get("file", "").endswith("deepspeed/runtime/zero/stage_1_and_2.py") for f in st["frames"]),
              "rank 1's failing call: DeepSpeed's hook, its callers lent: %s" %
              {k: v for k, v in st.items() if k != "frames"})
    want = line_of(BACKWARD_LINE[wrap])
    check(site.get("line") == want and site.get("file", "").endswith("train_ranks.py"),
          "rank 1 failed at train_ranks.py:%d (%s): %s" % (want, BACKWARD_LINE[wrap], site))


def check_nccl(bundle, wrap):
    m = load(os.path.join(bundle, "metadata.json"))
    acct = {d["device"]: d for d in m["device_accounting"]}
    nccl = acct[1].get("recorded_by_library", {}).get("libnccl.so.2")
    check(nccl == NCCL_BYTES[wrap], "rank 1: libnccl.so.2 holds %s bytes, NCCL's %d" % (nccl, NCCL_BYTES[wrap]))
    stacks = load(os.path.join(bundle, "stacks.json"))
    native = [s for s in stacks if s.get("library") == "libnccl.so.2" and s.get("python") == "native_thread"]
    check(bool(native), "the ring's buffers: libnccl.so.2 stacks with no Python frame (NCCL's proxy thread)")


def check_roles(by_rank, counts, wrap):
    for rank, bundles in by_rank.items():
        b = bundles.get("limit", bundles.get("exit"))
        fw = os.path.join(b, "framework.json")
        roles = load(fw).get("roles") if os.path.exists(fw) else None
        if roles is None:
            check(False, "rank %d: framework.json has roles" % rank)
            continue
        want_sharding = SHARDING[wrap]
        check(roles.get("sharding") == want_sharding, "rank %d: sharding %s" % (rank, roles.get("sharding")))
        if wrap == "ddp" and rank == 1:
            got = roles["bytes"]["gradients"]
            check(got == counts[1]["ddp_constructed"],
                  "rank 1 at its out-of-memory: DDP's buckets are its gradients: %s, DDP() added %s" %
                  (got, counts[1].get("ddp_constructed")))
        if rank == 1:
            continue  # mid-backward: unsharded parameters are weights too
        keys = ("weights", "optimizer_state") + (("gradients",) if wrap == "ddp" else ())
        got = {k: roles["bytes"][k] for k in keys}
        want = {k: counts[rank]["ddp_constructed" if k == "gradients" else k] for k in keys}
        check(got == want, "rank %d at exit: roles %s, the program's counts %s (walk %s, %s ms, %s objects)" %
              (rank, got, want, roles.get("status"), roles.get("elapsed_ms"), roles.get("objects")))


ROLE_KEYS = {"fsdp2": ("weights", "optimizer_state"), "zero2": ("weights", "optimizer_state"),
             "ddp": ("weights", "optimizer_state", "gradients")}
FLEET_SCRIPT = """
import duckdb, json, sys
blocks, out = json.loads(sys.argv[1]), sys.argv[2]
con = duckdb.connect()
setup = "\\n".join(l for l in blocks["setup"].replace("'OUT/", "'" + out + "/").splitlines() if not l.startswith("--"))
for stmt in (s for s in setup.split(";\\n") if s.strip()):
    con.execute(stmt)
cols = lambda name: [d[0] for d in con.execute(blocks[name]).description]
rows = lambda name: [dict(zip(cols(name), r)) for r in con.execute(blocks[name]).fetchall()]
print(json.dumps({name: rows(name) for name in ("first_failure", "same_site", "roles", "failed_calls")},
                 default=str))
"""


def check_fleet(bindir, by_rank, work, counts, wrap):
    """The job's bundles through `export --format tables` into DuckDB, with
    docs/fleet.md's SQL as written: which rank failed first (rank 1), the
    sites of every rank's last bundle (each rank once), what each rank held
    (the roles at exit equal the program's counts, as framework.json's do),
    and which ranks had failed calls (rank 1 only)."""
    out = os.path.join(work, "tables")
    bundles = [b for per_rank in by_rank.values() for b in per_rank.values()]
    p = subprocess.run([os.path.join(bindir, "gpumemrec"), "export", "-f", "tables"] + bundles +
                       ["-o", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    check(p.returncode == 0, "export --format tables: %s" % p.stdout[-400:])
    text = open(os.path.join(ROOT, "docs", "fleet.md"), encoding="utf-8").read()
    blocks = dict(re.findall(r"```sql fleet:(\w+)\n(.*?)```", text, re.S))
    venv_python = frameworks_venv.python_or_skip()
    q = subprocess.run([venv_python, "-c", FLEET_SCRIPT, json.dumps(blocks), out], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    ans = json.loads(q.stdout.strip().splitlines()[-1]) if q.returncode == 0 else {}
    if not ans:
        check(False, "DuckDB ran docs/fleet.md's SQL: %s" % q.stdout[-600:])
        return
    first = [r["rank"] for r in ans["first_failure"]]
    check(first == [1], "DuckDB, fleet:first_failure: rank %s" % first)
    seen = sorted(rank for r in ans["same_site"] for rank in r["which_ranks"])
    check(seen == sorted(by_rank), "DuckDB, fleet:same_site: every rank's last bundle once: %s" % ans["same_site"])
    for r in ans["roles"]:
        if r["rank"] == 1 or r["rank"] not in counts:
            continue  # rank 1's exit came out of a failed backward
        got = {k: r["roles_" + k] for k in ROLE_KEYS[wrap]}
        want = {k: counts[r["rank"]]["ddp_constructed" if k == "gradients" else k] for k in ROLE_KEYS[wrap]}
        check(got == want, "DuckDB, fleet:roles: rank %d held %s, the program's counts %s" % (r["rank"], got, want))
    failed = {r["rank"]: r["failed_calls"] for r in ans["failed_calls"]}
    check(set(failed) == {1}, "DuckDB, fleet:failed_calls: failed calls by rank %s (rank 1's only)" % failed)


def killed_rank(bindir, work):
    run_job(bindir, 2, work, limit="0:1010MiB", extra=["1"])
    by_rank = rank_bundles(work)
    check(1 not in by_rank, "rank 1 (SIGKILL) left no bundle: %s" % sorted(by_rank.get(1, {})))
    b = by_rank.get(0, {}).get("limit")
    check(b is not None and os.path.exists(os.path.join(b, "manifest.json")),
          "rank 0's out-of-memory bundle is complete: %s" % sorted(by_rank.get(0, {})))
    if b is not None:
        p = subprocess.run([os.path.join(bindir, "gpumemrec"), "report", b], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        check(p.returncode == 0 and "libnccl.so.2" in p.stdout, "gpumemrec report reads it (NCCL's memory named)")


def training_job(bindir, wrap, world, work):
    counts = run_job(bindir, world, work, limit=LIMIT[wrap], wrap=wrap)
    by_rank = rank_bundles(work)
    check_ranks(by_rank, world, counts, wrap)
    if "limit" in by_rank.get(1, {}):
        check_nccl(by_rank[1]["limit"], wrap)
    check_roles(by_rank, counts, wrap)
    check_fleet(bindir, by_rank, work, counts, wrap)


def main():
    bindir, wrap, world = sys.argv[1], sys.argv[2], sys.argv[3]
    frameworks_venv.python_or_skip()
    work = tempfile.mkdtemp(prefix="gpumemrec-torchrun-")
    try:
        if world == "killed":
            killed_rank(bindir, work)
        else:
            training_job(bindir, wrap, int(world), work)
    except Exception:
        failures.append("raised")
        raise
    finally:
        finish(work)
    return 1 if failures else 0


def finish(work):
    if os.path.isdir(work):
        if not failures:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept " + work)
        print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
