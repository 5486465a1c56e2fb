"""Decline codes as data (issue 59): every check that declines gives a `pass/code` of its own,
read from the sources (test/decline_coverage.py's reading, which also counts the codes the
suite reaches).

    python test/decline_coverage.py --codes      # every code and its place
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

from iree_fusions.compiler.protocol import Candidate, NoMatch
from iree_fusions.compiler.protocol.candidates import DECLINE_CODE

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import decline_coverage  # noqa: E402


def test_each_code_names_one_check():
    """A code is one place: two checks under one code would make a lit check and the
    coverage count unable to tell them apart."""
    codes = decline_coverage.decline_codes()
    assert len(codes) > 150  # the reading finds the passes' checks (212 when written)
    shared = {place for places in codes.values() for place in places}
    assert len(shared) == sum(len(places) for places in codes.values())
    assert {code: places for code, places in codes.items() if len(places) > 1} == {}


def test_every_decline_gives_a_code_or_passes_one_on():
    """Each `NoMatch(...)` / `.decline(...)` call's code is a literal (its own check) or a
    caught decline's `.code` (a check that passes another's on, with more words)."""
    bad = []
    for folder in (decline_coverage.PASSES, decline_coverage.SHARED):
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and decline_coverage.is_decline(node.func)):
                    continue
                if isinstance(node.func, ast.Attribute) and node.func.attr == "decline" and \
                        not node.args:
                    continue
                first = node.args[0] if node.args else None
                literal = isinstance(first, ast.Constant) and isinstance(first.value, str) \
                    and DECLINE_CODE.fullmatch(first.value) is not None
                passed_on = isinstance(first, ast.Attribute) and first.attr == "code"
                if not (literal or passed_on):
                    bad.append(f"{path.relative_to(decline_coverage.ROOT)}:{node.lineno}")
    assert bad == []


def test_codes_are_checked_where_given():
    with pytest.raises(ValueError, match="not lowercase words"):
        NoMatch("Not A Code", "why")
    assert NoMatch("a-code", "why").code == "a-code" and str(NoMatch("a-code", "why")) == "why"
    cand = Candidate("k-0", "here", "a thing", plan=object())
    cand.decline("cost", None)  # a rule that does not decline
    assert cand.declined is None and cand.declined_code is None
    cand.decline("cost", "too dear")
    assert (cand.declined, cand.declined_code) == ("too dear", "cost")
    with pytest.raises(ValueError):
        cand.decline("Cost!", "too dear")


def test_owner_of_a_check():
    """A check's pass: its package under mlir_passes/, or the module; `shared` outside."""
    root = decline_coverage.ROOT
    assert decline_coverage.owner(root / "mlir_passes/batch_gathers/plan.py") == "batch-gathers"
    assert decline_coverage.owner(root / "mlir_passes/forward_slices.py") == "forward-slices"
    assert decline_coverage.owner(
        root / "python/iree_fusions/compiler/invariants.py") == "shared"


def test_no_pass_branches_on_reason_text():
    """A pass tells declines apart by their codes (`e.code`, `cand.code`), never by comparing
    their prose (which a reworded reason would silently break)."""
    import re
    text_checks = re.compile(r"(\.reason|\breason|str\(e\))\s*(==|!=)|reason\.startswith\(|"
                             r"\.startswith\(\"(expensive|no |not )")
    found = [f"{path.relative_to(decline_coverage.ROOT)}:{number}: {line.strip()}"
             for path in sorted(decline_coverage.PASSES.rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if text_checks.search(line.split("#")[0])]
    assert found == []
