"""Variants of lit's @prefill_gqa (rewrite-attention.mlir) that the tests of the head split
build: k and v [4, S, 4 KV heads, 32], each copied to the 2 query heads of their group and
collapsed to [32, ..]."""

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
    the heads' group)."""
    body = _prefill_gqa()
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
