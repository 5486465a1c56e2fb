"""What the script API and the tools share about the compiler processes they start: the real
iree-compile binary (by path, never the shim) and the environment variable by which a tool
learns the process it must die with. Here, below both, so that the harness never imports the
tools (`tools/crash.py` and `tools/shim_folder.py` import these names from here)."""

from __future__ import annotations

import importlib.util
import os

from ..compiler.files import UserError

PARENT_ENV = "IREE_FUSIONS_PARENT_PID"  # set by the API: the tool dies with its caller
IREE_COMPILE = "iree-compile"


class ShimError(UserError):
    """The shim folder cannot be written, or the shim was handed back to itself (or the real
    iree-compile binary is not there to hand off to)."""


def real_iree_compile() -> str:
    """The iree-compile binary inside the iree-base-compiler package, by path. Every hand-off
    to plain iree-compile runs this: never the `iree-compile` console script, which looks
    the tool up through IREE_TOOL_PATH and would find the shim again."""
    spec = importlib.util.find_spec("iree.compiler")
    for root in (spec.submodule_search_locations or []) if spec else []:
        exe = os.path.join(root, "_mlir_libs", IREE_COMPILE)
        if os.access(exe, os.X_OK):
            return exe
    raise ShimError("cannot find the iree-compile binary of iree-base-compiler "
                    "(iree/compiler/_mlir_libs/iree-compile); reinstall iree-base-compiler")
