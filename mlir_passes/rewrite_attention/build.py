"""The decomposition: an attention replaced by contractions, reductions and elementwise generics
(the operations and types of IREE's own decomposition: `values.py`), for the whole query or,
in a loop, one query block at a time (`blocks.py`)."""

from __future__ import annotations

from dataclasses import replace
from math import prod

from iree.compiler import ir
from iree.compiler.dialects import tensor

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.analyses.attention_columns import ReadColumns
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, TENSOR_COLLAPSE_SHAPE
from iree_fusions.compiler.ir_helpers.names import TENSOR_EMPTY

from .blocks import in_query_blocks, least_rows, whole_or_in_blocks
from .heads import copy_under_collapse, join_heads, split_heads
from .match import AttentionPlan
from .values import attention_values

Size = b.Size


def read_v_untransposed(plan: AttentionPlan) -> AttentionPlan:
    """v from a copy that writes the dims of v's key group before those of its head-dim group
    ([.., k2, n]: the noted transposing copy with its output dims so reordered, collapsed by
    the same groups): the plan over it (v and its map). The old copy and collapse are left
    for `decompose` to erase."""
    copy, (_, _, groups) = plan.v_copy, copy_under_collapse(plan.v)
    prefix, head, keys = groups[:-2], groups[-2], groups[-1]
    order = [d for g in prefix for d in g] + keys + head  # new output dim -> old dim
    position = {old: new for new, old in enumerate(order)}
    rank = len(order)
    in_map = h.indexing_maps(copy)[0]
    old_sizes = b.mixed_shape(h.dps_inits(copy)[0])  # (not the copy's result: it must die)
    sizes = [old_sizes[d] for d in order]
    source = h.dps_inputs(copy)[0]
    element = ir.RankedTensorType(source.type).element_type
    init = tensor.EmptyOp(sizes, element).result
    new = b.generic([source], [init],
                    [b.map_attr(rank, [position[e.position] for e in in_map.results]),
                     b.map_attr(rank, range(rank))], ["parallel"] * rank, lambda a: a[0])
    start = len(order) - len(keys) - len(head)
    new_groups = prefix + [list(range(start, start + len(keys))),
                           list(range(start + len(keys), rank))]
    shape = list(ir.RankedTensorType(plan.v.type).shape)
    shape = shape[:-2] + [shape[-1], shape[-2]]
    v = new.results[0] if len(new_groups) == rank else \
        b.collapse(new.results[0], new_groups, ir.RankedTensorType.get(shape, element))
    v_map = plan.maps["v"][:-2] + [plan.maps["v"][-1], plan.maps["v"][-2]]
    return replace(plan, v=v, maps={**plan.maps, "v": v_map})


def decompose(plan: AttentionPlan) -> str:
    """Replaces the attention op by its decomposition, in query blocks when planned, over the
    KV heads where `plan.heads` splits them (`heads.py`)."""
    op = plan.op
    operands = [plan.v, plan.k, plan.q, plan.mask]
    what = f"attention of {plan.q.type} -> contractions, reductions and elementwise generics"
    with op.location, ir.InsertionPoint(op):
        split = split_heads(plan, plan.heads) if plan.heads is not None else None
        if split is not None:
            plan = split
            operands += [plan.v, plan.mask]  # (copied again: in v's order, in the loop)
        if plan.v_copy is not None:
            plan = read_v_untransposed(plan)
        size = {dim: b.size_of(getattr(plan, name), position)
                for dim, (name, position) in plan.sizes().items()}
        if plan.columns is not None:
            plan = _narrow_values(plan, size)
            what += (f", {plan.columns.width} of {h.tensor_type(op.results[0]).shape[-1]} "
                     "value columns (the others are not read)")
        if plan.block is None:
            result = attention_values(plan, plan.q, plan.mask, size)
        elif plan.whole_at_run:
            result = whole_or_in_blocks(plan, size)
        else:
            result = in_query_blocks(plan, size)
        if split is not None:
            result = join_heads(result, op, plan.heads)
            heads = plan.heads.sizes
            what += (f", k and v read once per KV head ({prod(heads)} heads as "
                     f"{' x '.join(map(str, heads))})")
        elif plan.heads_note:
            what += f", k and v stay repeated per query head: {plan.heads_note}"
    if plan.columns is None:
        op.results[0].replace_all_uses_with(result)
    else:
        _replace_read_columns(plan.columns, result)
    op.erase()
    b.erase_dead([v for v in operands if v is not None],  # copies now made in the loop
                 b.of_kind(TENSOR_COLLAPSE_SHAPE, LINALG_GENERIC, TENSOR_EMPTY))
    return what + _blocks_note(plan)


def _narrow_values(plan: AttentionPlan, size: dict[int, Size]) -> AttentionPlan:
    """Only the first `plan.columns.width` value columns are read: the plan over v sliced to
    them, the value loop (in `size`), the output and the loop's accumulator that wide."""
    dim, width = plan.roles["n"][0], plan.columns.width
    size[dim] = width
    v_sizes = b.mixed_shape(plan.v)
    v_sizes[plan.maps["v"].index(dim)] = width
    v = b.extract_slice(plan.v, [0] * len(v_sizes), v_sizes)
    out_sizes = b.mixed_shape(plan.out)
    out_sizes[plan.maps["out"].index(dim)] = width
    element = ir.RankedTensorType(plan.out.type).element_type
    return replace(plan, v=v, out=tensor.EmptyOp(out_sizes, element).result)


def _replace_read_columns(columns: ReadColumns, result: ir.Value) -> None:
    """The slice that read the attention's first columns reads the narrow `result` instead
    (reshaped as the slice's source was; the slice is then whole, and folds away)."""
    cut = columns.slice
    value = result
    if columns.expand is not None:
        with cut.location, ir.InsertionPoint(cut):
            value = b.expand_mixed(result, h.reassociation(columns.expand), h.slice_sizes(cut))
    cut.operands[0] = value
    if columns.expand is not None:
        columns.expand.erase()


def _blocks_note(plan: AttentionPlan) -> str:
    if plan.loop_avoided:
        return f", the whole query at once (static: its {plan.whole} scores fit whole-scores)"
    if not plan.block:
        return ""
    note = f", {plan.block} query rows at a time"
    if plan.block_scores:
        note = (f", {least_rows(plan)} to {plan.block} query rows at a time (a "
                f"block's scores at most {plan.block_scores})")
    note += ", each step after the one before on the host" if plan.host_sync else ""
    if plan.whole_at_run:
        note += (f"; the whole query at once where its scores are at most "
                 f"{plan.whole_at_run} at run time")
    return note


