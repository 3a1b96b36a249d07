"""Real PyTorch on a simulated card (GPUMEMREC_SIMULATE, docs/simulate.md)
for `gpumemrec top` to watch (tests/e2e/test_top.py, case top_torch): a
model, one training step (weights, gradients, AdamW's state, activations;
elementwise only: the simulated card has no cuBLAS yet),
then "READY" and commands on stdin, each answered "READY":
  grow   a 256 MiB tensor (a new segment of the caching allocator)
  oom    asks for more than the card holds and catches PyTorch's
         OutOfMemoryError: the Python hook hands the memory by role over
  quit"""
import sys

import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(1024, 4096))
        self.w2 = torch.nn.Parameter(torch.randn(4096))

    def forward(self, x):
        return (x * self.w1).relu().sum(0) * self.w2


def build_model():
    return Model().cuda()


def train_step(model, opt, x):
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    return loss


model = build_model()
opt = torch.optim.AdamW(model.parameters())
x = torch.randn(1024, 4096, device="cuda")
train_step(model, opt, x)
torch.cuda.synchronize()
kept = []
print("READY", flush=True)
for line in sys.stdin:
    if line.startswith("quit"):
        break
    if line.startswith("grow"):
        kept.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    if line.startswith("oom"):
        try:
            torch.empty(1 << 46, dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError:
            pass
    print("READY", flush=True)
