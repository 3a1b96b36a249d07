#!/usr/bin/env python3
"""python.roles_partial: what a walk cut short by its budget may conclude
(shim/python/gpumemrec_pyhook/roles.py, framework_roles.py).

- The budget is the walking thread's CPU time: time spent preempted (here,
  asleep: what a loaded machine does to the walk) does not use it; CPU
  spent does; the wall clock stops the walk at roles.WALL_FACTOR budgets
  whatever the load.
- An optimizer's parameters that no reached module holds are optimizer
  state (master copies) only after a complete walk; after a partial one
  they are weights, with a note (CI once saw a loaded rank's exit bundle
  name the model's parameters optimizer state: the walk had reached the
  optimizer and not the module).

The objects are minimal stand-ins with the attributes the walk reads
(torch.Tensor's device and untyped_storage().data_ptr(), a module's
_parameters/_buffers dicts, an optimizer's state and param_groups); the
real PyTorch's walk is checked by simulate.torchrun_* and the framework
tests."""
import os
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shim", "python"))
from gpumemrec_pyhook import framework_roles, roles  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class Storage:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class Tensor:
    def __init__(self, ptr):
        self.device = types.SimpleNamespace(type="cuda", index=0)
        self.grad = None
        self._storage = Storage(ptr)

    def untyped_storage(self):
        return self._storage


class Module:
    pass


class Optimizer:
    pass


TORCH = types.SimpleNamespace(Tensor=Tensor, nn=types.SimpleNamespace(Module=Module),
                              optim=types.SimpleNamespace(Optimizer=Optimizer))


def optimizer_over(params):
    opt = Optimizer()
    opt.state = {p: {"exp_avg": Tensor(p.untyped_storage().data_ptr() + 0x100000)} for p in params}
    opt.param_groups = [{"params": list(params)}]
    return opt


def roles_after(complete, examine_module):
    params = [Tensor(0x1000), Tensor(0x2000)]
    module = Module()
    module._parameters, module._buffers = {"w": params[0], "b": params[1]}, {}
    claims = roles._Claims(TORCH, 0)
    ex = framework_roles.Examiner(TORCH, claims)
    ex.examine(optimizer_over(params))
    if examine_module:
        ex.examine(module)
    ex.finish(complete)
    return {ptr: role for ptr, (role, _, _) in claims.by_ptr.items()}, ex.notes


def check_finish():
    got, notes = roles_after(True, True)
    check(got == {0x1000: "weights", 0x2000: "weights", 0x101000: "optimizer_state", 0x102000: "optimizer_state"},
          "complete walk, module reached: parameters are weights: %s" % got)
    got, notes = roles_after(True, False)
    check(got[0x1000] == "optimizer_state" and not notes,
          "complete walk, no module holds them: master copies (optimizer state): %s" % got)
    got, notes = roles_after(False, False)
    check(got[0x1000] == "weights" and got[0x2000] == "weights" and got[0x101000] == "optimizer_state",
          "partial walk, module not reached: parameters are weights: %s" % got)
    check(len(notes) == 1 and next(iter(notes)).startswith("2 optimizer parameter(s) held by no module"),
          "partial walk: a note says so: %s" % notes)


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def check_deadline():
    d = roles.Deadline(100)
    time.sleep(0.15)  # preempted: wall time passes, no CPU time
    check(not d.passed(), "0.15 s asleep does not use a 100 ms CPU budget")
    spin(0.12)
    check(d.passed(), "0.12 s of CPU uses it")
    d = roles.Deadline(50)
    time.sleep(roles.WALL_FACTOR * 0.05 + 0.05)
    check(d.passed(), "past %d budgets of wall time the walk stops whatever the load" % roles.WALL_FACTOR)


def main():
    check_finish()
    check_deadline()
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
