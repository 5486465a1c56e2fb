"""docs/layout.md against the tree: every module and package of the package's sides
(compiler, tools, harness, runtime, models) is named there, and every file or folder the
page names exists."""

from __future__ import annotations

import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "iree_fusions"
SIDES = ("compiler", "tools", "harness", "runtime", "models")
NAME = re.compile(r"(?<![\w/.-])([A-Za-z_][\w.-]*(?:\.py|\.md|\.toml|\.png|\.json|/))"
                  r"(?=[\s,:;)]|$)")


def _tree_text() -> str:
    text = (ROOT / "docs" / "layout.md").read_text()
    return text.split("```")[1]


def _named() -> set[str]:
    return {m.group(1) for line in _tree_text().splitlines() for m in NAME.finditer(line)}


def _tracked() -> tuple[set[str], set[str]]:
    """The names of the repository's files and folders (git's list, else the tree)."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
               if p.is_file() and not {".git", ".venv", "__pycache__"} & set(p.parts)]
    files = {pathlib.PurePath(f).name for f in out}
    folders = {part for f in out for part in pathlib.PurePath(f).parts[:-1]}
    return files, folders


def _exists(name: str, tracked: tuple[set[str], set[str]]) -> bool:
    files, folders = tracked
    return name.rstrip("/") in (folders if name.endswith("/") else files)


def test_every_module_of_the_package_is_named():
    named = _named()
    missing = []
    for side in SIDES:
        for path in sorted((PACKAGE / side).iterdir()):
            if path.name.startswith("__") or path.name == "__pycache__":
                continue
            if path.is_dir() and any(path.glob("*.py")):
                if f"{path.name}/" not in named:
                    missing.append(f"{side}/{path.name}/")
            elif path.suffix == ".py" and path.name not in named:
                missing.append(f"{side}/{path.name}")
    assert missing == [], "docs/layout.md does not name these"


def test_every_name_on_the_page_exists():
    tracked = _tracked()
    gone = sorted(name for name in _named() if not _exists(name, tracked))
    assert gone == [], "docs/layout.md names what is not in the tree"


def test_the_page_is_read():
    """The pattern finds the names the page is written with (else the checks prove nothing)."""
    named = _named()
    assert {"registry.py", "compiler/", "protocol/", "pyproject.toml"} <= named
