"""Declines that guard invariants the passes' own earlier steps already ensure, so no IR the
verifier admits reaches them through the pass: batch-mlp-towers' planning of a padded group
(a trie that is not one full chain, a parameter one value for towers of different widths, a
parameter no epilogue op reads) and forward-slices' rank-reducing slice whose dropped dims
cannot be told. Each test builds the real state from a parsed case (the pass's own
find / group / arrange / plan steps), changes one field of it to break the invariant, and calls
the function holding the check: the changed state declines with that check's code, the
state as the pass builds it passes the check."""

from __future__ import annotations

import dataclasses

import pytest
from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.passes.batch_mlp_towers.arrange import arrange_towers, build_trie
from iree_fusions.passes.batch_mlp_towers.plan import (PlanOptions, _param_pad_shape,
                                                        _plan_batched, _plan_padding, plan_node)
from iree_fusions.passes.batch_mlp_towers.towers import (TowerGroup, find_layers, group_towers,
                                                          link_towers)
from iree_fusions.passes.forward_slices import _dims_of_source
from support import passes
from support.matchers import last_op, parsed

# batch-mlp-towers{max-padding-waste=0.5} (pad-to-widest on; the other options as defaults).
PAD_OPTIONS = PlanOptions(min_layers=1, min_net_dispatches=0, max_padding_waste=0.5,
                          runtime_stack_bytes_per_dispatch=32768, dynamic_dim_estimate=64,
                          drop_unit_rows=True, stack_parameters=False)
RELU = ("%p = arith.cmpf ugt, %in0, %zero : f32\n"
        "    %r = arith.select %p, %in0, %zero : f32")
TANH = "%r = math.tanh %in0 : f32"


def _padded_heads(second_head_last_act: str = RELU) -> str:
    """The padding lit file's two heads on one input (widths 4x2 and 8x3, relu after each
    layer), the second head's last activation replaced by `second_head_last_act`."""
    text = passes.lit_cases("batch-mlp-towers-padding")["padded_heads"]
    assert text.count(RELU) == 4
    at = text.rindex(RELU)  # the last one in the text: the 8x3 head's second layer
    return text[:at] + second_head_last_act + text[at + len(RELU):]


def _towers_and_groups(module: ir.Module):
    """The function body, its positions, its towers and the groups the pass makes of them."""
    block = module.body.operations[0].regions[0].blocks[0]
    positions = h.block_positions(block)
    layers, rejected = find_layers(block, positions)
    assert not rejected
    towers = link_towers(layers)
    assert [[lay.width for lay in tower.layers] for tower in towers] == [[4, 2], [8, 3]]
    return block, positions, towers, group_towers(towers, positions)


# ---------------------------------------------------------------- padded-partial


@pytest.mark.parametrize("last_act, code", [
    (RELU, None),
    (TANH, "padded-partial"),  # the heads differ on layer 2: only layer 1 would batch
], ids=["relu-both-layers", "tanh-second-head-layer-2"])
def test_a_padded_group_must_batch_on_every_layer(last_act, code):
    """pad_groups makes a padded group only of towers equal (widths aside) on every layer, so
    its trie is always one chain over all towers; `_plan_batched` checks that. Here the
    second head's layer 2 is tanh, not relu: the pass leaves the heads as two lone towers (no
    padded group), and the test feeds `_plan_batched` the group the pass never builds:
    TowerGroup(both heads, shared, padded=True)."""
    with ir.Context():
        module = parsed(_padded_heads(last_act))
        block, positions, towers, groups = _towers_and_groups(module)
        padded = [group for group in groups if group.padded]
        assert len(padded) == (1 if code is None else 0)
        group = TowerGroup(towers, True, padded=True)
        arrangement = arrange_towers(group)
        if code is None:
            assert padded[0].towers == group.towers
            plan = _plan_batched(group, arrangement, block, positions, PAD_OPTIONS)
            assert [node.widths for node in plan.nodes] == [[4, 8], [2, 3]]
            return
        with pytest.raises(NoMatch) as failed:
            _plan_batched(group, arrangement, block, positions, PAD_OPTIONS)
        assert failed.value.code == code, str(failed.value)
        assert str(failed.value) == "padded towers must batch on every layer"


# ---------------------------------------------------------------- a padded group's parameters


def _node_plans(group: TowerGroup):
    """The padded group's node plans, as `_plan_batched` makes them before `_plan_padding`."""
    arrangement = arrange_towers(group)
    towers = arrangement.towers
    root = build_trie(towers, arrangement.sig_id, 0, len(towers), 0)
    nodes = list(root.walk())
    parents = {id(child): pos for pos, node in enumerate(nodes) for child in node.children}
    return [plan_node(node, parents.get(id(node)), towers, group.shared) for node in nodes]


@pytest.mark.parametrize("shared_bias", [False, True], ids=["own-biases", "one-bias"])
def test_a_parameter_shared_by_towers_of_different_widths(shared_bias):
    """Towers of different widths cannot read one parameter value on a column dim (its
    size is each tower's width: the verifier refuses the other tower's epilogue), so in a
    padded group a slot is "shared" only where it has no column dim; `_plan_padding` checks
    that a shared value already has the padded shape. The test gives the 8-wide head's first
    layer the 4-wide head's bias (Layer.params: a state the pass never builds, its params are
    the values its own epilogue reads), so plan_node finds the bias slot "shared", and feeds
    `_plan_padding` those node plans."""
    with ir.Context():
        module = parsed(_padded_heads())
        _, _, _, (group,) = _towers_and_groups(module)
        assert group.padded
        narrow, wide = group.towers
        if shared_bias:
            first = dataclasses.replace(wide.layers[0], params=[narrow.layers[0].params[0]])
            wide = dataclasses.replace(wide, layers=[first, *wide.layers[1:]])
            group = dataclasses.replace(group, towers=[narrow, wide])
        plans = _node_plans(group)
        assert [plan.widths for plan in plans] == [[4, 8], [2, 3]]
        assert plans[0].slot_kinds == ["const", "shared" if shared_bias else "const"]
        if not shared_bias:
            _plan_padding(plans)
            assert [plan.pad_shapes for plan in plans] == [[[8, 16], [8]], [[3, 8], [3]]]
            return
        with pytest.raises(NoMatch) as failed:
            _plan_padding(plans)
        assert failed.value.code == "parameter-widths", str(failed.value)


@pytest.mark.parametrize("epilogue", ["as-matched", "emptied"])
def test_a_parameter_no_epilogue_op_reads(epilogue):
    """A layer's params are collected from the inputs of its epilogue ops, so every slot is
    read by one of them; `_param_pad_shape` looks for that reader to pad the slot's column
    dims. The test feeds it the 8-wide head's first layer (bias slot 0) with its epilogue
    list emptied (Layer.epilogue = []: a state the pass never builds)."""
    with ir.Context():
        module = parsed(_padded_heads())
        _, _, (_, wide), _ = _towers_and_groups(module)
        layer = wide.layers[0]
        assert len(layer.params) == 1 and layer.epilogue
        if epilogue == "as-matched":
            assert _param_pad_shape(layer, 0, 8) == [8]
            assert _param_pad_shape(layer, 0, 12) == [12]
            return
        with pytest.raises(NoMatch) as failed:
            _param_pad_shape(dataclasses.replace(layer, epilogue=[]), 0, 8)
        assert failed.value.code == "parameter-unread", str(failed.value)


# ---------------------------------------------------------------- forward-slices

# RoPE's even columns: a strided slice dropping the unit head dim.
SLICE = """util.func public @s(%x: tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> {
  %n = arith.negf %x : tensor<4x1x8x32xf16>
  %ev = tensor.extract_slice %n[0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 2]
      : tensor<4x1x8x32xf16> to tensor<4x8x16xf16>
  util.return %ev : tensor<4x8x16xf16>
}"""


@pytest.mark.parametrize("result_shape, code", [
    ([4, 8, 16], None),  # as parsed: the unit dim 1 dropped
    ([4, 16], "rank-reduced-dims"),  # would drop the non-unit dim 2 (size 8)
], ids=["unit-dim-dropped", "size-8-dim-dropped"])
def test_a_rank_reducing_slice_whose_dropped_dims_cannot_be_told(result_shape, code):
    """A rank-reducing extract_slice may drop only unit dims (the verifier refuses a result
    type the sizes cannot give), so `_dims_of_source` always finds the dropped dims. The test
    builds, beside the parsed slice and never verified, the same slice (operand, offsets,
    sizes, strides) with result type tensor<4x16xf16>, which would drop the size-8 dim, and
    feeds `_dims_of_source` that op."""
    with ir.Context(), ir.Location.unknown():
        module = parsed(SLICE)
        slice_op = last_op(module, "tensor.extract_slice")
        names = ("operandSegmentSizes", "static_offsets", "static_sizes", "static_strides")
        with ir.InsertionPoint(slice_op):
            op = ir.Operation.create(
                "tensor.extract_slice",
                results=[ir.RankedTensorType.get(result_shape, ir.F16Type.get())],
                operands=[slice_op.operands[0]],
                attributes={name: slice_op.attributes[name] for name in names})
        if code is None:
            assert _dims_of_source(op) == _dims_of_source(slice_op) == [0, None, 1, 2]
        else:
            with pytest.raises(NoMatch) as failed:
                _dims_of_source(op)
            assert failed.value.code == code, str(failed.value)
        op.erase()
