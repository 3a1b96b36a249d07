#!/usr/bin/env python3
"""simulate.torch_*: the real PyTorch 2.14.1 (the frameworks venv) runs on a
simulated H100 under `gpumemrec run --simulate h100-80gb`, and each bundle
is checked against the program's own figures (programs/expect.py: its
tensors' blocks from PyTorch's own snapshot, torch.cuda.memory_* counters).

Cases (each a program in programs/):
  train_oom         gpt_train.py: AdamW on a GPT-shaped model; the second step
                    runs out of memory in backward, on the autograd device thread
  train_expandable  the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
                    (the caching allocator maps its memory through the driver's VMM)
  train_async       the same with backend:cudaMallocAsync (every tensor a
                    stream-ordered allocation from the driver's pool)

Usage: test_torch.py BUILD_BIN_DIR CASE. Exit 77 without the venv.
"""
import os
import sys

from torch_checks import Run, check, check_backward_site, check_roles, check_simulated, finish, load


def case_train(bin_dir, alloc_conf, api):
    program = "gpt_train.py"
    env = {"PYTORCH_CUDA_ALLOC_CONF": alloc_conf} if alloc_conf else {}
    run = Run(bin_dir, program, ["--layers", "12", "--width", "2048", "--heads", "16"], env)
    check(run.rc == 0, "the program exits 0 (it catches its OutOfMemoryError): %d" % run.rc)
    check(run.expect.get("where") == "backward", "the out-of-memory is in backward: %s" % run.expect.get("where"))
    # PyTorch's cudaMallocAsync backend has no out-of-memory observers
    # (CUDAMallocAsyncAllocator.cpp: attachOutOfMemoryObserver throws "does
    # not yet support"): neither the program's nor the recorder's runs.
    observers = None if "cudaMallocAsync" in alloc_conf else [False]
    check(run.expect.get("observer_on_main") == observers,
          "PyTorch's observers: %s (want %s)" % (run.expect.get("observer_on_main"), observers))
    fatal = [b for b in run.bundles if load(b, "metadata.json").get("outcome") == "fatal"]
    check(len(fatal) == 1, "one fatal bundle (of %d)" % len(run.bundles))
    if not fatal:
        return
    b = fatal[0]
    md = load(b, "metadata.json")
    check(md["api"] == api, "the failing call is %s: %s" % (api, md["api"]))
    check_simulated(b)
    check_backward_site(b, program, run.program_line(program, "loss.backward()"))
    if observers is None:
        # Without an observer the recorder has no moment inside PyTorch to
        # ask it: the bundle is the driver's view (a documented limit).
        check(not os.path.exists(os.path.join(b, "framework.json")), "no framework.json without an observer")
        return
    check_roles(load(b, "framework.json"), run.expect, ("weights", "gradients", "optimizer_state"))


CASES = {
    "train_oom": lambda d: case_train(d, "", "cudaMalloc"),
    "train_expandable": lambda d: case_train(d, "expandable_segments:True", "cuMemCreate"),
    "train_async": lambda d: case_train(d, "backend:cudaMallocAsync", "cudaMallocAsync"),
}


def main():
    bin_dir, case = sys.argv[1], sys.argv[2]
    CASES[case](bin_dir)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
