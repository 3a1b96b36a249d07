"""Stand-in for flax (tests only): flax.training.train_state.TrainState."""
