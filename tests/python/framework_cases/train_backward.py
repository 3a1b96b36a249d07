"""A small MLP trained with AdamW; the batch doubles until backward runs out
of memory on the stand-in's native autograd engine thread (the observer
runs there). Then prints its own count of parameter (with a buffer and a
tied weight), gradient and optimizer-state bytes (roles_expect.py).
Runs on the real PyTorch too (scripts/gpu_validate, hook_torch_roles): every
tensor is made on "cuda" explicitly; the shapes keep each tensor in the
small pool (at most 1 MiB), where c10 splits any remainder off, so a
parameter's block is its size rounded to 512 bytes."""
import threading

import torch
from roles_expect import block_bytes, say

from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(256, 512, device="cuda")
        self.act = nn.ReLU()
        self.mid = nn.Linear(512, 512, device="cuda")
        self.out = nn.Linear(512, 256, device="cuda")
        self.out2 = nn.Linear(512, 256, device="cuda")
        self.out2.weight = self.out.weight  # tied: one storage
        self.register_buffer("scale", torch.empty(256, device="cuda"))

    def forward(self, x):
        return self.out(self.act(self.mid(self.act(self.inp(x)))))


def main():
    torch.cuda.init()
    observed = []  # the program's own observer: on which thread PyTorch calls it
    torch._C._cuda_attach_out_of_memory_observer(
        lambda *a: observed.append(threading.current_thread() is threading.main_thread()))
    model = MLP()
    opt = torch.optim.AdamW(model.parameters())
    batch, where = 64, None
    try:
        while True:
            batch *= 2
            where = "forward"
            x = torch.empty(batch, 256, device="cuda")
            loss = model(x).sum()
            where = "backward"
            loss.backward()
            where = "step"
            opt.step()
            opt.zero_grad()
            del loss, x
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError in %s at batch %d: %s" % (where, batch, e))
    params = list(model.parameters()) + list(model.buffers())
    state = [v for s in opt.state.values() for v in s.values()]
    w, wn = block_bytes(params)
    g, gn = block_bytes([p.grad for p in model.parameters()])
    o, on = block_bytes(state)
    nodes = getattr(torch, "_autograd_nodes", None)  # the stand-in's count of saved-tensor unpacks
    say(weights=w, gradients=g, optimizer_state=o, weights_n=wn, gradients_n=gn, optimizer_state_n=on,
        where=where, unpacks=nodes.unpacks[0] if nodes else None, observer_on_main=observed)


main()
