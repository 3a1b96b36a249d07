"""PyTorch's caching allocator recovers from an out-of-memory itself: the
cache is full of freed blocks, a new request does not fit beside them, and
c10 frees the cached blocks and retries (CUDACachingAllocator.cpp,
release_cached_blocks), which succeeds. No exception reaches the program.
Prints PyTorch's counters (expect.py)."""
import torch
from expect import counters, say

GiB = 1 << 30


def main():
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    # Fill the card with 1 GiB blocks, then free them: the cache keeps them.
    blocks = [torch.empty(GiB, dtype=torch.uint8, device="cuda") for _ in range(free // GiB - 1)]
    cached = torch.cuda.memory_reserved()
    del blocks
    # One request larger than any cached block and than what is free.
    big = torch.empty(free - 2 * GiB, dtype=torch.uint8, device="cuda")
    say(cached=cached, big=big.numel(), **counters())


main()
