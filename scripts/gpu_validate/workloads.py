"""Real-GPU validation: real workloads, as users meet their out-of-memory.

Run as `python3 workloads.py CASE`. Each case prints the figures it computed
itself (lines `NAME value`) so that check_workloads.py can compare the
bundle with the program's own count. Nothing here knows gpumemrec.

PyTorch facts these cases rely on (pytorch/pytorch, read at v2.5-v2.11):
- torch/csrc/autograd/engine.cpp: CUDA backward runs on the device's worker
  thread (Engine::thread_main, started per device by start_device_threads);
  the calling Python thread waits in Engine::execute with the GIL released.
  So backward's cudaMalloc is on a thread with no Python frame.
- c10/cuda/CUDACachingAllocator.cpp: requests <= 1 MiB come from 2 MiB
  segments, 1-10 MiB from 20 MiB segments, larger ones get a segment of
  their own rounded to 2 MiB (kSmallSize, kSmallBuffer, kLargeBuffer,
  kMinLargeAlloc, kRoundLarge); after a failed cudaMalloc it frees only
  wholly free cached segments (release_cached_blocks) and retries once.
- torch/optim/adamw.py: the state of a parameter (step, exp_avg,
  exp_avg_sq) is made at its first step().
"""
import os
import sys
import time

MiB = 1 << 20


def _mlp(torch, width, depth):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    return torch.nn.Sequential(*layers).cuda()


def _storage_bytes(tensors):
    """Bytes of distinct CUDA storages (views and tied weights once)."""
    seen = {}
    for t in tensors:
        if t is None or not t.is_cuda:
            continue
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values()), len(seen)


def torch_backward():
    """A training step that runs out in backward: the batch grows by 10% a
    step until a step fails; the phase that raised is printed, and the
    error is not caught (the job dies, as a real one does)."""
    import torch
    torch.manual_seed(0)
    model = _mlp(torch, 4096, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = 1024
    while True:
        x = torch.randn(batch, 4096, device="cuda")
        phase = "forward"
        try:
            loss = model(x).square().mean()
            phase = "backward"
            loss.backward()  # the line the bundle must name
            phase = "step"
            opt.step()
            opt.zero_grad(set_to_none=True)
        except torch.OutOfMemoryError:
            print("OOM_IN %s batch=%d" % (phase, batch), flush=True)
            raise
        del x, loss
        batch = int(batch * 1.1)


def torch_kv_cache():
    """Inference next to a static KV cache that takes most of the card:
    transformers' StaticCache when transformers is installed, else the same
    shape by hand (one preallocated [batch, heads, max_len, head_dim] key
    and value tensor per layer, as cache_utils.StaticLayer does)."""
    import torch
    layers, heads, head_dim, batch = 16, 8, 128, 8
    free, _ = torch.cuda.mem_get_info()
    per_token = layers * 2 * batch * heads * head_dim * 2  # fp16 keys and values
    max_len = int(free * 0.85) // per_token
    cache = _static_cache(torch, layers, heads, head_dim, batch, max_len)
    print("OWN_KV_CACHE %d" % cache_bytes(torch, cache), flush=True)
    acts = []
    try:
        while True:  # a forward's activations, until the card is full
            acts.append(torch.empty(batch, 4096, 4096, dtype=torch.float16, device="cuda"))
    except torch.OutOfMemoryError:
        print("OOM kv_cache max_len=%d acts=%d" % (max_len, len(acts)), flush=True)


def _static_cache(torch, layers, heads, head_dim, batch, max_len):
    try:
        from transformers import LlamaConfig, StaticCache
        cfg = LlamaConfig(hidden_size=heads * head_dim, num_attention_heads=heads, num_key_value_heads=heads,
                          num_hidden_layers=layers, head_dim=head_dim)
        cache = StaticCache(config=cfg, max_batch_size=batch, max_cache_len=max_len, device="cuda",
                            dtype=torch.float16)
        k = torch.zeros(batch, heads, 1, head_dim, dtype=torch.float16, device="cuda")
        for i in range(layers):  # current versions allocate lazily, at the first update
            cache.update(k, k, i, {"cache_position": torch.zeros(1, dtype=torch.long, device="cuda")})
        print("KV_CACHE transformers", flush=True)
        return cache
    except Exception as e:  # not installed, or another signature: by hand
        print("KV_CACHE by hand (%s: %s)" % (type(e).__name__, str(e)[:80]), flush=True)
        shape = (batch, heads, max_len, head_dim)
        return [(torch.zeros(shape, dtype=torch.float16, device="cuda"),
                 torch.zeros(shape, dtype=torch.float16, device="cuda")) for _ in range(layers)]


def cache_bytes(torch, cache):
    tensors = []
    if isinstance(cache, list):
        tensors = [t for kv in cache for t in kv]
    else:
        for layer in getattr(cache, "layers", []):
            tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
        tensors += list(getattr(cache, "key_cache", [])) + list(getattr(cache, "value_cache", []))
    return _storage_bytes([t for t in tensors if torch.is_tensor(t)])[0]


def torch_fragment():
    """Reserved far above allocated, no free block large enough: 7 MiB
    tensors, two to a 20 MiB segment, until the card is full; every other
    one freed (each segment keeps 13 MiB free in two pieces, none >= 8 MiB);
    then a 12 MiB request. With expandable_segments:True the freed pages can
    be unmapped and mapped again where the request needs them."""
    import torch
    held = []
    try:
        while True:
            held.append(torch.empty(7 * MiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    del held[::2]
    print("RESERVED %d ALLOCATED %d" % (torch.cuda.memory_reserved(), torch.cuda.memory_allocated()), flush=True)
    try:
        big = torch.empty(12 * MiB, dtype=torch.uint8, device="cuda")
        print("FITS %d" % big.numel(), flush=True)
    except torch.OutOfMemoryError:
        print("OOM fragment", flush=True)


def torch_peak():
    """No out-of-memory: a few training steps; the program's own peaks (the
    allocator's, and the driver's used bytes sampled after each phase)."""
    import torch
    torch.manual_seed(0)
    model = _mlp(torch, 4096, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    free0, total = torch.cuda.mem_get_info()
    driver_peak = 0
    for step in range(5):
        loss = model(torch.randn(2048, 4096, device="cuda")).square().mean()
        driver_peak = max(driver_peak, total - torch.cuda.mem_get_info()[0])
        loss.backward()
        driver_peak = max(driver_peak, total - torch.cuda.mem_get_info()[0])
        opt.step()
        opt.zero_grad(set_to_none=True)
        driver_peak = max(driver_peak, total - torch.cuda.mem_get_info()[0])
    torch.cuda.synchronize()
    print("TORCH_MAX_RESERVED %d" % torch.cuda.max_memory_reserved())
    print("TORCH_MAX_ALLOCATED %d" % torch.cuda.max_memory_allocated())
    print("DRIVER_USED_PEAK %d" % driver_peak)
    print("DRIVER_USED_BEFORE %d" % (total - free0), flush=True)


def nccl_allreduce():
    """torch.distributed with NCCL, one rank (NCCL refuses two ranks on one
    GPU: 'Duplicate GPU detected'), then tensors until out of memory: the
    communicator's buffers must be named as libnccl's."""
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    x = torch.ones(64 * MiB, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    print("ALLREDUCE %s" % x[0].item(), flush=True)
    held = []
    try:
        while True:
            held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        print("OOM nccl held=%d" % len(held), flush=True)
    dist.destroy_process_group()


CASES = {"torch_backward": torch_backward, "torch_kv_cache": torch_kv_cache,
         "torch_fragment": torch_fragment, "torch_peak": torch_peak, "nccl_allreduce": nccl_allreduce}

if __name__ == "__main__":
    t0 = time.time()
    CASES[sys.argv[1]]()
    print("ELAPSED %.1f" % (time.time() - t0))
