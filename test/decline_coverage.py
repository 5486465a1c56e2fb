"""The declines no test reaches: every place a pass raises `NoMatch` (read from the sources)
against the places the test suite made raise (`$IREE_FUSIONS_DECLINE_LOG`, written by
`NoMatch` in every process of the run).

    export IREE_FUSIONS_DECLINE_LOG=/tmp/declines.log
    lit -q test && pytest -q                              # (lit passes the variable on)
    python test/decline_coverage.py /tmp/declines.log     # the count, then each place

A `NoMatch` subclass raised in a helper counts at the helper's call of it. Exit status 1 when
some place is not reached.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "mlir_passes", ROOT / "python" / "iree_fusions" / "compiler"]


def decline_places() -> dict[str, str]:
    """`path:line` -> the reason's first words, for each `NoMatch(...)` (or subclass) call."""
    classes = {"NoMatch"}
    trees = {p: ast.parse(p.read_text())
             for folder in SOURCES for p in sorted(folder.rglob("*.py"))}
    for tree in trees.values():  # subclasses, one level (WholeCopy, VariableBags)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id == "NoMatch" for b in node.bases):
                classes.add(node.name)
    places = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in classes and not (path.name == "candidates.py"
                                                     and node.func.id == "NoMatch" and
                                                     not node.args):
                text = ast.unparse(node.args[0])[:70] if node.args else "(no reason)"
                places[f"{path.resolve()}:{node.lineno}"] = text
    return places


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    reached = {line.strip() for line in pathlib.Path(argv[0]).read_text().splitlines()}
    reached = {str(pathlib.Path(p.rsplit(":", 1)[0]).resolve()) + ":" + p.rsplit(":", 1)[1]
               for p in reached if ":" in p}
    places = decline_places()
    missed = sorted(p for p in places if p not in reached)
    print(f"decline places: {len(places)}, reached by the tests: {len(places) - len(missed)}, "
          f"not reached: {len(missed)}")
    for place in missed:
        print(f"  {pathlib.Path(place).relative_to(ROOT)}  {places[place]}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
