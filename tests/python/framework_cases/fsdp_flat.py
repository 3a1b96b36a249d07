"""FSDP1-like flat parameters (stand-in torch.distributed.fsdp._flat_param):
the model's parameters flattened into one FlatParameter (this rank's
shard, world size 2), unsharded for the forward (_full_param_padded), an
extra tensor attribute no documentation names; activations grow until out
of memory. Prints its own count (roles_expect.py)."""
import torch
from roles_expect import block_bytes, say
from torch.distributed.fsdp._flat_param import FlatParamHandle

from torch import nn


def main():
    torch.cuda.init()
    wrapper = nn.Module()
    wrapper.inner = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512))
    handle = FlatParamHandle(list(wrapper.inner.parameters()), wrapper, world_size=2)
    flat = handle.flat_param
    flat._gmr_undocumented = torch.empty(1024)
    handle.unshard()
    keep = []
    try:
        while True:
            keep.append(torch.empty(1024, 1024))
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError: %s" % e)
    del keep
    w, wn = block_bytes([flat, flat._full_param_padded])
    u, un = block_bytes([flat._gmr_undocumented])
    say(weights=w, weights_n=wn, unknown=u, unknown_n=un)


main()
