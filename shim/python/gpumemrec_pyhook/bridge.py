"""The hook's link to libgpumemrec.so and its one stderr line.

gpumemrec_framework_oom(digest, digest_len, state_name, state, state_len)
and gpumemrec_framework_oom_begin(device) are exported by the preloaded library (shim/dump/framework_oom.cpp), so it is
in the process's global scope: ctypes.CDLL(None) finds it. The bytes are
copied before it returns. gpumemrec_framework_recovered
(shim/dump/framework_verdict.cpp): a trainer's handler caught the error.
"""
import sys

_said = [False]


def warn_once(what):
    if _said[0]:
        return
    _said[0] = True
    try:
        sys.stderr.write("gpumemrec: warning: Python hook: %s (said once; the program carries on)\n" % what)
    except Exception:
        pass


def guarded(fn, *args):
    """Runs fn; any exception is said once and swallowed."""
    try:
        return fn(*args)
    except BaseException as exc:  # noqa: B902 - the program must never see ours
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        warn_once("%s in %s: %s" % (type(exc).__name__, getattr(fn, "__name__", "?"), exc))
        return None


def begin(device):
    """Says the report for `device` is coming (gpumemrec_framework_oom_begin):
    the open out-of-memory episode there waits for it rather than closing on
    its window while the walk runs. 0 an episode waits, 1 none is open."""
    import ctypes

    fn = ctypes.CDLL(None).gpumemrec_framework_oom_begin
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int]
    return fn(int(device))


def report(digest, state_name, state):
    """Hands the framework's view to the recorder: 0 attached to the open
    out-of-memory episode, 1 a framework_oom bundle on its way (the
    recorder writes it on its own thread), -1 nothing."""
    import ctypes
    import json

    fn = ctypes.CDLL(None).gpumemrec_framework_oom
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    text = json.dumps(digest, separators=(",", ":")).encode()
    state = state or b""
    return fn(text, len(text), state_name.encode(), state, len(state))


def recovered(device, handler):
    """`handler` caught the out-of-memory error on `device` on this thread and
    retries (gpumemrec_framework_recovered): 0 when that closed the held
    episode there as recovered, -1 when it was decided already."""
    import ctypes

    fn = ctypes.CDLL(None).gpumemrec_framework_recovered
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p]
    return fn(int(device), handler.encode())
