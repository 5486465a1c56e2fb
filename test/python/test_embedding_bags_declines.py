"""The checks of rewrite_embedding_bags/match.py that test_embedding_bags_match.py leaves out:
the loop and operand checks every bag form shares, the dynamic fixed-length form's size,
length, offsets and fill checks (match_embedding_bag on a dynamic batch), and the run-time
offsets form's condition and fill checks (match_offsets_bag). Each case is a lit case of
test/passes/rewrite-embedding-bags.mlir changed to fail one check alone (IR the verifier
admits); the test asserts the decline's code and reason, and the case as written matches."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_GENERIC
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.passes.rewrite_embedding_bags.match import (
    EmbeddingBag, OffsetsBag, match_embedding_bag, match_offsets_bag
)
from support import passes
from support.matchers import last_op, parsed


def _changed(case: str, changes: dict[str, str]) -> str:
    """The lit case `case` with each `old` replaced by `new` (every change must apply)."""
    text = passes.lit_cases("rewrite-embedding-bags")[case]
    for old, new in changes.items():
        assert old in text, f"the change must apply: {old!r}"
        text = text.replace(old, new)
    return text


def _declines(case: str, changes: dict[str, str], match, code: str | None,
              reason: str | None, result_type: type) -> None:
    """`match` on the case's last generic: passes (a `result_type`) where `code` is None,
    else raises NoMatch with that code and reason."""
    with ir.Context():
        module = parsed(_changed(case, changes))
        op = last_op(module, LINALG_GENERIC, function=case)
        if code is None:
            assert isinstance(match(op), result_type)
            return
        with pytest.raises(NoMatch) as failed:
            match(op)
        assert failed.value.code == code
        assert str(failed.value) == reason


UNIT_INS = "ins(%ids0, %offs0 : tensor<5xi64>, tensor<i64>)"
UNIT_OUTS = "outs(%b0_f : tensor<4xf32>)"
UNIT_MAPS = ("indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, "
             "affine_map<(d0, d1) -> (d1)>]")
UNIT_ARGS = "(%ids0: tensor<5xi64>, %offs0: tensor<i64>)"


@pytest.mark.parametrize("changes, code, reason", [
    ({}, None, None),
    # Two outputs (the sum written twice): not (ids, offsets) -> out.
    ({UNIT_OUTS: "outs(%b0_f, %b0_f : tensor<4xf32>, tensor<4xf32>)",
      UNIT_MAPS: UNIT_MAPS[:-1] + ", affine_map<(d0, d1) -> (d1)>]",
      "^bb0(%in: i64, %in_0: i64, %out: f32):": "^bb0(%in: i64, %in_0: i64, %out: f32, %o2: f32):",
      "linalg.yield %10 : f32": "linalg.yield %10, %10 : f32, f32",
      "} -> tensor<4xf32>": "} -> (tensor<4xf32>, tensor<4xf32>)",
      "%b0 = linalg.generic": "%b0, %b0_2 = linalg.generic"},
     "operands", "expects indices and offsets"),
    # The offsets a scalar i64 (a `() ` map, as a 0-d tensor has): not a ranked tensor.
    ({UNIT_ARGS: "(%ids0: tensor<5xi64>, %offs0: i64)",
      UNIT_INS: "ins(%ids0, %offs0 : tensor<5xi64>, i64)"},
     "unranked", "operands are not ranked tensors"),
    # A dynamic number of ids: the run-time offsets form needs static shapes.
    ({UNIT_ARGS: "(%ids0: tensor<?xi64>, %offs0: tensor<i64>)",
      UNIT_INS: "ins(%ids0, %offs0 : tensor<?xi64>, tensor<i64>)"},
     "dynamic-shapes", "dynamic shapes"),
    # The condition's end (the number of ids) an argument: nothing evaluates it.
    ({UNIT_ARGS: "(%ids0: tensor<5xi64>, %offs0: tensor<i64>, %end: i64)",
      "%5 = arith.cmpi slt, %1, %n : i64": "%5 = arith.cmpi slt, %1, %end : i64"},
     "bag-condition", "bag condition not understood"),
    ({"%b0_z = arith.constant 0.0 : f32": "%b0_z = arith.constant 1.0 : f32"},
     "nonzero-start-offsets", "bag sum does not start from zero"),
], ids=["offsets-bag", "two-outputs", "scalar-offsets", "dynamic-ids", "argument-end",
        "sum-from-one"])
def test_each_check_of_an_offsets_bag(changes, code, reason):
    _declines("offsets_bag_unit_batch", changes, match_offsets_bag, code, reason, OffsetsBag)


OUT_MAP = "affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types"


@pytest.mark.parametrize("changes, code", [
    ({}, None),
    # out[d, b] (4 bags x 4 columns, so the shapes still agree): not out[b, d].
    ({OUT_MAP: "affine_map<(d0, d1, d2) -> (d2, d0)>], iterator_types"}, "maps"),
], ids=["offsets-bags", "transposed-output"])
def test_the_indexing_maps_of_an_offsets_bag(changes, code):
    _declines("offsets_bags", changes, match_offsets_bag, code, "unexpected indexing maps",
              OffsetsBag)


FLAT = "  %flat = tensor.collapse_shape %idsb [[0, 1]] : tensor<?x5xi64> into tensor<?xi64>\n"


@pytest.mark.parametrize("changes, code, reason", [
    ({}, None, None),
    # The ids through an op that carries no size IREE holds: their length is not known.
    ({FLAT: FLAT.replace("%flat =", "%flat0 =")
      + "  %flat = util.optimization_barrier %flat0 : tensor<?xi64>\n"},
     "unknown-dynamic-size", "embedding_bag with dynamic sizes IREE holds no value for"),
    # The bag count a division by zero: undefined for every size.
    ({"%nb = arith.ceildivui %n5, %c5_i64 : i64":
      "%c0_i64 = arith.constant 0 : i64\n  %nb = arith.ceildivui %n5, %c0_i64 : i64"},
     "sizes-unknown", "embedding_bag sizes not understood"),
    # ceildiv(B, 5) bags over B * 5 ids: a length that changes with B.
    ({"%n5 = arith.muli %bi, %c5_i64 : i64": "%n5 = arith.muli %bi, %c1_i64 : i64"},
     "variable-bags-op", "bags are not of one fixed length"),
    # Offsets b * 1 for bags of 5 ids.
    ({"%o = arith.muli %bb, %c5_i64 : i64": "%o = arith.muli %bb, %c1_i64 : i64"},
     "offsets-not-strided-op", "offsets are not b * L (variable-length bags)"),
    ({"%zero = arith.constant 0.0 : f32": "%zero = arith.constant 1.0 : f32"},
     "nonzero-start-op", "bag sum does not start from zero"),
], ids=["dynamic-bag", "ids-behind-a-barrier", "bags-divided-by-zero", "length-changes",
        "offsets-b-times-1", "sum-from-one"])
def test_each_check_of_a_dynamic_fixed_length_bag(changes, code, reason):
    _declines("dynamic_embedding_bag", changes, match_embedding_bag, code, reason,
              EmbeddingBag)
