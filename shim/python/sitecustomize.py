"""gpumemrec's Python start-up hook (docs/python-hook.md).

libgpumemrec.so put this directory at the front of PYTHONPATH before the
interpreter started (shim/base/python_hook_env.cpp) and kept the original
value in GPUMEMREC_PYHOOK_SAVED. Here, first of all: PYTHONPATH is put back
(os.environ and the C environment at once: os.environ assignment calls
putenv), this directory leaves sys.path, then the hook is installed and the
user's own sitecustomize, if any, is loaded from the rest of sys.path in our
place (as ddtrace-run's and opentelemetry-instrument's bootstraps do).

Nothing here imports a framework; an error in the hook is said once on
stderr and the program carries on. An error in the user's sitecustomize
propagates to site.py, which reports it as it always would.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _restore_environment():
    saved = os.environ.pop("GPUMEMREC_PYHOOK_SAVED", None)  # pop unsets it in C too
    if saved is None:
        return
    if saved.startswith("1:"):
        os.environ["PYTHONPATH"] = saved[2:]
    else:
        os.environ.pop("PYTHONPATH", None)


def _leave_sys_path():
    for i, entry in enumerate(sys.path):
        try:
            same = os.path.abspath(entry or ".") == _HERE
        except Exception:
            same = False
        if same:
            del sys.path[i]
            sys.path_importer_cache.pop(entry, None)
            return


def _install_hook():
    try:
        import gpumemrec_pyhook  # this directory, still on sys.path here
        gpumemrec_pyhook.install()
    except Exception as exc:  # never stop the program
        sys.stderr.write("gpumemrec: warning: Python hook not installed: %s: %s\n" % (type(exc).__name__, exc))


def _chain_user_sitecustomize():
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_restore_environment()
_install_hook()
_leave_sys_path()
_chain_user_sitecustomize()
