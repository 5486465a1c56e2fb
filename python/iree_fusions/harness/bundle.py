"""Writing a bundle: models compiled here, to be run where only the IREE runtime is.

`iree-fusions-bench MODEL... --device cuda --export DIR` compiles each model with stock IREE
and with the plugin and writes, per model, both `.vmfb`s, the inputs (`.npy`) and the reference
outputs when the model has them, plus `manifest.json` (compile flags, dispatch counts, bytes
between dispatches, tool versions, the exporting CPU, the target IREE resolved per model and
its vector features), `runtime/` (a copy of the `iree_fusions.runtime` package: numpy and
iree.runtime only) and `run_bundle.py`, its launcher. Run it with `iree-fusions-bench --from
DIR` or, where iree-fusions is not installed, `python DIR/run_bundle.py --device cuda`.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from importlib import metadata

import numpy as np

from .. import runtime
from ..runtime.machine import cpu_info
from ..runtime.manifest import FORMAT, MANIFEST, BundleError, load_manifest
from ..compiler.files import write_file

RUNNER = "run_bundle.py"
RUNTIME_DIR = "runtime"  # the copy of the iree_fusions.runtime package, beside the manifest
# The launcher: the bundle's folder on the path, the package copied there run as a script.
LAUNCHER = f'''"""Runs this bundle (stock vs plugin: numerics, timings) with only numpy and
iree-base-runtime: `python run_bundle.py [--device cuda] [--json rows.json]` (`--help`).
The code is in {RUNTIME_DIR}/, a copy of the iree_fusions.runtime package."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from {RUNTIME_DIR}.__main__ import main  # noqa: E402

sys.exit(main())
'''


def tool_versions() -> dict[str, str]:
    """Versions of the tools that made the bundle (torch only when installed)."""
    out = {}
    for dist in ("iree-fusions", "iree-base-compiler", "iree-base-runtime", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            if dist != "torch":
                out[dist] = "?"
    out["python"] = platform.python_version()
    return out


def _model_dir(name: str) -> str:
    """A folder name for a model: one path component, never hidden, '.' or '..'."""
    sub = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return sub if sub and not sub.startswith(".") else f"_{sub}"


def compile_flags(command: Sequence[str], source_path: str) -> list[str]:
    """The flags of a compile command (after its input; the API's own report and
    reproducer settings dropped)."""
    command = list(command)
    flags = command[command.index(source_path) + 1:] if source_path in command else command
    return [f for f in flags
            if not f.startswith(("--fusions-report-json", "--fusions-reproducer-dir"))]


class BundleWriter:
    """Adds models to a bundle folder, new or holding a bundle for the same device and
    target (its models are kept; a model exported again is replaced).

    What is on disk and what the manifest lists always agree, even when an export is
    interrupted: a model is written into a hidden folder that is renamed into place once
    complete, and only then does the manifest (written atomically) list it; the folder of
    the model it replaces is removed after that. The manifest is written when the first
    model is added, so an export that adds none leaves the folder as it was."""

    def __init__(self, folder: str, *, device: str, target: str | None, fusions: str):
        from .api import DEVICE_FLAGS, TARGET_FLAG, target_flags

        self.folder = folder
        flags = target_flags(device, target)
        prefix = TARGET_FLAG[device] + "="
        chip = next((f[len(prefix):] for f in flags if f.startswith(prefix)), None)
        previous = _existing_manifest(folder)
        if previous is not None and (previous.get("device"), previous.get("target_flags")) \
                != (device, flags):
            raise BundleError(
                f"{folder} holds a bundle for device {previous.get('device')} (compile flags "
                f"{' '.join(previous.get('target_flags') or [])}); export for {device} "
                f"({' '.join(flags)}) to another folder")
        self.manifest = {
            "format": FORMAT,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "device": device,
            "target": chip,
            "target_flags": flags,
            "default_target_flags": DEVICE_FLAGS[device] == flags,
            "fusions": fusions,
            "tool_versions": tool_versions(),
            "exported_on": cpu_info(),
            "models": previous["models"] if previous is not None else [],
        }
        self.added: list[str] = []

    def add(self, name: str, *, inputs: Sequence[np.ndarray], stock_vmfb: bytes,
            plugin_vmfb: bytes, stock: dict, plugin: dict, function: str = "main",
            reference: Sequence[np.ndarray] | None = None, reference_atol: float = 1e-5,
            compiled_for: dict | None = None,
            parameters: Mapping[str, str] | None = None) -> None:
        """Writes one model. `stock` / `plugin`: what the manifest records of each build
        (flags, dispatches, bytes_between, ...); `compiled_for`: the target IREE resolved and
        its vector features (`machine.compiled_for`: a runner checks them against its
        CPU, and its rows record them); `parameters`: the parameter files both modules read
        (scope -> path), copied into the model's folder (hard-linked where the file system
        allows) so the bundle runs where they are not."""
        models = self.manifest["models"]
        sub = self._free_dir(_model_dir(name))
        os.makedirs(self.folder, exist_ok=True)
        partial = tempfile.mkdtemp(dir=self.folder, prefix=f"{_PARTIAL}{sub}-")
        try:
            entry = {"name": name, "dir": sub, "function": function, "inputs": [],
                     "reference": [], "reference_atol": reference_atol,
                     "compiled_for": compiled_for}
            for kind, arrays in (("input", inputs), ("reference", reference or [])):
                for i, x in enumerate(arrays):
                    entry["inputs" if kind == "input" else kind].append(f"{kind}{i}.npy")
                    np.save(os.path.join(partial, f"{kind}{i}.npy"), np.asarray(x),
                            allow_pickle=False)
            for side, blob, info in (("stock", stock_vmfb, stock),
                                     ("plugin", plugin_vmfb, plugin)):
                with open(os.path.join(partial, f"{side}.vmfb"), "wb") as f:
                    f.write(blob)
                entry[side] = {"vmfb": f"{side}.vmfb", **info}
            if parameters:
                entry["parameters"] = _copy_parameters(parameters, partial)
            os.chmod(partial, 0o755)
            os.rename(partial, os.path.join(self.folder, sub))
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        replaced = [m for m in models if m["name"] == name]
        at = models.index(replaced[0]) if replaced else len(models)
        models[:] = [m for m in models[:at] if m["name"] != name] + [entry] + [
            m for m in models[at:] if m["name"] != name]
        if not self.added:
            _write_runner(self.folder)
        self._write_manifest()
        self.added.append(name)
        for old in replaced:  # no longer listed: its folder goes
            shutil.rmtree(os.path.join(self.folder, old["dir"]), ignore_errors=True)

    def _free_dir(self, sub: str) -> str:
        """`sub`, or `sub.1`, `sub.2`, ...: the first name no listed model uses (a folder of
        that name that none lists is left over from an interrupted export: removed)."""
        used = {m["dir"] for m in self.manifest["models"]} | {RUNTIME_DIR}
        for n in range(len(used) + 1):
            name = sub if n == 0 else f"{sub}.{n}"
            if name not in used:
                shutil.rmtree(os.path.join(self.folder, name), ignore_errors=True)
                return name
        raise AssertionError("unreachable")

    def _write_manifest(self) -> None:
        write_file(os.path.join(self.folder, MANIFEST),
                   json.dumps(self.manifest, indent=2) + "\n")

    def size_bytes(self) -> int:
        return sum(os.path.getsize(os.path.join(d, f))
                   for d, _, files in os.walk(self.folder) for f in files)


_PARTIAL = ".partial-"  # a model folder being written


def _copy_parameters(parameters: Mapping[str, str], folder: str) -> dict[str, str]:
    """The parameter files copied into `folder` as `parameters-<scope><suffix>` (e.g.
    `parameters-model.irpa`); returns scope -> file name (the manifest's `parameters`)."""
    names: dict[str, str] = {}
    for scope, path in parameters.items():
        stem = f"parameters-{_model_dir(scope or 'default')}"
        suffix = os.path.splitext(path)[1]
        name, n = stem + suffix, 1
        while name in names.values():  # two scopes that sanitize alike
            name, n = f"{stem}.{n}{suffix}", n + 1
        names[scope] = name
        try:
            os.link(path, os.path.join(folder, name))
        except OSError:
            shutil.copyfile(path, os.path.join(folder, name))
    return names


def runtime_files() -> list[str]:
    """The modules of the iree_fusions.runtime package (paths), as a bundle holds them."""
    folder = os.path.dirname(os.path.abspath(runtime.__file__))
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(".py"))


def _write_runner(folder: str) -> None:
    """The runtime package copied into `folder/runtime/` (each file written atomically; a
    module the package no longer has is removed) and the launcher `run_bundle.py`."""
    target = os.path.join(folder, RUNTIME_DIR)
    os.makedirs(target, exist_ok=True)
    names = set()
    for path in runtime_files():
        names.add(os.path.basename(path))
        with open(path, "rb") as f:
            write_file(os.path.join(target, os.path.basename(path)), f.read())
    for name in os.listdir(target):
        if name.endswith(".py") and name not in names:
            os.remove(os.path.join(target, name))
    write_file(os.path.join(folder, RUNNER), LAUNCHER)


def _existing_manifest(folder: str) -> dict | None:
    """The manifest of the bundle in `folder` (None for a missing or empty folder); a
    folder that holds other things, or an unreadable manifest, is refused, so that an
    export never writes into a folder it would spoil."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BundleError(f"cannot export to {folder}: {e.strerror}") from None
    for name in names:  # left by an interrupted export
        if name.startswith(_PARTIAL):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
    names = [n for n in names if not n.startswith(_PARTIAL)]
    if not names:
        return None
    if MANIFEST not in names:
        raise BundleError(f"{folder} is not empty and holds no bundle ({MANIFEST}); export to "
                          "a new or empty folder")
    try:
        return load_manifest(folder, require_models=False)
    except BundleError as e:
        raise BundleError(f"cannot add to {folder}: {e}") from None
