"""A plain accelerate training loop (Accelerator.prepare, accelerator.backward)
of gpt_train.py's GPT-shaped model with AdamW on a simulated card. The
first step at batch 1 makes the gradients and the optimizer state; the next
runs at a batch whose forward fits and whose backward cannot
(gpt_train.backward_oom_batch), so accelerator.backward(loss) runs out of
memory on PyTorch's autograd device thread.

  accelerate_train.py plain   the error escapes the loop: the program dies of it (exit 1)
  accelerate_train.py find    the loop is wrapped in accelerate's find_executable_batch_size
                              (accelerate/utils/memory.py), which catches the error, frees the
                              cache and calls it again at 90% of the batch until it fits

Before the error leaves the program's own code it says its own count by role
and the line it failed at (expect.py).
"""
import sys

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import find_executable_batch_size
from expect import say_oom
from gpt_train import GPT, backward_oom_batch

SEQ, VOCAB = 1024, 50304


def train(accelerator, model, opt, batch, steps):
    for _ in range(steps):
        try:
            idx = torch.randint(0, VOCAB, (batch, SEQ), device=accelerator.device)
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, VOCAB), idx.view(-1))
            del logits
            accelerator.backward(loss)
        except torch.OutOfMemoryError as e:  # each error the program sees, wherever it came from
            say_oom(e, model, opt, batch=batch)
            raise
        opt.step()
        opt.zero_grad(set_to_none=False)


def main():
    mode = sys.argv[1]
    torch.manual_seed(0)
    accelerator = Accelerator()
    model = GPT(12, 768, 12, SEQ, VOCAB)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, opt = accelerator.prepare(model, opt)
    train(accelerator, model, opt, 1, 1)  # gradients and optimizer state exist from now on
    batch = backward_oom_batch(model, SEQ, VOCAB)
    if mode == "plain":
        train(accelerator, model, opt, batch, 1)
        return
    tried = []

    @find_executable_batch_size(starting_batch_size=batch)
    def loop(batch_size):
        tried.append(batch_size)
        train(accelerator, model, opt, batch_size, 1)

    loop()
    print("FITTED %s" % tried)


if __name__ == "__main__":
    main()
