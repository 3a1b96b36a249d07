"""Stand-in for torch/autograd/graph.py (tests only), after pytorch/pytorch
@ 1a5f2e5079238e645bbe42ba6ad1f8b27c148ac0: _engine_run_backward(t_outputs,
*args, **kwargs) returns Variable._execution_engine.run_backward(t_outputs,
*args, **kwargs) (the logging hooks and the TLS context stash left out).
"""
from .variable import Variable


def _engine_run_backward(t_outputs, *args, **kwargs):
    return Variable._execution_engine.run_backward(t_outputs, *args, **kwargs)
