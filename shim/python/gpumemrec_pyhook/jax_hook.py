"""JAX: the live buffers at an uncaught RESOURCE_EXHAUSTED.

Sources read (jax-ml/jax):
- jax/_src/profiler.py, device_memory_profile(backend=None): the live
  buffers of every device as a gzip-compressed pprof protocol buffer, each
  sample with its Python stack (the buffer's creation site) and its bytes.
- XlaRuntimeError (jaxlib's xla_extension, jax.errors.JaxRuntimeError in
  newer releases): an allocation failure's message starts with
  "RESOURCE_EXHAUSTED:". XLA's BFC allocator works inside one arena taken at
  start-up, so the driver usually sees no failure: the bundle is a
  framework_oom one.

- The message names the device and the size asked for. Seen on an H200
  (jax 0.11.2, docs/validation/2026-11-26): "RESOURCE_EXHAUSTED: Out of
  memory while trying to allocate 1.00GiB with allocator GPU_0_bfc on
  device 0. [...]"; the size is XLA's human-readable form (two decimals,
  binary units), older releases say "allocate N bytes". XLA's CPU client
  (jax 0.10.2, jaxlib's libjax_common.so) says "Out of memory allocating N
  bytes." and names no device. All are read into the digest's `device` and
  `request_bytes` (-1 and 0 when absent).

Memory by role (params, optimizer state) joins the digest: jax_roles.py.

The hook chains sys.excepthook and threading.excepthook when jax is imported
(the exception's traceback still references the arrays, so they are live in
the profile), writes the profile, then calls the hook it replaced: the
program's output and exit status are unchanged.
"""
import re
import sys

from . import bridge

_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}
_DEVICE = re.compile(r"\bon device (\d+)")
_SIZE = re.compile(r"\ballocat(?:e|ing) ([0-9]+(?:\.[0-9]+)?) ?(B|KiB|MiB|GiB|TiB|PiB|bytes)\b")


def parse_message(line):
    """(device, request_bytes) from XLA's out-of-memory message; -1 and 0
    for what it does not say."""
    d = _DEVICE.search(line)
    s = _SIZE.search(line)
    size = 0
    if s:
        num, unit = s.group(1), _UNITS.get(s.group(2), 1)
        size = int(num) * unit if "." not in num else int(round(float(num) * unit))  # bytes exact
        if size >= 1 << 63:  # not a size any device has: as if unsaid
            size = 0
    device = int(d.group(1)) if d else -1
    return (device if device < 1 << 31 else -1), size

_done = [False]  # one report per process: the first uncaught one


def is_resource_exhausted(exc):
    names = {cls.__name__ for cls in type(exc).__mro__}
    if not names & {"XlaRuntimeError", "JaxRuntimeError"}:
        return False
    return str(exc).lstrip().startswith("RESOURCE_EXHAUSTED")


def on_import(jax):
    import threading  # imported by jax already; not at every start-up

    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        bridge.guarded(_maybe_report, exc)
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook
    previous_thread = threading.excepthook

    def thread_excepthook(args):
        bridge.guarded(_maybe_report, args.exc_value)
        previous_thread(args)

    threading.excepthook = thread_excepthook


def _maybe_report(exc):
    if exc is None or _done[0] or not is_resource_exhausted(exc):
        return
    _done[0] = True
    jax = sys.modules.get("jax")
    profile = jax.profiler.device_memory_profile() if jax is not None else b""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else "RESOURCE_EXHAUSTED"
    device, size = parse_message(first)
    digest = {"framework": "jax", "device": device, "request_bytes": size, "error": first}
    if jax is not None:
        from . import jax_roles

        digest["roles"] = jax_roles.walk(jax, max(device, 0))
    bridge.report(digest, "framework_memory_profile.pb.gz", profile)
