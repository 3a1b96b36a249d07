"""Stand-in for optax/_src/transform.py (google-deepmind/optax @ d9678fcd):
ScaleByAdamState(count, mu, nu), a NamedTuple; scale_by_adam's init_fn
makes mu and nu as zeros like the params (a pytree each) and count a
scalar array."""
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def _zeros_like(tree):
    if isinstance(tree, dict):
        return {k: _zeros_like(v) for k, v in tree.items()}
    return jnp.zeros((tree.nbytes // 4,))


class _Adam:
    def init(self, params):
        return (ScaleByAdamState(count=jnp.zeros((1,)), mu=_zeros_like(params), nu=_zeros_like(params)),)


def adam(learning_rate=1e-3):
    return _Adam()


_ = jax  # jax is imported by optax first, as the real package does
