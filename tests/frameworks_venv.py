"""The tests' way to the real frameworks: the one shared virtual environment
that scripts/frameworks-venv.sh makes (tests/requirements-frameworks.txt:
JAX, flax, optax, DuckDB, pandas, polars, pyarrow, Dask, auditwheel, ...).

A test never makes it (about 5 minutes and 7 GB): without it the test says
so in one line and exits 77, which ctest counts as skipped
(SKIP_RETURN_CODE 77). GPUMEMREC_FRAMEWORKS_VENV=DIR names another one.
"""
import os
import subprocess
import sys

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def venv_dir():
    """The environment's directory, or None when it is not made."""
    env = os.environ.get("GPUMEMREC_FRAMEWORKS_VENV")
    if env:
        return env if os.path.exists(os.path.join(env, "bin", "python")) else None
    p = subprocess.run([os.path.join(ROOT, "scripts", "frameworks-venv.sh"), "--path"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def venv_or_skip(what):
    """The environment's directory; exits 77 with one line when there is none."""
    d = venv_dir()
    if d is None:
        print("SKIP: %s needs the frameworks venv, which is not made here (scripts/frameworks-venv.sh makes it; "
              "or set GPUMEMREC_FRAMEWORKS_VENV)" % what)
        sys.stdout.flush()
        sys.exit(SKIP)
    return d


def python_or_skip(what):
    return os.path.join(venv_or_skip(what), "bin", "python")


def reexec_in_venv(what):
    """Runs this script again with the environment's Python, unless it is
    that Python already (the engines are imported in-process)."""
    py = python_or_skip(what)
    if os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(py))):
        sys.stdout.flush()
        os.execv(py, [py] + sys.argv)
