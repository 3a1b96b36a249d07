#!/usr/bin/env python3
"""simulate.cublas_recorder, simulate.cudnn_recorder: the recorder
(libgpumemrec.so) sees the device memory a simulated library takes by itself,
and names that library as the caller: the library reaches the driver as
NVIDIA's does (dlopen, then cuGetProcAddress_v2), which the recorder hooks.
The program takes the library's memory once, then fails to on a full card:
the bundle's failing call is the library's, of the size it asks, its stack is
in the library, and the first time's allocation (and free, where the library
gives it back) are events from there too.

  cublas  blas_oom.cpp: cuBLAS's cuMemAllocAsync of its default 4 MiB pool
          (the Fake GPU's), allocated and freed by the first SGEMM
  cudnn   dnn_oom.cpp: the cuMemAlloc_v2 of 25,344 B cudnnCreate takes for a
          handle (simulate/dnn/handle.h); the first handle's stays live

Usage: recorder_library.py CASE PROGRAM (GPUMEMREC_BUILD_DIR set)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from gm_e2e import check, main, run  # noqa: E402

# case: (library, failing api, its size, the first time's event types)
CASES = {
    "cublas": ("libcublas.so.13", "cuMemAllocAsync", 4 << 20, ["allocation", "deallocation"]),
    "cudnn": ("libcudnn.so.9", "cuMemAlloc_v2", 25344, ["allocation"]),
}


def attribution(case):
    library, api, size, first = CASES[case]

    def in_library(bundle, stack_id):
        return any(f["module"].endswith(library) for f in bundle.frames(stack_id))

    r = run([sys.argv[2]])
    check(r.rc == 0, "%s exited %d\nstdout:%s\nstderr:%s" % (sys.argv[2], r.rc, r.stdout[-1500:], r.stderr[-1500:]))
    b = r.only_bundle()
    b.check_well_formed()
    md = b.metadata
    check(md["api"] == api, "failing call %s, expected %s's %s" % (md["api"], library, api))
    check(md["requested_bytes"] == size, "requested %s, expected %d bytes" % (md["requested_bytes"], size))
    check(in_library(b, md["stack_id"]), "failing stack not in %s: %s" % (library, b.frames(md["stack_id"])))
    kinds = set(e["event_type"] for e in b.events if in_library(b, e["stack_id"]) and e["api"].startswith("cuMem"))
    check(set(first) <= kinds, "the first time's %s are not events from %s: %s" % (first, library, sorted(kinds)))


if __name__ == "__main__":
    sys.exit(main({case: (lambda c=case: attribution(c)) for case in CASES}))
