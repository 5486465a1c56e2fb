"""plan_pair's checks (compiler/analyses/cache_scatters.py), each on the lit file's decode
pair changed to fail it alone: merge-cache-scatters leaves the pair with the check's reason;
the pair as written merges. Checks no lit case reached (test/decline_coverage.py)."""

from __future__ import annotations

import pytest

from support import passes

PASS = "merge-cache-scatters"
SECOND = """  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16"""


def _case(first_unique: bool = True, second_unique: bool = True, combine: bool = False,
          argument_update: bool = False) -> str:
    text = passes.lit_cases(PASS)["decode_kv_write"]
    assert SECOND in text
    second = SECOND.replace("unique_indices(true)",
                            f"unique_indices({str(second_unique).lower()})")
    if argument_update:  # V's update an argument of the function, not a generic's result
        second = second.replace("ins(%v, %vi", "ins(%varg, %vi")
        text = text.replace("util.func public @decode_kv_write(",
                            "util.func public @decode_kv_write(%varg: tensor<16x32xf16>, ")
    if combine:
        second = second.replace("    iree_linalg_ext.yield %u : f16",
                                "    %s = arith.addf %u, %d : f16\n"
                                "    iree_linalg_ext.yield %s : f16")
    text = text.replace(SECOND, second)
    if not first_unique:
        first = "%sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices("
        text = text.replace(first + "true)", first + "false)")
    return text


@pytest.mark.parametrize("kwargs, reason", [
    ({}, None),
    ({"second_unique": False}, "scatters with different unique_indices"),
    ({"first_unique": False, "second_unique": False},
     "a scatter whose indices are not declared unique (the order of its writes matters)"),
    ({"combine": True}, "a scatter that combines with the cache (only overwrites are merged)"),
    ({"argument_update": True}, "an update not computed by a linalg op"),
], ids=["pair", "one-not-unique", "none-unique", "combining", "argument-update"])
def test_each_check_of_a_scatter_pair(kwargs, reason):
    _, (report,) = passes.run_pass(_case(**kwargs), PASS)
    if reason is None:
        assert report.changes and not report.skipped
    else:
        assert not report.changes and len(report.skipped) == 1
        assert report.skipped[0].reason.startswith(reason), report.skipped[0].reason
