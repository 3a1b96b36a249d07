"""Stand-in for torch.nn (tests only): Module, Parameter, Linear, ReLU,
Sequential, functional."""
from . import functional  # noqa: F401
from .modules import Linear, Module, ReLU, Sequential  # noqa: F401
from .parameter import Parameter  # noqa: F401
