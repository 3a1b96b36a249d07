"""Which object names which storage (roles.py's walk): PyTorch modules and
optimizers, and the documented attributes of the KV caches and sharding
frameworks, found by class in sys.modules (never imported by us).

Sources read:
- pytorch/pytorch torch/nn/modules/module.py @ 1a5f2e50: _parameters and
  _buffers live in the module's __dict__ (set by super().__setattr__).
- torch/optim/optimizer.py: `state` (defaultdict keyed by parameter, tensors
  such as exp_avg/exp_avg_sq/step) and `param_groups`.
- torch/distributed/fsdp/_flat_param.py @ fe03cf69 (FSDP1), FlatParameter's
  documented attributes: _local_shard, _full_param_padded, _mp_shard (all
  parameter data: weights), _saved_grad_shard, _cpu_grad (gradients),
  _params/_shared_params (the original parameters, views of the flat one).
- torch/distributed/fsdp/_fully_shard/_fsdp_param.py @ 010ae4a8 (FSDP2):
  FSDPParam._sharded_param_data, _unsharded_param, all_gather_outputs
  (weights), unsharded_accumulated_grad (gradients); the module's parameters
  are DTensors (their storage: __tensor_flatten__'s inner tensors, as
  torch/distributed/_tools/common_utils.py::get_untyped_storages does).
- torch/nn/parallel/distributed.py (2.14.1, the installed wheel):
  DistributedDataParallel keeps its gradient buckets in the C++ Reducer,
  with no Python attribute that holds them; _get_ddp_logging_data() gives
  their sizes in bytes ("bucket_sizes", "rebuilt_bucket_sizes" once
  "has_rebuilt_buckets" is 1; torch/csrc/distributed/c10d/logger.cpp) and
  "gradient_as_bucket_view". Each bucket is one allocation of exactly its
  size (reducer.cpp, initialize_buckets: at::empty of the bucket's numel),
  so the walk names the unclaimed allocator block whose requested_size is a
  bucket's size (roles.py, claim_by_size): gradients.
- deepspeedai/DeepSpeed @ edaa7221: deepspeed/runtime/zero/stage_1_and_2.py
  (bit16_groups_flat: the 16-bit parameters; single_partition_of_fp32_groups:
  fp32 master partitions, the inner optimizer's parameters),
  deepspeed/runtime/zero/stage3.py (fp16_partitioned_groups_flat,
  fp32_partitioned_groups_flat, grad_partitions_flat_buffer),
  partition_parameters.py (param.ds_tensor: a parameter's ZeRO-3 shard).
  DeepSpeed's own estimators count fp32 master copies as optimizer state:
  so does this walk, for any tensor an optimizer updates that no module holds.
- huggingface/transformers src/transformers/cache_utils.py @ 67dd5524:
  Cache.layers[i].keys/.values; older releases: key_cache/value_cache lists.
- vllm-project/vllm vllm/v1/worker/gpu_model_runner.py @ 35d5cda1:
  GPUModelRunner.kv_caches.
- sgl-project/sglang python/sglang/srt/mem_cache/memory_pool.py @ 14c3feee:
  MHATokenToKVPool.k_buffer/v_buffer (per-layer lists).
A tensor attribute of these framework objects that is not listed is counted
as "unknown", with a note naming it.
"""
import sys

# (module, class, sharding or None, {attribute: role})
FRAMEWORK_OBJECTS = (
    ("transformers.cache_utils", "Cache", None, {"key_cache": "kv_cache", "value_cache": "kv_cache"}),
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", None, {"kv_caches": "kv_cache"}),
    ("sglang.srt.mem_cache.memory_pool", "MHATokenToKVPool", None, {"k_buffer": "kv_cache", "v_buffer": "kv_cache"}),
    ("torch.distributed.fsdp._fully_shard._fsdp_param", "FSDPParam", "fsdp2",
     {"_sharded_param_data": "weights", "_unsharded_param": "weights", "all_gather_outputs": "weights",
      "unsharded_accumulated_grad": "gradients", "sharded_param": "weights"}),
    ("deepspeed.runtime.zero.stage_1_and_2", "DeepSpeedZeroOptimizer", "deepspeed_zero1_2",
     {"bit16_groups_flat": "weights", "single_partition_of_fp32_groups": "optimizer_state"}),
    ("deepspeed.runtime.zero.stage3", "DeepSpeedZeroOptimizer_Stage3", "deepspeed_zero3",
     {"fp16_partitioned_groups_flat": "weights", "fp32_partitioned_groups_flat": "optimizer_state",
      "grad_partitions_flat_buffer": "gradients"}),
)
FLAT_PARAM = ("torch.distributed.fsdp._flat_param", "FlatParameter")
FLAT_PARAM_ATTRS = {"_local_shard": "weights", "_full_param_padded": "weights", "_mp_shard": "weights",
                    "_saved_grad_shard": "gradients", "_cpu_grad": "gradients", "_params": "weights",
                    "_shared_params": "weights"}
_MISSING = object()


def _class(module, name):
    mod = sys.modules.get(module)
    cls = getattr(mod, name, None) if mod is not None else None
    return cls if isinstance(cls, type) else None


def _dict(obj):
    """The instance dict, without running a user __getattribute__/__getattr__."""
    d = object.__getattribute__(obj, "__dict__")
    return d if isinstance(d, dict) else {}


class Examiner:
    def __init__(self, torch, claims):
        self.claims = claims
        self.tensor_type = torch.Tensor
        self.sharding = None
        self.notes = set()
        self.failures = 0
        self.kinds = {}
        self.optimizer_params = []
        self.handlers = [(c, self._framework_object(sh, attrs)) for m, n, sh, attrs in FRAMEWORK_OBJECTS
                         for c in [_class(m, n)] if c is not None]
        self.handlers += [(torch.nn.Module, self._module), (torch.optim.Optimizer, self._optimizer)]
        self.flat_param = _class(*FLAT_PARAM)
        self.fsdp2_module = _class("torch.distributed.fsdp._fully_shard._fully_shard", "FSDPModule")
        self.ddp_module = _class("torch.nn.parallel.distributed", "DistributedDataParallel")
        # Storages known only by their size: (sizes, role, owner, name), for
        # roles.claim_by_size.
        self.by_size = []

    def handler(self, cls):
        """The handler of objects of type cls, or None (kept per type)."""
        h = self.kinds.get(cls, _MISSING)
        if h is _MISSING:
            h = self.kinds[cls] = self._handler_for(cls)
        return h

    def examine(self, obj):
        h = self.handler(type(obj))
        if h is not None:
            try:
                h(obj)
            except Exception:
                self.failures += 1

    def _handler_for(self, cls):
        try:
            for base, h in self.handlers:
                if issubclass(cls, base):
                    return h
        except Exception:
            self.failures += 1
        return None

    def finish(self, complete=True):
        """An optimizer's parameters that no module holds: master copies,
        when the walk saw every object. After a partial walk an unseen
        module may hold them (the usual case: the model's own parameters),
        so they are weights, said in a note, never optimizer state by
        elimination. A DTensor parameter (FSDP2) is looked up by its local
        tensor's storage (a DTensor has no storage of its own)."""
        role = "optimizer_state" if complete else "weights"
        unheld = 0
        for p, owner in self.optimizer_params:
            try:
                ptrs = [st.data_ptr() for st in self.claims.storages(p)]
                if ptrs and not any(ptr in self.claims.by_ptr for ptr in ptrs):
                    self.claims.add(p, role, owner, "param_groups.params")
                    self._grad(p, owner, "param_groups.params")
                    unheld += 1
            except Exception:
                self.failures += 1
        if unheld and not complete:
            self.notes.add("%d optimizer parameter(s) held by no module the partial walk reached: counted as "
                           "weights (master copies cannot be told from the model's parameters)" % unheld)

    def _grad(self, p, owner, name):
        g = p.grad
        if g is not None:
            self.claims.add(g, "gradients", owner, name + ".grad")

    def _module(self, m):
        d = _dict(m)
        owner = type(m).__name__
        if self.fsdp2_module is not None and isinstance(m, self.fsdp2_module):
            self._shard("fsdp2")
        if self.ddp_module is not None and isinstance(m, self.ddp_module):
            self._ddp_buckets(m, d)
        for name, p in list(d.get("_parameters", {}).items()):
            if p is None:
                continue
            self.claims.add(p, "weights", owner, name)
            self._grad(p, owner, name)
            self._parameter_extras(p, owner, name)
        for name, b in list(d.get("_buffers", {}).items()):
            if b is not None:
                self.claims.add(b, "weights", owner, name)

    def _parameter_extras(self, p, owner, name):
        extra = _dict(p)
        if self.flat_param is not None and isinstance(p, self.flat_param):
            self._shard("fsdp")
            self._attributes("FlatParameter", extra, FLAT_PARAM_ATTRS)
        ds = extra.get("ds_tensor")
        if ds is not None:  # DeepSpeed ZeRO-3: the parameter's own shard
            self._shard("deepspeed_zero3")
            self.claims.add(ds, "weights", owner, name + ".ds_tensor")

    def _ddp_buckets(self, m, d):
        """DDP's gradient buckets, by their sizes (the class's own method,
        never an override: it reads the C++ logger's record)."""
        dev = d.get("device")  # its parameters' device (distributed.py: self.device)
        if getattr(dev, "type", None) != "cuda" or (dev.index if dev.index is not None else 0) != self.claims.device:
            return
        data = self.ddp_module._get_ddp_logging_data(m)
        key = "rebuilt_bucket_sizes" if data.get("has_rebuilt_buckets") else "bucket_sizes"
        sizes = [int(x) for x in str(data.get(key, "")).split(",") if x.strip()]
        if sizes:
            self.by_size.append((sizes, "gradients", type(m).__name__, "reducer bucket"))

    def _optimizer(self, opt):
        d = _dict(opt)
        owner = type(opt).__name__
        for per_param in list(d.get("state", {}).values()):
            for key, v in list(per_param.items()):
                self.claims.add(v, "optimizer_state", owner, "state.%s" % key)
        for group in list(d.get("param_groups", [])):
            self.optimizer_params += [(p, owner) for p in group.get("params", []) if isinstance(p, self.tensor_type)]

    def _framework_object(self, sharding, attrs):
        def examine(obj):
            if sharding:
                self._shard(sharding)
            owner = type(obj).__name__
            d = _dict(obj)
            layers = d.get("layers")
            if isinstance(layers, (list, tuple)):  # transformers' Cache.layers[i].keys/.values
                for layer in layers:
                    self._attributes(owner, _dict(layer), {"keys": "kv_cache", "values": "kv_cache"}, "layers.")
            self._attributes(owner, d, attrs)
        return examine

    def _attributes(self, owner, d, attrs, prefix=""):
        for name, value in list(d.items()):
            tensors = self._tensors(value)
            if not tensors:
                continue
            role = attrs.get(name)
            if role is None:
                if not prefix:
                    role = "unknown"
                    self.notes.add("%s.%s: a tensor attribute whose role is not documented (counted as unknown)"
                                   % (owner, name))
                else:
                    continue
            for t in tensors:
                self.claims.add(t, role, owner, prefix + name)

    def _tensors(self, value):
        if isinstance(value, self.tensor_type):
            return [value]
        if isinstance(value, (list, tuple)):
            out = []
            for v in value[:100000]:
                if isinstance(v, self.tensor_type):
                    out.append(v)
                elif isinstance(v, (list, tuple)):
                    out += [x for x in v if isinstance(x, self.tensor_type)]
            return out
        return []

    def _shard(self, kind):
        if self.sharding is None:
            self.sharding = kind
        elif self.sharding != kind:
            self.notes.add("more than one sharding scheme seen: %s and %s" % (self.sharding, kind))
