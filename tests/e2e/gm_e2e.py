"""Helpers for the end-to-end tests: run an unmodified program under
LD_PRELOAD=libgpumemrec.so against the fake drivers, find the bundle it wrote,
and read it back. Standard library only."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import doc_fields  # noqa: E402 (same directory)

BUILD = os.environ.get("GPUMEMREC_BUILD_DIR", "")
SHIM = os.path.join(BUILD, "bin", "libgpumemrec.so")
TOOL = os.path.join(BUILD, "bin", "gpumemrec")
FAKES = os.path.join(BUILD, "tests", "fakes")
PROGRAMS = os.path.join(BUILD, "tests", "programs")
E2E_BIN = os.path.join(BUILD, "tests", "e2e")

# Sanitizer builds (scripts/sanitizers.sh) set this to the sanitizer runtime,
# e.g. "/usr/lib/gcc/x86_64-linux-gnu/12/libasan.so:", which must come first
# in LD_PRELOAD when an instrumented shim is preloaded into a program.
PRELOAD_PREFIX = os.environ.get("GPUMEMREC_TEST_PRELOAD_PREFIX", "")


def preload_env(*libs):
    """The LD_PRELOAD value for `libs` (the shim by default)."""
    return PRELOAD_PREFIX + ":".join(libs or (SHIM,))


BUNDLE_FILES = ["metadata.json", "events.json", "allocations.json", "stacks.json", "environment.json",
                "summary.txt", "manifest.json", "peak.json"]


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def base_env(capacity=256 << 20):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMREC_", "FAKEGPU_"))}
    env.pop("LD_PRELOAD", None)
    env["FAKEGPU_CAPACITY"] = str(capacity)
    env["LD_LIBRARY_PATH"] = FAKES + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


class Run:
    def __init__(self, proc, workdir, dumpdir, ledger_path):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.workdir = workdir
        self.dumpdir = dumpdir
        self.ledger_path = ledger_path

    def ledger(self):
        with open(self.ledger_path) as f:
            return json.load(f)

    def bundles(self):
        if not os.path.isdir(self.dumpdir):
            return []
        names = sorted(os.listdir(self.dumpdir))
        check(not any(n.startswith(".tmp") for n in names), "half-written bundle left behind: %s" % names)
        return [os.path.join(self.dumpdir, n) for n in names if n.startswith("oom_dump_")]

    def only_bundle(self):
        b = self.bundles()
        check(len(b) == 1, "expected exactly one bundle, found %d\nstdout:\n%s\nstderr:\n%s" %
              (len(b), self.stdout[-2000:], self.stderr[-2000:]))
        return Bundle(b[0])

    def oom_lines(self):
        return [parse_kv(l) for l in self.stdout.splitlines() if l.startswith("OOM ")]


def normalized(out):
    """Program output without what legitimately moves between runs: host
    (malloc) addresses, under ASLR. Device addresses from the fakes are
    deterministic."""
    return re.sub(r"(HOST\w* api=\w+ ptr=)0x[0-9a-f]+", r"\1HOSTPTR", out)


def parse_kv(line):
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line))


_WORKDIRS = []


# A program's time limit: only a hang reaches it. The slowest programs take a
# few seconds on a quiet machine and over a minute on a loaded one (a busy
# loop on every core, a sanitizer): scripts/under-load.sh.
RUN_TIMEOUT_S = 300


def run(argv, preload=True, env_extra=None, capacity=256 << 20, timeout=RUN_TIMEOUT_S, keep_env=None,
        preexec_fn=None):
    """preload: True (the shim), False, or a full LD_PRELOAD string."""
    workdir = tempfile.mkdtemp(prefix="gpumemrec-e2e-")
    _WORKDIRS.append(workdir)
    dumpdir = os.path.join(workdir, "dumps")
    ledger = os.path.join(workdir, "ledger.json")
    env = base_env(capacity)
    env["FAKEGPU_LEDGER"] = ledger
    env["GPUMEMREC_DIR"] = dumpdir
    if preload:
        env["LD_PRELOAD"] = preload if isinstance(preload, str) else preload_env()
    if env_extra:
        env.update(env_extra)
    proc = subprocess.run(argv, env=env, cwd=workdir, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec_fn)
    print_sanitizer_reports(argv, proc.stderr)
    # Kept with the work directory when the case fails (main() removes it
    # only on success): a flake seen once under load can be read afterwards.
    with open(os.path.join(workdir, "program-output.txt"), "w") as f:
        f.write("$ %s\nexit %d\n--- stdout\n%s\n--- stderr\n%s\n" % (" ".join(map(str, argv)), proc.returncode,
                                                                      proc.stdout, proc.stderr))
    return Run(proc, workdir, dumpdir, ledger)


SANITIZER_REPORT_RE = re.compile(r"^(WARNING: ThreadSanitizer|==\d+==ERROR: (Address|Leak)Sanitizer|.*runtime error:)",
                                 re.M)


def print_sanitizer_reports(argv, stderr, limit=16000):
    """A sanitizer's report, whole, on the test's stderr: the checks quote
    only the tail of a program's stderr, which cuts the report's first stack
    (the access that raced or overflowed) off."""
    m = SANITIZER_REPORT_RE.search(stderr or "")
    if m:
        sys.stderr.write("---- sanitizer report from %s ----\n%s\n---- end of report ----\n" %
                         (os.path.basename(str(argv[0])), stderr[m.start():m.start() + limit]))


def system_has_libunwind():
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    return any(l.strip().startswith("libunwind.so.8 ") for l in out.splitlines())


def auto_unwinder():
    """What GPUMEMREC_UNWINDER=auto gives in this build (environment.json
    config.unwinder): the system's libunwind, else the bundled copy beside the
    library, else glibc's backtrace; always glibc under ThreadSanitizer
    (shim/record/stack_capture.cpp)."""
    if "tsan" in PRELOAD_PREFIX:
        return "glibc backtrace"
    if system_has_libunwind():
        return "libunwind"
    return "libunwind (bundled)" if os.path.exists(os.path.join(BUILD, "bin", "libunwind.so.8")) else "glibc backtrace"


def program(name):
    path = os.path.join(PROGRAMS, name)
    check(os.path.exists(path), "missing test program " + path)
    return path


class Bundle:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self._cache = {}

    def json(self, name):
        if name not in self._cache:
            with open(os.path.join(self.path, name)) as f:
                self._cache[name] = json.load(f)
        return self._cache[name]

    @property
    def manifest(self):
        return self.json("manifest.json")

    @property
    def metadata(self):
        return self.json("metadata.json")

    @property
    def events(self):
        return self.json("events.json")

    @property
    def allocations(self):
        return self.json("allocations.json")

    @property
    def stacks(self):
        return {s["stack_id"]: s for s in self.json("stacks.json")}

    def summary(self):
        with open(os.path.join(self.path, "summary.txt")) as f:
            return f.read()

    def frames(self, stack_id):
        s = self.stacks.get(stack_id)
        return s["frames"] if s else []

    def functions(self, stack_id):
        return [f["function"] for f in self.frames(stack_id)]

    def check_well_formed(self):
        m = self.manifest
        for k in ["schema_version", "bundle_name", "created_at_utc", "reason", "backend", "event_count", "files"]:
            check(k in m, "manifest lacks " + k)
        check(m["bundle_name"] == self.name, "bundle_name %s != dir %s" % (m["bundle_name"], self.name))
        # docs/bundle-format.md: gpumemprof's fields, then host and random part
        check(re.match(r"oom_dump_\d{8}T\d{6}Z_\d+_(cuda|rocm)_\d+_[A-Za-z0-9.-]+_[0-9a-f]{8}$", self.name),
              "bad bundle name " + self.name)
        for f in BUNDLE_FILES:
            check(f in m["files"], "manifest does not list " + f)
            p = os.path.join(self.path, f)
            check(os.path.isfile(p), "missing " + f)
            check((os.stat(p).st_mode & 0o777) == 0o600, "%s is not 0600" % f)
        check((os.stat(self.path).st_mode & 0o777) == 0o700, "bundle dir is not 0700")
        check(m["event_count"] == len(self.events), "event_count != len(events)")
        # docs/bundle-format.md, "Order of events": time order; seq unique,
        # and increasing within each thread (not across threads).
        stamps = [e["timestamp"] for e in self.events]
        check(stamps == sorted(stamps), "events not oldest first")
        seqs = [e["seq"] for e in self.events]
        check(len(set(seqs)) == len(seqs), "a seq twice in events.json")
        last_seq = {}
        for e in self.events:
            check(e["seq"] > last_seq.get(e["thread_id"], 0), "thread %d: seq %d after %d" %
                  (e["thread_id"], e["seq"], last_seq.get(e["thread_id"], 0)))
            last_seq[e["thread_id"]] = e["seq"]
        ids = {e["stack_id"] for e in self.events} | {a["stack_id"] for a in self.allocations}
        ids.add(self.metadata.get("stack_id") or 0)
        ids |= {s["stack_id"] for d in self.json("peak.json")["devices"] for s in d["sites"]}
        ids.discard(0)
        missing = ids - set(self.stacks)
        check(not missing, "stack ids without stacks: %s" % sorted(missing)[:5])
        sizes = [a["size"] for a in self.allocations]
        check(sizes == sorted(sizes, reverse=True), "allocations not largest first")
        md = self.metadata
        # snapshot.pickle (PyTorch memory-viz format): structure, opcodes, and
        # agreement of the trace with the final segments and with this bundle.
        if "snapshot.pickle" in m["files"]:
            checker = os.path.join(os.path.dirname(__file__), "..", "tools", "check_pickle.py")
            p = subprocess.run([sys.executable, checker, os.path.join(self.path, "snapshot.pickle"), self.path],
                               capture_output=True, text=True)
            check(p.returncode == 0, "snapshot.pickle check failed: " + p.stdout + p.stderr)
        else:
            # Left out above 200,000 events or 200,000 live allocations
            # (shim/dump/write/snapshot_pickle.h).
            check(len(self.events) > 200000 or len(self.allocations) > 200000,
                  "snapshot.pickle missing from a small bundle")
        check(md["live_bytes"] == sum(a["size"] for a in self.allocations), "live_bytes != sum(allocations)")
        check(md["live_allocations"] == len(self.allocations), "live_allocations mismatch")
        self.check_documented_fields()

    def check_documented_fields(self):
        """Every field docs/bundle-format.md documents is there, and the
        Stormlog/gpumemprof per-event fields agree with the rest (every event
        is checked; written as whole-list passes, bundles hold millions)."""
        problems = doc_fields.missing_fields(self)
        check(not problems, "; ".join(problems))
        ev = self.events
        if not ev:
            return

        def first_bad(pred, what):
            if not all(pred(e) for e in ev):
                bad = next(e for e in ev if not pred(e))
                check(False, "%s: %s" % (what, bad))

        pid = self.manifest["pid"]
        first_bad(lambda e: e["pid"] == pid, "event pid != manifest pid %s" % pid)
        # Keys left out hold the value a reader assumes (docs/bundle-format.md,
        # "Keys left out"); when written they must differ from it.
        first_bad(lambda e: "memory_reserved" not in e and "device_used" not in e and "metadata" not in e,
                  "memory_reserved / device_used / metadata written (always left out)")
        first_bad(lambda e: e.get("stream", 1) != 0, "stream 0 written")
        first_bad(lambda e: abs(e["timestamp_ns"] / 1e9 - e["timestamp"]) < 2e-6, "timestamp_ns disagrees")
        ident = lambda e: (e.get("rank", 0), e.get("local_rank", e.get("rank", 0)), e.get("world_size", 1),
                           e.get("job_id"))
        rank, local_rank, world_size, job_id = ident(ev[0])
        check(all(isinstance(x, int) for x in (rank, local_rank, world_size))
              and 0 <= rank < world_size and 0 <= local_rank < world_size,
              "rank/local_rank/world_size: %s" % (ident(ev[0]),))
        check(("rank" in ev[0]) == ((rank, local_rank, world_size) != (0, 0, 1)),
              "rank 0 of 1 written, or another identity left out: %s" % ev[0])
        check(job_id is None or (isinstance(job_id, str) and "job_id" in ev[0]), "job_id: %r" % (job_id,))
        first_bad(lambda e: ident(e) == ident(ev[0]) and ("rank" in e) == ("rank" in ev[0]),
                  "launcher identity differs between events of one dump")
        first_bad(lambda e: "device_total" not in e or (type(e["device_total"]) is int and e["device_total"] > 0),
                  "device_total")
        first_bad(lambda e: "device_free" not in e or type(e["device_free"]) is int, "device_free")
        with_free = sum(1 for e in ev if "device_free" in e)
        check(with_free <= 1, "device_free on %d events (only the failing one knows it)" % with_free)


def check_live_matches_ledger(bundle, ledger, kinds=None):
    """The bundle's live table equals the fake driver's own ledger."""
    ours = sorted((a["address"], a["size"]) for a in bundle.allocations
                  if kinds is None or a["memory_type"] in kinds)
    theirs = sorted((a["address"], a["size"]) for a in ledger["allocations"]
                    if kinds is None or a["kind"] in kinds)
    check(ours == theirs, "live table != driver ledger\n ours:   %s\n theirs: %s" % (ours[:8], theirs[:8]))


def check_stack_names(bundle, stack_id, wanted, module_suffix=None):
    fns = bundle.functions(stack_id)
    for w in wanted:
        check(any(w in f for f in fns), "stack %d lacks a frame named %r; frames: %s" % (stack_id, w, fns[:12]))
    if module_suffix:
        mods = [f["module"] for f in bundle.frames(stack_id)]
        check(any(m.endswith(module_suffix) for m in mods), "no frame in module *%s: %s" % (module_suffix, mods))


def main(cases):
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in cases:
        print("usage: %s CASE\ncases: %s" % (sys.argv[0], " ".join(sorted(cases))))
        return 2
    try:
        result = cases[name]()
    except Failure as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    if result == "skip":
        print("SKIP %s" % name)
        return 77
    for d in _WORKDIRS:
        shutil.rmtree(d, ignore_errors=True)
    print("PASS %s" % name)
    return 0
