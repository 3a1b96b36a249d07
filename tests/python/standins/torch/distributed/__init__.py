"""Stand-in for torch.distributed (tests only): FSDP1's flat parameter."""
