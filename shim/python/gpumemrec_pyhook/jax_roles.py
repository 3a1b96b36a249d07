"""JAX: live arrays by role at an uncaught RESOURCE_EXHAUSTED (framework.json
`roles`, the same shape as PyTorch's).

One gc walk (roles.py's, with its budget) for flax TrainState objects
(flax 0.12.8 flax/training/train_state.py: a struct.PyTreeNode whose
pytree fields are step, params and opt_state; `params` are weights,
`opt_state` optimizer state) and optax Adam states found alone (optax 0.2.8
optax/_src/transform.py, ScaleByAdamState(count, mu, nu), what
optax/_src/alias.py adam's first transformation keeps: optimizer state);
their leaves (jax.tree_util.tree_leaves) are matched by identity to
jax.live_arrays() (jax 0.10.2 jax/_src/api.py: the backend's own list of
its live ArrayImpl objects, the same objects the program holds), each array
counted once with on_device_size_in_bytes() (jax/_src/array.py). Checked
against the real packages: tests/python/run_real_jax.py. The other live arrays are "activations"; XLA's
temporaries inside a jit have no Python object and its arena's free space
is not known here: allocator_cache is 0 and the bytes add up to the live
arrays, not to a reserved total (a note says so). Where they come from is in
framework_memory_profile.pb.gz, by creation site.
"""
import sys
import time

from . import roles

# The more specific first: an array both name is the first one's.
_CLASSES = (("optax._src.transform", "ScaleByAdamState", (("mu", "optimizer_state"), ("nu", "optimizer_state"),
                                                          ("count", "optimizer_state"))),
            ("flax.training.train_state", "TrainState", (("params", "weights"), ("opt_state", "optimizer_state"))))


class _Examiner:
    def __init__(self, jax, live):
        self.leaves = jax.tree_util.tree_leaves
        self.live = live  # id -> array
        self.found = {}  # id -> (role, owner, name)
        self.failures = 0
        self.handlers = []
        for rank, (module, name, fields) in enumerate(_CLASSES):
            cls = getattr(sys.modules.get(module), name, None)
            if isinstance(cls, type):
                self.handlers.append((cls, (rank, fields)))
        self.kinds = {}

    def handler(self, cls):
        if cls not in self.kinds:
            self.kinds[cls] = next((f for base, f in self.handlers if issubclass(cls, base)), None)
        return self.kinds[cls]

    def examine(self, obj):
        rank, fields = self.handler(type(obj)) or (0, ())
        try:
            for attr, role in fields:
                for leaf in self.leaves(getattr(obj, attr)):
                    if id(leaf) in self.live and self.found.get(id(leaf), (rank + 1,))[0] > rank:
                        self.found[id(leaf)] = (rank, role, type(obj).__name__, attr)
        except Exception:
            self.failures += 1


def walk(jax, device, budget=None):
    budget = roles.budget_ms() if budget is None else budget
    t0 = time.perf_counter()
    out = roles.empty_result(budget, device)
    try:
        live = {id(a): a for a in jax.live_arrays()}
        examiner = _Examiner(jax, live)
        n, complete = roles.walk_without_collecting(examiner, roles.Deadline(budget))
        groups, total = {}, 0
        for key, arr in live.items():
            size = int(arr.on_device_size_in_bytes())
            total += size
            _, role, owner, name = examiner.found.get(key, (0, "activations", "", ""))
            out["bytes"][role] += size
            if role != "activations":
                out["tensors"][role] += 1
                groups[(role, owner, name)] = groups.get((role, owner, name), 0) + size
        out["top"] = roles.top_of(groups)
        out["objects"] = n
        out["status"] = "complete" if complete else "partial"
        out["notes"] = roles.walk_notes(budget, n, complete, examiner.failures, 0) + [
            "JAX: the roles add up to the live arrays (%d bytes); XLA's temporaries and its arena's free "
            "space are not known here" % total]
    except Exception as exc:
        out["notes"] = ["the walk failed: %s: %s" % (type(exc).__name__, exc)]
    out["elapsed_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
    return out
