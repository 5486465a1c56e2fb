"""Light Python modules for dialects whose `iree.compiler.dialects` package is slow to import.

The MLIR bindings import a dialect's Python module the first time an op of that dialect is
seen as an op view (iterating a block does that): for linalg that is
`iree.compiler.dialects.linalg`, which builds the OpDSL library of named ops on import (a
fifth of a small compile), and flow's and hal's generated op classes take more
(bench/results/code-costs.md, start-up). The plugin's tools put this package first in the
bindings' dialect search path (`install`), so that linalg ops get the ODS op classes (the
same classes the package re-exports) without the OpDSL library, and flow and hal ops (which
the plugin reads by name and never builds) are generic op views. Importing
`iree.compiler.dialects.linalg` explicitly still works as before (`ir_build.linalg_builders`
does, for the few rewrites that build a named op)."""

from __future__ import annotations

_INSTALLED = False


def install() -> None:
    """Search this package before `iree.compiler.dialects` (once per process; only for the
    dialects it has a module for: the others are not found here and load as before)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from iree.compiler._mlir_libs import _mlir

    modules = list(_mlir.globals.dialect_search_modules)
    if __name__ not in modules:
        _mlir.globals.dialect_search_modules = [__name__, *modules]
    _INSTALLED = True
