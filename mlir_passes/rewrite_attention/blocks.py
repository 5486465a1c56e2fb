"""The loop over query blocks of a decomposed attention (prefill): each step the attention of
its rows (`values.attention_values`) written into the output's rows, each step after the one
before on the host; a dynamic one that fits one block at run time in one step of every row."""

from __future__ import annotations

from dataclasses import replace

from iree.compiler import ir
from iree.compiler.dialects import arith, scf, tensor, util

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, TENSOR_COLLAPSE_SHAPE
from iree_fusions.compiler.ir_helpers.names import (FLOW_TENSOR_BARRIER, FLOW_TENSOR_TIE_SHAPE,
                                                    LINALG_FILL, TENSOR_EMPTY,
                                                    TENSOR_EXPAND_SHAPE)

from .heads import copy_under_collapse
from .match import AttentionPlan
from .values import attention_values

Size = b.Size
MIN_BLOCK_ROWS = 8


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


def least_rows(plan: AttentionPlan) -> int:
    """The fewest query rows a step of `plan`'s loop has (but the last)."""
    return min(MIN_BLOCK_ROWS, plan.block)


def _row_scores(plan: AttentionPlan, size: dict[int, Size]) -> tuple[int, ir.Value | None]:
    """One query row's scores (every batch and head, every key, the other query loops): the
    product of their static sizes, and of their dynamic ones (None: every one static)."""
    dims = plan.roles["batch"] + plan.roles["k2"] + [d for d in plan.roles["m"]
                                                      if d != plan.block_dim]
    static = 1
    dynamic = None
    for d in dims:
        if isinstance(size[d], ir.Value):
            dynamic = size[d] if dynamic is None else arith.MulIOp(dynamic, size[d]).result
        else:
            static *= size[d]
    return static, dynamic


def _step_rows(plan: AttentionPlan, size: dict[int, Size]) -> ir.Value:
    """Query rows per step: `plan.block`, or fewer where one row's scores (every batch and
    head, every key) are so many that a block's would pass `plan.block_scores` elements, but
    at least `MIN_BLOCK_ROWS` (a contraction of fewer rows runs slowly). With the keys
    dynamic, computed at run time."""
    if not plan.block_scores:
        return b.index_const(plan.block)
    static, per_row = _row_scores(plan, size)
    least = least_rows(plan)
    if per_row is None:  # (a dim of size 0: no scores, any row count; no division by 0)
        return b.index_const(max(least, min(plan.block, plan.block_scores // max(static, 1))))
    per_row = arith.MulIOp(per_row, b.index_const(static)).result
    rows = _quotient(b.index_const(plan.block_scores), per_row)
    rows = arith.MinUIOp(rows, b.index_const(plan.block)).result
    return arith.MaxUIOp(rows, b.index_const(least)).result


def _quotient(limit: ir.Value, per_row: ir.Value) -> ir.Value:
    """limit // per_row (unsigned), a per_row of 0 counted as 1: with no keys or no batch at
    run time (a size of 0) the division must not trap."""
    return arith.DivUIOp(limit, arith.MaxUIOp(per_row, b.index_const(1)).result).result


def _whole_fits(plan: AttentionPlan, size: dict[int, Size], rows: ir.Value) -> ir.Value:
    """Whether, at run time, the whole query's scores (its `rows` times one row's) are at
    most `plan.whole_at_run`: `rows` at most that limit divided by one row's scores (floor
    divisions: no product of sizes that could wrap; a row of no scores counts as one, which
    errs only towards the blocks)."""
    static, per_row = _row_scores(plan, size)
    if static == 0:  # (no scores at all)
        return arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
    allowed = b.index_const(plan.whole_at_run // static)
    if per_row is not None:
        allowed = _quotient(allowed, per_row)
    return b.cmpi("ule", rows, allowed)


def whole_or_in_blocks(plan: AttentionPlan, size: dict[int, Size]) -> ir.Value:
    """A dynamic attention planned in query blocks: where its whole query's scores are at
    most `plan.whole_at_run` (one block's) at run time (`_whole_fits`), one block of every
    row, its result the attention's (written whole, not into strided rows of the loop's
    output: IREE copies each step's rows there in a dispatch of its own, `slow_memcpy`),
    else `in_query_blocks`:

        %z, %r = util.optimization_barrier %c0, %m
        %o = scf.if %fits { the block of rows [%z, %z + %r) } else { scf.for .. }

    Its start and rows opaque to the compiler, the block's dispatches are the loop's, and
    IREE compiles them once for both."""
    upper = b.index_value(size[plan.block_dim])
    branch = scf.IfOp(_whole_fits(plan, size, upper), [plan.out.type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        index = ir.IndexType.get()
        zero, rows = util.OptimizationBarrierOp([index, index],
                                                [b.index_const(0), upper]).results
        whole, _ = _block_values(_mask_generated_here(plan), size, zero, rows)
        if whole.type != plan.out.type:
            whole = tensor.CastOp(plan.out.type, whole).result
        scf.YieldOp([whole])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([in_query_blocks(_mask_generated_here(plan), size)])
    # (IREE cannot ask an scf.if for its result's dims: they are the output's, tied here)
    return _with_dims(FLOW_TENSOR_TIE_SHAPE, branch.results[0],
                      [size[d] for d in plan.maps["out"]])


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


def _with_dims(name: str, value: ir.Value, sizes: list[Size],
               attributes: dict | None = None) -> ir.Value:
    """`name` (a flow op of one tensor and its dynamic dims) over `value` of `sizes`."""
    shape = ir.RankedTensorType(value.type).shape
    dynamic = [b.index_value(s) for s, extent in zip(sizes, shape)
               if ir.ShapedType.is_dynamic_size(extent)]
    return ir.Operation.create(name, results=[value.type], operands=[value, *dynamic],
                               attributes=attributes or {}).results[0]


def _on_device(value: ir.Value, sizes: list[Size], device: ir.Attribute) -> ir.Value:
    """`flow.tensor.barrier` of `value` on `device`: the value is placed there (a no-op in a
    program on that one device)."""
    return _with_dims(FLOW_TENSOR_BARRIER, value, sizes, {"target": device})


GENERATORS = (TENSOR_EMPTY, LINALG_FILL, LINALG_GENERIC, TENSOR_COLLAPSE_SHAPE,
              TENSOR_EXPAND_SHAPE)


def _mask_generated_here(plan: AttentionPlan) -> AttentionPlan:
    """The plan, its mask computed again here where only `GENERATORS` make it from no tensor
    of the program (a causal mask: an index comparison): each branch of `whole_or_in_blocks`
    slices a generator of its own, which IREE fuses into the slice's reader (of one shared
    by the two, it makes a dispatch that writes the whole [S, S] mask; and CSE would merge a
    copy in one branch with the original outside)."""
    if plan.mask is None:
        return plan
    return replace(plan, mask=_generated_again(plan.mask))


def _generated_again(value: ir.Value) -> ir.Value:
    """`value` computed again here where only `GENERATORS` make it, else `value`."""
    chain: list[ir.Operation] = []

    def generated(v: ir.Value) -> bool:
        if h.tensor_type(v) is None:
            return True  # (a scalar, a size: read where it is)
        op = h.defining_op(v)
        if op is None or op.name not in GENERATORS or not all(map(generated, op.operands)):
            return False
        if op not in chain:
            chain.append(op)
        return True

    if not generated(value) or not chain:
        return value
    return b.clone_ops(chain, {})[value]


def _block_values(plan: AttentionPlan, size: dict[int, Size], start: ir.Value,
                  rows: ir.Value) -> tuple[ir.Value, dict[int, Size]]:
    """The attention of query rows [start, start + rows) (q and mask sliced, their
    broadcasts applied to those rows), and the loop sizes of that block."""
    dim = plan.block_dim
    inner = dict(size)
    inner[dim] = rows

    def block_of(value: ir.Value, dims: list[int]) -> ir.Value:
        return _sunk_block(value, dims.index(dim), start, rows, [size[d] for d in dims])

    q = block_of(plan.q, plan.maps["q"])
    mask = plan.mask
    if mask is not None and dim in plan.maps["mask"]:
        mask = block_of(mask, plan.maps["mask"])
    return attention_values(plan, q, mask, inner), inner


def in_query_blocks(plan: AttentionPlan, size: dict[int, Size]) -> ir.Value:
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
    dim, upper = plan.block_dim, b.index_value(size[plan.block_dim])
    lower, step = b.index_const(0), _step_rows(plan, size)
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
        rows_out, inner = _block_values(plan, size, start, rows)
        out_dims = plan.maps["out"]
        acc = loop.inner_iter_args[0]
        if plan.device is not None:  # (see the docstring: no copy of the output per step)
            acc = _on_device(acc, [size[d] for d in out_dims], plan.device)
        yielded = [b.insert_slice(rows_out, acc, [start if d == dim else 0 for d in out_dims],
                                  [inner[d] for d in out_dims])]
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
