"""The hook proper: acts when the program imports torch or jax, never before.

A meta-path finder wraps the loader of the top-level modules "torch" and
"jax": once the module has run (import finished without error), the matching
install function runs (torch_hook.py, jax_hook.py, imported only then: through
this package's __path__, so after our directory left sys.path; a program that
imports neither pays only for this file and bridge.py at start-up). Every
entry point catches its own exceptions and says the first one on stderr (said
once).
"""
import sys

from . import bridge

_HOOK_MODULES = {"torch": "torch_hook", "jax": "jax_hook"}


def _after_import(name, module):
    import importlib

    importlib.import_module("." + _HOOK_MODULES[name], __name__).on_import(module)


class _Loader:
    """Delegates to the real loader; runs our function after exec_module."""

    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        bridge.guarded(_after_import, self._name, module)

    def __getattr__(self, name):  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class _Finder:
    """First on sys.meta_path; answers only for torch and jax."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in _HOOK_MODULES or name in self._busy:
            return None
        self._busy.add(name)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.discard(name)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, name)
        return spec

    def invalidate_caches(self):
        pass


def install():
    """From sitecustomize: the finder (or, if the framework is imported
    already, its install at once)."""
    for name in _HOOK_MODULES:
        if name in sys.modules:
            bridge.guarded(_after_import, name, sys.modules[name])
    sys.meta_path.insert(0, _Finder())
