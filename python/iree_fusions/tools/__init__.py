"""The command-line tools: iree-fusions-compile (with its forked-compile crash triage and the
`iree-compile` shim), iree-fusions-opt, iree-fusions-bench (its progress bar and --plot) and
iree-fusions-tune."""

import os
import sys

from .deferred import defer_import

# Start-up: the compiler tools never need numpy unless a pass builds a table (measured:
# iree-fusions-compile imports in 0.18 s instead of 0.36 s on a 2-core VM). `deferred.py`.
# Only in a compiler tool's own process: a script that imports these modules (or the bench,
# which imports torch and transformers) gets numpy as usual.
_COMPILER_TOOLS = ("iree-fusions-compile", "iree-fusions-opt")
_COMPILER_MODULES = ("iree_fusions.tools.compile_cli", "iree_fusions.tools.opt",
                     "iree_fusions.tools.shim")


def _in_compiler_tool() -> bool:
    argv = getattr(sys, "orig_argv", None) or []
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] in _COMPILER_MODULES:
        return True
    first = sys.argv[0] if sys.argv else None  # None while runpy finds a -m module
    return isinstance(first, str) and os.path.basename(first) in _COMPILER_TOOLS


if _in_compiler_tool():
    defer_import("numpy")
