"""A real JAX training program (jax, flax, optax from the frameworks venv,
CPU backend) that runs out of memory, uncaught.

  jax_real_train.py main     in the main thread (sys.excepthook): exit 1
  jax_real_train.py thread   in a thread (threading.excepthook), then exit 3

A flax TrainState (flax/training/train_state.py, TrainState.create: params
and opt_state = tx.init(params)) of a two-layer MLP (flax.linen.Dense)
with optax.adam (optax/_src/alias.py adam: chain(scale_by_adam, ...), whose
state is (ScaleByAdamState(count, mu, nu), EmptyState()):
optax/_src/transform.py) takes two jitted training steps; the forward
outputs it keeps are its activations. It first asks for a buffer no machine
has and catches the error (no bundle: the hook reports uncaught ones only),
then asks again without catching it, each time broadcasting a scalar it
holds (jnp.zeros of that size would leave its own fill value, a scalar
array of jax.lax.full, live in the traceback). XLA's CPU client refuses with
"RESOURCE_EXHAUSTED: Out of memory allocating N bytes." (jaxlib
libjax_common.so), raised as jax.errors.JaxRuntimeError (jax/errors.py).

Before the uncaught request it prints its own count (roles_expect.say):
the bytes (Array.nbytes) and arrays of the params, of the optimizer state
and of every other array it holds, and the request's size.
"""
import sys

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state
import uncaught
from roles_expect import say

TOO_BIG = 1 << 50  # float32 elements: 4 PiB, more than any machine's address space


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(512)(x))
        return nn.Dense(10)(x)  # @site:logits


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        return jnp.mean((state.apply_fn({"params": params}, x) - y) ** 2)

    return state.apply_gradients(grads=jax.grad(loss_fn)(state.params))


def counted(*trees):
    leaves = [a for t in trees for a in jax.tree_util.tree_leaves(t)]
    return sum(a.nbytes for a in leaves), len(leaves)


def run():
    key = jax.random.PRNGKey(0)
    x = jnp.ones((64, 256))  # @site:batch
    y = jnp.zeros((64, 10))
    model = MLP()
    state = train_state.TrainState.create(apply_fn=model.apply, params=model.init(key, x)["params"],
                                          tx=optax.adam(1e-3))
    for _ in range(2):
        state = train_step(state, x, y)  # @site:step
    outputs = []
    for i in range(4):
        outputs.append(state.apply_fn({"params": state.params}, x * i))
    zero = jnp.zeros((), jnp.float32)  # broadcast below: no temporary array of jax's own stays live
    try:
        jax.lax.broadcast_in_dim(zero, (TOO_BIG,), ())
    except jax.errors.JaxRuntimeError as exc:
        print("caught: %s" % str(exc).split(":")[0])
    w, w_n = counted(state.params)
    o, o_n = counted(state.opt_state)
    other, other_n = counted(key, x, y, state.step, outputs, zero)
    say(weights=w, weights_n=w_n, optimizer_state=o, optimizer_state_n=o_n, activations=other,
        activations_n=other_n, request_bytes=TOO_BIG * 4)
    jax.lax.broadcast_in_dim(zero, (TOO_BIG,), ())  # @site:fails


uncaught.run(run, sys.argv[1])
