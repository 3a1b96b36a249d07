"""Stand-in for torch/optim/adamw.py (tests only): AdamW is Adam with
decoupled_weight_decay=True (pytorch/pytorch @ 1a5f2e50...; older releases
had their own _init_group making the same state)."""
from .adam import Adam


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, **kw):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, decoupled_weight_decay=True, **kw)
