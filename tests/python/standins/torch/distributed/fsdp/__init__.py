"""Stand-in for torch.distributed.fsdp (tests only)."""
