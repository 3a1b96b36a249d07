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

The hook chains sys.excepthook and threading.excepthook when jax is imported
(the exception's traceback still references the arrays, so they are live in
the profile), writes the profile, then calls the hook it replaced: the
program's output and exit status are unchanged.
"""
import sys

from . import bridge

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
    digest = {"framework": "jax", "device": -1, "error": lines[0] if lines else "RESOURCE_EXHAUSTED"}
    bridge.report(digest, "framework_memory_profile.pb.gz", profile)
