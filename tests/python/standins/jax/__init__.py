"""Stand-in for jax (tests only; see ../README.md)."""
from . import errors, numpy, profiler  # noqa: F401
from ._src.client import devices  # noqa: F401
