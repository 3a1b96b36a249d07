"""Stand-in for torch/autograd/variable.py (tests only): the engine is a
class attribute, Variable._execution_engine = torch._C._ImperativeEngine()."""
from .. import _C


class Variable:
    _execution_engine = _C._ImperativeEngine()
