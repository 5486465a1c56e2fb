"""Counts of what the code should not hold (read from the sources, nothing imported but the
MLIR context that says which names are ops), each 0:

* hand-built generics: a linalg.generic or its yield built outside `ir_build` (`GenericOp(`,
  `linalg.YieldOp(`), where `ir_build.generic` (a body function),
  `cloned_generic` or `multi_result_generic` builds it;
* literal op names: a string naming a registered op outside `ir_helpers/names.py`, where
  the constant of that module names it (one spelling, one place to look), or an f-string
  building one from its dialect (`f"math.{name}"`: names.py has the dialect's prefix);
* measured figures in docstrings: a timing, size, ratio or date (`0.18 s`, `2.4x`, `64 MiB`,
  `2026-12-04`, "measured ... 3"), outside backticks, paths and IR lines; a docstring states the
  rule and links where the figure is kept (bench/results/, docs/); the same in a pass
  option's help, which is also at most HELP_CHARS long (`--fusions-list` prints it).

    python test/python/test_code_counts.py     # prints each count and where
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "python" / "iree_fusions", ROOT / "mlir_passes"]
IR_BUILD = ROOT / "python" / "iree_fusions" / "compiler" / "ir_build"
NAMES = ROOT / "python" / "iree_fusions" / "compiler" / "ir_helpers" / "names.py"
HAND_BUILT = re.compile(r"\bGenericOp\(|\blinalg\.YieldOp\(")
OP_NAME = re.compile(r"^[a-z_]+(\.[a-z_0-9]+)+$")


def _files() -> list[pathlib.Path]:
    return sorted(p for folder in SOURCES for p in folder.rglob("*.py"))


def hand_built_generics() -> list[str]:
    """`file:line` of each linalg.generic or linalg.yield built outside ir_build."""
    found = []
    for path in _files():
        if IR_BUILD in path.parents:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if HAND_BUILT.search(code):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def literal_op_names() -> dict[str, list[str]]:
    """Each registered op's name written as a string outside names.py (docstrings aside): the
    files that write it."""
    from iree.compiler import ir

    context = ir.Context()
    found: dict[str, list[str]] = {}
    for path in _files():
        if path == NAMES:
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docs and OP_NAME.match(node.value) \
                    and context.is_registered_operation(node.value):
                found.setdefault(node.value, []).append(
                    f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.JoinedStr) and node.values and \
                    isinstance(node.values[0], ast.Constant) and \
                    DIALECT_PREFIX.match(str(node.values[0].value)):
                # an op name built from its dialect (`f"math.{name}"`): names.py's prefix
                found.setdefault(ast.unparse(node), []).append(
                    f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


DIALECT_PREFIX = re.compile(r"^(arith|math|linalg|tensor|flow|util|hal|iree_linalg_ext|"
                            r"iree_tensor_ext|func)\.$")


FIGURE = re.compile(r"\b\d+(\.\d+)?\s*(ms|us|µs|s|x|MiB|GiB|KiB|MB|GB)\b|\b20\d\d-\d\d-\d\d\b"
                    r"|\bmeasured\b.*\d")


def docstring_figures() -> list[str]:
    """`file:line` of each docstring line holding a measured figure (backticked code and IR
    lines aside)."""
    found = []
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
                    and isinstance(node.body[0].value, ast.Constant)
                    and isinstance(node.body[0].value.value, str)):
                continue
            doc = node.body[0].value
            for offset, line in enumerate(doc.value.splitlines()):
                text = re.sub(r"`[^`]*`|\S*/\S*", "", line)  # code, paths
                if "tensor<" in line or "%" in text:
                    continue
                if FIGURE.search(text):
                    found.append(f"{path.relative_to(ROOT)}:{doc.lineno + offset}: "
                                 f"{line.strip()}")
    return found


HELP_CHARS = 300


def option_help_faults() -> list[str]:
    """`pass option: fault` of each option help with a measured figure or over HELP_CHARS."""
    from iree_fusions.compiler.registry import REGISTRY

    found = []
    for name, entry in sorted(REGISTRY.items()):
        for option in entry.load().options():
            text = re.sub(r"`[^`]*`|\S*/\S*", "", option.help)
            if FIGURE.search(text):
                found.append(f"{name} {option.name}: a measured figure: {option.help}")
            if len(option.help) > HELP_CHARS:
                found.append(f"{name} {option.name}: {len(option.help)} characters")
    return found


def test_the_counter_finds_what_it_counts(tmp_path):
    """The patterns match the spellings they are for (else the counts below prove nothing)."""
    assert HAND_BUILT.search("gen = linalg.GenericOp([t], ins, outs, maps, its)")
    assert HAND_BUILT.search("    linalg.YieldOp([x])")
    assert not HAND_BUILT.search("gen = b.generic(ins, outs, maps, its, body)")
    from iree.compiler import ir
    context = ir.Context()
    assert OP_NAME.match("iree_tensor_ext.dispatch.tensor.load")
    assert context.is_registered_operation("iree_tensor_ext.dispatch.tensor.load")
    assert not context.is_registered_operation("stream.affinity.default")  # an attribute
    for figure in ("took 0.18 s", "2.4x faster", "64 MiB", "on 2026-12-04", "measured: 3 of 1"):
        assert FIGURE.search(figure), figure
    for not_figure in ("one dispatch", "the x86-64 baseline", "a 2-D tensor", "s = q k"):
        assert not FIGURE.search(not_figure), not_figure


def test_no_hand_built_generic():
    assert hand_built_generics() == []


def test_no_literal_op_name_outside_names_py():
    assert literal_op_names() == {}


def test_no_measured_figure_in_a_docstring():
    assert docstring_figures() == []


def test_option_help_short_and_without_figures():
    assert option_help_faults() == []


if __name__ == "__main__":
    generics = hand_built_generics()
    names = literal_op_names()
    print(f"hand-built generics: {len(generics)}")
    print("".join(f"  {where}\n" for where in generics), end="")
    multi = {name: files for name, files in names.items()
             if len({f.split(':')[0] for f in files}) > 1}
    print(f"literal op names: {len(names)} ({len(multi)} in more than one file)")
    for name, files in sorted(names.items()):
        print(f"  {name}: {', '.join(files)}")
    figures = docstring_figures()
    print(f"docstring lines with measured figures: {len(figures)}")
    print("".join(f"  {where}\n" for where in figures), end="")
    helps = option_help_faults()
    print(f"option helps with a figure or over {HELP_CHARS} characters: {len(helps)}")
    print("".join(f"  {fault}\n" for fault in helps), end="")
    sys.exit(1 if generics or names or figures or helps else 0)
