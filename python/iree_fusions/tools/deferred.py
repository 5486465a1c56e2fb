"""Modules a compiler tool imports only when something first reads from them.

`iree.compiler.ir` imports numpy at start-up (for a few attribute builders), and so do two
pass modules; a compile that builds no dense attribute from a Python list never uses it.
Importing numpy was about half of iree-fusions-compile's import time, which every compile
paid and stock iree-compile does not (bench/results/code-costs.md, start-up).
`defer_import("numpy")` puts a stand-in module in `sys.modules`: the first attribute read
from it (`np.array`, `np.__version__`) imports the real module, which replaces the stand-in
in `sys.modules` and fills its namespace, so code that already holds the stand-in reads the
real attributes from then on. (`importlib.util.LazyLoader` does not help here: `import
numpy` itself reads `__spec__`, which loads it at once.)

A submodule import as the first touch (`import numpy.linalg`) reads the stand-in's
`__path__` after Python checked `sys.modules` for the submodule; loading the real package
there imports many of its submodules, which Python would then execute a second time
(scipy's `numpy.testing` broke on a second `numpy._core`). `_LoadedAlready`, first on
`sys.meta_path`, hands Python the module that loading put in `sys.modules` instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types

_LOCK = threading.RLock()
_DEFERRED: set[str] = set()  # top-level names deferred in this process


class DeferredModule(types.ModuleType):
    """Stands in for a module not imported yet; the first attribute read imports it."""

    def __getattr__(self, attr: str):
        return getattr(self._deferred_load(), attr)

    def _deferred_load(self) -> types.ModuleType:  # a name no real module has
        with _LOCK:
            real = self.__dict__.get("_deferred_real")
            if real is None:
                if sys.modules.get(self.__name__) is self:
                    del sys.modules[self.__name__]
                real = importlib.import_module(self.__name__)
                self.__dict__.update(real.__dict__)
                self.__dict__["_deferred_real"] = real
            return real


class _LoadedAlready(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """For a submodule of a deferred package that loading the package imported already
    (between Python's check of `sys.modules` and its search): that module, not a copy."""

    def __init__(self):
        self._specs: dict[str, object] = {}

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in _DEFERRED or name not in sys.modules:
            return None
        return importlib.machinery.ModuleSpec(name, self, origin="deferred")

    def create_module(self, spec):
        module = sys.modules[spec.name]
        self._specs[spec.name] = module.__spec__  # Python sets the spec it was handed
        return module

    def exec_module(self, module):
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


def defer_import(name: str) -> None:
    """Imports top-level module `name` on first use instead of now (nothing when it is
    imported already or not installed)."""
    if name in sys.modules or "." in name:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    if not any(isinstance(f, _LoadedAlready) for f in sys.meta_path):
        sys.meta_path.insert(0, _LoadedAlready())
    _DEFERRED.add(name)
    stand_in = DeferredModule(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in


def compiler_tool_startup() -> None:
    """What a compiler tool's process does before it imports anything: numpy deferred.
    Called by the console entry points (`startup.py`) and by the `python -m` mains of
    compile_cli, opt and shim, which import it from here (not from startup.py, which
    imports them)."""
    defer_import("numpy")
