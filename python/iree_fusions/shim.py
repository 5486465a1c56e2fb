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

import hashlib
import importlib.util
import os
import shlex
import sys

from . import __version__

ENV_PASSES = "IREE_FUSIONS"
ENV_FLAGS = "IREE_FUSIONS_FLAGS"
ENV_DIR = "IREE_FUSIONS_SHIM_DIR"
_ENV_SELF = "IREE_FUSIONS_SHIM_SELF"  # set by the script: its own path
TOOL = "iree-compile"


def default_dir() -> str:
    """Where the shim lives unless IREE_FUSIONS_SHIM_DIR says otherwise."""
    if os.environ.get(ENV_DIR):
        return os.path.abspath(os.environ[ENV_DIR])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = hashlib.sha256(f"{sys.executable}\0{__version__}".encode()).hexdigest()[:10]
    return os.path.join(cache, "iree-fusions", f"shim-{__version__}-{tag}")


def script_text() -> str:
    """The shim executable: a POSIX shell script that runs this Python."""
    return (
        "#!/bin/sh\n"
        f"# iree-compile with the iree-fusions {__version__} plugin; written by\n"
        "# `iree-fusions-compile --print-shim-dir`. IREE_FUSIONS=all|none|PASS,... picks the\n"
        "# passes (default: all; none: plain iree-compile); IREE_FUSIONS_FLAGS: more flags.\n"
        f'{_ENV_SELF}="$0" exec {shlex.quote(sys.executable)} -m iree_fusions.shim "$@"\n'
    )


def shim_dir(create: bool = True) -> str:
    """The directory holding the `iree-compile` shim, (re)written if missing or stale."""
    folder = default_dir()
    if create:
        path = os.path.join(folder, TOOL)
        text = script_text()
        try:
            with open(path) as f:
                current = f.read()
        except OSError:
            current = None
        if current != text or not os.access(path, os.X_OK):
            os.makedirs(folder, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)  # atomic: a compile running meanwhile sees old or new
    return folder


def real_iree_compile() -> str:
    """The iree-compile binary inside the iree-base-compiler package."""
    spec = importlib.util.find_spec("iree.compiler")
    if spec and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            exe = os.path.join(root, "_mlir_libs", TOOL)
            if os.access(exe, os.X_OK):
                return exe
    from .compile_cli import _iree_compile_binary

    return _iree_compile_binary()


def _without_shim_on_path() -> None:
    """Removes the shim's folder from PATH, so that nothing below finds the shim again."""
    me = os.environ.pop(_ENV_SELF, None)
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
    passes = os.environ.get(ENV_PASSES, "").strip() or "all"
    extra = shlex.split(os.environ.get(ENV_FLAGS, ""))
    if passes == "none" and not extra:
        exe = real_iree_compile()
        os.execv(exe, [exe, *argv])
    from . import compile_cli

    return compile_cli.main([f"--fusions={passes}", *extra, *argv])


if __name__ == "__main__":
    sys.exit(main())
