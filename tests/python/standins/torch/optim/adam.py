"""Stand-in for torch/optim/adam.py (tests only), after pytorch/pytorch
@ 1a5f2e5079238e645bbe42ba6ad1f8b27c148ac0, Adam._init_group: for each
parameter with a grad whose state is empty, lazily
  state["step"] = a 0-d float tensor on the CPU (unless capturable or fused:
                  then on the parameter's device),
  state["exp_avg"], state["exp_avg_sq"] = zeros_like(p, memory_format=
                  torch.preserve_format) (and max_exp_avg_sq if amsgrad).
The update itself has no values to compute in the stand-in."""
import torch

from .optimizer import Optimizer


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, foreach=foreach,
                        maximize=maximize, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _init_group(self, group):
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                on_device = group["capturable"] or group["fused"]
                state["step"] = torch.tensor(0.0, device=p.device if on_device else "cpu")
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def step(self, closure=None):
        for group in self.param_groups:
            self._init_group(group)
