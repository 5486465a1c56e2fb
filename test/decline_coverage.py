"""The decline codes no test reaches: every `NoMatch("code", ...)` and rule's
`candidate.decline("code", ...)` in the sources (a literal code: one check) against the codes
the test suite made raise (`$IREE_FUSIONS_DECLINE_LOG`, written in every process of the run).

    export IREE_FUSIONS_DECLINE_LOG=/tmp/declines.log
    lit -q test && pytest -q                              # (lit passes the variable on)
    python test/decline_coverage.py /tmp/declines.log     # the count, then each code not reached
    python test/decline_coverage.py /tmp/declines.log --known test/declines-unreached.txt

A code is `pass/code`: the pass is the package or module of `mlir_passes/` the check is in,
`shared` for the compiler's own helpers (`invariants`, `analyses`), which several passes call.
A `NoMatch` whose code is not a literal passes another check's decline on (`e.code`) and is
not a check of its own. Exit status 1 when a code is not reached (and, with `--known`, not
listed there: the file names each code no test reaches yet, with why); a listed code that is
reached is printed, to be taken off the list. `--codes` prints every code and its place.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PASSES = ROOT / "mlir_passes"
SHARED = ROOT / "python" / "iree_fusions" / "compiler"
DECLINE_CLASSES = ("NoMatch", "WholeCopy", "VariableBags")  # and NoMatch's subclasses


def owner(path: pathlib.Path) -> str:
    """The pass a source file's checks belong to (`shared`: the compiler's helpers)."""
    parts = path.parts  # (any checkout: a log may come from another tree's run)
    if "mlir_passes" not in parts:
        return "shared"
    inner = parts[len(parts) - parts[::-1].index("mlir_passes"):]
    return (inner[0] if len(inner) > 1 else path.stem).replace("_", "-")


def is_decline(func: ast.expr) -> bool:
    """A call that gives a decline code: `NoMatch(code, ...)` (or a subclass), or a rule's
    `candidate.decline(code, ...)`."""
    return isinstance(func, ast.Name) and func.id in DECLINE_CLASSES or \
        isinstance(func, ast.Attribute) and func.attr == "decline"


def decline_codes() -> dict[str, list[str]]:
    """`pass/code` -> the places (`path:line`) of the checks raising it."""
    codes: dict[str, list[str]] = {}
    for folder in (PASSES, SHARED):
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and is_decline(node.func) and node.args and \
                        isinstance(node.args[0], ast.Constant) and \
                        isinstance(node.args[0].value, str):
                    place = f"{path.relative_to(ROOT)}:{node.lineno}"
                    codes.setdefault(f"{owner(path)}/{node.args[0].value}", []).append(place)
    return codes


def reached_codes(log: pathlib.Path) -> set[str]:
    """The `pass/code`s a decline log holds (lines `path:line code`)."""
    reached = set()
    for line in log.read_text().splitlines():
        place, _, code = line.strip().partition(" ")
        if code:
            reached.add(f"{owner(pathlib.Path(place.rsplit(':', 1)[0]).resolve())}/{code}")
    return reached


def known_unreached(path: pathlib.Path) -> set[str]:
    """The codes a `--known` file lists (one per line, first word; `#` comments)."""
    lines = (line.split("#", 1)[0].split() for line in path.read_text().splitlines())
    return {words[0] for words in lines if words}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", nargs="?", type=pathlib.Path)
    parser.add_argument("--known", type=pathlib.Path)
    parser.add_argument("--codes", action="store_true")
    args = parser.parse_args(argv)
    codes = decline_codes()
    if args.codes:
        for code, places in sorted(codes.items()):
            print(code, " ".join(places))
        return 0
    if args.log is None:
        parser.error("a decline log is needed (or --codes)")
    reached = reached_codes(args.log)
    missed = sorted(code for code in codes if code not in reached)
    known = known_unreached(args.known) if args.known else set()
    print(f"decline codes: {len(codes)}, reached by the tests: {len(codes) - len(missed)}, "
          f"not reached: {len(missed)}" + (f" ({len(known & set(missed))} listed in "
                                            f"{args.known})" if args.known else ""))
    for code in missed:
        print(f"  {code}  {' '.join(codes[code])}{'  (listed)' if code in known else ''}")
    for code in sorted(known - set(missed)):
        print(f"  listed in {args.known} but " +
              ("reached: take it off the list" if code in codes else "no longer a code") +
              f": {code}")
    return 1 if set(missed) - known else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
