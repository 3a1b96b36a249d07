"""Memory by role, the hard cases (run_framework.py):

  roles_misc.py budget    200k junk objects, then an out-of-memory: with
                          GPUMEMREC_ROLES_BUDGET_MS=1 the walk stops early
  roles_misc.py hostile   modules and objects that raise when looked at,
                          then an out-of-memory
  roles_misc.py exit      no out-of-memory: a model and AdamW's state alive
                          at exit (GPUMEMREC_DUMP_AT_EXIT=1)
Prints its own count (roles_expect.py)."""
import sys

import torch
from roles_expect import block_bytes, say

from torch import nn

MiB = 1 << 20
KEPT = []


class Hostile(nn.Module):
    """Every attribute access raises once armed (a proxy gone wrong)."""
    armed = False

    def __getattribute__(self, name):
        if type(self).armed:
            raise RuntimeError("hostile module: no %s" % name)
        return object.__getattribute__(self, name)


class RaisingDict(dict):
    def items(self):
        raise RuntimeError("hostile parameters")


class NoStorage(nn.Parameter):
    """A tensor without a storage to show (as a sparse tensor's
    untyped_storage() raises)."""

    def untyped_storage(self):
        raise RuntimeError("no storage")


class Weird:
    def __getattr__(self, name):
        raise RuntimeError("weird: no %s" % name)

    @property
    def __class__(self):
        raise RuntimeError("weird: no class")


def fill(keep):
    for _ in range(1000):
        keep.append(torch.empty(8 * MiB, dtype=torch.uint8))


def main():
    mode = sys.argv[1]
    torch.cuda.init()
    model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 256))
    counted = list(model.parameters())
    extra = []
    if mode == "budget":
        extra = [[i] for i in range(200000)]
    if mode == "hostile":
        hostile = Hostile()
        hostile.w = nn.Parameter(torch.empty(1024))
        counted.append(hostile.w)
        bad = nn.Linear(64, 64)
        object.__setattr__(bad, "_parameters", RaisingDict(bad._parameters))
        holder = nn.Linear(128, 128)
        holder.odd = NoStorage(torch.empty(2048))  # skipped; the module's other parameters still count
        counted += [holder.weight, holder.bias]
        extra = [hostile, bad, holder, Weird()]
        Hostile.armed = True
    keep = []
    if mode != "exit":
        try:
            fill(keep)
        except torch.cuda.OutOfMemoryError as e:
            print("caught OutOfMemoryError: %s" % e)
        del keep
    else:
        opt = torch.optim.AdamW(model.parameters())
        model(torch.empty(64, 512)).sum().backward()
        opt.step()
        extra.append(opt)
        KEPT.extend([model, opt])  # alive at exit, as a script's globals are when atexit runs
    Hostile.armed = False
    w, wn = block_bytes(counted)
    g, gn = block_bytes([p.grad for p in model.parameters()])
    o, on = block_bytes([v for x in extra if type(x) is torch.optim.AdamW
                         for s in x.state.values() for v in s.values()])
    say(weights=w, weights_n=wn, gradients=g, gradients_n=gn, optimizer_state=o, optimizer_state_n=on,
        junk=len(extra))


main()
