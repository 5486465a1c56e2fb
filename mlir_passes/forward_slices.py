"""forward-slices: a copy-only slice read by elementwise generics is read through their maps.

IREE's dispatch creation may give a `tensor.extract_slice` of a computed tensor that is not
contiguous in memory (a strided slice, or a column range of a row-major tensor) a dispatch
of its own: a `slow_memcpy` that writes the slice for the dispatch that reads it.
sharktank's Llama makes four per layer: RoPE reads the even and odd columns of the Q and K
projections. (Small programs often have the slice cloned into its reader instead: the driver
weighs the change against stock and keeps it only where dispatches or bytes between them
drop.) The pass folds each such slice into the indexing maps of the elementwise generics
that read it, which then read the source itself, at offset + stride * index, in their own
dispatch; nothing is copied and no value changes (the same elements are read).

    %q  = ... -> tensor<4x1x8x32xf16>
    %ev = tensor.extract_slice %q[0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 2]
            : tensor<4x1x8x32xf16> to tensor<4x8x16xf16>           (a copy dispatch)
    %r  = linalg.generic {maps = [(d0, d1, d2) -> (d0, d1, d2), ...]} ins(%ev, %cos)
  =>
    %r  = linalg.generic {maps = [(d0, d1, d2) -> (d0, 0, d1, d2 * 2), ...]} ins(%q, %cos)

Left alone (with the reason): slices with offsets or strides known only at run time, slices
contiguous in memory (IREE makes them a `flow.tensor.slice`, no dispatch), slices of
constants and globals (folded at compile time) or of block arguments (IREE moves those into
the reading dispatch), part of a dim at stride 1 (rotate-half's halves: the map would be a
plain dim, or `d + offset`, which crashes IREE 3.13's dispatch naming), slices read by
anything but an elementwise generic's input (the copy would stay for that reader), and, for a
CPU target, the slice of an attention's first value columns (rewrite-attention then computes
only those: `compiler/analyses/attention_columns.py`). The rewrite creates no
tensor, so it never makes one bigger; dims may be dynamic (the maps need only the offsets
and strides).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.analyses.attention_columns import is_attention_column_slice
from iree_fusions.compiler.ir_helpers import ARITH_CONSTANT, TENSOR_EXTRACT_SLICE
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, option, structural_key)


_CONSTANT_SOURCES = (ARITH_CONSTANT, h.UTIL_GLOBAL_LOAD, h.FLOW_TENSOR_CONSTANT)


@dataclass
class SlicePlan:
    """The slice, and per reader the input operands that read it."""

    slice_op: ir.Operation
    # Per dim of the source (its sliced dims split in two): the index in the slice's dims.
    source_exprs: list[ir.AffineExpr]
    splits: list[list[int] | None]  # per source dim: the two sizes it is split into, if any
    readers: list[tuple[ir.Operation, list[int]]]


def _dims_of_source(op: ir.Operation) -> list[int | None]:
    """Per source dim, the slice result dim it becomes (None: a unit dim the slice drops),
    matched from the left as MLIR does. Which of several unit dims is kept does not matter:
    a unit dim's index is 0 either way."""
    kept = h.kept_dims(h.i64_array(op, "static_sizes"), list(op.results[0].type.shape))
    if kept is None:
        raise NoMatch("rank-reduced-dims",
                      "a rank-reducing slice whose dropped dims cannot be told")
    return kept


def _contiguous(op: ir.Operation) -> bool:
    """The slice is one contiguous run of its (row-major) source: unit strides, and past the
    first dim it cuts, every dim whole."""
    source_shape = list(op.operands[0].type.shape)
    sizes = h.i64_array(op, "static_sizes")
    if any(stride != 1 for stride in h.i64_array(op, "static_strides")):
        return False
    cut = next((i for i, (size, full) in enumerate(zip(sizes, source_shape)) if size != full),
               None)
    if cut is None:
        return True
    return all(size == 1 for size in sizes[:cut]) and all(
        not ir.ShapedType.is_dynamic_size(full) and size == full
        for size, full in zip(sizes[cut + 1:], source_shape[cut + 1:]))


def _from_contraction(value: ir.Value) -> bool:
    """Whether the value is a contraction's result, through reshapes and elementwise generics
    of one input (a projection, cast to f16 and split into heads: RoPE's Q and K)."""
    op = h.producer_through_views(value)
    while op is not None and h.is_elementwise_generic(op) and len(h.dps_inputs(op)) == 1:
        op = h.producer_through_views(h.dps_inputs(op)[0])
    return op is not None and h.is_reduction_or_contraction(op)


def plan_slice(op: ir.Operation, after_contractions: bool = True,
               attention_columns: bool = False) -> SlicePlan:
    """The plan for one extract_slice, or NoMatch at the check that fails.
    `attention_columns`: leave the slice of an attention's first value columns to
    rewrite-attention (a CPU target: it computes only those)."""
    if h.has_dynamic_offsets(op):
        raise NoMatch("runtime-offsets", "offsets or strides known only at run time")
    if attention_columns and is_attention_column_slice(op):
        raise NoMatch("attention-value-columns",
                      "the first value columns of an attention's result: rewrite-attention "
                      "computes only those (llvm-cpu; read-columns)")
    if not after_contractions and _from_contraction(op.operands[0]):
        raise NoMatch("contraction-slice",
                      "a slice of a contraction's result (RoPE's halves of Q or K): left to "
                      "forward-slice-dispatches, which folds IREE's copy of it after dispatch "
                      "creation where IREE makes one (after-contractions=false)")
    source = op.operands[0]
    producer = h.defining_op(source)
    if producer is None:
        raise NoMatch("block-argument",
                      "a slice of a block argument (IREE moves it into the reading dispatch)")
    if producer.name in _CONSTANT_SOURCES:
        raise NoMatch("folded-slice", f"a slice of {producer.name} (folded at compile time)")
    if _contiguous(op):
        raise NoMatch("contiguous",
                      "contiguous in memory (IREE makes it a flow.tensor.slice, no copy "
                      "dispatch)")
    result = op.results[0]
    readers: dict[ir.Operation, list[int]] = {}
    for use in result.uses:
        user = h.use_owner(use)
        if not h.is_elementwise_generic(user):
            raise NoMatch("reader-not-elementwise",
                          f"read by {user.name} (only elementwise linalg.generic inputs read "
                          "through a map)")
        if use.operand_number >= len(h.dps_inputs(user)):
            raise NoMatch("in-place-init", "written in place by a linalg.generic (an init operand)")
        readers.setdefault(user, []).append(use.operand_number)
    if not readers:
        raise NoMatch("no-reader", "no reader")
    offsets = h.i64_array(op, "static_offsets")
    strides = h.i64_array(op, "static_strides")
    sizes = h.i64_array(op, "static_sizes")
    exprs: list[ir.AffineExpr] = []
    splits: list[list[int] | None] = []  # per source dim: the sizes it is split into
    for j, (offset, stride, size, full, dim) in enumerate(zip(
            offsets, strides, sizes, source.type.shape, _dims_of_source(op))):
        if dim is None:  # a unit dim the slice drops
            exprs.append(ir.AffineConstantExpr.get(offset))
            splits.append(None)
            continue
        if h.dim_key(result, dim) == h.dim_key(source, j):  # the whole dim (static or not)
            exprs.append(ir.AffineDimExpr.get(dim))
            splits.append(None)
            continue
        split, split_exprs = _split_dim(offset, stride, size, full, ir.AffineDimExpr.get(dim))
        exprs += split_exprs
        splits.append(split)
    return SlicePlan(op, exprs, splits, list(readers.items()))


def _split_dim(offset: int, stride: int, size: int, full: int, dim: ir.AffineExpr
               ) -> tuple[list[int], list[ir.AffineExpr]]:
    """The slice of one dim as an index into that dim split in two (a reshape that costs
    nothing): the sizes of the split and the two index expressions. A run of `size` at stride
    1 from `offset` lies in blocks of b = gcd(full, offset, size): [full / b, b] read at
    (offset / b + d floordiv b, d mod b), or (offset / size, d) when b = size; every
    stride-th element from offset < stride is [size, stride] read at (d, offset), and from
    a later group of size * stride elements [full / group, size, stride] read at
    (offset / group, d, offset mod group). No map is
    `d + offset`: that crashes IREE 3.13's dispatch naming (SIGSEGV in inferConvolutionDims);
    and a plain dim on a longer dim would set the loop's range."""
    if ir.ShapedType.is_dynamic_size(full) or ir.ShapedType.is_dynamic_size(size):
        raise NoMatch("dynamic-dim-part", "part of a dynamic dim")
    const = ir.AffineConstantExpr.get
    if stride == 1:
        block = math.gcd(math.gcd(full, offset), size)
        if block == size:
            return [full // size, size], [const(offset // size), dim]
        if block > 1:
            return [full // block, block], [
                ir.AffineFloorDivExpr.get(dim, const(block)) + offset // block, dim % block]
    elif full == size * stride and offset < stride:
        return [size, stride], [dim, const(offset)]
    elif full % (size * stride) == 0 and offset % (size * stride) < stride:
        group = size * stride  # whole groups of `size` members, read at one member
        return [full // group, size, stride], [const(offset // group), dim,
                                                const(offset % group)]
    raise NoMatch("no-split",
                  f"{size} of {full} from {offset} at stride {stride}: no split of the dim "
                  "holds it as whole blocks or as one member of each group")


def forward_slice(plan: SlicePlan) -> str:
    """Each reader reads the slice's source (its sliced dims split in two by an
    expand_shape) through its map composed with the slice's."""
    source = plan.slice_op.operands[0]
    if any(plan.splits):
        groups, sizes, at = [], [], 0
        with plan.slice_op.location, ir.InsertionPoint(plan.slice_op):
            for d, split in enumerate(plan.splits):
                parts = split or [b.size_of(source, d)]
                groups.append(list(range(at, at + len(parts))))
                sizes += parts
                at += len(parts)
            source = b.expand_mixed(source, groups, sizes)
    for reader, operands in plan.readers:
        maps = h.indexing_maps(reader)
        for number in operands:
            old = maps[number]
            maps[number] = ir.AffineMap.get(old.n_dims, old.n_symbols,
                                            [expr.compose(old) for expr in plan.source_exprs])
            reader.operands[number] = source
        reader.attributes["indexing_maps"] = ir.ArrayAttr.get(
            [ir.AffineMapAttr.get(amap) for amap in maps])
    text = (f"{plan.slice_op.results[0].type} slice of {plan.slice_op.operands[0].type} read "
            f"as {source.type} by {len(plan.readers)} generic(s)")
    plan.slice_op.erase()
    return text


@dataclass(frozen=True)
class ForwardSlices(CandidatePass[SlicePlan]):
    name = "forward-slices"
    phase = "linalg"
    description = ("a non-contiguous tensor.extract_slice read by elementwise generics -> "
                   "read through their indexing maps (no copy dispatch)")

    after_contractions: bool = option(
        False, "slices of a contraction's result too (by default left to "
        "forward-slice-dispatches where it is selected: it folds IREE's copy of one after "
        "dispatch creation, where IREE makes one: nothing to weigh)")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[SlicePlan]]:
        # Slices left to another pass, only when it is selected: an attention's first value
        # columns to rewrite-attention (where it computes only those), a contraction's result
        # to forward-slice-dispatches (unless after-contractions).
        attention = ctx.selected_pass("rewrite-attention")
        to_attention = attention is not None and attention.reads_value_columns(ctx)
        to_dispatches = not self.after_contractions and \
            ctx.selected_pass("forward-slice-dispatches") is not None
        for op in block.operations:
            op = op.operation
            if op.name != TENSOR_EXTRACT_SLICE:
                continue
            key = structural_key("forward-slices", h.op_signature(op))
            # Not `sure`: IREE clones some such slices into their reading dispatch (small
            # cases do), so the compile driver weighs the change against stock.
            yield Candidate.of(key, op, f"{op.results[0].type} slice",
                               lambda op=op: plan_slice(op, not to_dispatches, to_attention))

    def footprint(self, candidate: Candidate[SlicePlan], ctx: PassContext) -> Footprint:
        plan = candidate.plan
        ops = [plan.slice_op, *(reader for reader, _ in plan.readers)]
        return Footprint.of(reads=ops, writes=ops)

    def apply(self, candidate: Candidate[SlicePlan], ctx: PassContext) -> str:
        return forward_slice(candidate.plan)
