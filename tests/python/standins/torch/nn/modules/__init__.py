from .container import Sequential  # noqa: F401
from .linear import Linear  # noqa: F401
from .module import Module  # noqa: F401
from .activation import ReLU  # noqa: F401
