"""The shared virtual environment with the real frameworks
(scripts/frameworks-venv.sh), for tests that need it: its directory when it
has been made, else None (the tests then skip: exit 77 with one line)."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "frameworks-venv.sh"
SKIP = 77


def find():
    """The venv's directory, or None when it is not made (never makes it)."""
    p = subprocess.run([str(SCRIPT), "--path"], stdout=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0 or not p.stdout.strip():
        return None
    path = pathlib.Path(p.stdout.strip().splitlines()[-1])
    return path if (path / "bin" / "python").exists() else None


def site_packages(venv):
    """The venv's site-packages directory."""
    found = sorted(venv.glob("lib/python3*/site-packages"))
    return found[0] if found else None


def skip(why):
    """Says why the test is skipped and exits 77."""
    print("SKIP: %s (make it with scripts/frameworks-venv.sh)" % why)
    raise SystemExit(SKIP)


def python_or_skip():
    """The venv's python, or exit 77."""
    venv = find()
    if venv is None:
        skip("the frameworks venv is absent")
    return str(venv / "bin" / "python")


def reexec_in_venv():
    """Runs the calling script again with the venv's python (or exits 77),
    unless it is that python already: for tests that import the frameworks."""
    python = python_or_skip()
    if pathlib.Path(sys.prefix).resolve() != pathlib.Path(python).parents[1].resolve():
        sys.stdout.flush()
        os.execv(python, [python] + sys.argv)

