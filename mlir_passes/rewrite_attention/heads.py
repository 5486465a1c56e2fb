"""Grouped-query attention with the KV heads read where they are: the decomposition loops over
the heads as [batch, kv head, query head of the group] instead of their product, so that k and
v are read once per KV head, not copied once per query head.

sharktank (and torch's `repeat_interleave` before SDPA) gives the fused op k and v repeated
over the query heads of each group: a copy that broadcasts the gathered cache rows [B,
pages, KVH, page, D] to [B, KVH, G, pages, page, D], collapsed to [B*H, keys, D]. IREE fuses
that copy into the fused op's dispatch; decomposed, it is written whole (G times the cache
rows: G copies, G = query heads per KV head) by the gather's dispatch and read by both
contractions. Here the attention's batch loop is split into the copy's dims and the copy
keeps only the dims it reads:

    %k = collapse(copy {(b, kh, g, p, t, d) <- src[b, p, kh, t, d]})  : [B*KVH*G, keys, D]
    attention(q [B*H, m, D], k, v, mask [B*H, m, keys]) -> [B*H, m, D]
  =>
    %k' = collapse(copy {(b, kh, p, t, d) <- src[b, p, kh, t, d]})   : [B, KVH, keys, D]
    decomposed over (b, kh, g, m, keys, D): q and the mask expanded to [B, KVH, G, ..], k and
    v read at (b, kh, ..), the result collapsed back to [B*H, m, D]

The group loop g indexes q and the output only: it becomes a query loop (decode's one row per
head is then a [G, keys] block per KV head). Each score and output is the same sum of the same
terms as without the split (the order of a sum is IREE's codegen's: measured bit-identical on
sharktank's 32-layer GQA Llama at 512 tokens, bench/attention_heads.py).

Left as it is (the repeats written whole), the reason added to the pass's report: a repeat
of other dims than the heads, dynamic head counts, only one of k and v repeated, k and v
repeated differently, or q, the mask or the output not splitting as k and v do.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import TENSOR_COLLAPSE_SHAPE

from iree_fusions.compiler.protocol import NoMatch

from .match import AttentionPlan, attention_roles

NO_SPLIT = "q, the mask or the output does not split as k and v do"


@dataclass
class HeadSplit:
    """The batch loop `dim` of an attention split into `sizes` (the k/v copies' dims in its
    collapse group); `unread`: the positions in `sizes` the copies broadcast over."""

    dim: int
    sizes: list[int]
    unread: list[int]


def copy_under_collapse(value: ir.Value
                        ) -> tuple[ir.Operation | None, ir.Operation, list[list[int]]] | None:
    """(collapse or None, copy, groups): `value` is a pure copy (identity output map, read at
    most once: by the collapse, or not yet, one just built), possibly under a collapse_shape
    (read by any number: a rebuilt copy is the reader's own); None otherwise."""
    op = h.defining_op(value)
    collapse = None
    if op is not None and op.name == TENSOR_COLLAPSE_SHAPE:
        collapse, op = op, h.defining_op(op.operands[0])
    if op is None or not h.is_pure_copy(op) or len(h.users(op.results[0])) > 1 or \
            "reduction" in h.iterator_types(op):
        return None
    rank = ir.RankedTensorType(op.results[0].type).rank
    if h.indexing_maps(op)[1] != ir.AffineMap.get_identity(rank):
        return None
    groups = h.reassociation(collapse) if collapse is not None else [[d] for d in range(rank)]
    return collapse, op, groups


def _read_dims(copy: ir.Operation) -> list[int]:
    return h.map_dim_positions(h.indexing_maps(copy)[0])


def _split_groups(positions: int, position: int, width: int) -> list[list[int]]:
    """Reassociation groups of `positions` dims where dim `position` is `width` dims."""
    groups, at = [], 0
    for d in range(positions):
        step = width if d == position else 1
        groups.append(list(range(at, at + step)))
        at += step
    return groups


def _broadcast_group(value: ir.Value, position: int) -> tuple[list[int], list[int]] | str | None:
    """(sizes, unread positions) of the copy dims `value`'s dim `position` collapses, where
    `value` is a collapsed copy that broadcasts over some of those dims and no others; None
    where it is no such repeat; the reason where it repeats but does not split."""
    found = copy_under_collapse(value)
    if found is None or found[0] is None:
        return None
    _, copy, groups = found
    group = groups[position]
    shape = ir.RankedTensorType(copy.results[0].type).shape
    read = set(_read_dims(copy))
    if all(d in read for g in groups for d in g):
        return None
    if any(d not in read for g in groups if g is not group for d in g) or \
            all(d in read for d in group):
        return "the copy repeats dims outside the heads"
    if any(ir.ShapedType.is_dynamic_size(shape[d]) for d in group):
        return "dynamic head counts"
    return [shape[d] for d in group], [i for i, d in enumerate(group) if d not in read]


def head_split(plan: AttentionPlan) -> HeadSplit | str | None:
    """The split of the attention's one batch loop that reads k and v without their
    broadcast over the query heads; None where neither repeats its heads; the reason where
    they do but the split does not fit (`split_fits`: decided here, before anything is
    built, so that the build cannot give up)."""
    if len(plan.roles["batch"]) != 1:
        return None
    dim = plan.roles["batch"][0]
    found = [_broadcast_group(getattr(plan, name), plan.maps[name].index(dim))
             for name in ("k", "v")]
    if found == [None, None]:
        return None
    for reason in found:
        if isinstance(reason, str):
            return reason
    if None in found:
        return "only one of k and v repeats its heads"
    if found[0] != found[1]:
        return "k and v repeat their heads differently"
    split = HeadSplit(dim, *found[0])
    return split_fits(plan, split) or split


def _fits(old_sizes: list[int], read: list[bool], sizes: list[int]) -> list[list[int]] | None:
    """For each old dim the positions in `sizes` it is made of (consecutive, their product its
    size), a read dim made of one; None where `sizes` does not refine `old_sizes`."""
    parts, at = [], 0
    for size, is_read in zip(old_sizes, read):
        start, product = at, 1
        while product < size and at < len(sizes):
            product *= sizes[at]
            at += 1
        if at == start and size == 1 and at < len(sizes) and sizes[at] == 1:
            at += 1
        if product != size or (is_read and at - start != 1):
            return None
        parts.append(list(range(start, at)))
    return parts if at == len(sizes) else None


def _copy_parts(value: ir.Value, position: int, sizes: list[int], drop: list[int]
                ) -> tuple[tuple, list[list[int]]] | None | bool:
    """How `split_value` splits `value`, decided without building: (the copy it rebuilds,
    the parts of its dim group), False for a value it expands, None where it does not fit."""
    found = copy_under_collapse(value)
    if found is None:
        return None if drop else False
    _, copy, groups = found
    group, read = groups[position], _read_dims(copy)
    parts = _fits([ir.RankedTensorType(copy.results[0].type).shape[d] for d in group],
                  [d in read for d in group], sizes)
    if parts is None or any(group[i] in read for i, part in enumerate(parts)
                            if set(part) & set(drop)):
        return None
    return found, parts


def split_value(value: ir.Value, position: int, sizes: list[int], drop: list[int]
                ) -> ir.Value:
    """`value` with its dim `position` split into `sizes` and the split dims at `drop` left
    out (they must be broadcast: not read). A collapsed copy is rebuilt over its source with
    the split dims (nothing more is written, fewer with `drop`), any other value expanded
    (`drop` must be empty). Only for a split `split_fits` accepted (it builds nothing)."""
    layout = _copy_parts(value, position, sizes, drop)
    if layout is None:
        raise ValueError("split_value of a split that does not fit (split_fits declines it)")
    if layout is False:
        shape = b.mixed_shape(value)
        return b.expand_mixed(value, _split_groups(len(shape), position, len(sizes)),
                              [s for d, size in enumerate(shape)
                               for s in (sizes if d == position else [size])])
    (_, copy, groups), parts = layout
    group = groups[position]
    read = _read_dims(copy)
    old_shape = b.mixed_shape(h.dps_inits(copy)[0])  # (not the copy's result: it must die)
    # The new copy's dims: each old dim, the group's split into `sizes` (less `drop`).
    new_of_old: dict[int, int] = {}
    new_sizes: list[b.Size] = []
    new_groups: list[list[int]] = []
    for g in groups:
        if g is group:
            for i, part in enumerate(parts):
                kept = [p for p in part if p not in drop]
                if group[i] in read:
                    new_of_old[group[i]] = len(new_sizes)
                for p in kept:
                    new_groups.append([len(new_sizes)])
                    new_sizes.append(sizes[p])
        else:
            new_groups.append(list(range(len(new_sizes), len(new_sizes) + len(g))))
            for d in g:
                new_of_old[d] = len(new_sizes)
                new_sizes.append(old_shape[d])
    rank = len(new_sizes)
    source = h.dps_inputs(copy)[0]
    element = ir.RankedTensorType(source.type).element_type
    init = tensor.EmptyOp(new_sizes, element).result
    new = b.generic([source], [init], [b.map_attr(rank, [new_of_old[d] for d in read]),
                                       b.map_attr(rank, range(rank))], ["parallel"] * rank,
                    lambda a: a[0])
    if all(len(g) == 1 for g in new_groups):
        return new.results[0]
    shape = ir.RankedTensorType(new.results[0].type).shape
    static = [_product([shape[d] for d in g]) for g in new_groups]
    return b.collapse(new.results[0], new_groups, ir.RankedTensorType.get(static, element))


def _product(sizes: list[int]) -> int:
    out = 1
    for size in sizes:
        if ir.ShapedType.is_dynamic_size(size):
            return ir.ShapedType.get_dynamic_size()
        out *= size
    return out


_OPERANDS = ("q", "k", "v", "mask", "out")


def _split_maps(plan: AttentionPlan, split: HeadSplit) -> dict[str, list[int]]:
    """Each operand's loop dims over the split loops (k and v without the broadcast dims)."""
    n = len(split.sizes)

    def renumber(d: int) -> list[int]:
        if d == split.dim:
            return list(range(d, d + n))
        return [d + n - 1] if d > split.dim else [d]

    dropped = {split.dim + i for i in split.unread}
    maps = {}
    for name in _OPERANDS:
        if getattr(plan, name) is not None:
            drop = name in ("k", "v") and split.unread
            maps[name] = [e for d in plan.maps[name] for e in renumber(d)
                          if not (drop and e in dropped)]
    maps["scale"] = []
    return {name: maps[name] for name in ("q", "k", "v", "scale", "mask", "out")
            if name in maps}


def split_fits(plan: AttentionPlan, split: HeadSplit) -> str | None:
    """Why the split does not fit the attention (NO_SPLIT), or None: every operand splits
    (`split_value`) and the split loops keep their attention roles. Builds nothing."""
    for name in _OPERANDS:
        value = getattr(plan, name)
        if value is not None and split.dim in plan.maps[name]:
            drop = split.unread if name in ("k", "v") else []
            if _copy_parts(value, plan.maps[name].index(split.dim), split.sizes, drop) is None:
                return NO_SPLIT
    try:
        attention_roles(_split_maps(plan, split),
                        h.indexing_maps(plan.op)[0].n_dims + len(split.sizes) - 1)
    except NoMatch:
        return NO_SPLIT
    return None


def split_heads(plan: AttentionPlan, split: HeadSplit) -> AttentionPlan:
    """The plan over the split loops (k and v without the broadcast dims), their copies
    rebuilt; only for a split `split_fits` accepted."""
    n = len(split.sizes)
    maps = _split_maps(plan, split)
    values = {}
    for name in _OPERANDS:
        value = values[name] = getattr(plan, name)
        if value is not None and split.dim in plan.maps[name]:
            drop = split.unread if name in ("k", "v") else []
            values[name] = split_value(value, plan.maps[name].index(split.dim), split.sizes,
                                       drop)
    roles = attention_roles(maps, h.indexing_maps(plan.op)[0].n_dims + n - 1)
    block = {}
    if plan.block is not None:
        dim = plan.block_dim
        block = dict(block=plan.block, block_dim=dim if dim <= split.dim else dim + n - 1,
                     block_scores=plan.block_scores, host_sync=plan.host_sync,
                     device=plan.device)
    v_copy = None if plan.v_copy is None else copy_under_collapse(values["v"])[1]
    return AttentionPlan(plan.op, values["q"], values["k"], values["v"], plan.scale,
                         values["mask"], values["out"], roles, maps, score_ops=plan.score_ops,
                         v_copy=v_copy, heads=split, **block)


def join_heads(result: ir.Value, op: ir.Operation, split: HeadSplit) -> ir.Value:
    """The split output collapsed back to the attention's result type."""
    out_dims = h.map_dim_positions(h.indexing_maps(op)[-1])
    groups = _split_groups(len(out_dims), out_dims.index(split.dim), len(split.sizes))
    return b.collapse(result, groups, op.results[0].type)
