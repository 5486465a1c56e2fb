"""The wheel holds every package of the tree (a pass that became a package must be listed)."""

import os
import tomllib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _packages_on_disk() -> set[str]:
    found = set()
    for name, base in (("iree_fusions", "python/iree_fusions"),
                       ("iree_fusions.passes", "mlir_passes")):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            if "__init__.py" in files and "__pycache__" not in dirpath:
                rel = os.path.relpath(dirpath, os.path.join(ROOT, base))
                found.add(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    return found


def test_pyproject_lists_every_package():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    on_disk = _packages_on_disk()
    # iree_fusions/passes on disk is mlir_passes; nothing else may be missing or extra.
    assert on_disk - {"iree_fusions.passes"} <= listed, on_disk - listed
    assert listed <= on_disk | {"iree_fusions.passes"}, listed - on_disk
