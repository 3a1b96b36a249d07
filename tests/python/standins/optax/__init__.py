"""Stand-in for optax (tests only): adam's state."""
from ._src.transform import ScaleByAdamState, adam  # noqa: F401
