"""merge-cache-scatters: the merged scatter writes each row the value one of the two scatters
wrote (their index sets are proven disjoint), so the cache is bit-identical, NaN and infinity
payloads included (a scatter copies its updates); each case it changes compiles to fewer
dispatches, the others are left as they were. The proof itself is checked against brute force:
a hypothesis property draws index forms (page coefficient, heads, positions, offsets) and
every pair `disjoint` accepts has no common value over a range of pages."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iree_fusions.harness.numerics import compare_compilations
from iree_fusions.passes.merge_cache_scatters import ANY, Residues, disjoint
from support import passes

PASS = "merge-cache-scatters"
PAGES = 6  # cache rows: pages x 2 partitions x 4 heads x 32 positions


def _cache_inputs(start: np.ndarray, rows: int = 16, seed: int = 0) -> list[np.ndarray]:
    """Distinct pages per batch row, K and V updates with +inf, -inf and NaN in them, and a
    cache of PAGES pages holding a marker value (rows never written keep it)."""
    rng = np.random.default_rng(seed)
    page = rng.permutation(PAGES)[:4].astype(np.int64)
    k, v = (rng.standard_normal((rows, 32)).astype(np.float32) for _ in range(2))
    k[0, 0], k[3, 5], v[1, 2], v[7, 31] = np.inf, np.nan, -np.inf, np.nan
    cache = np.full((PAGES * 256, 32), 7.0, dtype=np.float16)
    return [page, start.astype(np.int64), k, v, cache]


def _check(name: str, inputs: list[np.ndarray], changed: bool) -> None:
    check = compare_compilations(passes.lit_cases(PASS)[name], inputs, fusions=PASS,
                                 function=name)
    assert check.agreement.shapes_match
    stock, plugin = check.stock[0], check.plugin[0]
    assert np.array_equal(stock.view(np.uint16), plugin.view(np.uint16)), check.agreement
    assert bool(check.changes()) == changed, check.reports
    if changed:
        assert check.plugin_dispatches < check.stock_dispatches
    else:
        assert check.plugin_dispatches == check.stock_dispatches


# Positions in and out of the block (negative and past 32: the floor-mod wraps them).
STARTS = [np.array([0, 5, 31, 17]), np.array([-1, 33, 64, -40])]


@pytest.mark.parametrize("start", STARTS, ids=["in-block", "wrapped"])
def test_decode_write_bit_identical_with_nonfinite_updates(start):
    _check("decode_kv_write", _cache_inputs(start), True)


@pytest.mark.parametrize("name", ["same_rows", "unbounded_position", "update_read_twice"])
def test_declined_cases_unchanged(name):
    # same_rows writes K's rows twice (V's value wins in stock): the plugin must agree.
    _check(name, _cache_inputs(np.array([0, 5, 31, 17]), seed=1), False)


def test_lit_cases_are_all_covered():
    assert set(passes.lit_cases(PASS)) == {"decode_kv_write", "same_rows", "unbounded_position",
                                           "update_read_twice", "prefill_tokens"}


# ---------------------------------------------------------------- the proof vs brute force

def _values(page_coef: int, heads: int, head_coef: int, block: int, offset: int) -> set[int]:
    return {page_coef * p + head_coef * h + pos + offset
            for p, h, pos in itertools.product(range(-4, 5), range(heads), range(block))}


def _residues(page_coef: int, heads: int, head_coef: int, block: int, offset: int) -> Residues:
    page = ANY.scaled(page_coef)                      # a page id read from a tensor
    head = Residues(0, 0, heads - 1).scaled(head_coef)  # linalg.index over `heads`
    pos = Residues(0, 0, block - 1)                   # a floor-mod by `block`
    return page + head + pos + Residues(0, offset, offset)


FORM = st.tuples(st.sampled_from([0, 16, 48, 64, 96]), st.integers(1, 3),
                 st.sampled_from([4, 8, 16]), st.sampled_from([2, 4, 8]), st.integers(-40, 80))


@settings(max_examples=300, deadline=None)
@given(FORM, FORM)
def test_disjoint_is_sound(a, b):
    """Whenever `disjoint` proves two index forms disjoint, no page, head and position pair
    gives the same value (pages -4..4: the modulus argument covers every page)."""
    ra, rb = _residues(*a), _residues(*b)
    if disjoint(ra, rb) is None:
        assert not (_values(*a) & _values(*b)), (a, b, ra, rb)


def test_disjoint_proves_sharktank_layout():
    k = _residues(768, 4, 32, 32, 0)
    v = _residues(768, 4, 32, 32, 128)
    assert disjoint(k, v) is None
    assert disjoint(k, k) is not None
    assert disjoint(k, Residues(1, 0, 0) + v) is not None  # an unbounded term


@pytest.mark.parametrize("flag, merged", [
    ("--iree-dispatch-creation-enable-aggressive-fusion=true", False),
    ("--iree-dispatch-creation-enable-aggressive-fusion", False),
    ("--iree-dispatch-creation-enable-aggressive-fusion=false", True)])
def test_compile_sees_aggressive_fusion(flag, merged):
    """iree-fusions-compile hands IREE's aggressive-fusion flag to the passes: with it, RoPE
    on K would join K's scatter, so the merge is declined (the reason is reported)."""
    from iree_fusions.harness import api
    from iree_fusions.passes.merge_cache_scatters import AGGRESSIVE

    out = api.compile_str(passes.lit_cases(PASS)["decode_kv_write"], fusions=PASS,
                          flags=[flag], compile_to="flow")
    report = next(p for p in out.passes if p.name == PASS)
    assert bool(report.changes) == merged, out.reports
    assert merged or [s.reason for s in report.skipped] == [AGGRESSIVE]
