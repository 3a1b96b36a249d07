"""The hook's link to libgpumemrec.so and its one stderr line.

gpumemrec_framework_oom(digest, digest_len, state_name, state, state_len)
is exported by the preloaded library (shim/dump/framework_oom.cpp), so it is
in the process's global scope: ctypes.CDLL(None) finds it. The bytes are
copied before it returns. gpumemrec_framework_hold, _unhold and _recovered
(shim/dump/framework_verdict.cpp) are the hook's word on the verdict.
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


def _entry(name, restype, argtypes):
    import ctypes

    fn = getattr(ctypes.CDLL(None), name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def hold(device):
    """The open out-of-memory episode on `device` waits for our report (0:
    none open, or a library without the entry point)."""
    import ctypes

    try:
        fn = _entry("gpumemrec_framework_hold", ctypes.c_uint64, [ctypes.c_int])
    except AttributeError:
        return 0
    return fn(int(device))


def unhold(episode):
    import ctypes

    return _entry("gpumemrec_framework_unhold", ctypes.c_int, [ctypes.c_uint64])(episode)


def recovered(episode, handler):
    """`handler` caught the error of `episode` on this thread and retries: 0
    when that closed the episode, -1 when it was decided already."""
    import ctypes

    fn = _entry("gpumemrec_framework_recovered", ctypes.c_int, [ctypes.c_uint64, ctypes.c_char_p])
    return fn(episode, handler.encode())
