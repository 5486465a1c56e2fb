"""An `iree-compile` that runs the plugin, for tools that look iree-compile up themselves.

`iree.compiler.compile_file` / `compile_str` (and tools built on them) run the `iree-compile`
found first in the directories of the IREE_TOOL_PATH environment variable. The shim directory
holds such an executable; it passes every argument on to `iree-fusions-compile`:

    IREE_TOOL_PATH=$(iree-fusions-compile --print-shim-dir) python app.py

Environment of the compiles:
  IREE_FUSIONS=all|none|PASS[,PASS{opt=v}...]   the passes (default: all; none: plain
                                                iree-compile, the very same binary)
  IREE_FUSIONS_FLAGS="--fusions-report ..."     more plugin flags (shell words)

The directory is `$IREE_FUSIONS_SHIM_DIR` when set, else a per-user cache folder
(`$XDG_CACHE_HOME` or `~/.cache`)/iree-fusions/shim-<version>-<hash of this Python>; the
executable is rewritten whenever it is not what this installation would write.
"""

from __future__ import annotations

if __name__ == "__main__":  # `python -m`: the start-up work first (deferred.py)
    from .deferred import compiler_tool_startup

    compiler_tool_startup()

import os
import shlex
import sys
from typing import NoReturn

from .crash import run_console
# The folder, the script and the names live in shim_folder (iree-fusions-compile uses them);
# re-exported here, where they were.
from .shim_folder import (ENV_DEPTH, ENV_DIR, ENV_FLAGS, ENV_PASSES, ENV_SELF, TOOL, ShimError,
                          default_dir, real_iree_compile, script_text, shim_dir)

__all__ = ["ENV_DIR", "ENV_FLAGS", "ENV_PASSES", "TOOL", "ShimError", "default_dir", "main",
           "real_iree_compile", "script_text", "shim_dir"]


def _without_shim_on_path() -> None:
    """Removes the shim's folder from PATH, so that nothing below finds the shim again."""
    me = os.environ.pop(ENV_SELF, None)
    if not me:
        return
    mine = os.path.realpath(os.path.dirname(me))
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and os.path.realpath(p) != mine]
    os.environ["PATH"] = os.pathsep.join(keep)


def main(argv: list[str] | None = None) -> int:
    """The shim's body: iree-fusions-compile with the passes of IREE_FUSIONS."""
    argv = sys.argv[1:] if argv is None else argv
    _without_shim_on_path()
    if os.environ.get(ENV_DEPTH):  # the shim ran the shim: stop, never loop
        print("iree-compile (iree-fusions shim): error: the iree-compile shim was called by "
              "itself (a hand-off found the shim instead of iree-compile); please report this",
              file=sys.stderr)
        return 2
    os.environ[ENV_DEPTH] = "1"  # for what this process runs; unset on every way out
    try:
        try:
            passes = os.environ.get(ENV_PASSES, "").strip() or "all"
            try:
                extra = shlex.split(os.environ.get(ENV_FLAGS, ""))
            except ValueError as e:
                raise ShimError(f"{ENV_FLAGS}: {e} in {os.environ[ENV_FLAGS]!r}") from None
            if passes == "none" and not extra:
                exe = real_iree_compile()
                os.execv(exe, [exe, *argv])
        except ShimError as e:
            print(f"iree-compile (iree-fusions shim): error: {e}", file=sys.stderr)
            return 2
        from . import compile_cli

        return compile_cli.main([f"--fusions={passes}", *extra, *argv])
    finally:
        os.environ.pop(ENV_DEPTH, None)


def console_main() -> NoReturn:
    """The console script: main, then `exit_now` (no interpreter finalization)."""
    run_console(main)


if __name__ == "__main__":
    console_main()
