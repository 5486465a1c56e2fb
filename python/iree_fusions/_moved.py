"""The modules that moved into subpackages (issue 23), still importable by their old paths.

Out-of-tree passes and scripts written against the flat layout keep working:
`import iree_fusions.registry`, `from iree_fusions import ir_helpers as h` and
`from iree_fusions.registry import register` give the module at its new path, the same
object (module-level state such as ContextVars and the pass registry is shared, never
copied). `python -m iree_fusions.plot` (an old path) runs the module at its new path.

A finder at the front of `sys.meta_path` answers only for the old names in `MOVED` (and
names under them, for the `dialect_views` package); its loader hands back the module imported
at the new path and runs nothing. No stub file is left in the flat folder.
"""

from __future__ import annotations

import importlib
import sys

# old module name (under iree_fusions) -> the module's full name now
MOVED = {
    # the compiler side
    "consteval": "iree_fusions.compiler.consteval",
    "counting": "iree_fusions.compiler.counting",
    "decisions": "iree_fusions.compiler.decisions",
    "diagnostics": "iree_fusions.compiler.diagnostics",
    "dialect_views": "iree_fusions.compiler.dialect_views",
    "driver": "iree_fusions.compiler.driver",
    "files": "iree_fusions.compiler.files",
    "fusions_flags": "iree_fusions.compiler.fusions_flags",
    "ir_build": "iree_fusions.compiler.ir_build",
    "ir_helpers": "iree_fusions.compiler.ir_helpers",
    "pipeline": "iree_fusions.compiler.pipeline",
    "registry": "iree_fusions.compiler.registry",
    "target": "iree_fusions.compiler.target",
    "timing_report": "iree_fusions.compiler.timing_report",
    # the command-line tools
    "bench": "iree_fusions.tools.bench",
    "compile_cli": "iree_fusions.tools.compile_cli",
    "crash": "iree_fusions.tools.crash",
    "opt": "iree_fusions.tools.opt",
    "plot": "iree_fusions.tools.plot",
    "progress": "iree_fusions.tools.progress",
    "shim": "iree_fusions.tools.shim",
    "tune": "iree_fusions.tools.tune",
    # the script API and harness
    "api": "iree_fusions.harness.api",
    "bundle": "iree_fusions.harness.bundle",
    "numerics": "iree_fusions.harness.numerics",
    "reports": "iree_fusions.harness.reports",
    "timing": "iree_fusions.harness.timing",
    "torch_api": "iree_fusions.harness.torch_api",
    # the runtime side
    "bundle_runner": "iree_fusions.runtime.bundle_runner",
}

_PREFIX = "iree_fusions."


def new_name(fullname: str) -> str | None:
    """The module's name now, for an old name (`iree_fusions.registry`, or a name under a
    moved package such as `iree_fusions.dialect_views.linalg`); None for any other name."""
    if not fullname.startswith(_PREFIX):
        return None
    head, dot, rest = fullname[len(_PREFIX):].partition(".")
    new = MOVED.get(head)
    return None if new is None else new + dot + rest


class _AliasLoader:
    """Loads an old name as the module at its new path: `create_module` imports that module
    (once, at its new name) and returns it; `exec_module` runs nothing."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # The import system has just set the module's __spec__ to the alias's spec (it does
        # so for every module it loads); the module keeps its own (name, file, loader).
        if self.spec is not None:
            module.__spec__ = self.spec

    def get_code(self, fullname: str):
        """For `python -m iree_fusions.<old name>`: run the module at its new path as
        __main__ (with its own package, so that its relative imports resolve)."""
        return compile(f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', "
                       "alter_sys=True)\n", f"<{fullname}: {self.new}>", "exec")


class _AliasFinder:
    """Finds the old names only; every other name is left to the finders after it."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Puts the finder first on `sys.meta_path` (once): an old name under a moved package
    (`iree_fusions.dialect_views.linalg`) must not be found as a file by the path finder,
    which would load a second copy of the module."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())

