"""Stand-in for torch.optim (tests only): Optimizer, Adam, AdamW."""
from .adam import Adam  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
