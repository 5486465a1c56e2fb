"""Emission: batched gathers (stacked [K, S..., D] or flat [sum N, D]) over the tables
`tables.py` stacks, with the MLIR Python builders. New ops take
the location of the op they replace; the scalar code in the bodies (index selection, bounds
checks, offsets) is shared with the concat writer (`writer.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_CONSTANT, ARITH_INDEX_CAST, LINALG_GENERIC,
                                              LINALG_INDEX, LINALG_YIELD, TENSOR_COLLAPSE_SHAPE,
                                              TENSOR_EMPTY, TENSOR_EXPAND_SHAPE, TENSOR_EXTRACT)

from .match import MAX_UNROLLED_BAG, Lookup, distinct_tables, is_lookup_like, shape_text
from .plan import GroupPlan
from .scalars import (emit_checks, emit_size_checks, entry, index_in_shape, int_table, materialize,
                      select_chain, wrap_index)
from .tables import TablePool, erase_dead_tables
from iree_fusions.compiler.ir_helpers.names import COMPUTE_BARRIER_START

# ---------------------------------------------------------------- normalization


def unflatten_lookups(block: ir.Block) -> None:
    """Lookups over a flattened index tensor whose rows are expanded back (ONNX's Gather of
    [B, L] ids lowers to collapse [B*L] -> lookup [B*L, D] -> expand [B, L, D]) become one
    lookup over the [B, L] ids: a normalization that changes no value, so that bags of the
    ONNX form pool and batch as the torch form's do. Idempotent."""
    for op in list(block.operations):
        op = op.operation
        if op.name != LINALG_GENERIC or not is_lookup_like(op) or len(op.results) != 1:
            continue
        flat = h.dps_inputs(op)[0]
        collapse, uses = h.defining_op(flat), h.users(op.results[0])
        if collapse is None or collapse.name != TENSOR_COLLAPSE_SHAPE or len(uses) != 1 or \
                uses[0].name != TENSOR_EXPAND_SHAPE:
            continue
        expand, ids = uses[0], collapse.operands[0]
        rank = h.tensor_type(ids).rank
        if h.reassociation(collapse) != [list(range(rank))] or \
                h.reassociation(expand) != [list(range(rank)), [rank]] or \
                [h.map_dim_positions(map_) for map_ in h.indexing_maps(op)] != [[0], [0, 1]] or \
                0 in h.index_dims(op):
            continue
        out_t = h.tensor_type(expand.results[0])
        if any(out_t.shape[i] != h.tensor_type(ids).shape[i] for i in range(rank)) or any(
                h.dim_key(expand.results[0], i) != h.dim_key(ids, i) for i in range(rank)
                if ir.ShapedType.is_dynamic_size(out_t.shape[i])):
            continue
        with op.location, ir.InsertionPoint(expand):
            sizes = [materialize(h.dim_key(ids, i)) for i in range(rank)] + [out_t.shape[-1]]
            empty = tensor.EmptyOp(sizes, out_t.element_type).result
            new = b.cloned_generic(op, [ids], [empty], [b.map_attr(rank + 1, range(rank)),
                                                        b.map_attr(rank + 1, range(rank + 1))],
                                   ["parallel"] * (rank + 1), index_map={1: rank})
        expand.results[0].replace_all_uses_with(new.results[0])
        expand.erase()
        op.erase()
        b.erase_dead([flat], b.of_kind(TENSOR_COLLAPSE_SHAPE,
                                       COMPUTE_BARRIER_START))


def slice_column_selects(block: ir.Block) -> None:
    """A column (or row) of a 2-D tensor picked by a constant (ONNX's Gather of `ids[:, i]`
    lowers to a generic whose body extracts `ids[d0, c]`, `c` a 0-d constant) becomes the
    `tensor.extract_slice` the torch form has: a view, so that a batched gather or a concat
    writer reads the ids where they are instead of from a dispatch of their own. Changes no
    value (the constant is checked in bounds); idempotent."""
    for op in list(block.operations):
        op = op.operation
        picked = _constant_select(op)
        if picked is None:
            continue
        src, axis, picked_at = picked
        out = op.results[0]
        with op.location, ir.InsertionPoint(op):
            other = b.size_of(src, 1 - axis)
            offsets, sizes = [0, 0], [other, other]
            offsets[axis], sizes[axis] = picked_at, 1
            view = b.extract_slice(src, offsets, sizes, out.type)
        out.replace_all_uses_with(view)
        op.erase()


def _constant_select(op: ir.Operation) -> tuple[ir.Value, int, int] | None:
    """(source, picked axis, constant) of `out[d0] = src[d0, c]` / `src[c, d0]`, else None."""
    if op.name != LINALG_GENERIC or len(op.results) != 1 or \
            h.iterator_types(op) != ["parallel"] or len(h.dps_inits(op)) != 1:
        return None
    ins, body = h.dps_inputs(op), [body_op.operation for body_op in h.body_block(op).operations]
    args = list(h.body_block(op).arguments)
    if len(ins) != 1 or h.tensor_type(ins[0]) is None or h.tensor_type(ins[0]).rank != 0 or \
            [body_op.name for body_op in body] != [ARITH_INDEX_CAST, LINALG_INDEX, TENSOR_EXTRACT,
                                      LINALG_YIELD]:
        return None
    const = h.defining_op(ins[0])
    if const is None or const.name != ARITH_CONSTANT:
        return None
    const_pos = int(ir.DenseIntElementsAttr(const.attributes["value"]).get_splat_value().value)
    cast, index, extract, done = body
    if cast.operands[0] != args[0] or done.operands[0] != extract.results[0]:
        return None
    src = extract.operands[0]
    src_t = h.tensor_type(src)
    if src_t is None or src_t.rank != 2 or h.defined_inside(src, op):
        return None
    indices = list(extract.operands)[1:]
    if indices == [index.results[0], cast.results[0]]:
        axis = 1
    elif indices == [cast.results[0], index.results[0]]:
        axis = 0
    else:
        return None
    if ir.IntegerAttr(index.attributes["dim"]).value != 0:
        return None
    size = src_t.shape[axis]
    if ir.ShapedType.is_dynamic_size(size) or not 0 <= const_pos < size:
        return None
    if h.tensor_type(op.results[0]).shape[0] != src_t.shape[1 - axis]:
        return None
    return src, axis, const_pos


# ---------------------------------------------------------------- lookup groups


def distinct_slots(members: list[Lookup]) -> tuple[list[Lookup], list[int]]:
    """Members with the same table and index (and pooling) read one slot."""
    slots: list[Lookup] = []
    where = []
    for member in members:
        for i, slot in enumerate(slots):
            if slot.table == member.table and slot.index == member.index and \
                    slot.pool_axis == member.pool_axis:
                where.append(i)
                break
        else:
            where.append(len(slots))
            slots.append(member)
    return slots, where


def emit_group(plan: GroupPlan, tables: TablePool, ins_mode: bool, dedup: bool) -> str:
    """One batched gather for the group's members, whose results are replaced by its slices
    (members of one table and index share a slot); the members are erased."""
    members = plan.members
    slots, where = distinct_slots(members)
    distinct = distinct_tables(members)
    first = members[0]
    what = "cross-table" if len(distinct) > 1 else "same-table"
    pooled = (f", pooled ({first.pooling}) over axis {first.pool_axis}"
              if first.pool is not None else "")
    checked = f" (checked at run time: {len(plan.checks)} batch size(s) equal)" \
        if plan.checks else ""
    change = (f"{what}: {len(members)} lookups ({len(slots)} distinct) of {len(distinct)} "
              f"table(s), dim {first.dim}, indices {shape_text(first.index_shape)}"
              f"{pooled} -> 1 {plan.layout} gather{checked}")
    anchor = batching.first_use_anchor(members, h.block_positions(first.op.block))
    built = len(tables.built)
    if len(distinct) > 1:
        entries = distinct if dedup else [slot.table for slot in slots]
        table, starts = tables.stacked(entries)
        offsets = [starts[entries.index(slot.table)] if dedup else starts[i]
                   for i, slot in enumerate(slots)]
    else:
        table, offsets = first.table, [0] * len(slots)
    rows = [slot.rows for slot in slots]
    with first.op.location, ir.InsertionPoint(anchor):
        emit_size_checks(plan.checks, f"{what} gather", first.op.block)
        if plan.layout == "flat":
            results = _emit_flat(slots, table, offsets, rows)
        else:
            results = _emit_stacked(slots, table, offsets, rows, ins_mode)
    for member, slot_idx in zip(members, where):
        member.result.replace_all_uses_with(results[slot_idx])
    dead = [op for member in members for op in reversed(member.ops)]
    for op in dead:
        op.erase()
    erase_dead_tables(distinct)
    erase_dead_wraps(members)
    return change + tables.note_since(built)


def erase_dead_wraps(lookups: list[Lookup]) -> None:
    """The generics that wrapped the replaced lookups' indices, once nothing reads them."""
    b.erase_dead([lookup.wrapped for lookup in lookups if lookup.wrapped is not None],
                 b.of_kind(LINALG_GENERIC, TENSOR_EMPTY))


def _emit_stacked(slots: list[Lookup], table: ir.Value, offsets: list[int], rows: list[int],
                  ins_mode: bool) -> list[ir.Value]:
    """One generic writing [K, S..., D] (pooled: summed over the bag axis), sliced per slot.

    Each slot's index is read with `tensor.extract` at the loop indices (uniform along d,
    so every table row is one contiguous vector load). Unpooled, the loops run
    (s..., k, d) with the output map -> (k, s..., d), which keeps IREE from collapsing all
    loops into one (that would turn row reads into per-element gathers); pooled, the loops
    are (k, s..., d) with the bag axis a reduction. ins_mode: indices as `ins` (measured).
    """
    first = slots[0]
    slot_count = len(slots)
    shape = list(first.index_shape)
    sizes = [materialize(size) for size in first.index_sizes]
    index_rank = len(shape)
    elem = first.elem
    pool = first.pool_axis
    unroll = pool is not None and not ins_mode and shape[pool] is not None and \
        shape[pool] <= MAX_UNROLLED_BAG
    loop_dims = [i for i in range(index_rank) if not (unroll and i == pool)]  # index dims as loops
    loops = len(loop_dims) + 2
    if not ins_mode and (pool is None or unroll):
        kpos, spos = loops - 2, list(range(loops - 2))  # loops (s..., k, d)
    else:
        kpos, spos = 0, list(range(1, loops - 1))  # loops (k, s..., d)
    dpos = loops - 1
    loop_of = dict(zip(loop_dims, spos))  # index dim -> loop
    out_dims = [kpos] + [loop_of[i] for i in range(index_rank) if i != pool] + [dpos]
    out_shape = [slot_count] + [size for i, size in enumerate(sizes) if i != pool] + [first.dim]
    its = ["parallel"] * loops
    if pool is not None and not unroll:
        its[loop_of[pool]] = "reduction"
    indices = [index_in_shape(slot) for slot in slots]
    init = tensor.EmptyOp(out_shape, elem).result
    if pool is not None and not unroll:
        zero = arith.ConstantOp(elem, 0.0).result
        init = b.fill(zero, init)
    rows_table = int_table(rows) if len(set(rows)) > 1 else None
    offsets_table = int_table(offsets) if any(offsets) else None
    if ins_mode:
        ins = indices
    elif pool is not None and not unroll:
        # The bag axis appears in no other map: the first index tensor, unused in the
        # body, gives the loops their ranges.
        ins = indices[:1]
    else:
        ins = []

    def gathered(args: list[ir.Value]) -> ir.Value:
        loop = {dim: linalg.IndexOp(dim).result for dim in sorted({kpos, dpos, *spos})}
        slot_idx = loop[kpos]
        rows_v = b.index_const(rows[0]) if rows_table is None else entry(rows_table, slot_idx)
        off = entry(offsets_table, slot_idx) if offsets_table is not None else None

        def gather(read_at: list[ir.Value]) -> ir.Value:
            if ins_mode:
                chain_in = list(args)[:slot_count]
            else:
                chain_in = [tensor.ExtractOp(index, read_at).result for index in indices]
            raw = select_chain(slot_idx, chain_in, list(range(slot_count)))
            idx = arith.IndexCastOp(ir.IndexType.get(), raw).result
            if first.wrap:
                idx = wrap_index(idx, rows_v)
            emit_checks(first.checks, raw, idx, rows_v)
            if off is not None:
                idx = arith.AddIOp(idx, off).result
            return tensor.ExtractOp(table, [idx, loop[dpos]]).result

        if unroll:
            # The bag axis unrolled in the body: row reads stay contiguous along d and the
            # sum runs l = 0, 1, ... from zero, like the stock reduction.
            acc = arith.ConstantOp(elem, 0.0).result
            for pos in range(shape[pool]):
                bag_pos = b.index_const(pos)
                read_at = [bag_pos if i == pool else loop[loop_of[i]] for i in range(index_rank)]
                acc = arith.AddFOp(gather(read_at), acc).result
            val = acc
            if first.divisor is not None:
                divisor = arith.ConstantOp(first.divisor.type, first.divisor).result
                val = arith.DivFOp(val, divisor).result
        else:
            assert first.divisor is None, "mean bags are only batched with the unrolled sum"
            val = gather([loop[loop_of[i]] for i in range(index_rank)])
            if pool is not None:
                val = arith.AddFOp(val, args[-1]).result
        return val

    gen = b.generic(ins, [init], [b.map_attr(loops, spos)] * len(ins)
                    + [b.map_attr(loops, out_dims)], its, gathered)
    rank = len(out_shape)
    return [b.slice_out(gen.results[0], [j] + [0] * (rank - 1), [1] + out_shape[1:],
                      out_shape[1:]) for j in range(slot_count)]


def _emit_flat(slots: list[Lookup], table: ir.Value, offsets: list[int],
               rows: list[int]) -> list[ir.Value]:
    """Index tensors of different shapes (or dynamic sizes not known to be equal):
    flattened rows [sum N, D], sliced and reshaped; segment starts and sizes are computed
    (host-side) where the index shapes are dynamic."""
    first = slots[0]
    elem, index_elem, dim = first.elem, first.index_elem, first.dim
    shapes = [[materialize(num) for num in slot.index_sizes] for slot in slots]
    sizes = [_product(dims) for dims in shapes]
    starts: list[b.Size] = [0]
    for size in sizes[:-1]:
        starts.append(_plus(starts[-1], size))
    total = _plus(starts[-1], sizes[-1])
    flat = []
    for slot, size in zip(slots, sizes):
        rank = ir.RankedTensorType(slot.index.type).rank
        flat.append(slot.index if rank == 1 else
                    b.collapse(slot.index, [list(range(rank))],
                               b.tensor_type_of([size], index_elem)))
    lasts = [_plus(size, -1) for size in sizes]
    init = tensor.EmptyOp([total, dim], elem).result

    def gathered_row(args: list[ir.Value]) -> ir.Value:
        row = linalg.IndexOp(0).result
        vals, segs = [], []
        for j in range(len(slots)):
            start = b.index_value(starts[j])
            zero = b.index_const(0)
            pos = arith.SubIOp(row, start).result
            pos = arith.MaxSIOp(pos, zero).result
            pos = arith.MinSIOp(pos, b.index_value(lasts[j])).result
            vals.append(tensor.ExtractOp(flat[j], [pos]).result)
            segs.append(b.cmpi("sge", row, start))
        rows_s = [b.index_const(num) for num in rows]
        offs_s = [b.index_const(num) for num in offsets]
        raw, rows_v, off_v = vals[0], rows_s[0], offs_s[0]
        for j in range(1, len(slots)):
            raw = arith.SelectOp(segs[j], vals[j], raw).result
            rows_v = arith.SelectOp(segs[j], rows_s[j], rows_v).result
            off_v = arith.SelectOp(segs[j], offs_s[j], off_v).result
        idx = arith.IndexCastOp(ir.IndexType.get(), raw).result
        if first.wrap:
            idx = wrap_index(idx, rows_v)
        emit_checks(first.checks, raw, idx, rows_v)
        if any(offsets):
            idx = arith.AddIOp(idx, off_v).result
        col = linalg.IndexOp(1).result
        return tensor.ExtractOp(table, [idx, col]).result

    gen = b.generic([], [init], [b.map_attr(2, [0, 1])], ["parallel", "parallel"],
                    gathered_row)
    results = []
    for shape, start, size in zip(shapes, starts, sizes):
        rows_of = b.slice_out(gen.results[0], [start, 0], [size, dim], [size, dim])
        if len(shape) > 1:
            rows_of = b.expand_mixed(rows_of, [list(range(len(shape))), [len(shape)]],
                                     shape + [dim])
        results.append(rows_of)
    return results




def _plus(lhs: b.Size, rhs: b.Size) -> b.Size:
    if isinstance(lhs, int) and isinstance(rhs, int):
        return lhs + rhs
    if isinstance(rhs, int) and rhs == 0:
        return lhs
    if isinstance(lhs, int) and lhs == 0:
        return rhs
    return arith.AddIOp(b.index_value(lhs), b.index_value(rhs)).result


def _product(sizes: Sequence[b.Size]) -> b.Size:
    out: b.Size = 1
    for size in sizes:
        if isinstance(out, int) and isinstance(size, int):
            out *= size
        elif out == 1:
            out = size
        else:
            out = arith.MulIOp(b.index_value(out), b.index_value(size)).result
    return out
