"""The wheel's PEP 517 build backend: setuptools' own (setuptools.build_meta,
which runs setup.py), behind one check, so that a build that lacks what it
needs says so in one line instead of a traceback.

With build isolation (`pip wheel .`, `pip install .`), pip installs
pyproject.toml's build requirements (setuptools>=61, wheel) first. Without it
(`--no-build-isolation`: nothing is downloaded) they must already be in the
Python that builds; a pyenv, conda or python.org Python usually has no
`wheel`, and since Python 3.12 no setuptools either. setuptools 70.1 and
later carry bdist_wheel themselves (pypa/setuptools,
setuptools/command/bdist_wheel.py, added in v70.1.0), so `wheel` is needed
only with an older setuptools.
"""
import sys

MIN_SETUPTOOLS = (61,)


def _version(text):
    out = []
    for part in text.split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def missing():
    """The requirements this Python lacks to build the wheel, as pip names them."""
    try:
        import setuptools
    except ImportError:
        return ["setuptools>=61", "wheel"]
    if _version(setuptools.__version__) < MIN_SETUPTOOLS:
        return ["setuptools>=61 (this Python has %s)" % setuptools.__version__]
    try:
        import setuptools.command.bdist_wheel  # noqa: F401  (setuptools >= 70.1)
    except ImportError:
        try:
            import wheel.bdist_wheel  # noqa: F401
        except ImportError:
            return ["wheel"]
    return []


def _check():
    need = missing()
    if need:
        sys.stderr.write("gpumemrec: cannot build the wheel: %s lacks %s (%s -m pip install %s), or build "
                         "with build isolation (leave out --no-build-isolation; pip then downloads them)\n"
                         % (sys.executable, " and ".join(need), sys.executable,
                            " ".join("'%s'" % n.split(" ")[0] for n in need)))
        sys.stderr.flush()
        raise SystemExit(1)
    import setuptools.build_meta
    return setuptools.build_meta


def get_requires_for_build_wheel(config_settings=None):
    return _check().get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _check().prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _check().build_wheel(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings=None):
    return _check().get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory, config_settings=None):
    return _check().build_sdist(sdist_directory, config_settings)
