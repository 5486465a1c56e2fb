"""merge-cache-scatters: the merged scatter writes each row the value one of the two scatters
wrote (their index sets are proven disjoint), so the cache is bit-identical, NaN and infinity
payloads included (a scatter copies its updates); each case it changes compiles to fewer
dispatches, the others are left as they were; index arithmetic that wraps (i32, a zero
extension of a negative i8) is declined, and would give a wrong cache if merged. The proof's
analysis itself is checked against brute force in test_index_arith.py."""

from __future__ import annotations

import numpy as np
import pytest

from iree_fusions.harness.numerics import compare_compilations
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


def _check(name: str, inputs: list[np.ndarray], changed: bool, flags=()) -> None:
    check = compare_compilations(passes.lit_cases(PASS)[name], inputs, fusions=PASS,
                                 function=name, flags=list(flags))
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


AGGRESSIVE_FLAG = "--iree-dispatch-creation-enable-aggressive-fusion=true"


@pytest.mark.parametrize("flags", [(), (AGGRESSIVE_FLAG,)], ids=["concatenated", "stacked"])
@pytest.mark.parametrize("start", STARTS, ids=["in-block", "wrapped"])
def test_rope_write_bit_identical_concatenated_and_stacked(start, flags):
    """K's update from an elementwise generic, each index tensor from its own generic: merged
    by a concatenation by default and by a selecting generic with aggressive fusion (IREE
    then fuses RoPE and both index generics into the one scatter's dispatch)."""
    page, start, k, v, cache = _cache_inputs(start, seed=3)
    rot = np.random.default_rng(4).standard_normal((16, 32)).astype(np.float16)
    rot[2, 2] = np.nan
    k, v = k.astype(np.float16), v.astype(np.float16)
    _check("decode_kv_write_rope", [page, start, k, v, rot, cache], True, flags)


@pytest.mark.parametrize("name", ["same_rows", "unbounded_position", "update_read_twice"])
def test_declined_cases_unchanged(name):
    # same_rows writes K's rows twice (V's value wins in stock): the plugin must agree.
    _check(name, _cache_inputs(np.array([0, 5, 31, 17]), seed=1), False)


# Index arithmetic that wraps (issue 42): K's and V's rows meet only through i32 wrap-around
# (3 * p with p = -1431655765 is 1, V's 3 * 0 + 1) or a zero extension of a negative i8
# (extui(i8(0) - 1) = 255 = 252 + 3): each scatter's own rows distinct, both write one row.
WRAP_ROW = {"i32_wrap": 1, "zero_extended": 255}


def _wrap_inputs(name: str) -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    page = (np.array([-1431655765, 0, 5, 9], dtype=np.int32) if name == "i32_wrap"
            else np.arange(4, dtype=np.int64))
    k, v = (rng.standard_normal((4, 32)).astype(np.float32) for _ in range(2))
    k[1, 3], v[0, 0], v[3, 1] = np.nan, np.inf, -np.inf
    return [page, k, v, np.full((260, 32), 7.0, dtype=np.float16)]


@pytest.mark.parametrize("name", sorted(WRAP_ROW))
def test_wrapping_indices_declined_bit_identical(name):
    _check(name, _wrap_inputs(name), False)


@pytest.mark.parametrize("name", sorted(WRAP_ROW))
def test_wrapping_indices_would_be_wrong_merged(name, monkeypatch):
    """The cases are real holes: with the proof forced to say "disjoint" (the exact-integer
    model of before said so), the merged module's cache differs from stock's at the shared
    row (stock keeps V's value there)."""
    from iree_fusions.harness import api
    from iree_fusions.compiler.analyses import cache_scatters

    text = passes.lit_cases(PASS)[name]
    monkeypatch.setattr(cache_scatters, "disjoint", lambda a, b: None)
    merged, reports = passes.run_pass(text, PASS)
    assert merged.count("iree_linalg_ext.scatter") == 1, reports
    inputs = _wrap_inputs(name)
    stock, forced = (api.run(api.compile_str(t, stock=True).output, inputs, function=name)[0]
                     for t in (text, merged))
    row = WRAP_ROW[name]
    assert np.array_equal(stock[row], inputs[2][1 if name == "i32_wrap" else 3].astype(
        np.float16), equal_nan=True)
    assert not np.array_equal(stock[row], forced[row], equal_nan=True)


def test_lit_cases_are_all_covered():
    assert set(passes.lit_cases(PASS)) == {"decode_kv_write", "same_rows", "unbounded_position",
                                           "update_read_twice", "prefill_tokens", "i32_wrap",
                                           "zero_extended", "decode_kv_write_rope"}


@pytest.mark.parametrize("flag, aggressive", [
    ("--iree-dispatch-creation-enable-aggressive-fusion=true", True),
    ("--iree-dispatch-creation-enable-aggressive-fusion", True),
    ("--iree-dispatch-creation-enable-aggressive-fusion=false", False)])
def test_compile_sees_aggressive_fusion(flag, aggressive):
    """iree-fusions-compile hands IREE's aggressive-fusion flag to the passes: with it, RoPE
    on K joins K's scatter, so the pieces are stacked by a selecting generic, and where both
    index tensors come from one two-result generic (which IREE would not fuse into the
    stack's dispatch) the merge is declined with the reason."""
    from iree_fusions.harness import api

    for name, merged in (("decode_kv_write", not aggressive), ("decode_kv_write_rope", True)):
        out = api.compile_str(passes.lit_cases(PASS)[name], fusions=PASS, flags=[flag],
                              compile_to="flow")
        report = next(p for p in out.passes if p.name == PASS)
        assert bool(report.changes) == merged, out.reports
        if merged:
            stacked = "(pieces stacked by a selecting generic)" in report.changes[0].what
            assert stacked == aggressive, report.changes[0].what
        else:
            assert "a piece comes from a linalg.generic with 2 results" in \
                report.skipped[0].reason, out.reports
