#!/usr/bin/env python3
"""simulate.cublas_recorder: the recorder (libgpumemrec.so) sees the device
memory the simulated cuBLAS takes by itself, and names libcublas.so.13 as the
caller: the library reaches the driver as NVIDIA's does (dlopen, then
cuGetProcAddress_v2), which the recorder hooks. blas_oom.cpp takes the
default workspace once, then fails to on a full card: the bundle's failing
call is cuBLAS's cuMemAllocAsync of the 4 MiB pool (the Fake GPU's), its
stack is in libcublas.so.13, and the first call's allocation and free are
events from there too.

Usage: recorder_blas.py attribution BLAS_OOM (GPUMEMREC_BUILD_DIR set)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from gm_e2e import check, main, run  # noqa: E402

POOL = 4 << 20


def in_libcublas(bundle, stack_id):
    return any(f["module"].endswith("libcublas.so.13") for f in bundle.frames(stack_id))


def attribution():
    r = run([sys.argv[2]])
    check(r.rc == 0, "blas_oom exited %d\nstdout:%s\nstderr:%s" % (r.rc, r.stdout[-1500:], r.stderr[-1500:]))
    b = r.only_bundle()
    b.check_well_formed()
    md = b.metadata
    check(md["api"] == "cuMemAllocAsync", "failing call %s, expected cuBLAS's cuMemAllocAsync" % md["api"])
    check(md["requested_bytes"] == POOL, "requested %s, expected the %d-byte pool" % (md["requested_bytes"], POOL))
    check(in_libcublas(b, md["stack_id"]), "failing stack not in libcublas.so.13: %s" % b.frames(md["stack_id"]))
    mine = [e for e in b.events if e["api"] in ("cuMemAllocAsync", "cuMemFreeAsync") and in_libcublas(b, e["stack_id"])]
    kinds = sorted(e["event_type"] for e in mine)
    check("allocation" in kinds and "deallocation" in kinds,
          "the first SGEMM's pool allocation and free are not events from libcublas: %s" % kinds)


if __name__ == "__main__":
    sys.exit(main({"attribution": attribution}))
