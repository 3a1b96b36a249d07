"""Stand-in for torch/distributed/fsdp/_flat_param.py (tests only), after
pytorch/pytorch @ fe03cf693c7c774a88c01cd0bc52f80402b8437f, minimal:
FlatParamHandle flattens a module's parameters into one FlatParameter,
registered on the FSDP module as "_flat_param" (FLAT_PARAM), the original
parameters removed from their modules (use_orig_params=False); with
world_size ranks the FlatParameter keeps this rank's shard (_local_shard:
the flat parameter's own data); _full_param_padded, the all-gather target
of the padded unsharded size, is allocated and then freed by resizing its
storage to 0 (_free_storage) until unshard() gives it its memory back."""
from ... import empty
from ...nn.parameter import Parameter

FLAT_PARAM = "_flat_param"


class FlatParameter(Parameter):
    pass


def _free_storage(t):
    t.untyped_storage().resize_(0)


class FlatParamHandle:
    def __init__(self, params, fully_sharded_module, world_size=1):
        numel = sum(p.numel() for p in params)
        padded = (numel + world_size - 1) // world_size * world_size
        dtype = params[0].dtype
        for m in fully_sharded_module.named_modules():
            for name in [n for n, p in m[1]._parameters.items() if any(p is q for q in params)]:
                del m[1]._parameters[name]
        flat = FlatParameter(empty(padded // world_size, dtype=dtype))
        flat._local_shard = flat
        flat._padded_unsharded_size = (padded,)
        flat._full_param_padded = empty(padded, dtype=dtype)
        _free_storage(flat._full_param_padded)
        self.flat_param = flat
        fully_sharded_module.register_parameter(FLAT_PARAM, flat)

    def unshard(self):
        """_alloc_storage then the all-gather into _full_param_padded."""
        full = self.flat_param._full_param_padded
        full.untyped_storage().resize_(full.numel() * full.element_size())
