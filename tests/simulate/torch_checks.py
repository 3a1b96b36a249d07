"""What the tests of the real PyTorch on a simulated card share
(test_torch.py, test_trainers.py): a program run under `gpumemrec run
--simulate`, reading its bundles, and the checks of a bundle against the
program's own figures (programs/expect.py)."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import frameworks_venv

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def load(bundle, name):
    with open(os.path.join(bundle, name)) as f:
        return f.read() if name.endswith(".txt") else json.load(f)


def finish():
    """The test's exit status: 1 when a check failed."""
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


def run_case(cases):
    """argv: BUILD_BIN_DIR CASE. Runs cases[CASE]; the exit status."""
    bin_dir, case = sys.argv[1], sys.argv[2]
    cases[case](bin_dir)
    return finish()


class Run:
    """One program run under `gpumemrec run --simulate`, in a directory of
    its own (its working directory: what a trainer writes lands there)."""

    def __init__(self, bin_dir, program, args=(), env=None, card="h100-80gb"):
        self.bin_dir = bin_dir
        self.tmp = tempfile.mkdtemp(prefix="gmr-torch-")
        self.dumps = os.path.join(self.tmp, "dumps")
        python = frameworks_venv.python_or_skip()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "PYTORCH_", "LD_PRELOAD"))}
        # A loaded machine must not cut the roles walk short (its budget is time).
        full_env.update({"GPUMEMREC_ROLES_BUDGET_MS": "60000", "PYTHONDONTWRITEBYTECODE": "1"})
        full_env.update(env or {})
        cmd = [os.path.join(bin_dir, "gpumemrec"), "run", "--library", os.path.join(bin_dir, "libgpumemrec.so"),
               "--simulate", card, "--dir", self.dumps, "--", python, os.path.join(PROGRAMS, program), *args]
        p = subprocess.run(cmd, env=full_env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=1200)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        sys.stdout.write(self.out)
        sys.stdout.write("".join(l + "\n" for l in self.err.splitlines() if not l.startswith("[W")))
        self.expects = [json.loads(l[len("EXPECT "):]) for l in self.out.splitlines() if l.startswith("EXPECT ")]
        self.expect = self.expects[-1] if self.expects else {}
        self.bundles = sorted(glob.glob(os.path.join(self.dumps, "oom_dump_*")))

    def program_line(self, program, text):
        with open(os.path.join(PROGRAMS, program)) as f:
            return [i for i, t in enumerate(f, 1) if text in t][0]

    def report_json(self, bundle):
        out = subprocess.run([os.path.join(self.bin_dir, "gpumemrec"), "report", "--json", bundle],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        return json.loads(out)


def check_simulated(bundle, profile="h100-80gb", name="NVIDIA H100 80GB HBM3"):
    md = load(bundle, "metadata.json")
    check(md.get("simulated") == {"profile": profile, "name": name, "devices": 1},
          "metadata says the simulated card: %s" % md.get("simulated"))
    check(load(bundle, "summary.txt").startswith("SIMULATED: " + name),
          "summary.txt's first line says SIMULATED")


def failing_stack(bundle):
    md = load(bundle, "metadata.json")
    return {s["stack_id"]: s for s in load(bundle, "stacks.json")}.get(md["stack_id"], {})


def check_backward_site(bundle, program, line):
    """The failing allocation ran on the autograd engine's device thread,
    which has no Python frame: its stack borrows the waiting thread's and
    names the program's line that called backward, and the autograd node."""
    stack = failing_stack(bundle)
    frames = [(os.path.basename(f.get("file", "")), f.get("line")) for f in stack.get("frames", [])
              if f.get("kind") == "python"]
    check(stack.get("python") == "borrowed" and (program, line) in frames,
          "the failing stack borrows %s:%d (python=%s, frames %s)" % (program, line, stack.get("python"), frames[:4]))
    summary = load(bundle, "summary.txt")
    check(re.search(r"^    site: [\w.]+ \(%s:%d\) \[python\].*\[autograd \w+Backward\d*, engine thread"
                    % (re.escape(program), line), summary, re.M) is not None,
          "summary.txt names %s:%d and the autograd node" % (program, line))


def check_roles(fw, expect, names):
    """The roles walk against the program's own count; the roles add up to
    what PyTorch reserved, as the program read it."""
    roles = fw["roles"]
    check(roles["status"] == "complete", "the roles walk completed (%s)" % roles["status"])
    for n in names:
        check(roles["bytes"][n] == expect[n], "%s: %d bytes in the bundle, the program counts %d"
              % (n, roles["bytes"][n], expect[n]))
    total = sum(roles["bytes"].values())
    check(total == fw["reserved_bytes"], "the roles add up to what PyTorch reserved: %d vs %d"
          % (total, fw["reserved_bytes"]))
    check(fw["reserved_bytes"] == expect["reserved"], "PyTorch's reserved bytes at the failure %d, the program's %d"
          % (fw["reserved_bytes"], expect["reserved"]))
    check(roles["bytes"]["allocator_cache"] == fw["reserved_bytes"] - fw["allocated_bytes"],
          "the allocator's cache is reserved minus allocated")
