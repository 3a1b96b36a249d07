"""A small decoder-only transformer trained with AdamW by every rank of a
torchrun job on simulated GPUs (test_torchrun.py runs it): FSDP2
(fully_shard on each block and the whole model) or DDP (the whole model in
DistributedDataParallel: its gradient buckets) or DeepSpeed ZeRO-2 (over
torch's AdamW). Each rank writes its own
counts as JSON to OUT_DIR/counts-RANK.json (a file per rank: the ranks'
lines on torchrun's shared stdout can interleave): its pid, parameter and
optimizer bytes by shard, so the test checks the bundle's roles against the
program's own arithmetic.

Usage (under torchrun): train_ranks.py fsdp2|ddp|zero2 OUT_DIR STEPS [KILLED_RANK]
  KILLED_RANK: after its forward pass, that rank waits until rank 0 has
  started an out-of-memory bundle (a directory with rank 0's pid in its name
  appears in GPUMEMREC_DIR), then kills itself (SIGKILL): torchrun then ends
  rank 0 with SIGTERM while its bundle is being written or just after, never
  before it began, however the two processes are scheduled.
"""
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

VOCAB, DIM, LAYERS, HEADS, SEQ, BATCH = 8192, 512, 4, 8, 256, 8


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(DIM), torch.nn.LayerNorm(DIM)
        self.qkv, self.out = torch.nn.Linear(DIM, 3 * DIM), torch.nn.Linear(DIM, DIM)
        self.up, self.down = torch.nn.Linear(DIM, 4 * DIM), torch.nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, HEADS, DIM // HEADS).unbind(2)
        a = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                             is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, DIM))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = torch.nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def local_bytes(tensors):
    """Bytes the caching allocator holds for this rank's shards: the blocks
    (torch.cuda.memory_snapshot(), a block's size as the allocator rounded
    it) of the storages of the DTensors' local tensors, each once."""
    blocks = {b["address"]: b["size"] for seg in torch.cuda.memory_snapshot() for b in seg["blocks"]
              if b["state"] == "active_allocated"}
    ptrs = set()
    for t in tensors:
        local = t.to_local() if hasattr(t, "to_local") else t
        if local.is_cuda:
            ptrs.add(local.untyped_storage().data_ptr())
    return sum(blocks.get(p, 0) for p in ptrs)


def bucket_bytes(ddp):
    """DDP's gradient buckets as the caching allocator holds them: the
    blocks whose requested size is a bucket's size in DDP's logging data
    (each bucket is one allocation of exactly that size)."""
    sizes = [int(x) for x in ddp._get_ddp_logging_data()["bucket_sizes"].split(",")]
    blocks = [b for seg in torch.cuda.memory_snapshot() for b in seg["blocks"] if b["state"] == "active_allocated"]
    total = 0
    for size in sizes:
        b = next(b for b in blocks if b["requested_size"] == size)
        blocks.remove(b)
        total += b["size"]
    return total


def write_counts(out, counts):
    path = os.path.join(out, "counts-%d.json" % counts["rank"])
    with open(path + ".tmp", "w") as f:
        json.dump(counts, f)
    os.replace(path + ".tmp", path)


def wait_for_rank0_bundle(out, timeout=600):
    """Until a bundle directory of rank 0 (its pid in the name, the
    temporary one or the finished one) is in GPUMEMREC_DIR."""
    dumps, deadline = os.environ["GPUMEMREC_DIR"], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(out, "counts-0.json")) as f:
                tag = "_%d_" % json.load(f)["pid"]
            if any(tag in name for name in os.listdir(dumps)):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.01)


MODEL = OPT = None  # kept to the end: the exit bundle's roles walk sees them


def wrap_model(wrap, model, local):
    """(model, optimizer, counts of the wrapping) for fsdp2, ddp or zero2."""
    if wrap == "ddp":
        before = torch.cuda.memory_allocated()
        model = DistributedDataParallel(model, device_ids=[local])
        extra = {"ddp_constructed": torch.cuda.memory_allocated() - before, "ddp_buckets": bucket_bytes(model)}
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3), extra
    if wrap == "zero2":  # DeepSpeed ZeRO-2 over torch's AdamW (no compiled op)
        import deepspeed
        cfg = {"train_micro_batch_size_per_gpu": BATCH, "zero_optimization": {"stage": 2},
               "zero_allow_untested_optimizer": True}
        engine, opt, _, _ = deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters(), lr=1e-3),
                                                 config=cfg)
        return engine, opt, {}
    for blk in model.blocks:
        fully_shard(blk)
    fully_shard(model)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), {}


def optimizer_bytes(wrap, opt):
    """The optimizer state this rank holds: the torch optimizer's state, and
    for ZeRO-2 its fp32 partition of the parameters (DeepSpeed's master copy)."""
    inner = opt.optimizer if wrap == "zero2" else opt
    state = [v for s in inner.state.values() for v in s.values() if torch.is_tensor(v)]
    if wrap == "zero2":
        state += list(opt.single_partition_of_fp32_groups)
    return local_bytes(state)


def step(wrap, model, opt, ids, counts, killed, out):
    torch.cuda.reset_peak_memory_stats()
    loss = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
    counts["allocated_forward"] = torch.cuda.max_memory_allocated()
    if dist.get_rank() == killed:
        wait_for_rank0_bundle(out)
        os.kill(os.getpid(), signal.SIGKILL)
    torch.cuda.reset_peak_memory_stats()
    if wrap == "zero2":
        model.backward(loss)
    else:
        loss.backward()
    counts["allocated_backward"] = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    if wrap == "zero2":
        model.step()
    else:
        opt.step()
        opt.zero_grad()
    counts["allocated_step"] = torch.cuda.max_memory_allocated()


def main():
    global MODEL, OPT
    wrap, out, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    killed = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    model, opt, extra = wrap_model(wrap, Decoder().cuda(), local)
    MODEL, OPT = model, opt
    counts = {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "pid": os.getpid(),
              "weights": local_bytes(model.parameters()), **extra}
    write_counts(out, counts)
    for _ in range(steps):
        step(wrap, model, opt, torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda"), counts, killed, out)
    counts["optimizer_state"] = optimizer_bytes(wrap, opt)
    write_counts(out, counts)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
