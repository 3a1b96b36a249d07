"""Stand-in for jax.numpy: zeros() places a buffer on the device."""
from ._src import client


def zeros(shape, dtype="float32"):
    n = 1
    for s in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        n *= int(s)
    return client.backend().buffer(n * (2 if dtype == "bfloat16" else 4))
