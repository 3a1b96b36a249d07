"""Serving with a transformers KV cache on a simulated card: a Llama-shaped
model built from a config (random weights, nothing downloaded) holds one
request's cache (prefill, then a few decoded tokens); a second request's
prefill, at a batch whose cache and activations cannot fit beside the first
one's, runs out of memory. Then the program prints its own count of the
weights and of every cache tensor (expect.py): the first cache's, and the
layers of the second that were filled before the failure.

  kv_serve.py --cache static|dynamic
"""
import argparse

import torch
from expect import block_bytes, counters, say
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache

CONFIG = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
              num_key_value_heads=4, vocab_size=32000, max_position_embeddings=8192)


def make_cache(kind, config, max_len):
    return StaticCache(config=config, max_cache_len=max_len) if kind == "static" else DynamicCache(config=config)


def serve(model, cache, batch, prompt, decode):
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), device="cuda")
    out = model(input_ids=ids, cache=cache, use_cache=True)
    for _ in range(decode):
        ids = out.logits[:, -1:].argmax(-1)
        out = model(input_ids=ids, cache=cache, use_cache=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", choices=("static", "dynamic"), required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    config = LlamaConfig(**CONFIG)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    caches, where = [], "first request"
    with torch.no_grad():
        try:
            caches.append(make_cache(a.cache, config, 4096))
            serve(model, caches[-1], 64, 2048, 4)
            where = "second request"
            caches.append(make_cache(a.cache, config, 8192))
            serve(model, caches[-1], 512, 8192, 0)
            where = "done"
        except torch.cuda.OutOfMemoryError as e:
            print("caught OutOfMemoryError in the %s: %s" % (where, str(e).splitlines()[0]))
    # weights: parameters and buffers (the rotary embedding's inv_freq), as docs/python-hook.md names them
    w, wn = block_bytes(list(model.parameters()) + list(model.buffers()))
    tensors = [t for c in caches for layer in c.layers for t in (getattr(layer, "keys", None),
                                                                  getattr(layer, "values", None))]
    kv, kvn = block_bytes(tensors)
    say(weights=w, weights_n=wn, kv_cache=kv, kv_cache_n=kvn, where=where, **counters())


main()
