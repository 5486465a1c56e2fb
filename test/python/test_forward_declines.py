"""The forward passes' checks no lit case reached (test/decline_coverage.py), each on IR the
verifier admits that fails it alone. forward-slice-dispatches: a copy dispatch of a strided
slice that writes in place (its result tied to an operand), stores what it loads from its own
result, stores into a result with a leading unit dim its part lacks, or has no reader.
forward-factory-ops: a broadcast of a constant bias (IREE clones it itself). Its flow-phase
half forward-factory-dispatches: a mask dispatch whose recomputation costs more than it saves
(with the cost options at 0). The code of each decline is checked, and the same IR with the
one difference undone is rewritten."""

from __future__ import annotations

import pytest

from support import passes


# ---------------------------------------------------------------- forward-slice-dispatches

# A copy dispatch of the odd columns of %q (a strided slice), and a dispatch that loads the
# copy whole. Placeholders: ARGS / TYPES / RESULT the copy's operands, their types and its
# result (a tied one: `%d`), OUT the type of its result, ACCESS its result binding's access,
# FROM what it loads, STORE / LOAD where it stores its part and where the reader loads it.
COPY = """!src = !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32>>
!dst = !iree_tensor_ext.dispatch.tensor<ACCESS:OUT>
!cpy = !iree_tensor_ext.dispatch.tensor<readonly:OUT>
!res = !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>
util.func public @copy(%q: tensor<4x16xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = flow.dispatch.workgroups(ARGS) : (TYPES) -> RESULT = (%a: !src, %o: !dst) {
    %v = iree_tensor_ext.dispatch.tensor.load FROM -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, STORE : tensor<4x8xf32> -> !dst
    flow.return
  }
READER  util.return RETURNED : tensor<4x8xf32>
}"""
READER = """  %r = flow.dispatch.workgroups(%c) : (OUT) -> tensor<4x8xf32> = (%b: !cpy, %w: !res) {
    %x = iree_tensor_ext.dispatch.tensor.load %b, LOAD : !cpy -> tensor<4x8xf32>
    %e = tensor.empty() : tensor<4x8xf32>
    %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.negf %in : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %n, %w, offsets = [0, 0], sizes = [4, 8],
        strides = [1, 1] : tensor<4x8xf32> -> !res
    flow.return
  }
"""
SLICE = "%a, offsets = [0, 1], sizes = [4, 8], strides = [1, 2] : !src"
WHOLE = "offsets = [0, 0], sizes = [4, 8], strides = [1, 1]"
BASE = {"ARGS": "%q", "TYPES": "tensor<4x16xf32>", "RESULT": "tensor<4x8xf32>",
        "OUT": "tensor<4x8xf32>", "ACCESS": "writeonly", "FROM": SLICE, "STORE": WHOLE,
        "LOAD": WHOLE, "READER": READER, "RETURNED": "%r"}
UNIT = "offsets = [0, 0, 0], sizes = [1, 4, 8], strides = [1, 1, 1]"


def _copy(**change: str) -> str:
    text = COPY
    changes = {**BASE, **change}
    text = text.replace("READER", changes.pop("READER"))  # first: it holds other keys
    for key, value in changes.items():
        text = text.replace(key, value)
    return text


@pytest.mark.parametrize("change, code", [
    ({}, None),
    # The copy writes its slice into %d, its result tied to that operand.
    ({"ARGS": "%q, %d", "TYPES": "tensor<4x16xf32>, tensor<4x8xf32>", "RESULT": "%d",
      "ACCESS": "readwrite"}, "copy-in-place"),
    # It loads from its own result's binding, not from an operand.
    ({"FROM": f"%o, {WHOLE} : !dst"}, "copy-stores-other"),
    # Its [4, 8] part is stored into a [1, 4, 8] result (read back rank-reduced).
    ({"OUT": "tensor<1x4x8xf32>", "RESULT": "tensor<1x4x8xf32>", "STORE": UNIT,
      "LOAD": UNIT}, "copy-drops-dim"),
    # Nothing reads it (no reader dispatch; the function returns %d).
    ({"READER": "", "RETURNED": "%d"}, "no-reader"),
], ids=["folded", "in-place", "stores-own-result", "unit-dim-added", "unread"])
def test_each_check_of_a_copy_dispatch(change, code):
    codes, changes = passes.skip_codes_and_changes(_copy(**change), "forward-slice-dispatches")
    if code is None:
        assert not codes and len(changes) == 1 and "loaded by 1 dispatch operand" in changes[0]
    else:
        assert codes == [code] and not changes


# ---------------------------------------------------------------- forward-factory-ops

# BIAS[j] squared and broadcast over 8 rows, added by two reductions.
BROADCAST = """#row = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
util.func public @bias(ARGUMENT%a: tensor<4x8x16xf32>, %b: tensor<4x8x16xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  CONSTANT
  %e = tensor.empty() : tensor<8x16xf32>
  %bb = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ra = linalg.generic {indexing_maps = [#id3, #last, #out],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %bb : tensor<4x8x16xf32>, tensor<8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %rb = linalg.generic {indexing_maps = [#id3, #last, #out],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%b, %bb : tensor<4x8x16xf32>, tensor<8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  util.return %ra, %rb : tensor<4x8xf32>, tensor<4x8xf32>
}"""
BIAS = ("%bias = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, "
        "11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>")


@pytest.mark.parametrize("constant", [False, True], ids=["argument-bias", "constant-bias"])
def test_a_broadcast_of_constants_is_left_to_iree(constant):
    text = BROADCAST.replace("ARGUMENT", "" if constant else "%bias: tensor<16xf32>, ")
    text = text.replace("CONSTANT", BIAS if constant else "")
    codes, changes = passes.skip_codes_and_changes(text, "forward-factory-ops")
    assert "fill-or-splat" in codes  # the reductions' init, either way
    if constant:
        assert "constant-broadcast" in codes and not changes
    else:
        assert "constant-broadcast" not in codes
        assert len(changes) == 1 and "into 2 consuming generic(s)" in changes[0]


@pytest.mark.parametrize("options", ["", "ops-per-byte=0 ops-per-dispatch=0"],
                         ids=["default-costs", "nothing-saved-counts"])
def test_a_clone_costing_more_than_it_saves(options):
    """The lit case's mask dispatch, cloned into both attention dispatches by default; with a
    byte and a dispatch worth no ops, recomputing its elements costs more."""
    text = passes.lit_cases("forward-factory-dispatches")["mask_into_two_attentions"]
    codes, changes = passes.skip_codes_and_changes(text, f"forward-factory-dispatches{{{options}}}")
    if options:
        assert codes == ["recompute-costs-more"] * 2 and not changes
    else:
        assert not codes and len(changes) == 2
