"""compiler/invariants.py on small IR: which init a body reads, what a region captures, where a
moved op's values are defined, and the parameter-stack rule; each check's reason."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.invariants import (captured_values, check_defined_before,
                                              check_init_unread, parameter_names_text,
                                              reads_init)
from iree_fusions.compiler.protocol import NoMatch

TWO_INITS = """util.func public @f(%x: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>,
                        %c: f32) -> (tensor<4xf32>, tensor<4xf32>) {{
  %r:2 = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
      affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}} ins(%x : tensor<4xf32>)
      outs(%a, %b : tensor<4xf32>, tensor<4xf32>) {{
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %s = arith.addf %in, {read} : f32
    linalg.yield %s, %s : f32, f32
  }} -> (tensor<4xf32>, tensor<4xf32>)
  %late = arith.constant 2.0 : f32
  util.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}}"""


def _ops(text: str):
    ctx = ir.Context()
    module = ir.Module.parse(text, ctx)
    body = module.body.operations[0].regions[0].blocks[0]
    return ctx, module, [op.operation for op in body.operations]


@pytest.mark.parametrize("read, reads", [("%o1", True), ("%o0", True), ("%in", False),
                                         ("%c", False)])
def test_reads_init_sees_any_of_its_inits(read, reads):
    """Two inits: reading either is reading an init (the second alone, too); reading an
    input or a captured scalar is not."""
    ctx, module, ops = _ops(TWO_INITS.format(read=read))
    with ctx:
        generic = ops[0]
        assert reads_init(generic) is reads
        if reads:
            with pytest.raises(NoMatch, match=r"^the towers reads its init \(outs\) in its "
                                              r"body: a new, empty init would change"):
                check_init_unread(generic, "the towers")
        else:
            check_init_unread(generic, "the towers")


def test_captured_values_are_those_defined_outside_once_each():
    ctx, module, ops = _ops(TWO_INITS.format(read="%c"))
    with ctx:
        func = module.body.operations[0]
        assert captured_values(ops[0]) == [func.regions[0].blocks[0].arguments[3]]  # %c


def test_a_value_defined_after_the_place_it_moves_to():
    """The generic moved to the block's start: its operands are arguments (there before it);
    the constant defined after it is not, unless it moves too."""
    ctx, module, ops = _ops(TWO_INITS.format(read="%c"))
    with ctx:
        positions = h.block_positions(module.body.operations[0].regions[0].blocks[0])
        late = ops[1].results[0]
        check_defined_before(list(ops[0].operands), 0, positions, "an operand", "the start")
        with pytest.raises(NoMatch, match="^the cap is defined by arith.constant after the "
                                          "start$"):
            check_defined_before([late], 0, positions, "the cap", "the start")
        check_defined_before([late], 0, positions, "the cap", "the start", moved=[ops[1]])


def test_parameter_names_are_the_first_three_each_once_then_how_many_more():
    assert parameter_names_text(["a", "b", "a", "c"]) == "a, b, c"
    assert parameter_names_text(["a", "b", "c", "d", "e", "d"]) == "a, b, c and 2 more"
    assert parameter_names_text(["a", "b", "c", "d"]) == "a, b, c and 1 more"
    assert parameter_names_text(["a"]) == "a"
