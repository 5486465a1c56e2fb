"""The decomposition: an attention as contractions, reductions and elementwise generics (the
operations and types of IREE's own decomposition), for the whole query or, in a loop, one
query block at a time."""

from __future__ import annotations

from dataclasses import replace
from math import prod
from collections.abc import Callable

from iree.compiler import ir
from iree.compiler.dialects import arith, math, scf, tensor, util

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.analyses.attention_columns import ReadColumns
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, TENSOR_COLLAPSE_SHAPE

from .heads import copy_under_collapse, join_heads, split_heads
from .match import AttentionPlan
from iree_fusions.compiler.ir_helpers.names import FLOW_TENSOR_BARRIER, TENSOR_EMPTY

Size = b.Size
Body = Callable[[list[ir.Value]], ir.Value]


def _generic(loops: list[int], inputs: list[tuple[ir.Value, list[int]]], init: ir.Value,
             out_dims: list[int], reduced: set[int], body: Body) -> ir.Value:
    """A one-result linalg.generic over `loops` (loop dims of the attention; the `reduced` ones
    last, as IREE's contraction codegen expects): each input read at its dims, the init
    written at `out_dims`;
    `body(args)` builds the yielded value from the block arguments (inputs, then the init)."""
    loops = [d for d in loops if d not in reduced] + [d for d in loops if d in reduced]
    n = len(loops)
    maps = [b.map_attr(n, [loops.index(d) for d in dims]) for _, dims in inputs]
    maps.append(b.map_attr(n, [loops.index(d) for d in out_dims]))
    values = [v for v, _ in inputs]
    gen = b.generic(values, [init], maps,
                    ["reduction" if d in reduced else "parallel" for d in loops], body)
    return gen.results[0]


def _filled(sizes: list[Size], value: float) -> ir.Value:
    f32 = ir.F32Type.get()
    empty = tensor.EmptyOp(sizes, f32).result
    scalar = arith.ConstantOp(f32, value).result
    return b.fill(scalar, empty)


LOG2E = 1.4426950408889634
MIN_BLOCK_ROWS = 8
LOWEST_F32 = -3.4028234663852886e38


def _convert(value: ir.Value, element: ir.Type) -> ir.Value:
    """A float scalar converted to `element` (extended, truncated, or as it is)."""
    if value.type == element:
        return value
    if ir.FloatType(value.type).width < ir.FloatType(element).width:
        return arith.ExtFOp(element, value).result
    return arith.TruncFOp(element, value).result


def _mask_term(mask: ir.Value, log2e: ir.Value) -> ir.Value:
    """What a mask element adds to a score, as in IREE's decomposition: a float mask times
    log2 e (in f32); a boolean one (an integer, its low bit as IREE reads it) 0 where it is
    true and -inf where it is false (PyTorch's `attn_mask` of bools: true attends)."""
    f32 = ir.F32Type.get()
    if isinstance(mask.type, ir.FloatType):
        return arith.MulFOp(_convert(mask, f32), log2e).result
    i1 = ir.IntegerType.get_signless(1)
    if ir.IntegerType(mask.type).width != 1:
        mask = arith.TruncIOp(i1, mask).result
    return arith.SelectOp(mask, arith.ConstantOp(f32, 0.0).result,
                          arith.ConstantOp(f32, float("-inf")).result).result


def _modified_score(plan: AttentionPlan, score: ir.Value) -> ir.Value:
    """The score region's ops cloned here, its argument read as `score`: what it yields."""
    region = plan.op.regions[0].blocks[0]
    mapped = {region.arguments[0]: score}
    for op in plan.score_ops:
        clone = op.clone()
        for i, operand in enumerate(clone.operands):
            if operand in mapped:
                clone.operands[i] = mapped[operand]
        mapped[op.results[0]] = clone.results[0]
    yielded = list(region.operations)[-1].operands[0]
    return mapped.get(yielded, yielded)


def attention_values(plan: AttentionPlan, q: ir.Value, mask: ir.Value | None,
                     size: dict[int, Size]) -> ir.Value:
    """out = softmax(scale * q k^T + mask) v for the query `q` (the op's or a block of it),
    every loop's size in `size`, with the operations and types of IREE's own decomposition
    of the op (online attention, one key tile), so that only the order of the sums differs:

        q'[b, m, k1] = q * (scale * log2 e)                       (q's type; elementwise)
        s[b, m, k2]  = sum_k1 q' * k                              (f32 contraction)
        s            = the op's score region applied to s, if any   (f32 elementwise)
        s'           = s + mask * log2 e       (f32 elementwise; a boolean mask: 0 / -inf)
        mx[b, m]     = max_k2 s'                 (f32 reduction from the lowest finite f32)
        p            = exp2(s' - mx);  l[b, m] = sum_k2 p         (f32)
        o[b, m, n]   = (1 / l) * sum_k2 p' * v,  p' = p in v's type  (f32 contraction)

    the result in the output's type. With v in f32, or the whole query at once (static, its
    scores few), p is an f32 tensor the sum and p' read (as IREE's pipeline); in query blocks
    of f16 / bf16 v, p is computed twice, in the sum and in p' (no f32 p tensor: s' and p'
    are what a block holds). A fully masked row is 0 * (1 / 0) = NaN, as in IREE."""
    roles, maps = plan.roles, plan.maps
    rows = sorted(roles["batch"] + roles["m"])
    scores = sorted(rows + roles["k2"])
    k1, k2 = set(roles["k1"]), set(roles["k2"])
    f32 = ir.F32Type.get()

    def sizes(dims: list[int]) -> list[Size]:
        return [size[d] for d in dims]

    def element(value: ir.Value) -> ir.Type:
        return ir.RankedTensorType(value.type).element_type

    def add(a, c):
        return arith.AddFOp(a, c).result

    def mul(a, c):
        return arith.MulFOp(a, c).result

    log2e = arith.ConstantOp(f32, LOG2E).result
    q_scale = mul(_convert(plan.scale, f32), log2e)  # in q's type inside the body (no f16
    q_dims = maps["q"]                                 # scalar on the host: the VM has none)
    q = _generic(sorted(q_dims), [(q, q_dims)], tensor.EmptyOp(sizes(q_dims), element(q)).result,
                 q_dims, set(), lambda a: mul(a[0], _convert(q_scale, a[0].type)))
    s = _generic(scores + roles["k1"], [(q, q_dims), (plan.k, maps["k"])],
                 _filled(sizes(scores), 0.0), scores, k1,
                 lambda a: add(mul(_convert(a[0], f32), _convert(a[1], f32)), a[2]))
    if plan.score_ops:  # IREE's decomposition applies the region to s, before the mask
        s = _generic(scores, [(s, scores)], tensor.EmptyOp(sizes(scores), f32).result, scores,
                     set(), lambda a: _modified_score(plan, a[0]))
    empty = tensor.EmptyOp(sizes(scores), f32).result
    if mask is not None:
        s = _generic(scores, [(s, scores), (mask, maps["mask"])], empty, scores, set(),
                     lambda a: add(a[0], _mask_term(a[1], log2e)))
    mx = _generic(scores, [(s, scores)], _filled(sizes(rows), LOWEST_F32), rows, k2,
                  lambda a: arith.MaximumFOp(a[0], a[1]).result)

    def exp2(a):  # p = exp2(s' - mx)
        return math.Exp2Op(arith.SubFOp(a[0], a[1]).result).result

    v_type = element(plan.v)
    if v_type == f32 or plan.whole is not None:  # p held in f32: the sum and p' read it
        p = _generic(scores, [(s, scores), (mx, rows)],
                     tensor.EmptyOp(sizes(scores), f32).result, scores, set(), exp2)
        total = _generic(scores, [(p, scores)], _filled(sizes(rows), 0.0), rows, k2,
                         lambda a: add(a[0], a[1]))
        p_v = p if v_type == f32 else _generic(
            scores, [(p, scores)], tensor.EmptyOp(sizes(scores), v_type).result, scores,
            set(), lambda a: _convert(a[0], v_type))
    else:  # (in query blocks of f16 / bf16 v: p computed again for the sum, no f32 p held)
        total = _generic(scores, [(s, scores), (mx, rows)], _filled(sizes(rows), 0.0), rows,
                         k2, lambda a: add(exp2(a), a[2]))
        p_v = _generic(scores, [(s, scores), (mx, rows)],
                       tensor.EmptyOp(sizes(scores), v_type).result, scores, set(),
                       lambda a: _convert(exp2(a), v_type))
    out_dims = maps["out"]
    pv = _generic(sorted(rows + roles["k2"] + roles["n"]), [(p_v, scores), (plan.v, maps["v"])],
                  _filled(sizes(out_dims), 0.0), out_dims, k2,
                  lambda a: add(mul(_convert(a[0], f32), _convert(a[1], f32)), a[2]))
    out_type = element(plan.out)
    one = arith.ConstantOp(f32, 1.0).result
    return _generic(sorted(out_dims), [(total, rows), (pv, out_dims)],
                    tensor.EmptyOp(sizes(out_dims), out_type).result, out_dims, set(),
                    lambda a: _convert(mul(arith.DivFOp(one, a[0]).result, a[1]), out_type))


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
        else:
            result = _in_query_blocks(plan, size)
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
        note = (f", {_least_rows(plan)} to {plan.block} query rows at a time (a "
                f"block's scores at most {plan.block_scores})")
    return note + (", each step after the one before on the host" if plan.host_sync else "")


def _sunk_block(value: ir.Value, position: int, start: ir.Value, rows: ir.Value,
                sizes: list[Size]) -> ir.Value:
    """Rows [start, start + rows) of `value` along its dim `position`. Where the value is a
    collapse of a copy (IREE's broadcast of the mask over the heads, [B, S, S] -> [B*H, S,
    S], one for every layer), the copy is applied to the rows of its source inside the loop
    (and fused there by IREE) instead of being held whole: once every layer's attention is
    rewritten, the whole copy is dead; else a slice of the value."""
    offsets: list[Size] = [start if d == position else 0 for d in range(len(sizes))]
    block_sizes = [rows if d == position else size for d, size in enumerate(sizes)]
    found = copy_under_collapse(value)
    if found is None:
        return b.extract_slice(value, offsets, block_sizes)
    collapse, copy, groups = found
    group = groups[position]
    in_map, out_map = h.indexing_maps(copy)
    rank = out_map.n_dims
    shape = ir.RankedTensorType(copy.results[0].type).shape
    read = {e.position for e in in_map.results}
    if len(group) != 1 or any(
            ir.ShapedType.is_dynamic_size(shape[d]) for d in range(rank) if d not in read):
        return b.extract_slice(value, offsets, block_sizes)
    source = h.dps_inputs(copy)[0]
    source_sizes = b.mixed_shape(source)
    at = [i for i, e in enumerate(in_map.results) if e.position == group[0]]
    src_block = b.extract_slice(source, [start if i in at else 0 for i in range(len(source_sizes))],
                                [rows if i in at else n for i, n in enumerate(source_sizes)])
    out_shape = ir.RankedTensorType(copy.results[0].type).shape
    reads = {e.position: i for i, e in enumerate(in_map.results)}  # copy dim -> source dim
    out_sizes = [rows if d == group[0] else source_sizes[reads[d]] if d in reads else out_shape[d]
                 for d in range(rank)]  # (not the old copy's sizes: it must die)
    element = ir.RankedTensorType(source.type).element_type
    init = tensor.EmptyOp(out_sizes, element).result
    new = b.generic([src_block], [init],
                    [ir.AffineMapAttr.get(in_map), ir.AffineMapAttr.get(out_map)],
                    h.iterator_types(copy), lambda a: a[0])
    if collapse is None:
        return new.results[0]
    return b.collapse(new.results[0], groups, b.tensor_type_of(block_sizes, element))


def _least_rows(plan: AttentionPlan) -> int:
    """The fewest query rows a step of `plan`'s loop has (but the last)."""
    return min(MIN_BLOCK_ROWS, plan.block)


def _step_rows(plan: AttentionPlan, size: dict[int, Size]) -> ir.Value:
    """Query rows per step: `plan.block`, or fewer where one row's scores (every batch and
    head, every key) are so many that a block's would pass `plan.block_scores` elements, but
    at least `MIN_BLOCK_ROWS` (a contraction of fewer rows runs slowly). With the keys
    dynamic, computed at run time."""
    if not plan.block_scores:
        return b.index_const(plan.block)
    dims = plan.roles["batch"] + plan.roles["k2"] + [d for d in plan.roles["m"]
                                                      if d != plan.block_dim]
    static = 1
    per_row = None
    for d in dims:
        if isinstance(size[d], ir.Value):
            per_row = size[d] if per_row is None else arith.MulIOp(per_row, size[d]).result
        else:
            static *= size[d]
    least = _least_rows(plan)
    if per_row is None:  # (a dim of size 0: no scores, any row count; no division by 0)
        return b.index_const(max(least, min(plan.block, plan.block_scores // max(static, 1))))
    per_row = arith.MulIOp(per_row, b.index_const(static)).result
    # At least 1: with no keys at run time (a size of 0) the division must not trap.
    per_row = arith.MaxUIOp(per_row, b.index_const(1)).result
    rows = arith.DivUIOp(b.index_const(plan.block_scores), per_row).result
    rows = arith.MinUIOp(rows, b.index_const(plan.block)).result
    return arith.MaxUIOp(rows, b.index_const(least)).result


def _host_read_zero(value: ir.Value, opaque_zero: ir.Value) -> ir.Value:
    """An index that is 0 but that the host knows only once it has read an element of
    `value` (the bits of value[0, ..] and an opaque zero): a step whose next offsets depend
    on it waits for the step before it to finish."""
    element = ir.RankedTensorType(value.type).element_type
    width = ir.FloatType(element).width
    first = tensor.ExtractOp(value, [b.index_const(0)] * ir.RankedTensorType(value.type).rank)
    bits = arith.BitcastOp(ir.IntegerType.get_signless(width), first.result).result
    i64 = ir.IntegerType.get_signless(64)
    wide = arith.ExtUIOp(i64, bits).result if width < 64 else bits
    return arith.IndexCastOp(ir.IndexType.get(), arith.AndIOp(wide, opaque_zero).result).result


def _reads_a_row(more: ir.Value, sizes: list[Size]) -> ir.Value:
    """`more`, and the block's output has an element to read: every other dim of it is
    non-empty (a dynamic batch may be 0 at run time; the host must not read an empty block)."""
    for size in sizes:
        if isinstance(size, ir.Value):
            more = arith.AndIOp(more, b.cmpi("ugt", size, b.index_const(0))).result
        elif size == 0:
            more = arith.ConstantOp(ir.IntegerType.get_signless(1), 0).result
    return more


def _on_device(value: ir.Value, sizes: list[Size], device: ir.Attribute) -> ir.Value:
    """`flow.tensor.barrier` of `value` on `device`: the value is placed there (a no-op in a
    program on that one device)."""
    shape = ir.RankedTensorType(value.type).shape
    dynamic = [s if isinstance(s, ir.Value) else b.index_const(s)
               for s, extent in zip(sizes, shape) if ir.ShapedType.is_dynamic_size(extent)]
    return ir.Operation.create(FLOW_TENSOR_BARRIER, results=[value.type],
                               operands=[value, *dynamic],
                               attributes={"target": device}).results[0]


def _in_query_blocks(plan: AttentionPlan, size: dict[int, Size]) -> ir.Value:
    """scf.for over the query loop `plan.block_dim` in steps of `_step_rows` rows: each step
    decomposes the attention of its rows (q and mask sliced, their broadcasts applied to
    the rows) into the output's rows, so the scores held at once are a block's, not the
    whole query's.

    IREE 3.13 copies the loop-carried output into a new buffer every step: ConvertToStream
    converts the scf.for first, so the body's readers of the iter_arg see a value of no known
    device and each gets a stream.async.transfer, a copy of the whole output per step (S /
    rows copies of it per attention). In a single-device program (`plan.device`) the iter_arg
    is read through a `flow.tensor.barrier` on that device: its conversion resolves the
    operand without a transfer, and the steps write their rows into one buffer in place
    (the loop then carries no resource; outputs bit-identical). And its task executor runs
    ahead of the device: the host queues every step before the first one runs, and every
    step's buffers are held at once. With `plan.host_sync`, the offset of each step after the
    first is known to the host only once it has read an element of the step before's output
    (`_host_read_zero`), so one step's buffers are held at a time (the peak memory measured
    per block size: bench/results/code-costs.md, rewrite-attention)."""
    dim, extent = plan.block_dim, size[plan.block_dim]
    lower, step = b.index_const(0), _step_rows(plan, size)
    upper = extent if isinstance(extent, ir.Value) else b.index_const(extent)
    carried = [plan.out] + ([lower] if plan.host_sync else [])
    opaque_zero = (util.OptimizationBarrierOp([ir.IntegerType.get_signless(64)], [
        arith.ConstantOp(ir.IntegerType.get_signless(64), 0).result]).results[0]
        if plan.host_sync else None)
    loop = scf.ForOp(lower, upper, step, carried)
    with ir.InsertionPoint(loop.body):
        start = loop.induction_variable
        if plan.host_sync:
            start = arith.AddIOp(start, loop.inner_iter_args[1]).result
        rows = arith.MinSIOp(arith.SubIOp(upper, start).result, step).result
        inner = dict(size)
        inner[dim] = rows

        def block_of(value: ir.Value, dims: list[int]) -> ir.Value:
            return _sunk_block(value, dims.index(dim), start, rows, [size[d] for d in dims])

        q = block_of(plan.q, plan.maps["q"])
        mask = plan.mask
        if mask is not None and dim in plan.maps["mask"]:
            mask = block_of(mask, plan.maps["mask"])
        rows_out = attention_values(plan, q, mask, inner)
        out_dims = plan.maps["out"]
        acc = loop.inner_iter_args[0]
        if plan.device is not None:  # (see the docstring: no copy of the output per step)
            acc = _on_device(acc, [size[d] for d in out_dims], plan.device)
        written = b.insert_slice(rows_out, acc, [start if d == dim else 0 for d in out_dims],
                                 [inner[d] for d in out_dims])
        yielded = [written]
        if plan.host_sync:  # (not after the last step: nothing follows it to wait)
            more = _reads_a_row(b.cmpi("ult", arith.AddIOp(start, rows).result, upper),
                                [inner[d] for d in out_dims if d != dim])
            branch = scf.IfOp(more, [ir.IndexType.get()], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([_host_read_zero(rows_out, opaque_zero)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([b.index_const(0)])
            yielded.append(branch.results[0])
        scf.YieldOp(yielded)
    return loop.results[0]
