"""match_attention's checks, each on an attention (IR the verifier admits) changed to fail it
alone: the decline's code is the check's; the attention as written matches. Checks no lit
case reaches (test/decline_coverage.py). An indexing map that is not a projection has no
attention case (IREE's parser crashes on one): `_dims`, which reads each map, is given one."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_EXT_ATTENTION
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.passes.rewrite_attention.match import _dims, match_attention
from support.matchers import last_op, parsed

T = "tensor<8x16x32xf16>"  # batch 8, 16 query and key rows, head dim and value dim 32
PLAIN = "^bb0(%s: f32):\n    iree_linalg_ext.yield %s : f32"


def attention(n_loops: int, maps: list[str], types: list[str], region: str = PLAIN) -> str:
    """An attention of `n_loops` loops with maps (q, k, v, scale, [mask], out) and operand
    types in the same order (the scale's is f32)."""
    dims = ", ".join(f"d{i}" for i in range(n_loops))
    masked = len(maps) == 6
    names = ["q", "k", "v"] + (["mask"] if masked else [])
    tensors = types[:3] + ([types[4]] if masked else [])
    args = ", ".join(f"%{n}: {t}" for n, t in zip(names, tensors))
    ins = "%q, %k, %v, %scale" + (", %mask" if masked else "")
    out = types[-1]
    affine = ", ".join(f"affine_map<({dims}) -> ({m})>" for m in maps)
    in_types = ", ".join(types[:-1])
    return f"""util.func public @f({args}) -> {out} {{
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : {out}
  %o = iree_linalg_ext.attention <indexing_maps = [{affine}]>
      ins({ins} : {in_types}) outs(%e : {out}) {{
  {region}
  }} -> {out}
  util.return %o : {out}
}}"""


QKVO = ["d0, d1, d3", "d0, d4, d3", "d0, d4, d2", ""]  # q, k, v, scale (then mask, out)
MASKED = (5, QKVO + ["d0, d1, d4", "d0, d1, d2"], [T, T, T, "f32", "tensor<8x16x16xf16>", T])


@pytest.mark.parametrize("case, code", [
    (MASKED, None),
    ((5, QKVO + ["d0, d1, d2"], [T, T, T, "f32", T]), None),
    # a loop (d5) q and v read, k and the output do not: no role
    ((6, ["d0, d1, d3, d5", "d0, d4, d3", "d0, d4, d2, d5", "", "d0, d1, d2"],
      ["tensor<8x16x32x4xf16>", T, "tensor<8x16x32x4xf16>", "f32", T]), "loop-kinds"),
    # no head-dim loop: q and k share only the batch
    ((4, ["d0, d1", "d0, d3", "d0, d3, d2", "", "d0, d1, d2"],
      ["tensor<8x16xf16>", "tensor<8x16xf16>", T, "f32", T]), "missing-loop"),
    ((5, QKVO[:3] + ["", "d0, d1, d1"], [T, T, T, "f32", "tensor<8x16x16xf16>"]),
     "map-repeats-loop"),
    ((5, QKVO[:3] + ["d0", "d0, d1, d2"], [T, T, T, "f32", T]), "scale-not-scalar"),
    ((5, QKVO + ["d0, d1, d2"], ["tensor<8x16x32xi8>", T, T, "f32", T]), "operand-not-float"),
    ((5, QKVO + ["d0, d1, d4", "d0, d1, d2"], [T, T, T, "f32", "tensor<8x16x16xindex>", T]),
     "mask-type"),
    # the mask reads the head-dim loop (d3) where the key loop (d4) belongs
    ((5, QKVO + ["d0, d1, d3", "d0, d1, d2"], [T, T, T, "f32", T, T]), "mask-map"),
], ids=["masked", "unmasked", "a-loop-of-no-role", "no-head-dim", "repeated-loop",
        "scale-with-a-map", "integer-query", "index-mask", "mask-on-head-dim"])
def test_each_check_of_an_attention(case, code):
    with ir.Context():
        module = parsed(attention(*case))
        op = last_op(module, LINALG_EXT_ATTENTION)
        if code is None:
            assert match_attention(op).mask is not None or len(case[1]) == 5
            return
        with pytest.raises(NoMatch) as failed:
            match_attention(op)
        assert failed.value.code == code, failed.value


def test_score_region_with_another_argument():
    region = "^bb0(%s: f32, %t: f32):\n    iree_linalg_ext.yield %s : f32"
    with ir.Context():
        module = parsed(attention(MASKED[0], MASKED[1], MASKED[2], region))
        with pytest.raises(NoMatch) as failed:
            match_attention(last_op(module, LINALG_EXT_ATTENTION))
        assert failed.value.code == "score-region-signature"


def test_a_map_that_is_not_a_projection():
    with ir.Context():
        d0, d1, d2 = (ir.AffineDimExpr.get(i) for i in range(3))
        assert _dims(ir.AffineMap.get(3, 0, [d0, d2])) == [0, 2]
        with pytest.raises(NoMatch) as failed:
            _dims(ir.AffineMap.get(3, 0, [d0, d1 + d2]))
        assert failed.value.code == "map-not-projection"
