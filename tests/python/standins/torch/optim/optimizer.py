"""Stand-in for torch/optim/optimizer.py (tests only), after pytorch/pytorch
@ 1a5f2e5079238e645bbe42ba6ad1f8b27c148ac0: Optimizer(params, defaults)
keeps `defaults`, `state` (a defaultdict(dict) keyed by parameter) and
`param_groups` (dicts with "params" and the defaults); zero_grad(set_to_none
=True) sets every p.grad to None."""
from collections import defaultdict


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if groups and not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        group = dict(group)
        group["params"] = list(group["params"])
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None
