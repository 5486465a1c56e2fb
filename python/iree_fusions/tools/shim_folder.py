"""The `iree-compile` shim's folder and names: where the shim lives, the script written there,
and the real iree-compile binary every hand-off runs. Apart from the shim's entry (`shim.py`)
so that iree-fusions-compile (`--print-shim-dir`, hand-offs) uses them without importing the
entry, which runs iree-fusions-compile: no import circle. The real binary and ShimError are
the harness's (`harness/processes.py`: the API runs that binary too), re-exported here."""

from __future__ import annotations

import errno
import hashlib
import os
import shlex
import shutil
import sys
import tempfile

from .. import __version__
from ..harness.processes import IREE_COMPILE, ShimError, real_iree_compile

__all__ = ["ENV_PASSES", "ENV_FLAGS", "ENV_DIR", "ENV_SELF", "ENV_DEPTH", "TOOL", "ShimError",
           "default_dir", "real_iree_compile", "script_text", "shim_dir"]

ENV_PASSES = "IREE_FUSIONS"
ENV_FLAGS = "IREE_FUSIONS_FLAGS"
ENV_DIR = "IREE_FUSIONS_SHIM_DIR"
ENV_SELF = "IREE_FUSIONS_SHIM_SELF"  # set by the script: its own path
ENV_DEPTH = "IREE_FUSIONS_IN_SHIM"  # set by the shim for what it runs: no second entry
TOOL = IREE_COMPILE


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
        f'{ENV_SELF}="$0" exec {shlex.quote(sys.executable)} -m iree_fusions.tools.shim "$@"\n'
    )


def shim_dir(create: bool = True) -> str:
    """The directory holding the `iree-compile` shim, (re)written if missing or stale.

    Created atomically: the folder is made complete under a temporary name and renamed into
    place, so that a compile never finds it without its `iree-compile` (IREE would then run
    stock iree-compile, silently)."""
    folder = default_dir()
    if not create or _current(folder):
        return folder
    text = script_text()
    parent = os.path.dirname(folder)
    try:
        os.makedirs(parent, exist_ok=True)
        fresh = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(folder)}.")
        try:
            _write_script(fresh, text)
            os.chmod(fresh, 0o755)
            try:
                os.rename(fresh, folder)  # atomic where the folder is missing (or empty)
                return folder
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not os.path.isdir(folder):
                    raise
            # The folder is there with a stale shim: replace the script in it, atomically.
            os.replace(os.path.join(fresh, TOOL), os.path.join(folder, TOOL))
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
    except OSError as e:
        raise ShimError(f"cannot write the shim in {folder}: {e.strerror or e}") from None
    return folder


def _current(folder: str) -> bool:
    path = os.path.join(folder, TOOL)
    try:
        with open(path) as f:
            return f.read() == script_text() and os.access(path, os.X_OK)
    except (OSError, UnicodeDecodeError):
        return False


def _write_script(folder: str, text: str) -> None:
    path = os.path.join(folder, TOOL)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
