"""merge-sibling-contractions: numerics of its lit cases against stock, at a dynamic size
the IR never names, and dispatches saved where it merges."""

from __future__ import annotations

import pytest

from conftest import reassociation_bound
from iree_fusions.harness.numerics import compare_compilations
from support import passes

PASS = "merge-sibling-contractions"
ON_CPU = PASS + "{on-cpu=true}"  # declined on llvm-cpu by default (measured slower)
LIT_EXPECTATIONS = {"kv_projections": True, "left_alone": False}


def test_lit_cases_are_all_covered():
    assert set(passes.lit_cases(PASS)) == set(LIT_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_numerics_and_dispatches(name):
    check = compare_compilations(passes.lit_cases(PASS)[name], fusions=ON_CPU, function=name,
                                 dynamic_size=5)
    assert check.agreement.shapes_match
    # Each result is the same K-term f32 sum of f16 products; the merged dispatch may be
    # tiled so that generated code adds them in another order. With the seeded N(0, 1)
    # inputs (|x|, |w| < 5) and K = 256, sum |x w| <= 256 * 25 = 6400: 2 gamma_f32(256) * 6400
    # = 0.2 on the f32 sum; rounding to f16 can then differ by one f16 ulp at |y| < 128
    # (2^-10 * 128 = 0.125).
    if name == "kv_projections":
        bound = reassociation_bound(256, scale=6400) + 2.0 ** -10 * 128
    else:
        bound = 0.0  # nothing merged: the same program
    assert check.agreement.max_abs <= bound, (check.agreement, bound)
    assert bool(check.changes()) == LIT_EXPECTATIONS[name], check.reports
    if LIT_EXPECTATIONS[name]:
        assert check.plugin_dispatches == check.stock_dispatches - 1
    else:
        assert check.plugin_dispatches == check.stock_dispatches


def test_declined_on_cpu_by_default():
    """The rule: on llvm-cpu the merge is declined (measured slower), and says why."""
    check = compare_compilations(passes.lit_cases(PASS)["kv_projections"], fusions=PASS,
                                 function="kv_projections", dynamic_size=5)
    assert not check.changes()
    assert check.agreement.max_abs == 0
    skipped = [s.reason for p in check.passes for s in p.skipped]
    assert any("on llvm-cpu a multi-result contraction measured slower" in r
               for r in skipped), skipped
