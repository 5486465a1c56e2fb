"""The checks of a tower matmul (`_check_matmul`), each on a contraction failing it alone (IR
the verifier admits): the reason is the check's; the matmul as built passes. Checks no lit
case reached (test/decline_coverage.py)."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_GENERIC
from iree_fusions.passes.batch_mlp_towers.match import _check_matmul
from support.matchers import last_op, matches_or_declines, parsed

# y[m, n] = sum_k x[m, k] * w[n, k], w a weight argument, the accumulator a fill.
MATMUL = """util.func public @f(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %ew = tensor.empty() : tensor<16x8xf32>
  %wr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x8xf32>) outs(%ew : tensor<16x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<16x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> XMAP>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, WEIGHT : XTYPE, tensor<16x8xf32>) outs(INIT : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, PRODUCT : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  util.return %y : tensor<4x16xf32>
}"""
BASE = {"XMAP": "(d0, d2)", "WEIGHT": "%w", "XTYPE": "tensor<4x8xf32>", "INIT": "%f",
        "PRODUCT": "%b"}


@pytest.mark.parametrize("change, reason", [
    ({}, None),
    ({"INIT": "%e"}, "matmul accumulator is not a linalg.fill"),
    ({"WEIGHT": "%wr"}, "weight is computed at run time (not a tower layer)"),
    ({"PRODUCT": "%two"}, "matmul body uses values from above"),
    ({"XMAP": "(d2, d0)", "%x: tensor<4x8xf32>": "%x: tensor<8x4xf32>",
      "XTYPE": "tensor<8x4xf32>"},
     "unsupported matmul indexing maps (expects x[m,k] * W[n,k] or W[k,n])"),
], ids=["matmul", "empty-init", "computed-weight", "captured-value", "transposed-x"])
def test_each_check_of_a_tower_matmul(change, reason):
    text = MATMUL
    for key, value in {**BASE, **change}.items():
        text = text.replace(key, value)
    with ir.Context():
        module = parsed(text)
        matmul = last_op(module, LINALG_GENERIC)
        matches_or_declines(lambda: _check_matmul(matmul), reason)


# An epilogue of the matmul's result y: z = y + b[n] (b a bias argument), identity maps.
EPILOGUE = """util.func public @g(%y: tensor<4x16xf32>, %other: tensor<4x16xf32>, %b: BTYPE)
    -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(READ, %b : tensor<4x16xf32>, BTYPE) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, SECOND : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  util.return %z : tensor<4x16xf32>
}"""
EPI_BASE = {"BTYPE": "tensor<16xf32>", "READ": "%y", "SECOND": "%c"}


@pytest.mark.parametrize("change, reason", [
    ({}, None),
    ({"SECOND": "%o"}, "epilogue reads its init"),
    ({"    %s = arith.addf %a, %c : f32":
      "    %i = linalg.index 1 : index\n    %f = arith.index_cast %i : index to i32\n"
      "    %g = arith.sitofp %f : i32 to f32\n    %s = arith.addf %a, %g : f32"},
     "epilogue body reads its loop indices"),
    ({"READ": "%other"}, "does not read the chain"),
    ({"BTYPE": "tensor<?xf32>"}, "parameter is not a static tensor"),
], ids=["epilogue", "reads-init", "reads-index", "reads-another-value", "dynamic-bias"])
def test_each_check_of_an_epilogue(change, reason):
    from iree_fusions.passes.batch_mlp_towers.match import _epilogue_roles

    text = EPILOGUE
    for key, value in {**EPI_BASE, **change}.items():
        text = text.replace(key, value)
    with ir.Context():
        module = parsed(text)
        y = module.body.operations[0].regions[0].blocks[0].arguments[0]
        epilogue = last_op(module, LINALG_GENERIC)
        matches_or_declines(lambda: _epilogue_roles(epilogue, [y], [[0, 1]], [], []), reason)
