"""forward-slices: every lit case computes the same values, bit for bit (the generics read
the same elements, in the same order of operations), at a dynamic size the IR never names.
Kept changes are weighed: `keep_no_gain` here checks the rewrite's mechanics."""

from __future__ import annotations

import pytest

from iree_fusions.harness.numerics import compare_compilations
from support import passes

PASS = "forward-slices"
# case -> changed (None: IREE's global optimization reshapes the case first, so whether a
# candidate is left is IREE's; the lit file checks every reason on the IR as written)
LIT_EXPECTATIONS = {
    "rope_interleaved": True,
    "rope_decode": True,
    "left_alone": None,
    "left_alone_splits": False,
    "mla_slices": True,
    # folded: alone, nothing computes only those columns (left to rewrite-attention on a CPU
    # target where it is selected: test_pass_context.py)
    "attention_value_columns": True,
}


def test_lit_cases_are_all_covered():
    assert set(passes.lit_cases(PASS)) == set(LIT_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_bit_identical(name):
    changed = LIT_EXPECTATIONS[name]
    check = compare_compilations(passes.lit_cases(PASS)[name], fusions=PASS, function=name,
                                 dynamic_size=7, keep_no_gain=True)
    assert check.agreement.shapes_match
    assert check.agreement.max_abs == 0, check.agreement
    if changed is not None:
        assert bool(check.changes()) == changed, check.reports
    # Small cases: IREE clones these slices into their reader too (no dispatch saved).
    assert check.plugin_dispatches <= check.stock_dispatches
