"""Does a training step fit on the card? A GPT-2-small-shaped model (124M
parameters: 12 layers, width 768, 12 heads, 1024 tokens, GPT-2's vocabulary)
trained with AdamW in float32 at the batch size given, on whatever CUDA
device the program finds: a real one, or a simulated one under
`gpumemrec run --simulate h100-80gb`. Nothing is downloaded; the weights
are random.

  python train_gpt.py [--batch 64] [--steps 2]

It prints "fits" and PyTorch's peak when every step ran; when a step does
not fit, PyTorch raises torch.OutOfMemoryError and the program dies of it,
as a training script would (the recorder's bundle says what held the card).
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.transpose(1, 3).unbind(2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers=12, width=768, heads=12, seq=1024, vocab=50257):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    vocab, seq = model.head.out_features, model.pos.num_embeddings
    print("%s: %d parameters, batch %d x %d tokens" % (
        torch.cuda.get_device_name(), sum(p.numel() for p in model.parameters()), args.batch, seq))
    for step in range(args.steps):
        idx = torch.randint(0, vocab, (args.batch, seq), device="cuda")
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, vocab), idx.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print("step %d done" % step)
    print("fits: peak %.2f GiB reserved by PyTorch" % (torch.cuda.max_memory_reserved() / 2**30))


if __name__ == "__main__":
    main()
