"""Lightning's Trainer.fit of a LightningModule (gpt_train.py's GPT-shaped
model, AdamW) on a simulated card, whose training_step runs out of memory
in the forward pass.

  lightning_fit.py plain   one step at batch 1 (the gradients and the optimizer state exist),
                           then a batch whose forward cannot fit: the error leaves
                           training_step and Trainer.fit (Lightning's _call_and_handle_interrupt
                           re-raises it) and the program dies of it (exit 1)
  lightning_fit.py finder  Lightning's BatchSizeFinder callback (power mode) doubles a batch that
                           fits into one whose forward cannot: its _run_power_scaling catches the
                           error, halves the batch and the fit goes on (exit 0)

training_step says the program's own count by role and the line it failed
at before the error leaves it (expect.py).
"""
import sys

import lightning as L
import torch
import torch.nn.functional as F
from expect import say, say_oom
from gpt_train import GPT, forward_bytes
from lightning.pytorch.callbacks import BatchSizeFinder
from torch.utils.data import DataLoader, Dataset

SEQ, VOCAB = 1024, 50304


class RandomTokens(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return torch.randint(0, VOCAB, (SEQ,))


class LitGPT(L.LightningModule):
    def __init__(self, model, batch_size, batches=None):
        super().__init__()
        self.model = model
        self.batch_size = batch_size  # what BatchSizeFinder scales (lightning_setattr)
        self.batches = batches  # plain: the batch sizes of each step
        self.sizes = []

    def train_dataloader(self):
        if self.batches:
            sampler = [list(range(n)) for n in self.batches]
            return DataLoader(RandomTokens(), batch_sampler=sampler)
        return DataLoader(RandomTokens(), batch_size=self.batch_size)

    def training_step(self, batch, batch_idx):
        self.sizes.append(len(batch))
        try:
            logits = self.model(batch)
            return F.cross_entropy(logits.view(-1, VOCAB), batch.view(-1))
        except torch.OutOfMemoryError as e:
            say_oom(e, self, self.trainer.optimizers[0], batch=len(batch))
            raise

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def forward_oom_batch(model):
    """A batch whose forward alone needs half again what the card has free."""
    two, four = forward_bytes(model, 2, SEQ, VOCAB), forward_bytes(model, 4, SEQ, VOCAB)
    per_sample = (four - two) / 2
    return int(1.5 * torch.cuda.mem_get_info()[0] / per_sample) + 1


def main():
    mode = sys.argv[1]
    torch.manual_seed(0)
    model = GPT(12, 768, 12, SEQ, VOCAB).cuda()
    big = forward_oom_batch(model)
    trainer_args = dict(accelerator="gpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    if mode == "plain":
        lit = LitGPT(model, 1, batches=[1, big])
        L.Trainer(max_steps=2, **trainer_args).fit(lit)
        return
    # Power mode doubles init_val until a trial runs out of memory: a batch
    # that fits (60% of the forward's limit), then one whose forward cannot.
    init = 2 * big // 5
    finder = BatchSizeFinder(mode="power", steps_per_trial=1, init_val=init)
    lit = LitGPT(model, init)
    L.Trainer(max_steps=1, callbacks=[finder], **trainer_args).fit(lit)
    say(found=finder.optimal_batch_size, sizes=lit.sizes)


if __name__ == "__main__":
    main()
