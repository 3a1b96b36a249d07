"""The native half of the package: the `gpumemrec` command and
libgpumemrec.so, which the wheel carries side by side in gpumemrec/_native/.

The command finds the library beside itself (tools/cmd_run.cpp), so
`gpumemrec run` needs no configuration. GPUMEMREC_CLI points the package at
another `gpumemrec` command (a CMake build tree, an installed one).
"""
import os
import subprocess

NATIVE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")


class BundleError(Exception):
    """A bundle the reader refuses: the message is the C++ reader's one line,
    e.g. "/d/oom_dump_x/events.json: truncated JSON at byte 4096"."""


class CommandError(RuntimeError):
    """The gpumemrec command is missing or failed for another reason."""


def command():
    """Path of the gpumemrec command the package runs."""
    env = os.environ.get("GPUMEMREC_CLI")
    if env:
        return env
    path = os.path.join(NATIVE_DIR, "gpumemrec")
    if not os.access(path, os.X_OK):
        raise CommandError("the gpumemrec command is not in %s (a source checkout? build it with CMake and set "
                           "GPUMEMREC_CLI to build/bin/gpumemrec)" % NATIVE_DIR)
    return path


def library():
    """Path of the libgpumemrec.so inside the wheel (None outside a wheel)."""
    path = os.path.join(NATIVE_DIR, "libgpumemrec.so")
    return path if os.path.exists(path) else None


_ERROR_PREFIX = "gpumemrec: error: "
_BAD_INPUT = 2  # tools/cli.h ExitCode::kBadInput


def error_line(stderr):
    """The command's "gpumemrec: error: ..." line without its prefix."""
    lines = [l for l in stderr.splitlines() if l.startswith(_ERROR_PREFIX)]
    if lines:
        return lines[-1][len(_ERROR_PREFIX):]
    rest = stderr.strip().splitlines()
    return rest[-1] if rest else "no message"


def run_cli(args, text=True):
    """Runs `gpumemrec ARGS...` and returns its stdout. Bad input (exit 2,
    the reader's one-line errors) raises BundleError, anything else
    CommandError."""
    try:
        p = subprocess.run([command()] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL)
    except OSError as e:
        raise CommandError("cannot run %s: %s" % (command(), e)) from None
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == _BAD_INPUT:
        raise BundleError(error_line(err))
    if p.returncode != 0:
        raise CommandError("gpumemrec %s failed (exit %d): %s" % (args[0] if args else "", p.returncode,
                                                                  error_line(err)))
    return p.stdout.decode("utf-8", "replace") if text else p.stdout
