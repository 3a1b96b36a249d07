"""set_per_process_memory_fraction: PyTorch refuses a request that would
take the process past its share before asking the driver
(CUDACachingAllocator.cpp, alloc_block: the allowed-memory check), and
raises OutOfMemoryError; no driver call fails. The program catches it and
prints its own counts (expect.py)."""
import torch
from expect import block_bytes, counters, say

GiB = 1 << 30


def main():
    torch.cuda.init()
    torch.cuda.set_per_process_memory_fraction(0.25)
    weights = [torch.empty(GiB // 4, device="cuda") for _ in range(8)]  # 8 GiB of fp32
    acts = []
    try:
        while True:
            acts.append(torch.empty(GiB // 2, device="cuda"))  # 2 GiB each
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError: %s" % str(e).splitlines()[0])
    w, wn = block_bytes(weights)
    a, an = block_bytes(acts)
    say(held=w + a, held_n=wn + an, fraction=0.25, **counters())


main()
