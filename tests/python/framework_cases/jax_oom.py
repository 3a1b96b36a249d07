"""A JAX program that runs out of memory, uncaught (exit status 1).
  jax_oom.py main     in the main thread (sys.excepthook)
  jax_oom.py thread   in a thread (threading.excepthook), then exits 3
"""
import sys

import jax
import jax.numpy as jnp
import uncaught

MiB = 1 << 20


def make_params(keep):
    keep.append(jnp.zeros((64 * MiB // 4,)))  # @site:params


def train_step(keep):
    while True:
        keep.append(jnp.zeros((16 * MiB // 4,)))  # @site:activations


def main():
    keep = []
    make_params(keep)
    print("devices: %s" % jax.devices())
    sys.stdout.flush()
    train_step(keep)


uncaught.run(main, sys.argv[1])
