"""Stand-in for transformers (tests only): the KV cache classes."""
from .cache_utils import Cache, StaticCache, StaticLayer  # noqa: F401
