"""Full fine-tuning of a 7B-parameter Llama configuration (Llama 2 7B's
shape: 32 layers of width 4096, 11008-wide MLPs, a 32000-token vocabulary)
in bf16 with AdamW, built on the simulated card from its config (random
weights, nothing downloaded), until it runs out of memory. Prints its own
count of weights, gradients and optimizer state, PyTorch's counters, the
parameter count and the process's peak host memory (expect.py)."""
import resource

import torch
import torch.nn.functional as F
from expect import block_bytes, counters, say
from transformers import LlamaConfig, LlamaForCausalLM

LLAMA2_7B = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                 num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096)


def main():
    torch.manual_seed(0)
    config = LlamaConfig(**LLAMA2_7B)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    where = "forward"
    try:
        for _ in range(2):
            where = "forward"
            ids = torch.randint(0, config.vocab_size, (4, 2048), device="cuda")
            logits = model(input_ids=ids).logits
            loss = F.cross_entropy(logits.view(-1, config.vocab_size).float(), ids.view(-1))
            del logits
            where = "backward"
            loss.backward()
            where = "optimizer step"
            opt.step()
            opt.zero_grad(set_to_none=True)
        where = "done"
    except torch.cuda.OutOfMemoryError as e:
        print("caught OutOfMemoryError in %s: %s" % (where, str(e).splitlines()[0]))
    params = list(model.parameters())
    weights = params + list(model.buffers())  # the rotary embedding's inv_freq: a buffer, and weights
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    say(where=where, parameters=sum(p.numel() for p in params), weights=block_bytes(weights)[0],
        gradients=block_bytes([p.grad for p in params])[0], optimizer_state=block_bytes(state)[0],
        host_peak_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, **counters())


main()
