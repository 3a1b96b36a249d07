#!/usr/bin/env python3
"""export --format tables on bundles the shim wrote for the ranks of a job
(torchrun's RANK/LOCAL_RANK/WORLD_SIZE and TORCHELASTIC_RUN_ID, as
launcher_env.h reads them): the bundles table says each bundle's rank,
local rank, world size, job id and pid, from its events.json; a process
without launcher variables is rank 0 of 1 with no job."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

from gm_e2e import TOOL, check, main, program, run

CHUNK = 16 << 20


def rows(out, table):
    d = os.path.join(out, table)
    got = []
    for name in sorted(os.listdir(d)):
        with gzip.open(os.path.join(d, name), "rt") as f:
            got += [json.loads(line) for line in f]
    return got


def fleet_ranks():
    bundles, want = [], {}
    for rank in range(3):
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank % 2), "WORLD_SIZE": "3", "TORCHELASTIC_RUN_ID": "job-7"}
        b = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], capacity=CHUNK, env_extra=env).only_bundle()
        bundles.append(b)
        want[b.name] = (rank, rank % 2, 3, "job-7", b.manifest["pid"])
    alone = run([program("rt_linked"), "cudaMalloc", str(CHUNK)], capacity=CHUNK).only_bundle()
    bundles.append(alone)
    want[alone.name] = (0, 0, 1, None, alone.manifest["pid"])
    if not os.path.exists(TOOL):  # the sanitizer builds (scripts/sanitizers.sh) build the shim, not the CLI
        return
    out = os.path.join(tempfile.mkdtemp(prefix="gpumemrec-fleet-"), "tables")
    p = subprocess.run([TOOL, "export", "-f", "tables"] + [b.path for b in bundles] + ["-o", out],
                       capture_output=True, text=True)
    check(p.returncode == 0, "export: exit %d: %s" % (p.returncode, p.stderr[-800:]))
    got = {r["bundle_id"]: (r["rank"], r["local_rank"], r["world_size"], r["job_id"], r["pid"])
           for r in rows(out, "bundles")}
    check(got == want, "bundles table: %s, want %s" % (got, want))
    events = rows(out, "events")
    for b in bundles:
        mine = [e for e in events if e["bundle_id"] == b.name]
        check(len(mine) == b.manifest["event_count"], "%s: %d event rows, %d events" %
              (b.name, len(mine), b.manifest["event_count"]))
        check([e["seq"] for e in mine] == [e["seq"] for e in b.events], b.name + ": events out of order")
    print("fleet_ranks: %d bundles, %d event rows" % (len(bundles), len(events)))


if __name__ == "__main__":
    sys.exit(main({"fleet_ranks": fleet_ranks}))
