"""A decoder-only transformer (GPT-2's shape: token and position
embeddings, pre-norm blocks of causal attention and a 4x MLP, a tied output
head) trained with AdamW on a simulated card, gradients kept between steps
(zero_grad(set_to_none=False)). One step at batch 1 makes the gradients and
the optimizer state; the next, at a batch whose forward fits and whose
backward cannot (backward_oom_batch), runs out of memory in backward, on
PyTorch's autograd device thread. Then it prints its own count by role and
PyTorch's counters (expect.py).

  gpt_train.py [--layers N] [--width D] [--heads H] [--seq T] [--vocab V] [--steps N]

--steps N: no out-of-memory; N steps at batch 4 (the gradients kept), then
its own count by role and PyTorch's own peak; the model and optimizer stay
referenced until exit (TRAINED) for the exit walk.
"""
import argparse
import os
import sys
import threading

import torch
import torch.nn.functional as F
from expect import block_bytes, counters, say, segments

TRAINED = None  # --steps: (model, optimizer), referenced until exit


# The model is the demo's (examples/train_gpt.py): one copy of it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
from train_gpt import GPT  # noqa: E402  (lightning_fit.py and accelerate_train.py import it from here)


def train_step(model, opt, batch, seq, vocab):
    """One step; returns where it ran out of memory ("done" when it did not)."""
    where = "forward"
    try:
        idx = torch.randint(0, vocab, (batch, seq), device="cuda")
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, vocab), idx.view(-1))
        del logits
        where = "backward"
        loss.backward()
        where = "step"
        opt.step()
        opt.zero_grad(set_to_none=False)
        return "done"
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError in %s at batch %d: %s" % (where, batch, str(e).splitlines()[0]))
        return where


def forward_bytes(model, batch, seq, vocab):
    """The peak bytes a forward at this batch adds (its graph kept, as for backward)."""
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    idx = torch.randint(0, vocab, (batch, seq), device="cuda")
    loss = F.cross_entropy(model(idx).view(-1, vocab), idx.view(-1))
    peak = torch.cuda.max_memory_allocated() - base
    del loss, idx
    return peak


def backward_oom_batch(model, seq, vocab):
    """A batch whose forward fits and whose backward does not. The forward's
    bytes grow linearly with the batch; backward's first steps need about
    one more copy of the logits (the gradient of log_softmax's output) than
    the forward's peak: aim for half a copy left free."""
    two, four = forward_bytes(model, 2, seq, vocab), forward_bytes(model, 4, seq, vocab)
    per_sample = (four - two) / 2
    fixed = two - 2 * per_sample
    logits = seq * vocab * 4  # one sample's fp32 logits
    free = torch.cuda.mem_get_info()[0] + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    return max(1, int((free - fixed) // (per_sample + logits / 2)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.cuda.init()
    observed = []  # on which thread PyTorch calls an out-of-memory observer
    try:
        torch._C._cuda_attach_out_of_memory_observer(
            lambda *args: observed.append(threading.current_thread() is threading.main_thread()))
    except RuntimeError:  # the cudaMallocAsync backend has none (CUDAMallocAsyncAllocator.cpp)
        observed = None
    model = GPT(a.layers, a.width, a.heads, a.seq, a.vocab).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if a.steps:
        for _ in range(a.steps):
            train_step(model, opt, 4, a.seq, a.vocab)
        torch.cuda.synchronize()
        params = list(model.parameters())
        state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
        say(weights=block_bytes(params)[0], gradients=block_bytes([p.grad for p in params])[0],
            optimizer_state=block_bytes(state)[0], **counters())
        # The exit walk (GPUMEMREC_DUMP_AT_EXIT) runs in an atexit handler,
        # after main() returned: it finds what the program still references
        # then (module globals, as in a script that trains at module level),
        # not main()'s locals, which are freed into PyTorch's cache by then.
        global TRAINED
        TRAINED = (model, opt)
        return
    train_step(model, opt, 1, a.seq, a.vocab)  # gradients and optimizer state exist from now on
    batch = backward_oom_batch(model, a.seq, a.vocab)
    if observed is not None:
        observed.clear()
    where = train_step(model, opt, batch, a.seq, a.vocab)
    params = list(model.parameters())
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    w, wn = block_bytes(params)
    g, gn = block_bytes([p.grad for p in params])
    o, on = block_bytes(state)
    say(weights=w, gradients=g, optimizer_state=o, weights_n=wn, gradients_n=gn, optimizer_state_n=on,
        where=where, batch=batch, observer_on_main=observed, segments=segments(), **counters())


if __name__ == "__main__":
    main()
