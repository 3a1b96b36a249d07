"""Stand-in for flax/training/train_state.py (google/flax @ e5a27a58):
TrainState, a flax.struct dataclass with step, apply_fn, params, tx,
opt_state; create(apply_fn, params, tx) sets opt_state = tx.init(params).
Its pytree fields (what jax.tree_util flattens): step, params, opt_state."""


class TrainState:
    __pytree_fields__ = ("step", "params", "opt_state")

    def __init__(self, step, apply_fn, params, tx, opt_state):
        self.step, self.apply_fn, self.params, self.tx, self.opt_state = step, apply_fn, params, tx, opt_state

    @classmethod
    def create(cls, *, apply_fn, params, tx, **kwargs):
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx, opt_state=tx.init(params))
