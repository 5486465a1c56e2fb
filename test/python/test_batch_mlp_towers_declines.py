"""batch-mlp-towers' declines no lit case reaches (test/decline_coverage.py), each on a case
failing that check alone (IR the verifier admits): a matmul that is no 2-D contraction, the
epilogue checks (`_epilogue_roles`: not elementwise, another iteration space, a body op with a
region, a parameter indexed by a token dim), and the plan's checks, run through the pass
(towers whose epilogues or accumulators use different values from above, padded towers with
an unknown activation or run-time weights, a tower result read by an op that cannot move
after the group's inputs) or called directly (`placement` with no op after the inputs); each
case as built passes the check (the epilogue matches, the group is batched)."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, TENSOR_EXPAND_SHAPE
from iree_fusions.passes.batch_mlp_towers.match import _epilogue_roles, row_view_dims
from iree_fusions.passes.batch_mlp_towers.plan import placement
from iree_fusions.compiler.protocol import NoMatch
from support import passes
from support.batch_mlp_towers import PAD, PASS
from support.matchers import last_op, parsed

# The maps the cases below write as MAPS (a matmul's) and ID2 (2-D identity).
MATMUL_MAPS = ("affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
               "affine_map<(d0, d1, d2) -> (d0, d1)>")
ID2 = "affine_map<(d0, d1) -> (d0, d1)>"


def _replaced(text: str, changes: dict[str, str]) -> str:
    """`text` with each key replaced by its value (each key must occur), then the matmul
    maps (MAPS) and the 2-D identity maps (ID2) spelled out."""
    for key, value in changes.items():
        assert key in text, key
        text = text.replace(key, value)
    return text.replace("MAPS", MATMUL_MAPS).replace("ID2", ID2)


def _one_report(text: str, pipeline: str = PASS):
    _, (report,) = passes.run_pass(text, pipeline)
    return report


def _applied_or_declined(text: str, code: str | None, pipeline: str = PASS) -> None:
    """The pass batches the group (code None) or leaves it with exactly that decline code."""
    report = _one_report(text, pipeline)
    if code is None:
        assert report.changes and not report.skipped, report.format()
    else:
        assert not report.changes, report.format()
        assert [s.code for s in report.skipped] == [code], report.format()


# ---------------------------------------------------------------- a matmul that is no layer

# Two matmuls of one structure but for the first one's input (LHS, of type LTYPE, read
# through LMAP): with a 2-D input they are a group of two one-layer towers.
TWO_MATMULS = """util.func public @f(%x: LTYPE, %y: tensor<4x16xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %w1 = arith.constant dense<0.2> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> LMAP>,
      affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w0 : LTYPE, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul indexing_maps = [MAPS]
      ins(%y, %w1 : tensor<4x16xf32>, tensor<8x16xf32>)
      outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}"""


@pytest.mark.parametrize("lhs, lmap, code", [
    ("tensor<4x16xf32>", "(d0, d2)", None),
    ("tensor<16xf32>", "(d2)", "matmul-not-2d"),  # one input row broadcast to every row
], ids=["2d-input", "broadcast-1d-input"])
def test_a_matmul_that_is_not_2d_is_no_layer(lhs, lmap, code):
    text = _replaced(TWO_MATMULS, {"LTYPE": lhs, "LMAP": lmap})
    with ir.Context():
        parsed(text)
    report = _one_report(text, PASS + "{min-net-dispatches=-100}")
    refused = [s for s in report.skipped if s.code == "matmul-not-2d"]
    if code is None:
        assert report.changes and not report.skipped, report.format()
    else:
        assert not report.changes and len(refused) == 1, report.format()
        assert refused[0].reason == "operands are not 2-D tensors"


# ---------------------------------------------------------------- the epilogue checks

# An epilogue of the matmul result y: z = y + b[n], elementwise, identity maps.
EPILOGUE = """util.func public @g(%y: tensor<4x16xf32>, %b: tensor<16xf32>) -> OUT {
  %e = tensor.empty() : OUT
  %z = linalg.generic {indexing_maps = [affine_map<DIMS -> (d0, d1)>,
      affine_map<DIMS -> (d1)>, affine_map<DIMS -> ZMAP>], iterator_types = ITERS}
      ins(%y, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : OUT) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    BODY
    linalg.yield %s : f32
  } -> OUT
  util.return %z : OUT
}"""
EPI_BASE = {"OUT": "tensor<4x16xf32>", "DIMS": "(d0, d1)", "ZMAP": "(d0, d1)",
            "ITERS": '["parallel", "parallel"]', "BODY": "%s = arith.addf %a, %c : f32"}


@pytest.mark.parametrize("change, code", [
    ({}, None),
    ({"OUT": "tensor<4xf32>", "ZMAP": "(d0)", "ITERS": '["parallel", "reduction"]',
      "BODY": "%p = arith.mulf %a, %c : f32\n    %s = arith.addf %p, %o : f32"},
     "epilogue-not-elementwise"),  # y . b per row: a reduction
    ({"OUT": "tensor<4x16x3xf32>", "DIMS": "(d0, d1, d2)", "ZMAP": "(d0, d1, d2)",
      "ITERS": '["parallel", "parallel", "parallel"]'}, "epilogue-space"),  # broadcast to 3-D
    ({"OUT": "tensor<16x4xf32>", "ZMAP": "(d1, d0)"}, "epilogue-space"),  # transposed result
    ({"BODY": "%p = arith.cmpf ugt, %a, %c : f32\n    %s = scf.if %p -> (f32) {\n"
              "      scf.yield %a : f32\n    } else {\n      scf.yield %c : f32\n    }"},
     "epilogue-region-op"),  # max(y, b) as an scf.if in the body
], ids=["epilogue", "reduction", "broadcast-result", "transposed-result", "scf-if-body"])
def test_each_epilogue_decline(change, code):
    text = _replaced(EPILOGUE, {**EPI_BASE, **change})
    with ir.Context():
        module = parsed(text)
        y = module.body.operations[0].regions[0].blocks[0].arguments[0]
        epilogue = last_op(module, LINALG_GENERIC)
        params: list = []
        if code is None:
            roles, _, dims = _epilogue_roles(epilogue, [y], [[0, 1]], params, [])
            assert roles == [("chain", 0), ("param", 0)] and dims == [0, 1] and len(params) == 1
            return
        with pytest.raises(NoMatch) as failed:
            _epilogue_roles(epilogue, [y], [[0, 1]], params, [])
        assert failed.value.code == code, str(failed.value)
        assert not params


# The matmul result y split into [B, T] rows by an expand_shape (an nn.Linear on tokens), then
# z = v + p, p read through PMAP.
TOKENS = """util.func public @t(%y: tensor<4x16xf32>, %p: PTYPE) -> tensor<2x2x16xf32> {
  %v = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 2, 16]
      : tensor<4x16xf32> into tensor<2x2x16xf32>
  %e = tensor.empty() : tensor<2x2x16xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
      affine_map<(d0, d1, d2) -> PMAP>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %p : tensor<2x2x16xf32>, PTYPE) outs(%e : tensor<2x2x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x2x16xf32>
  util.return %z : tensor<2x2x16xf32>
}"""


@pytest.mark.parametrize("ptype, pmap, reason", [
    ("tensor<16xf32>", "(d2)", None),  # a bias over the columns
    ("tensor<2xf32>", "(d0)", "parameter indexed by a token dim (rows split by a reshape)"),
    ("tensor<2x16xf32>", "(d1, d2)",
     "parameter indexed by a token dim (rows split by a reshape)"),
], ids=["column-bias", "batch-dim", "token-and-column"])
def test_a_parameter_on_a_token_dim(ptype, pmap, reason):
    text = _replaced(TOKENS, {"PTYPE": ptype, "PMAP": pmap})
    with ir.Context():
        module = parsed(text)
        y = module.body.operations[0].regions[0].blocks[0].arguments[0]
        view = last_op(module, TENSOR_EXPAND_SHAPE)
        dims = row_view_dims(view, [0, 1])
        assert dims == [0, 0, 1]
        epilogue = last_op(module, LINALG_GENERIC)
        chain, chain_dims = [y, view.results[0]], [[0, 1], dims]
        if reason is None:
            roles, _, loops = _epilogue_roles(epilogue, chain, chain_dims, [], [])
            assert roles == [("chain", 1), ("param", 0)] and loops == [0, 0, 1]
            return
        with pytest.raises(NoMatch) as failed:
            _epilogue_roles(epilogue, chain, chain_dims, [], [])
        assert (failed.value.code, str(failed.value)) == ("parameter-token-dim", reason)


# ---------------------------------------------------------------- values from above

# Two towers of two layers on one input; each first layer's epilogue is max(y, s) with a scalar
# s from above (SA, SB), each tower's accumulators are filled with FA / FB (arguments).
CAPTURES = """util.func public @towers(%x: tensor<4x16xf32>, %za: f32, %zb: f32, %sa: f32,
    %sb: f32) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %v0 = arith.constant dense<0.2> : tensor<8x8xf32>
  %w1 = arith.constant dense<0.3> : tensor<8x16xf32>
  %v1 = arith.constant dense<0.4> : tensor<8x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %fa = linalg.fill ins(FA : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %fb = linalg.fill ins(FB : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul indexing_maps = [MAPS]
      ins(%x, %w0 : tensor<4x16xf32>, tensor<8x16xf32>)
      outs(%fa : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ga = linalg.generic {indexing_maps = [ID2, ID2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, SA : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %a2 = linalg.matmul indexing_maps = [MAPS]
      ins(%ga, %v0 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%fa : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul indexing_maps = [MAPS]
      ins(%x, %w1 : tensor<4x16xf32>, tensor<8x16xf32>)
      outs(%fb : tensor<4x8xf32>) -> tensor<4x8xf32>
  %gb = linalg.generic {indexing_maps = [ID2, ID2],
      iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, SB : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %b2 = linalg.matmul indexing_maps = [MAPS]
      ins(%gb, %v1 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%fb : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %a2, %b2 : tensor<4x8xf32>, tensor<4x8xf32>
}"""
CAPTURES_BASE = {"FA": "%za", "FB": "%za", "SA": "%sa", "SB": "%sa"}


@pytest.mark.parametrize("change, code", [
    ({}, None),
    ({"SB": "%sb"}, "epilogue-captures-differ"),
    ({"FB": "%zb"}, "fills-differ"),
    ({"SB": "%sb", "FB": "%zb"}, "epilogue-captures-differ"),  # the bodies are checked first
], ids=["same-values", "other-scalar", "other-fill", "both"])
def test_towers_use_the_same_values_from_above(change, code):
    text = _replaced(CAPTURES, {**CAPTURES_BASE, **change})
    with ir.Context():
        parsed(text)
    _applied_or_declined(text, code)


# ---------------------------------------------------------------- padded towers

RELU = ("%p = arith.cmpf ugt, %in0, %zero : f32\n"
        "    %r = arith.select %p, %in0, %zero : f32")
PADDED_SIGNATURE = "util.func public @padded_heads(%x: tensor<4x16xf32>)"


def _padded_heads(change: str) -> str:
    """The padding lit file's two heads (widths 4x2 and 8x3 on one input), changed."""
    text = passes.lit_cases("batch-mlp-towers-padding")["padded_heads"]
    if change == "unknown-activation":  # relu -> negation: no known activation
        assert text.count(RELU) == 4
        return text.replace(RELU, "%r = arith.negf %in0 : f32")
    if change == "runtime-weights":  # each head's first weight an argument
        return _replaced(text, {
            "  %w1 = arith.constant dense<0.11> : tensor<4x16xf32>\n": "",
            "  %w19 = arith.constant dense<0.15> : tensor<8x16xf32>\n": "",
            PADDED_SIGNATURE: PADDED_SIGNATURE[:-1] + ", %w1: tensor<4x16xf32>, "
                                                      "%w19: tensor<8x16xf32>)"})
    assert change == "as-written"
    return text


@pytest.mark.parametrize("change, code", [
    ("as-written", None),
    ("unknown-activation", "padded-unknown-input"),
    ("runtime-weights", "padded-runtime-weight"),
])
def test_padded_towers_need_known_activations_and_constants(change, code):
    text = _padded_heads(change)
    with ir.Context():
        parsed(text)
    _applied_or_declined(text, code, PAD)


# ---------------------------------------------------------------- placement

# Two towers of two layers with separate inputs: the second tower's input %x1 is computed
# after the first tower, which an op reads at EARLY (before %x1) or LATE (after it).
SEPARATE = """util.func public @towers(%x: tensor<4x16xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %v0 = arith.constant dense<0.2> : tensor<8x8xf32>
  %w1 = arith.constant dense<0.3> : tensor<8x16xf32>
  %v1 = arith.constant dense<0.4> : tensor<8x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul indexing_maps = [MAPS]
      ins(%x, %w0 : tensor<4x16xf32>, tensor<8x16xf32>)
      outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a2 = linalg.matmul indexing_maps = [MAPS]
      ins(%a, %v0 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
EARLY  %x1 = util.optimization_barrier %x : tensor<4x16xf32>
LATE  %b = linalg.matmul indexing_maps = [MAPS]
      ins(%x1, %w1 : tensor<4x16xf32>, tensor<8x16xf32>)
      outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b2 = linalg.matmul indexing_maps = [MAPS]
      ins(%b, %v1 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %a2, %b2, %u : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}"""
BARRIER_USER = "  %u = util.optimization_barrier %a2 : tensor<4x8xf32>\n"
# (a linalg.copy: no epilogue the tower would take in, and movable)
LINALG_USER = ("  %u = linalg.copy ins(%a2 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)"
               " -> tensor<4x8xf32>\n")


@pytest.mark.parametrize("early, late, code", [
    ("", BARRIER_USER, None),  # the user after the inputs: the batched ops go before it
    (LINALG_USER, "", None),  # before the inputs, a linalg op: moved after the batched ops
    (BARRIER_USER, "", "user-before-inputs"),  # before the inputs, and it cannot move
], ids=["barrier-after", "copy-before", "barrier-before"])
def test_a_user_before_the_inputs_must_move(early, late, code):
    text = _replaced(SEPARATE, {"EARLY": early, "LATE": late})
    with ir.Context():
        parsed(text)
    report = _one_report(text, PASS + "{min-net-dispatches=-100}")
    if code is None:
        assert report.changes and not report.skipped, report.format()
    else:
        assert not report.changes, report.format()
        assert [s.code for s in report.skipped] == [code], report.format()
        assert "(util.optimization_barrier) comes before" in report.skipped[0].reason


# `placement` in a block without a terminator (a module body, a graph region): the batched ops
# go before the first op after their last input, and there is none when that input is the
# block's last op. (The pass runs on function bodies, whose blocks end in a terminator without
# results: there the terminator is always such an op.)
MODULE_BODY = """module {
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %n = arith.negf %x : tensor<4xf32>
AFTER}"""


@pytest.mark.parametrize("after, code", [
    ("  %m = arith.negf %n : tensor<4xf32>\n", None),
    ("", "no-insertion-point"),
], ids=["op-after-inputs", "inputs-last"])
def test_placement_needs_an_op_after_the_inputs(after, code):
    with ir.Context():
        module = parsed(MODULE_BODY.replace("AFTER", after))
        block = module.body
        positions = h.block_positions(block)
        ops = [op.operation for op in block.operations]
        externals = [ops[1].results[0]]  # %n: the group's last input
        if code is None:
            anchor, sink = placement(block, positions, externals, set())
            assert anchor == ops[2] and sink == []
            return
        with pytest.raises(NoMatch) as failed:
            placement(block, positions, externals, set())
        assert failed.value.code == code, str(failed.value)
