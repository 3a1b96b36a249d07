#!/usr/bin/env python3
"""gpumemrec top against running programs (docs/cli.md, "gpumemrec top").

top_target (tests/programs/top_target.cpp) runs under the shim on two fake
devices and stops at known points (it waits for a line on stdin). At each,
`gpumemrec top --once --json PID` is taken, then the program's own signal
dump (GPUMEMREC_DUMP_SIGNAL) writes a bundle of the same moment, and the
figures must be the bundle's: live bytes per device, the peak, and the top
sites (site, library, bytes, allocations) as `gpumemrec report --json`
names them. Nothing here waits a fixed time: each step waits for what it
needs (a line, a file), up to a limit only a hang reaches.
"""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

from gm_e2e import _WORKDIRS, FAKES, TOOL, base_env, check, main, preload_env, program

WAIT_S = 120  # for a line, a bundle, a region; only a hang reaches it
REGION_SIZE_OFFSET = 12  # common/status_region.h: magic[8], version, size
PID_OFFSET = 20          # ... uid, pid
TICKS_OFFSET = 32        # ... pid_ns, start_ticks
COMMAND_OFFSET = 96      # ... boot_id[40], rank, world_size, dump_signal, reserved0, command


class Target:
    """top_target (or `argv`) under the shim, driven through its stdin."""

    def __init__(self, extra_env=None, status_dir=None, argv=None):
        self.work = tempfile.mkdtemp(prefix="gpumemrec-top-")
        _WORKDIRS.append(self.work)  # removed when the case passes
        self.status_dir = status_dir or os.path.join(self.work, "status")
        self.dumpdir = os.path.join(self.work, "dumps")
        env = base_env(1 << 30)
        env.update({"LD_PRELOAD": preload_env(), "GPUMEMREC_DIR": self.dumpdir, "GPUMEMREC_DUMP_SIGNAL": "USR2",
                    "GPUMEMREC_STATUS_DIR": self.status_dir, "FAKEGPU_DEVICES": "2"})
        env.update(extra_env or {})
        self.env = env
        self.err = open(os.path.join(self.work, "stderr.txt"), "w")
        self.proc = subprocess.Popen(argv or [program("top_target")], env=env, cwd=self.work, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.expect_ready()

    def expect_ready(self):
        line = self.proc.stdout.readline()
        check(line.startswith("READY"), "top_target did not get ready: %r" % line)

    def say(self, what):
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        self.expect_ready()

    def region_files(self):
        if not os.path.isdir(self.status_dir):
            return []
        return [n for n in os.listdir(self.status_dir) if n.startswith("%d-" % self.proc.pid)]

    def wait_region(self):
        end = time.monotonic() + WAIT_S
        while not self.region_files():
            check(time.monotonic() < end, "no status region for pid %d in %s" % (self.proc.pid, self.status_dir))
            time.sleep(0.02)
        return os.path.join(self.status_dir, self.region_files()[0])

    def bundles(self):
        names = os.listdir(self.dumpdir) if os.path.isdir(self.dumpdir) else []
        return sorted(os.path.join(self.dumpdir, n) for n in names if n.startswith("oom_dump_"))

    def signal_dump(self):
        before = set(self.bundles())
        os.kill(self.proc.pid, signal.SIGUSR2)
        end = time.monotonic() + WAIT_S
        while True:
            new = [b for b in self.bundles() if b not in before]
            if new:
                return new[0]
            check(time.monotonic() < end, "no signal bundle")
            time.sleep(0.02)

    def quit(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=WAIT_S)
        self.err.close()


def top(args, env=None, timeout=WAIT_S):
    p = subprocess.run([TOOL, "top"] + args, capture_output=True, text=True, timeout=timeout, env=env)
    return p


def top_json(t, *pids):
    p = top(["--once", "--json", "--dir", t.status_dir] + [str(x) for x in pids], env=t.env_for_top())
    check(p.returncode == 0, "top --once --json failed (%d): %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


def top_json_exact(t, pid):
    """top_json, again until `pid` is "exact": a program that has just
    recorded a burst (a look and a peek of tens of thousands of seqs) is
    "settled" until its peek budget repays them, a few tenths of a second
    (docs/cli.md, "gpumemrec top"); `--once` waits for names, not for that."""
    end = time.monotonic() + WAIT_S
    while True:
        snap = top_json(t, pid)
        mine = [p for p in snap["processes"] if p["pid"] == pid]
        if (mine and mine[0]["state"] == "exact") or time.monotonic() > end:
            return snap
        time.sleep(0.05)


def _env_for_top(self):
    env = dict(self.env)
    env.pop("LD_PRELOAD", None)
    return env


Target.env_for_top = _env_for_top


def report(bundle):
    p = subprocess.run([TOOL, "report", "--json", "--top", "16", bundle], capture_output=True, text=True,
                       timeout=WAIT_S)
    check(p.returncode == 0, "report failed: " + p.stderr)
    return json.loads(p.stdout)


def compare(snapshot, rep, pid):
    """top's figures against the bundle's report, taken at one moment."""
    procs = [p for p in snapshot["processes"] if p["pid"] == pid]
    check(len(procs) == 1, "pid %d not in top's output: %s" % (pid, snapshot))
    p = procs[0]
    check(p["state"] == "exact", "state %s (%s)" % (p["state"], p["note"]))
    check(p["names"] == "done", "sites not named: %s" % p["names"])
    live = {int(k): v for k, v in rep["live"]["by_device"].items()}
    got = {d["device"]: d["live_bytes"] for d in p["devices"]}
    check(got == live, "live bytes per device: top %s, bundle %s" % (got, live))
    peaks = {d["device"]: d for d in rep["peak"]["devices"]}
    for d in p["devices"]:
        bp = peaks[d["device"]]
        check(d["peak_bytes"] == bp["peak_bytes"] and d["peak_exact"] == bp["exact"],
              "device %d peak: top %d (exact %s), bundle %d (exact %s)" %
              (d["device"], d["peak_bytes"], d["peak_exact"], bp["peak_bytes"], bp["exact"]))
    check(p["sites_total"] == rep["sites_total"], "sites: top %d, bundle %d" % (p["sites_total"], rep["sites_total"]))
    mine = [(s["site"], s["library"], s["bytes"], s["count"]) for s in p["sites"]]
    theirs = [((s["site"] or {}).get("frame", {}).get("short"), (s["site"] or {}).get("library"), s["bytes"],
               s["count"]) for s in rep["sites"]]
    check(mine == theirs[:len(mine)] and len(mine) == min(16, len(theirs)),
          "sites:\n top    %s\n bundle %s" % (mine, theirs))
    return p


def case_once_json_equals_bundle(ring=None):
    if not os.path.exists(TOOL):
        return "skip"  # sanitizer builds build the shim, not the CLI
    t = Target({"GPUMEMREC_RING_EVENTS": str(ring)} if ring else None)
    t.wait_region()
    snap = top_json_exact(t, t.proc.pid)
    p = compare(snap, report(t.signal_dump()), t.proc.pid)
    check(p["devices"][0]["peak_bytes"] == 96 << 20, "device 0's peak is 96 MiB: %s" % p["devices"][0])
    check(p["command"].endswith("top_target"), "command: %r" % p["command"])
    check(p["dump_signal"] == "SIGUSR2" and p["dump_dir"] == t.dumpdir, "dump: %s %s" % (p["dump_signal"], p["dump_dir"]))
    check(p["sites"][0]["site"].startswith("alloc_weights"), "the first site: %s" % p["sites"][0])
    # A second moment: more memory from another thread, and churn past a
    # sixteenth of the ring (the peak keeper reads part of it).
    t.say("grow")
    t.say("churn %d" % (3000 if not ring else ring // 8))
    snap = top_json_exact(t, t.proc.pid)
    compare(snap, report(t.signal_dump()), t.proc.pid)
    t.quit()
    check(not t.region_files(), "the region outlived its process: %s" % t.region_files())


def case_python_sites():
    """Sites named by their Python lines, as report names them."""
    if not os.path.exists(TOOL):
        return "skip"
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "top_python_target.py")
    t = Target({"GMR_CUDART": os.path.join(FAKES, "libcudart.so"), "PYTHONDONTWRITEBYTECODE": "1"},
               argv=[sys.executable, script])
    t.wait_region()
    p = compare(top_json_exact(t, t.proc.pid), report(t.signal_dump()), t.proc.pid)
    first = p["sites"][0]
    check(first["site"].startswith("allocate (top_python_target.py:") and first["count"] == 3 and
          first["bytes"] == 24 << 20, "the first site: %s" % first)
    t.say("grow")
    compare(top_json_exact(t, t.proc.pid), report(t.signal_dump()), t.proc.pid)
    t.quit()


def frameworks_python():
    """The real frameworks' interpreter (scripts/frameworks-venv.sh), or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "..", "..", "scripts", "frameworks-venv.sh")
    if subprocess.run([script, "--check"]).returncode != 0:
        return None
    venv = subprocess.run([script], capture_output=True, text=True).stdout.strip()
    return os.path.join(venv, "bin", "python")


def case_torch_sites_and_roles():
    """Real PyTorch on a simulated H100: sites by the user's lines, and the
    roles the Python hook hands over at a caught out-of-memory."""
    if not os.path.exists(TOOL):
        return "skip"
    py = frameworks_python()
    if not py:
        print("no frameworks environment (scripts/frameworks-venv.sh makes it)")
        return "skip"
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "top_torch_target.py")
    # 16 native frames: the caching allocator and what calls it; the bundles
    # symbolize no deeper into libtorch (seconds each, on a loaded machine).
    t = Target({"GPUMEMREC_SIMULATE": "h100-80gb", "PYTHONDONTWRITEBYTECODE": "1", "GPUMEMREC_STACK_DEPTH": "16"},
               argv=[py, script])
    t.wait_region()
    p = compare(top_json_exact(t, t.proc.pid), report(t.signal_dump()), t.proc.pid)
    check(any(s["site"] and s["site"].startswith("build_model (top_torch_target.py:") for s in p["sites"]),
          "no site at build_model: %s" % p["sites"])
    check(p["devices"][0]["bus_id"] and p["devices"][0]["card_total_bytes"], "the card: %s" % p["devices"][0])
    check(p["roles"] is None, "roles before any report: %s" % p["roles"])
    t.say("grow")
    compare(top_json_exact(t, t.proc.pid), report(t.signal_dump()), t.proc.pid)
    before = set(t.bundles())
    t.say("oom")
    snap = top_json(t, t.proc.pid)
    roles = snap["processes"][0]["roles"]
    check(roles and roles["at"] == "oom", "roles after the out-of-memory: %s" % roles)
    # The hook's report goes into the out-of-memory's bundle, or into one of
    # its own (reason framework_oom) when the episode was decided first (a
    # slow walk: docs/python-hook.md).
    def with_framework():
        return [b for b in t.bundles() if b not in before and
                "framework.json" in json.load(open(os.path.join(b, "manifest.json")))["files"]]
    end = time.monotonic() + WAIT_S
    while not with_framework():
        check(time.monotonic() < end, "no bundle got framework.json: %s" % t.bundles())
        time.sleep(0.05)
    oom = with_framework()
    rep = report(oom[0])["roles"]["framework"]
    check(rep and {k: roles["bytes"][k] for k in rep["bytes"]} == rep["bytes"],
          "roles: top %s, the bundle's framework.json %s" % (roles["bytes"], rep and rep["bytes"]))
    t.quit()


def case_hostile_regions():
    if not os.path.exists(TOOL):
        return "skip"
    t = Target()
    real = t.wait_region()
    d = t.status_dir
    with open(real, "rb") as f:
        good = f.read()
    check(good[:8] == b"GMRSTAT1", "not a region: %r" % good[:8])
    size = int.from_bytes(good[REGION_SIZE_OFFSET:REGION_SIZE_OFFSET + 4], "little")
    check(size == len(good), "the region's size field %d, its file %d bytes" % (size, len(good)))

    def put(name, data, mode=0o600):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path

    def as_process(pid, ticks):
        r = bytearray(good)
        r[PID_OFFSET:PID_OFFSET + 4] = pid.to_bytes(4, "little")
        r[TICKS_OFFSET:TICKS_OFFSET + 8] = ticks.to_bytes(8, "little")
        return bytes(r)

    dead = 2 ** 22 + 12345  # above pid_max on most systems: no such process
    put("%d-5.status" % dead, as_process(dead, 5))                # a process gone: removed
    put("777777-1.status", good[:100])                            # truncated
    put("777778-1.status", good + b"x")                           # too big
    put("777779-1.status", os.urandom(len(good)))                 # garbage
    put("777780-1.status", good, 0o644)                           # readable by others
    put("777781-1.status", b"GMRSTAT1\x07\x00\x00\x00" + good[12:])  # another version
    os.symlink(real, os.path.join(d, "777782-1.status"))           # a link
    os.mkfifo(os.path.join(d, "777783-1.status"), 0o600)           # a FIFO: must not block
    put("not-a-region.txt", b"hello")
    pid, ticks = os.path.basename(real)[:-len(".status")].split("-")
    put("%s-%d.status" % (pid, int(ticks) + 1), good)              # a name that is not its process's
    start = time.monotonic()
    snap = top_json(t)
    check(time.monotonic() - start < 10, "top took %.1f s on hostile regions" % (time.monotonic() - start))
    check([p["pid"] for p in snap["processes"]] == [t.proc.pid], "processes: %s" % snap["processes"])
    why = {s["file"]: s["why"] for s in snap["skipped"]}
    expect = {"%d-5.status" % dead: "process gone", "777777-1.status": "truncated", "777778-1.status": "size",
              "777779-1.status": "not a gpumemrec status region", "777780-1.status": "readable or writable by others",
              "777781-1.status": "region version 7", "777782-1.status": "a symbolic link",
              "777783-1.status": "not a regular file",
              "%s-%d.status" % (pid, int(ticks) + 1): "its name does not match its process"}
    for f, w in expect.items():
        check(f in why and w in why[f], "%s: expected %r, got %r (skipped: %s)" % (f, w, why.get(f), snap["skipped"]))
    check("not-a-region.txt" not in why, "a file not named like a region is not a region")
    check(not os.path.exists(os.path.join(d, "%d-5.status" % dead)), "a dead process's region stays")
    check(os.path.exists(os.path.join(d, "777779-1.status")), "top removed a file that is not a region")
    # Escape sequences in a region's strings never reach the terminal: the
    # live region's command (written once, at its start) made hostile.
    cmd = b"\x1b[2J\x1b]0;owned\x07\xc2\x9bevil"
    with open(real, "r+b") as f:
        f.seek(COMMAND_OFFSET)
        f.write(cmd + b"\x00")
    text = top(["--once", "--dir", d, str(t.proc.pid)], env=t.env_for_top())
    check(text.returncode == 0 and "evil" in text.stdout, "the process is still shown: %s" % text.stdout)
    check("\x1b" not in text.stdout and "\x9b" not in text.stdout, "an escape reached the output: %r" % text.stdout)
    t.quit()


def case_gone_and_killed():
    if not os.path.exists(TOOL):
        return "skip"
    t = Target()
    path = t.wait_region()
    check(stat.S_IMODE(os.stat(path).st_mode) == 0o600, "region mode %o" % stat.S_IMODE(os.stat(path).st_mode))
    check(stat.S_IMODE(os.stat(t.status_dir).st_mode) == 0o700, "directory mode")
    t.proc.kill()
    t.proc.wait(timeout=WAIT_S)
    check(os.path.exists(path), "SIGKILL cannot remove the region")
    snap = top_json(t)
    check(snap["processes"] == [], "a killed process is listed")
    check(any(s["why"] == "process gone" for s in snap["skipped"]), "skipped: %s" % snap["skipped"])
    check(not os.path.exists(path), "top leaves the region of a process that is gone")
    p = top(["--once", "--json", "--dir", t.status_dir, str(t.proc.pid)], env=t.env_for_top())
    check(p.returncode == 1, "a PID without a region: exit status %d" % p.returncode)
    # Off: no region at all.
    off = Target({"GPUMEMREC_STATUS": "0"})
    off.say("grow")
    check(off.region_files() == [], "GPUMEMREC_STATUS=0 made a region")
    off.quit()


def case_batch_text():
    if not os.path.exists(TOOL):
        return "skip"
    t = Target()
    t.wait_region()
    p = top(["-b", "-n", "2", "--interval", "0.2", "--dir", t.status_dir], env=t.env_for_top())
    check(p.returncode == 0, "top -b failed: " + p.stderr)
    check(p.stdout.count("gpumemrec top ") == 2, "two frames: %s" % p.stdout)
    check("alloc_weights" in p.stdout and "top_target" in p.stdout, "sites and command: %s" % p.stdout)
    check("\x1b" not in p.stdout, "escapes in plain text")
    t.quit()


class Tmux:
    """A private tmux server (its own socket) running `gpumemrec top` in an
    80x24 window: keys with send-keys, the screen with capture-pane."""

    def __init__(self, work, command, env):
        self.sock = os.path.join(work, "tmux.sock")
        self.env = env
        self.run("-u", "new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command)

    def run(self, *args):
        p = subprocess.run(["tmux", "-S", self.sock] + list(args), capture_output=True, text=True, env=self.env,
                           timeout=WAIT_S)
        return p

    def screen(self):
        return self.run("capture-pane", "-p", "-t", "top").stdout

    def keys(self, *keys):
        self.run("send-keys", "-t", "top", *keys)

    def wait_for(self, what, test):
        end = time.monotonic() + WAIT_S
        while True:
            s = self.screen()
            if test(s):
                return s
            check(time.monotonic() < end, "the screen never showed %s:\n%s" % (what, s))
            time.sleep(0.05)

    def alive(self):
        return self.run("has-session", "-t", "top").returncode == 0

    def close(self):
        self.run("kill-server")


def detail_fields(screen):
    """The words of the selected process's line ("pid N device D: ..."), or None."""
    for line in screen.splitlines():
        if line.startswith("pid ") and " device " in line:
            return line.replace(":", " ").split()
    return None


def detail_pid(screen):
    f = detail_fields(screen)
    return int(f[1]) if f else None


def first_row(screen):
    """(pid, device) of the table's first row, or None."""
    lines = screen.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.lstrip().startswith("PID RANK DEV"):
            f = lines[i + 1].split()
            return (int(f[0]), int(f[2])) if len(f) > 2 and f[0].isdigit() and f[2].isdigit() else None
    return None


def selected_row(screen):
    """(pid, device) of the selected process's line, or None."""
    f = detail_fields(screen)
    return (int(f[1]), int(f[3])) if f and f[3].isdigit() else None


def case_screen_in_tmux():
    if not os.path.exists(TOOL):
        return "skip"
    if subprocess.run(["sh", "-c", "command -v tmux"], capture_output=True).returncode != 0:
        print("tmux is missing (scripts/install-deps.sh installs it)")
        return "skip"
    a = Target()
    b = Target(status_dir=a.status_dir)
    a.wait_region()
    b.wait_region()
    env = a.env_for_top()
    env.update({"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "screen"})
    cmd = "%s top --dir %s --interval 0.3" % (TOOL, a.status_dir)
    tm = Tmux(a.work, cmd, env)
    try:
        first = tm.wait_for("both processes and a named site", lambda s: str(a.proc.pid) in s and
                            str(b.proc.pid) in s and "alloc_weights" in s)
        check(all(len(l) <= 80 for l in first.splitlines()) and len(first.splitlines()) <= 24, "not 80x24:\n" + first)
        check("sort: live" in first.splitlines()[0], "header: " + first.splitlines()[0])
        with open(os.path.join(a.work, "screen.txt"), "w") as f:
            f.write(first)
        selected = detail_pid(first)
        tm.keys("j")
        tm.wait_for("another row selected", lambda s: detail_pid(s) is not None and s != first and
                    ("device 1" in s.split("pid ", 1)[-1] or detail_pid(s) != selected))
        tm.keys("p")
        tm.wait_for("the peak order", lambda s: "sort: peak" in s.splitlines()[0])
        tm.keys("g")
        tm.wait_for("the growth order", lambda s: "sort: growth" in s.splitlines()[0])
        tm.keys("h")
        tm.wait_for("the help", lambda s: "Keys" in s and "quit" in s)
        tm.keys("x")
        tm.wait_for("the table again", lambda s: "PID RANK DEV" in s)
        # Both keys shown: a screen drawn between them (or before them) would
        # name another process than the one `d` then dumps.
        tm.keys("l", "Home")
        s = tm.wait_for("the live order, first row selected", lambda s: "sort: live" in s.splitlines()[0] and
                        first_row(s) is not None and selected_row(s) == first_row(s))
        target = a if detail_pid(s) == a.proc.pid else b
        before = set(target.bundles())
        tm.keys("d")
        tm.wait_for("the dump's answer", lambda s: "bundle requested from pid %d" % target.proc.pid in s)
        end = time.monotonic() + WAIT_S
        while not set(target.bundles()) - before:
            check(time.monotonic() < end, "no bundle after d")
            time.sleep(0.05)
        tm.run("resize-window", "-t", "top", "-x", "60", "-y", "14")
        small = tm.wait_for("a 60x14 screen", lambda s: len(s.splitlines()) <= 14 and "gpumemrec top" in s)
        check(all(len(l) <= 60 for l in small.splitlines()), "wider than 60:\n" + small)
        tm.keys("q")
        end = time.monotonic() + WAIT_S
        while tm.alive():
            check(time.monotonic() < end, "q did not quit")
            time.sleep(0.05)
    finally:
        tm.close()
        a.quit()
        b.quit()


if __name__ == "__main__":
    sys.exit(main({
        "top_once_json": case_once_json_equals_bundle,
        # A million-event ring: the keeper is a sixteenth of it (65,536 seqs)
        # behind, and the churn takes the look past its cheap size.
        "top_once_json_big_ring": lambda: case_once_json_equals_bundle(1 << 20),
        "top_hostile_regions": case_hostile_regions,
        "top_gone_and_killed": case_gone_and_killed,
        "top_batch_text": case_batch_text,
        "top_python": case_python_sites,
        "top_torch": case_torch_sites_and_roles,
        "top_screen": case_screen_in_tmux,
    }))
