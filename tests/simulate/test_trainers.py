#!/usr/bin/env python3
"""simulate.trainer_*: the real trainers of the frameworks venv (Lightning
2.6.6, accelerate 1.15.0, transformers 5.24.0 on PyTorch 2.14.1) run out of
memory on a simulated A100 80GB under `gpumemrec run --simulate a100-80gb`
(compute capability 8.0: PyTorch's attention is flash attention, no cuDNN).

For each trainer two runs:
- plain: the error leaves the trainer (Lightning's
  _call_and_handle_interrupt re-raises it, accelerate's backward and
  transformers' Trainer.train do not catch it) and the program dies of it:
  one bundle, `fatal` (PyTorch's allocator gave up: its out-of-memory
  observer ran, and no handler of the program was waiting for the error);
- retry: the trainer's own handler catches the error and goes on with a
  smaller batch (Lightning's BatchSizeFinder, accelerate's
  find_executable_batch_size, transformers' auto_find_batch_size, which is
  accelerate's): each bundle `recovered`, naming the handler
  (shim/python/gpumemrec_pyhook/trainer_retry.py cites the source of each).

Every bundle's site is the program's own line where the error went through
it (the innermost frame of the error's traceback in programs/: training_step,
the loss function, the model's forward, the line calling
accelerator.backward), never a frame of the installed trainer; the roles
walk's weights, gradients and optimizer state equal the program's own count
at that moment (programs/expect.py).

GPUMEMREC_EPISODE_MS=600000: a verdict the hook does not decide comes at
exit, not from a timer this test does not control. GPUMEMREC_RECOVERED=keep
and GPUMEMREC_MAX_DUMPS=0: every recovered episode keeps its bundle.

Usage: test_trainers.py BUILD_BIN_DIR CASE. Exit 77 without the venv.
"""
import os
import sys

from torch_checks import Run, check, check_backward_site, check_roles, check_simulated, load, run_case

CARD = ("a100-80gb", "NVIDIA A100-SXM4-80GB")
ENV = {"GPUMEMREC_EPISODE_MS": "600000", "GPUMEMREC_RECOVERED": "keep", "GPUMEMREC_MAX_DUMPS": "0",
       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
ROLES = ("weights", "gradients", "optimizer_state")
ACCELERATE = "accelerate's find_executable_batch_size"


def run(bin_dir, program, mode):
    return Run(bin_dir, program, [mode], ENV, card=CARD[0])


def check_site(run, bundle, expect, backward):
    """The bundle's site is the program's own line (the error's traceback)."""
    program, line, function = expect["user_frame"]
    if backward:
        check_backward_site(bundle, program, line)
        return
    site = run.report_json(bundle)["failure"]["site"]["frame"]
    check((os.path.basename(site["file"]), site["line"]) == (program, line) and site["function"].endswith(function),
          "report --json: the site is %s:%d %s: %s" % (program, line, function, site.get("short")))
    check("    site: %s (%s:%d) [python]" % (site["function"], program, line) in load(bundle, "summary.txt"),
          "summary.txt names %s:%d as the site" % (program, line))


def check_bundle(run, bundle, expect, backward):
    check_simulated(bundle, *CARD)
    check_site(run, bundle, expect, backward)
    check_roles(load(bundle, "framework.json"), expect, ROLES)


def case_plain(bin_dir, program, backward=False):
    r = run(bin_dir, program, "plain")
    check(r.rc == 1 and "torch.OutOfMemoryError: CUDA out of memory" in r.err,
          "the error leaves the trainer and ends the program: exit %d" % r.rc)
    check(len(r.bundles) == 1 and len(r.expects) == 1,
          "one bundle (%d) for one out-of-memory (%d)" % (len(r.bundles), len(r.expects)))
    if not r.bundles:
        return
    b = r.bundles[0]
    md = load(b, "metadata.json")
    check(md["outcome"] == "fatal" and "allocator gave up" in md["outcome_detail"],
          "fatal, PyTorch's allocator gave up: %s (%s)" % (md["outcome"], md["outcome_detail"]))
    check("retry_handler" not in load(b, "framework.json"), "no handler was waiting for the error")
    check_bundle(r, b, r.expects[0], backward)


def case_retry(bin_dir, program, mode, handler, backward=False, all_seen=True):
    """Each error the program saw: a bundle recovered by the trainer's
    handler. A failed cudaMalloc that PyTorch's allocator retried itself
    after freeing its cache (c10's release_cached_blocks; no error, no
    observer) is a bundle recovered by that retry, with no framework.json.
    all_seen: the program's code sees every error (else some arise and are
    caught inside the installed trainer and model only)."""
    r = run(bin_dir, program, mode)
    check(r.rc == 0, "the trainer catches the error and the program ends normally: exit %d" % r.rc)
    oom = [e for e in r.expects if "user_frame" in e]
    seen = [b for b in r.bundles if os.path.exists(os.path.join(b, "framework.json"))]
    check(len(oom) >= 1 and (len(seen) == len(oom) if all_seen else len(seen) >= len(oom)),
          "a bundle with PyTorch's view (%d) for each error the program saw (%d)" % (len(seen), len(oom)))
    for b in r.bundles:
        md = load(b, "metadata.json")
        if b not in seen:
            check(md["outcome"] == "recovered" and md["recovery"]["handler"] is None
                  and md["recovery"]["retry_size"] > 0,
                  "no error reached the program: PyTorch's own retry recovered (%s)" % md["outcome_detail"])
            continue
        check(md["outcome"] == "recovered" and md["recovery"]["handler"] == handler,
              "recovered, caught by %s: %s (%s)" % (handler, md["outcome"], md["outcome_detail"]))
        check(load(b, "framework.json").get("retry_handler") == handler, "framework.json names the handler")
        check(r.report_json(b)["recovery"]["handler"] == handler, "report --json names the handler")
    line = "recovered: %s caught the error and retries with less" % handler
    check(r.err.count(line) == len(seen), "stderr says so for each of them: %r" % line)
    if seen and oom:
        check_bundle(r, seen[0], oom[0], backward)
    return r


def case_lightning_finder(bin_dir):
    r = case_retry(bin_dir, "lightning_fit.py", "finder", "Lightning's BatchSizeFinder (power)")
    found = r.expect.get("found")
    failed = r.expects[0].get("batch") if r.expects else None
    check(failed is not None and found == failed // 2,
          "power mode halves the batch that ran out (%s) and fits at %s" % (failed, found))


def case_accelerate_find(bin_dir):
    case_retry(bin_dir, "accelerate_train.py", "find", ACCELERATE, backward=True)


def case_transformers_auto(bin_dir):
    # An error in the installed GPT-2's forward or backward never passes
    # through the program's code: more bundles than errors it saw.
    r = case_retry(bin_dir, "transformers_train.py", "auto", ACCELERATE, all_seen=False)
    check(r.expect.get("fitted", 0) > 0, "Trainer.train ends at batch %s" % r.expect.get("fitted"))


CASES = {
    "lightning_fit": lambda d: case_plain(d, "lightning_fit.py"),
    "lightning_finder": case_lightning_finder,
    "accelerate_backward": lambda d: case_plain(d, "accelerate_train.py", backward=True),
    "accelerate_find": case_accelerate_find,
    "transformers_train": lambda d: case_plain(d, "transformers_train.py"),
    "transformers_auto": case_transformers_auto,
}


if __name__ == "__main__":
    sys.exit(run_case(CASES))
