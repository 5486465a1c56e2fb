"""Writing a bundle: models compiled here, to be run where only the IREE runtime is.

`iree-fusions-bench MODEL... --device cuda --export DIR` compiles each model with stock IREE
and with the plugin and writes, per model, both `.vmfb`s, the inputs (`.npy`) and the reference
outputs when the model has them, plus `manifest.json` (compile flags, dispatch counts, bytes
between dispatches, tool versions) and `run_bundle.py` (a copy of `bundle_runner.py`: numpy
and iree.runtime only). Run it with `iree-fusions-bench --from DIR` or, where iree-fusions is
not installed, `python DIR/run_bundle.py --device cuda`.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import time
from collections.abc import Sequence
from importlib import metadata

import numpy as np

from . import bundle_runner
from .bundle_runner import FORMAT, MANIFEST

RUNNER = "run_bundle.py"


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
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def compile_flags(command: Sequence[str], source_path: str) -> list[str]:
    """The flags of a compile command (after its input; the plugin's report file dropped)."""
    command = list(command)
    flags = command[command.index(source_path) + 1:] if source_path in command else command
    return [f for f in flags if not f.startswith("--fusions-report-json")]


class BundleWriter:
    """Adds models to a bundle folder; the manifest is rewritten after each model, so that
    the models written so far can be run even if a later one fails."""

    def __init__(self, folder: str, *, device: str, target: str | None, fusions: str):
        from .api import DEVICE_FLAGS, TARGET_FLAG, target_flags

        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        flags = target_flags(device, target)
        prefix = TARGET_FLAG[device] + "="
        chip = next((f[len(prefix):] for f in flags if f.startswith(prefix)), None)
        self.manifest = {
            "format": FORMAT,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "device": device,
            "target": chip,
            "target_flags": flags,
            "default_target_flags": DEVICE_FLAGS[device] == flags,
            "fusions": fusions,
            "tool_versions": tool_versions(),
            "models": [],
        }
        shutil.copyfile(bundle_runner.__file__, os.path.join(folder, RUNNER))
        self._write_manifest()

    def add(self, name: str, *, inputs: Sequence[np.ndarray], stock_vmfb: bytes,
            plugin_vmfb: bytes, stock: dict, plugin: dict, function: str = "main",
            reference: Sequence[np.ndarray] | None = None, reference_atol: float = 1e-5,
            ) -> None:
        """Writes one model. `stock` / `plugin`: what the manifest records of each build
        (flags, dispatches, bytes_between, ...)."""
        sub = _model_dir(name)
        here = os.path.join(self.folder, sub)
        os.makedirs(here, exist_ok=True)
        entry = {"name": name, "dir": sub, "function": function, "inputs": [],
                 "reference": [], "reference_atol": reference_atol}
        for i, x in enumerate(inputs):
            entry["inputs"].append(f"input{i}.npy")
            np.save(os.path.join(here, f"input{i}.npy"), np.asarray(x))
        for i, x in enumerate(reference or []):
            entry["reference"].append(f"reference{i}.npy")
            np.save(os.path.join(here, f"reference{i}.npy"), np.asarray(x))
        for side, blob, info in (("stock", stock_vmfb, stock), ("plugin", plugin_vmfb, plugin)):
            with open(os.path.join(here, f"{side}.vmfb"), "wb") as f:
                f.write(blob)
            entry[side] = {"vmfb": f"{side}.vmfb", **info}
        models = self.manifest["models"]
        models[:] = [m for m in models if m["name"] != name] + [entry]
        self._write_manifest()

    def _write_manifest(self) -> None:
        path = os.path.join(self.folder, MANIFEST)
        with open(path + ".tmp", "w") as f:
            json.dump(self.manifest, f, indent=2)
            f.write("\n")
        os.replace(path + ".tmp", path)

    def size_bytes(self) -> int:
        return sum(os.path.getsize(os.path.join(d, f))
                   for d, _, files in os.walk(self.folder) for f in files)
