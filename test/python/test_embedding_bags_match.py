"""match_embedding_bag's checks, each on the lit file's fixed-length bag changed to fail it
alone (IR the verifier admits): the reason is the check's; the bag as written matches. These
are checks no lit case reached (test/decline_coverage.py)."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_GENERIC
from iree_fusions.passes.rewrite_embedding_bags.match import match_embedding_bag
from support import passes
from support.matchers import last_op, matches_or_declines, parsed

BAG = "%bag = linalg.generic"


def _bag_case() -> str:
    return passes.lit_cases("rewrite-embedding-bags")["embedding_bag"]


@pytest.mark.parametrize("old, new, reason", [
    (None, None, None),
    ("%zero = arith.constant 0.0 : f32", "%zero = arith.constant 1.0 : f32",
     "bag sum does not start from zero"),
    ("%16 = arith.addf %extracted_1, %out : f32", "%16 = arith.mulf %extracted_1, %out : f32",
     "body does not accumulate a sum"),
    ("%17 = arith.select %13, %16, %out : f32", "%17 = arith.select %13, %out, %16 : f32",
     "body does not select between out and out + row"),
    ("%16 = arith.addf %extracted_1, %out : f32", "%16 = arith.addf %out, %out : f32",
     "summand is not a table element"),
    ("%extracted_1 = tensor.extract %t0[%14, %15] : tensor<10x4xf32>",
     "%extracted_1 = tensor.extract %t0[%15, %15] : tensor<10x4xf32>",
     "table element is not [idx[j], d]"),
    ("%o = arith.muli %bi, %c5_i64 : i64", "%o = arith.muli %bi, %c1_i64 : i64",
     "offsets are not b * L (variable-length bags)"),
    ("%17 = arith.select %13, %16, %out : f32",
     "%17 = arith.select %13, %16, %out : f32\n    %n = arith.negf %17 : f32",
     "unexpected arith.negf in the bag body"),
    ("%17 = arith.select %13, %16, %out : f32",
     "%17 = arith.select %13, %16, %out : f32\n"
     "    %x = tensor.extract %t0[%c0, %c0] : tensor<10x4xf32>",
     "body reads an unknown tensor"),
    ("%t0 = arith.constant dense<1.0> : tensor<10x4xf32>",
     "%t0 = arith.constant dense<1.0> : tensor<10x5xf32>",
     "summand is not a row of a captured table"),
], ids=["bag", "sum-from-one", "product", "select-swapped", "no-table", "row-not-an-id",
        "offsets-not-b-times-l", "another-op", "another-tensor", "wider-table"])
def test_each_check_of_a_fixed_length_bag(old, new, reason):
    text = _bag_case() if old is None else _bag_case().replace(old, new)
    if "tensor<10x5xf32>" in text:  # the table's other reads follow its type
        text = text.replace("%t0[%14, %15] : tensor<10x4xf32>", "%t0[%14, %15] : tensor<10x5xf32>")
    assert old is None or text != _bag_case(), "the change must apply"
    with ir.Context():
        module = parsed(text)
        op = last_op(module, LINALG_GENERIC, function="embedding_bag")
        matches_or_declines(lambda: match_embedding_bag(op), reason)
