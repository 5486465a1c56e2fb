"""`is_reduction_or_contraction` (linalg ops that reduce) and `is_dispatch_root` (those and
every linalg_ext op): what IREE makes the root of a dispatch."""

from __future__ import annotations

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h

MODULE = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
util.func public @f(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %i: tensor<2x1xi32>,
                    %u: tensor<2x8xf32>)
    -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>)
      outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %sc = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%u, %i : tensor<2x8xf32>, tensor<2x1xi32>) outs(%neg : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<4x8xf32>
  util.return %mm, %sum, %neg, %sc
      : tensor<4x4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
"""


def test_roots_and_reductions():
    with ir.Context():
        module = ir.Module.parse(MODULE)
        func = module.body.operations[0]
        ops = {op.name + ("" if op.name != "linalg.generic" else
                          f".{len(h.iterator_types(op))}-{h.iterator_types(op)[-1]}"): op
               for op in func.regions[0].blocks[0].operations}
        got = {name: (h.is_reduction_or_contraction(op), h.is_dispatch_root(op))
               for name, op in ops.items() if name.split(".")[0] in ("linalg", "iree_linalg_ext")}
    assert got == {
        "linalg.fill": (False, False),
        "linalg.matmul": (True, True),
        "linalg.generic.2-reduction": (True, True),
        "linalg.generic.2-parallel": (False, False),
        "iree_linalg_ext.scatter": (False, True),
    }


DYNAMIC_SCATTER = """
util.func public @g(%dst: tensor<?x8xf32>, %u: tensor<2x8xf32>, %i: tensor<2x1xi32>)
    -> tensor<?x8xf32> {
  %sc = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%u, %i : tensor<2x8xf32>, tensor<2x1xi32>) outs(%dst : tensor<?x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<?x8xf32>
  util.return %sc : tensor<?x8xf32>
}
"""


def test_linalg_ext_ops_without_segment_sizes_are_ins_then_inits():
    """IREE 3.13's scatter (like attention and gather) carries no operandSegmentSizes: its
    inits are its last operands, one per result; a result's dynamic dim is its init's."""
    with ir.Context():
        module = ir.Module.parse(DYNAMIC_SCATTER)
        func = module.body.operations[0]
        block = func.regions[0].blocks[0]
        scatter = next(op.operation for op in block.operations
                       if op.operation.name == "iree_linalg_ext.scatter")
        assert "operandSegmentSizes" not in scatter.attributes
        dst, u, i = block.arguments
        assert h.dps_inputs(scatter) == [u, i] and h.dps_inits(scatter) == [dst]
        assert h.dim_key(scatter.results[0], 0) == h.dim_key(dst, 0)
