"""A JAX training state (flax TrainState with optax Adam) and activations
that grow until XLA's arena runs out, uncaught (exit status 1). Prints its
own count of parameter and optimizer-state bytes first (roles_expect.py)."""
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state
from roles_expect import say

MiB = 1 << 20


def main():
    params = {"dense": {"kernel": jnp.zeros((1024, 1024)), "bias": jnp.zeros((1024,))},
              "out": {"kernel": jnp.zeros((1024, 256))}}
    state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
    leaves = jax.tree_util.tree_leaves
    w = sum(a.on_device_size_in_bytes() for a in leaves(state.params))
    o = sum(a.on_device_size_in_bytes() for a in leaves(state.opt_state))
    say(weights=w, weights_n=len(leaves(state.params)), optimizer_state=o,
        optimizer_state_n=len(leaves(state.opt_state)))
    keep = []
    while True:
        keep.append(jnp.zeros((8 * MiB // 4,)))


main()
