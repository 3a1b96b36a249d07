#!/usr/bin/env python3
"""python.roles_claim_by_size: roles.claim_by_size (shim/python/gpumemrec_pyhook/roles.py),
which names DDP's gradient buckets by their sizes, on allocator snapshots
written here in the layout torch.cuda.memory._snapshot() gives (segments of
blocks with address, size, requested_size, state): a size names one block
no object holds, the lowest address first, never a claimed or freed block,
each block once; a size no block has is a note, never a guess. The real DDP
is checked by simulate.torchrun_ddp_*."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shim", "python"))
from gpumemrec_pyhook import roles  # noqa: E402


class Claims:
    def __init__(self, by_ptr):
        self.by_ptr, self.notes = dict(by_ptr), set()


def block(addr, size, req, state="active_allocated"):
    return {"address": addr, "size": size, "requested_size": req, "state": state}


def main():
    snap = {"segments": [
        {"device": 0, "total_size": 1 << 22, "blocks": [
            block(0x3000, 1024, 1000), block(0x1000, 1024, 1000), block(0x2000, 2048, 1000, "inactive"),
            block(0x5000, 512, 300), block(0x6000, 512, 300)]},
        {"device": 1, "total_size": 1 << 21, "blocks": [block(0x9000, 1024, 1000)]}]}
    claims = Claims({0x5000: ("weights", "Linear", "weight")})
    roles.claim_by_size(claims, snap, 0, [([1000, 1000, 1000, 300], "gradients", "DistributedDataParallel",
                                          "reducer bucket")])
    failures = []
    want = {0x1000: ("gradients", "DistributedDataParallel", "reducer bucket"),
            0x3000: ("gradients", "DistributedDataParallel", "reducer bucket"),
            0x5000: ("weights", "Linear", "weight"),
            0x6000: ("gradients", "DistributedDataParallel", "reducer bucket")}
    if claims.by_ptr != want:
        failures.append("claims %s, expected %s" % (claims.by_ptr, want))
    notes = sorted(claims.notes)
    if len(notes) != 1 or not notes[0].startswith("1 of DistributedDataParallel's 4 reducer bucket(s) not found"):
        failures.append("notes %s" % notes)
    for f in failures:
        print("FAIL " + f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
