"""Memory by role at a PyTorch out-of-memory (and at exit): one walk of
gc.get_objects() that names the CUDA storages of one device as weights,
gradients, optimizer state, KV cache or unknown, matched by address to the
allocator snapshot's active blocks; what no walked object names is
"activations" (activations and temporaries), reserved minus allocated is
"allocator_cache". The roles' bytes add up to the reserved bytes exactly.

Runs inside the OOM observer (GIL held) or an atexit handler: no GPU
allocation, no user code: module parameters and buffers are read from the
module's own dicts (_parameters, _buffers: torch/nn/modules/module.py keeps
them in the instance __dict__), never through overridable methods; autograd
nodes are not walked (reading `_saved_*` runs unpack hooks that may
recompute or copy to the GPU: torch/utils/checkpoint.py, save_on_cpu in
torch/autograd/graph.py), so saved activations are in "activations". Each
object is examined inside try/except; the walk stops at a time budget
(GPUMEMREC_ROLES_BUDGET_MS, default 1000, of this thread's CPU time; at
WALL_FACTOR times it in wall time on a machine too loaded to give it the
CPU) with status "partial".

Identity: untyped_storage().data_ptr() is the base address of the storage's
allocation, the snapshot block's "address" (torch/cuda/memory.py,
_allocation_traceback / _annotate_memory, pytorch/pytorch @ 00b65a04); a
storage is counted once however many tensors or views share it.
Sources of each role's attributes: framework_roles.py.
"""
import gc
import itertools
import os
import time

from . import framework_roles as known

NAMED = ("weights", "gradients", "optimizer_state", "kv_cache", "unknown")
ALL = NAMED + ("activations", "allocator_cache")
DEFAULT_BUDGET_MS = 1000
# The budget is CPU time of the walking thread, so a loaded machine (a CI
# job's other ranks, a build) does not cut the walk short and leave roles
# that depend on the load; the wall clock stops it at WALL_FACTOR times
# the budget whatever the load (the shim's episode waits for the report up
# to 4 budgets: shim/dump/dumper.cpp, hold_for_framework).
WALL_FACTOR = 3
CHECK_EVERY = 4096  # objects between two looks at the clock
TOP = 10
MAX_NOTES = 20


def budget_ms():
    text = os.environ.get("GPUMEMREC_ROLES_BUDGET_MS", "").strip()
    try:
        n = int(text)
        return n if 0 < n <= 3600000 else DEFAULT_BUDGET_MS
    except ValueError:
        return DEFAULT_BUDGET_MS  # common/config.cpp said so already


def active_blocks(snapshot, device, requested=None):
    """{address: size} of the device's allocated blocks, reserved bytes.
    "active_allocated" only, as the segments' allocated_size counts them
    (torch/csrc/cuda/memory_snapshot.cpp); "active_pending_free" blocks
    (freed, waiting for their stream events) are cache, like "inactive".
    With a dict `requested`, also fills {address: requested_size}."""
    blocks, reserved = {}, 0
    for seg in snapshot.get("segments", []):
        if seg.get("device", device) != device:
            continue
        reserved += int(seg.get("total_size", 0))
        for b in seg.get("blocks", []):
            if b.get("state") == "active_allocated":
                blocks[int(b.get("address", 0))] = int(b.get("size", 0))
                if requested is not None:
                    requested[int(b.get("address", 0))] = int(b.get("requested_size", -1))
    return blocks, reserved


def claim_by_size(claims, snapshot, device, wanted):
    """Storages no object holds but whose exact sizes a framework reports
    (DDP's gradient buckets: framework_roles.Examiner.by_size): each size
    names one unclaimed block whose requested_size equals it, the lowest
    address first. A size no block has is said in a note, never guessed.
    Nothing wanted (no DDP): nothing read."""
    if not wanted:
        return
    requested = {}
    active_blocks(snapshot, device, requested)
    free = {}
    for ptr in sorted(requested):
        if ptr not in claims.by_ptr:
            free.setdefault(requested[ptr], []).append(ptr)
    for sizes, role, owner, name in wanted:
        missing = 0
        for size in sizes:
            ptrs = free.get(size)
            if ptrs:
                claims.by_ptr[ptrs.pop(0)] = (role, owner, name)
            else:
                missing += 1
        if missing:
            claims.notes.add("%d of %s's %d %s(s) not found by size among the blocks no object names: counted "
                             "in activations (with gradient_as_bucket_view, buckets are the gradients' storage, "
                             "named through .grad)" % (missing, owner, len(sizes), name))


class _Claims:
    """Storages found so far: address -> (role, owner, name); the first
    role in NAMED's order wins when two objects name one storage."""

    def __init__(self, torch, device):
        self.tensor_type = torch.Tensor
        self.device = device
        self.by_ptr = {}
        self.notes = set()
        self.failures = 0

    def add(self, t, role, owner, name):
        try:
            for st in self.storages(t):
                ptr = st.data_ptr()
                old = self.by_ptr.get(ptr)
                if ptr and (old is None or NAMED.index(role) < NAMED.index(old[0])):
                    self.by_ptr[ptr] = (role, owner, name)
        except Exception:  # no storage (sparse, a subclass that refuses): skipped
            self.failures += 1

    def storages(self, t, depth=0):
        """The device's storages of t: a wrapper subclass's (DTensor) are its
        inner tensors' (it has none of its own: untyped_storage() raises)."""
        if not isinstance(t, self.tensor_type) or depth > 4:
            return
        flatten = getattr(type(t), "__tensor_flatten__", None)
        if flatten is not None:  # a wrapper subclass (DTensor): its inner tensors
            for inner in flatten(t)[0]:
                yield from self.storages(getattr(t, inner), depth + 1)
            return
        dev = t.device
        if dev.type == "cuda" and (dev.index if dev.index is not None else 0) == self.device:
            yield t.untyped_storage()


def empty_result(budget, device):
    return {"status": "failed", "elapsed_ms": 0.0, "objects": 0, "budget_ms": budget, "device": int(device),
            "bytes": dict.fromkeys(ALL, 0), "tensors": dict.fromkeys(NAMED, 0), "top": [], "sharding": None,
            "notes": []}


def walk_notes(budget, n, complete, object_failures, tensor_failures):
    notes = []
    if not complete:
        notes.append("the walk stopped at its time budget (%d ms) after %d objects: "
                     "what it did not reach is counted in activations" % (budget, n))
    if object_failures or tensor_failures:
        notes.append("%d object(s) and %d tensor(s) raised while examined (skipped)"
                     % (object_failures, tensor_failures))
    return notes


def top_of(groups):
    """The TOP largest (role, owner, name) groups, as framework.json lists them."""
    top = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
    return [{"role": r, "owner": o, "name": n, "bytes": b} for (r, o, n), b in top]


def walk(torch, snapshot, device, budget=None):
    """The `roles` object of framework.json (docs/bundle-format.md)."""
    budget = budget_ms() if budget is None else budget
    t0 = time.perf_counter()
    out = empty_result(budget, device)
    try:
        claims = _Claims(torch, device)
        examiner = known.Examiner(torch, claims)
        n, complete = walk_without_collecting(examiner, Deadline(budget))
        out["objects"] = n
        examiner.finish(complete)
        claim_by_size(claims, snapshot, device, examiner.by_size)
        _tally(out, claims, snapshot, device)
        out["status"] = "complete" if complete else "partial"
        out["sharding"] = examiner.sharding
        out["notes"] = (walk_notes(budget, n, complete, examiner.failures, claims.failures)
                        + sorted(claims.notes | examiner.notes))[:MAX_NOTES]
    except Exception as exc:  # the digest goes out without roles
        out["notes"] = ["the walk failed: %s: %s" % (type(exc).__name__, exc)]
    out["elapsed_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
    return out


class Deadline:
    """Past when the walking thread has used `budget_ms` of CPU time, or
    WALL_FACTOR times that of wall time, from now."""

    def __init__(self, budget_ms):
        self.cpu = time.thread_time() + budget_ms / 1000.0
        self.wall = time.perf_counter() + WALL_FACTOR * budget_ms / 1000.0

    def passed(self):
        return time.thread_time() > self.cpu or time.perf_counter() > self.wall


def walk_without_collecting(examiner, deadline):
    """The walk with the cyclic collector off: a collection in the middle
    would run finalizers (user code) and free tensors under the walk."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        objects = gc.get_objects()
        return _examine_all(objects, examiner, deadline)
    finally:
        objects = None
        if was_enabled:
            gc.enable()


def _examine_all(objects, examiner, deadline):
    """Examines objects until the deadline: (how many, whether all). The
    per-object work is C iteration (map, compress) over their types; only
    objects of a type with a handler reach Python code."""
    passed = deadline.passed
    wanted = set()
    for cls in set(map(type, objects)):
        if examiner.handler(cls) is not None:
            wanted.add(cls)
    wanted_type = wanted.__contains__
    examine = examiner.examine
    for start in range(0, len(objects), CHECK_EVERY):
        if passed():
            return start, False
        chunk = objects[start:start + CHECK_EVERY]
        for obj in itertools.compress(chunk, map(wanted_type, map(type, chunk))):
            examine(obj)
    return len(objects), True


def _tally(out, claims, snapshot, device):
    blocks, reserved = active_blocks(snapshot, device)
    allocated = sum(blocks.values())
    groups, unmatched = {}, 0
    for ptr, (role, owner, name) in claims.by_ptr.items():
        size = blocks.get(ptr)
        if size is None:
            unmatched += 1  # not a block of the caching allocator (another allocator, freed, resized to 0)
            continue
        out["bytes"][role] += size
        out["tensors"][role] += 1
        key = (role, owner, name)
        groups[key] = groups.get(key, 0) + size
    named = sum(out["bytes"][r] for r in NAMED)
    out["bytes"]["activations"] = allocated - named
    out["bytes"]["allocator_cache"] = reserved - allocated
    out["top"] = top_of(groups)
    if unmatched:
        claims.notes.add("%d storage(s) on the device are not blocks of PyTorch's caching allocator "
                         "(not counted)" % unmatched)
