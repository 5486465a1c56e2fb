"""A bundle's manifest (`manifest.json`): its format, the checks that every entry has the
right shape and names only files inside the bundle, and the columns of a result row."""

from __future__ import annotations

import json
import os


MANIFEST = "manifest.json"
FORMAT = "iree-fusions-bundle/1"

# The columns of a result row (iree-fusions-bench's rows have the same keys).
ROW_KEYS = ("model", "stock_dispatches", "plugin_dispatches", "stock_bytes", "plugin_bytes",
            "stock_init_dispatches", "plugin_init_dispatches", "stock_load_ms", "plugin_load_ms",
            "stock_resident_mib", "plugin_resident_mib", "max_abs", "max_rel",
            "reference_max_abs", "stock_ms", "plugin_ms", "ratio",
            "ratio_low", "ratio_high", "ratio_confidence", "verdict", "settled", "rounds", "margin",
            "stock_rounds_ms", "plugin_rounds_ms", "machine", "compiled_for", "ok", "error",
            "bound", "changes")


class BundleError(RuntimeError):
    """The folder is not a readable bundle."""


def load_manifest(folder: str, *, require_models: bool = True) -> dict:
    """The bundle's manifest, checked: its format, the shape of every entry, and that every
    file it names lies inside the bundle (no absolute paths, no `..`, no link leading out).
    A bundle without models is an error unless `require_models` is False."""
    path = os.path.join(folder, MANIFEST)
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read(_MANIFEST_LIMIT + 1).decode())
    except OSError as e:
        raise BundleError(f"not a bundle: cannot read {path}: {e.strerror}") from None
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, or nested too deep
        raise BundleError(f"not a bundle: {path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise BundleError(f"{path}: unknown format {found!r} (expected {FORMAT})")
    _check_manifest(manifest, folder, path)
    if require_models and not manifest["models"]:
        raise BundleError(f"{path}: the bundle holds no models (an export that wrote none?)")
    return manifest


_MANIFEST_LIMIT = 64 << 20
# (key, type, required) of each model entry and of its stock / plugin builds.
_ENTRY_SCHEMA = (("name", str, True), ("dir", str, True), ("function", str, False),
                 ("inputs", list, True), ("reference", list, False),
                 ("reference_atol", (int, float), False), ("stock", dict, True),
                 ("plugin", dict, True), ("parameters", dict, False))


def _check_manifest(manifest: dict, folder: str, path: str) -> None:
    """Raises BundleError naming the first entry of the wrong shape or a file outside."""
    for key, kind in (("device", str), ("target_flags", list), ("tool_versions", dict)):
        if key in manifest and manifest[key] is not None and not isinstance(manifest[key], kind):
            raise BundleError(f"{path}: '{key}' must be a {kind.__name__}")
    models = manifest.get("models")
    if not isinstance(models, list):
        raise BundleError(f"{path}: 'models' must be a list")
    names = set()
    for i, entry in enumerate(models):
        where = f"{path}: models[{i}]"
        if not isinstance(entry, dict):
            raise BundleError(f"{where} must be an object")
        for key, kind, required in _ENTRY_SCHEMA:
            if (required or key in entry) and (isinstance(entry.get(key), bool) or
                                               not isinstance(entry.get(key), kind)):
                name = kind.__name__ if isinstance(kind, type) else "number"
                raise BundleError(f"{where}: '{key}' must be a {name}")
        if entry["name"] in names:
            raise BundleError(f"{where}: model '{entry['name']}' is listed twice")
        names.add(entry["name"])
        here = _inside(folder, entry["dir"], f"{where}.dir")
        files = [(f"inputs[{j}]", p) for j, p in enumerate(entry["inputs"])]
        files += [(f"reference[{j}]", p) for j, p in enumerate(entry.get("reference", []))]
        files += [(f"parameters[{scope!r}]", p)
                  for scope, p in entry.get("parameters", {}).items()]
        for side in ("stock", "plugin"):
            files.append((f"{side}.vmfb", entry[side].get("vmfb")))
            count = entry[side].get("dispatches")
            if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
                raise BundleError(f"{where}.{side}: 'dispatches' must be an integer")
        for key, name in files:
            if not isinstance(name, str):
                raise BundleError(f"{where}.{key} must be a file name")
            _inside(here, name, f"{where}.{key}", root=folder)


def _inside(base: str, name: str, where: str, root: str | None = None) -> str:
    """`base/name` when it stays inside the bundle (`root`, default `base`), links
    resolved; else BundleError."""
    root = root or base
    if not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise BundleError(f"{where}: '{name}' is not a path inside the bundle")
    path = os.path.join(base, name)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise BundleError(f"{where}: '{name}' leads outside the bundle")
    return path


def empty_row(model: str) -> dict:
    row = dict.fromkeys(ROW_KEYS)
    row.update(model=model, ok=True, changes=[])
    return row
