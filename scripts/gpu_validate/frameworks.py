"""Real-GPU validation cases for the Python frameworks. Run as
`python3 frameworks.py CASE`; each allocates from a named function until the
framework reports out of memory, then exits 0 (the OOM is caught)."""
import os
import sys
import time


def torch_grow_activations():
    import torch
    held = []
    chunk = 1 << 30
    try:
        while True:
            held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as e:
        print("OOM torch held=%d %s" % (len(held), str(e).splitlines()[0][:120]))


def torch_recovered():
    # Fill the cache with 256 MiB blocks, free them (the cache keeps them),
    # then ask for one big block: the caching allocator's first cudaMalloc
    # fails, it frees its cache and the retry succeeds.
    import torch
    small = []
    try:
        while True:
            small.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    n = len(small)
    del small
    big = torch.empty((n // 2) * (256 << 20), dtype=torch.uint8, device="cuda")
    print("RECOVERED big=%d" % big.numel())


def jax_grow_arrays():
    import jax.numpy as jnp
    held = []
    try:
        while True:
            held.append(jnp.ones((1 << 28,), dtype=jnp.float32).block_until_ready())
    except Exception as e:  # XlaRuntimeError: RESOURCE_EXHAUSTED
        print("OOM jax held=%d %s" % (len(held), type(e).__name__))


def cupy_grow_arrays():
    import cupy
    held = []
    try:
        while True:
            held.append(cupy.empty(1 << 30, dtype=cupy.uint8))
    except cupy.cuda.memory.OutOfMemoryError:
        print("OOM cupy held=%d" % len(held))


def torch_hold_memory():
    # The "other job" of the NVML case: holds memory until killed.
    import torch
    gib = int(os.environ.get("HOLD_GIB", "8"))
    x = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
    print("HOLDING %d GiB" % gib, flush=True)
    time.sleep(600)
    del x


def torch_train_loop():
    # Overhead case: a small transformer, timed per step.
    import torch
    mode = os.environ.get("TRAIN_MODE", "plain")
    steps = int(os.environ.get("TRAIN_STEPS", "300"))
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True),
        num_layers=6).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(32, 256, 512, device="cuda")
    if mode == "torch_recorder":
        torch.cuda.memory._record_memory_history(stacks="all")
    for _ in range(20):  # warm-up
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        # Fresh activations each step with a varying shape keep the allocator busy.
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("STEP_MS %.4f" % (1000 * dt / steps))


def torch_fraction():
    # The Python start-up hook: PyTorch refuses past the fraction without
    # calling cudaMalloc; only its observer can report it (framework_oom).
    import torch
    torch.cuda.set_per_process_memory_fraction(0.1)
    torch_grow_activations()


def torch_wait_fatal():
    # The hook's exact verdict: with GPUMEMREC_EPISODE_MS at 10 minutes, the
    # bundle is fatal while the program still runs (the observer said so).
    import glob
    import json
    torch_grow_activations()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for m in glob.glob(os.path.join(os.environ["GPUMEMREC_DIR"], "*", "manifest.json")):
            with open(m) as f:
                if json.load(f).get("outcome") == "fatal":
                    print("FATAL_WHILE_RUNNING")
                    return
        time.sleep(0.1)


def jax_uncaught():
    # Uncaught RESOURCE_EXHAUSTED with XLA's default arena: the hook writes
    # jax.profiler.device_memory_profile() into a framework_oom bundle.
    import jax.numpy as jnp
    held = []
    while True:
        held.append(jnp.ones((1 << 28,), dtype=jnp.float32).block_until_ready())


CASES = {
    "torch_fraction": torch_fraction, "torch_wait_fatal": torch_wait_fatal, "jax_uncaught": jax_uncaught,
    "torch": torch_grow_activations, "torch_recovered": torch_recovered, "jax": jax_grow_arrays,
    "cupy": cupy_grow_arrays, "torch_hold": torch_hold_memory, "torch_train": torch_train_loop,
}

if __name__ == "__main__":
    CASES[sys.argv[1]]()
