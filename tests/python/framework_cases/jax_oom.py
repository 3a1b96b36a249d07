"""A JAX program that runs out of memory, uncaught (exit status 1).
  jax_oom.py main     in the main thread (sys.excepthook)
  jax_oom.py thread   in a thread (threading.excepthook), then exits 3
"""
import sys
import threading

import jax
import jax.numpy as jnp

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


if sys.argv[1] == "thread":
    t = threading.Thread(target=main)
    t.start()
    t.join()
    print("thread ended")
    sys.exit(3)
main()
