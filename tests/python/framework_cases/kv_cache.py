"""Inference with a transformers StaticCache: the cache is allocated on the
first forward (StaticLayer.lazy_initialization), then a forward whose
activations grow runs out of memory. Prints its own weight and KV-cache
bytes (roles_expect.py)."""
import torch
from roles_expect import block_bytes, say
from transformers import StaticCache

from torch import nn

LAYERS, BATCH, HEADS, MAX_LEN, HEAD_DIM = 4, 2, 8, 1024, 64


def main():
    torch.cuda.init()
    model = nn.Sequential(*[nn.Linear(512, 512) for _ in range(LAYERS)])
    cache = StaticCache(max_cache_len=MAX_LEN, num_hidden_layers=LAYERS)
    keep = []
    try:
        for step in range(1, 1000):
            for i in range(LAYERS):
                k = torch.empty(BATCH, HEADS, 1, HEAD_DIM, dtype=torch.float16)
                cache.update(k, k, i)
                keep.append(torch.empty(BATCH * step * 64, 512))  # activations that grow
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError: %s" % e)
    del keep
    w, wn = block_bytes(list(model.parameters()))
    kv, kvn = block_bytes([t for layer in cache.layers for t in (layer.keys, layer.values)])
    say(weights=w, kv_cache=kv, weights_n=wn, kv_cache_n=kvn)


main()
