"""Attention IR the tests of rewrite-attention build beside its lit cases: variants of lit's
@prefill_gqa (rewrite-attention.mlir: k and v [4, S, 4 KV heads, 32], each copied to the 2
query heads of their group and collapsed to [32, ..]) for the head split, and a query whose
rows are collapsed from a copy."""

from __future__ import annotations

import re

from support import passes


def _prefill_gqa() -> str:
    text = passes.lit_cases("rewrite-attention")["prefill_gqa"]
    return re.sub(r"\s*// expected-remark@below.*\n", "\n",
                  text[text.rindex("util.func public @prefill_gqa("):])


def gqa_variant(kind: str) -> str:
    """"differently": v over 2 KV heads of 4 query heads each; "outside": k read without its
    sequence dim (its copy repeats the keys too); "split_head_dim": k's head dim 32 as 2 x 16
    in its source and copy (the copy's collapse merges them back: a group of two dims besides
    the heads' group); "mask_unsplit": the mask a copy whose batch dim (32 = 4 x 8 query heads)
    is read whole, so it does not split as k and v do."""
    body = _prefill_gqa()
    if kind == "mask_unsplit":
        old = body[body.index("  %eb = tensor.empty"):body.index("  %e = tensor.empty")]
        d3 = "(d0, d1, d2)"
        new = f"""  %eb = tensor.empty(%m, %m) : tensor<32x?x?xf16>
  %mask = linalg.generic {{indexing_maps = [affine_map<{d3} -> {d3}>, affine_map<{d3} -> {d3}>], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%mask3 : tensor<32x?x?xf16>) outs(%eb : tensor<32x?x?xf16>) {{
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  }} -> tensor<32x?x?xf16>
"""
        return (body.replace(old, new)
                .replace("%mask3: tensor<4x?x?xf16>", "%mask3: tensor<32x?x?xf16>"))
    if kind == "differently":
        return (body.replace("%v4: tensor<4x?x4x32xf16>", "%v4: tensor<4x?x2x32xf16>")
                .replace("ins(%v4 : tensor<4x?x4x32xf16>)", "ins(%v4 : tensor<4x?x2x32xf16>)")
                .replace("tensor<4x4x2x32x?xf16>", "tensor<4x2x4x32x?xf16>"))
    if kind == "outside":
        return (body.replace("%k4: tensor<4x?x4x32xf16>", "%k4: tensor<4x4x32xf16>")
                .replace("affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>",
                         "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>")
                .replace("ins(%k4 : tensor<4x?x4x32xf16>)", "ins(%k4 : tensor<4x4x32xf16>)"))
    assert kind == "split_head_dim", kind
    old = body[body.index("  %ek = tensor.empty"):body.index("  %ev = tensor.empty")]
    d6 = "(d0, d1, d2, d3, d4, d5)"
    new = f"""  %ek = tensor.empty(%m) : tensor<4x4x2x?x2x16xf16>
  %kr = linalg.generic {{indexing_maps = [affine_map<{d6} -> (d0, d3, d1, d4, d5)>, affine_map<{d6} -> {d6}>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}} ins(%k4 : tensor<4x?x4x2x16xf16>) outs(%ek : tensor<4x4x2x?x2x16xf16>) {{
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  }} -> tensor<4x4x2x?x2x16xf16>
  %k = tensor.collapse_shape %kr [[0, 1, 2], [3], [4, 5]] : tensor<4x4x2x?x2x16xf16> into tensor<32x?x32xf16>
"""
    return (body.replace(old, new)
            .replace("%k4: tensor<4x?x4x32xf16>", "%k4: tensor<4x?x4x2x16xf16>"))


# q's rows a collapse of two dims of a transposing copy ([8, S, 2, 32] -> [8, 2, S, 32] ->
# [8, 2S, 32]): a query block is a slice of the collapsed value, not of the copy's source.
Q_ROWS_COLLAPSED = """util.func public @q_rows_collapsed(%q0: tensor<8x?x2x32xf32>, %k: tensor<8x?x32xf32>, %v: tensor<8x?x32xf32>) -> tensor<8x?x32xf32> {
  %c2 = arith.constant 2 : index
  %c1a = arith.constant 1 : index
  %s = tensor.dim %q0, %c1a : tensor<8x?x2x32xf32>
  %c1 = arith.constant 1 : index
  %n = tensor.dim %k, %c1 : tensor<8x?x32xf32>
  %eq = tensor.empty(%s) : tensor<8x2x?x32xf32>
  %qc = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q0 : tensor<8x?x2x32xf32>) outs(%eq : tensor<8x2x?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x2x?x32xf32>
  %q = tensor.collapse_shape %qc [[0], [1, 2], [3]] : tensor<8x2x?x32xf32> into tensor<8x?x32xf32>
  %m = arith.muli %s, %c2 : index
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty(%m) : tensor<8x?x32xf32>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale : tensor<8x?x32xf32>, tensor<8x?x32xf32>, tensor<8x?x32xf32>, f32) outs(%e : tensor<8x?x32xf32>) {
  ^bb0(%x: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<8x?x32xf32>
  util.return %o : tensor<8x?x32xf32>
}"""
