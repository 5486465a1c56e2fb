"""Start-up of the console tools, in one place: the entry points of pyproject.toml's
[project.scripts] are the functions here, and each does its tool's start-up work before it
imports the tool.

The compiler tools (iree-fusions-compile, iree-fusions-opt and the `iree-compile` shim)
never need numpy unless a pass builds a table: `compiler_tool_startup` puts a stand-in in
its place (`deferred.py`, where it lives: bench/results/code-costs.md, start-up). Only in a
compiler tool's own process: a script that imports the tools' modules (or the bench, which
imports torch and transformers) gets numpy as usual. `python -m
iree_fusions.tools.compile_cli` (the API's fused compiles), `-m ...opt` and `-m ...shim`
call `compiler_tool_startup` first thing, as their `__main__`, importing it from deferred.py
(importing it from here would make a circle: this module imports them).
"""

from __future__ import annotations

from typing import NoReturn

from .deferred import compiler_tool_startup


def compile_main() -> NoReturn:
    """iree-fusions-compile."""
    compiler_tool_startup()
    from .compile_cli import console_main

    console_main()


def opt_main() -> NoReturn:
    """iree-fusions-opt."""
    compiler_tool_startup()
    from .opt import console_main

    console_main()


def bench_main() -> int:
    """iree-fusions-bench (no start-up work: it imports numpy, torch and transformers)."""
    from .bench import main

    return main()


def tune_main() -> int:
    """iree-fusions-tune (no start-up work)."""
    from .tune import main

    return main()
