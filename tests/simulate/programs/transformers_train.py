"""transformers' Trainer.train of a small GPT-2 built from its config
(random weights, nothing downloaded) on a simulated card, with the user's
own loss function (Trainer's compute_loss_func: it gets the model's outputs
and the labels, transformers/trainer.py compute_loss). The batch is chosen
so that the model's forward fits and the loss, which takes float32 copies
of the logits, cannot: the out-of-memory is in the user's loss function.
The first batch holds short sequences (the step fits and makes the
gradients and AdamW's state), the next full-length ones (its loss cannot).

  transformers_train.py plain   the error leaves Trainer.train: the program dies of it (exit 1)
  transformers_train.py auto    TrainingArguments(auto_find_batch_size=True): Trainer.train wraps
                                its loop in accelerate's find_executable_batch_size
                                (transformers/trainer_utils.py), which catches the error, frees the
                                cache and runs the loop again at 90% of the batch until it fits

The loss function says the program's own count by role and the line it
failed at before the error leaves it (expect.py).
"""
import sys
import tempfile

import torch
import torch.nn.functional as F
from expect import say, say_oom
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

SEQ, SHORT = 1024, 64
CONFIG = GPT2Config(n_layer=2, n_embd=256, n_head=4, n_positions=SEQ)
trainer = None
batches = []


class RandomTokens(Dataset):
    """Read in order (train_sampling_strategy="sequential"): the first
    `short` samples have SHORT tokens, the others SEQ."""

    def __init__(self, short):
        self.short = short

    def __len__(self):
        return 1 << 16

    def __getitem__(self, i):
        return torch.randint(0, CONFIG.vocab_size, (SHORT if i < self.short else SEQ,))


def pad_batch(samples):
    ids = torch.nn.utils.rnn.pad_sequence(samples, batch_first=True)
    return {"input_ids": ids, "labels": ids}


def next_token_loss(outputs, labels, num_items_in_batch=None):
    batches.append(list(labels.shape))
    try:
        logits = outputs.logits[:, :-1, :].float().contiguous()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
    except torch.OutOfMemoryError as e:
        say_oom(e, trainer.model, trainer.optimizer, batch=len(labels))
        raise


def loss_oom_batch():
    """A batch whose forward (about one copy of the float32 logits per
    sample) fits and whose loss (about three) cannot."""
    logits = SEQ * CONFIG.vocab_size * 4
    return int(torch.cuda.mem_get_info()[0] / (2.5 * logits))


def main():
    global trainer
    auto = sys.argv[1] == "auto"
    torch.manual_seed(0)
    torch.cuda.init()
    batch = loss_oom_batch()
    args = TrainingArguments(output_dir=tempfile.mkdtemp(prefix="gmr-trainer-"), per_device_train_batch_size=batch,
                             max_steps=2, auto_find_batch_size=auto, report_to="none", save_strategy="no",
                             logging_strategy="no", disable_tqdm=True, remove_unused_columns=False,
                             dataloader_pin_memory=False, train_sampling_strategy="sequential")
    trainer = Trainer(model=GPT2LMHeadModel(CONFIG), args=args, train_dataset=RandomTokens(batch),
                      data_collator=pad_batch, compute_loss_func=next_token_loss)
    trainer.train()
    say(batches=batches, fitted=trainer.state.train_batch_size)


if __name__ == "__main__":
    main()
