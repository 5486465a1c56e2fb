"""forward-slice-dispatches: a copy-only dispatch is folded into the dispatches that read it.

IREE's dispatch creation gives a `tensor.extract_slice` that is not contiguous in memory (a
strided slice, or a column range of a row-major tensor) a dispatch of its own when it cannot
clone the slice into its reader (a reshape between them, or a reader that is not a dispatch
root): a `slow_memcpy` that loads the slice and stores it whole, for dispatches that load it
whole. sharktank's Llama makes four per layer (RoPE reads the even and odd columns of Q and K;
in prefill through a reshape that splits the sequence into pages). Here, after dispatch
creation, there is no guessing what IREE does: the copy dispatch is there. Each reader binds
the copy's source instead and loads the slice itself, with the copy's offsets and strides; the
copy goes. One dispatch fewer, the slice is never written, no value changes (the same elements
are loaded), and no tensor is made: a reshape between them is applied to the source (a
reshape of a row-major tensor, free).

    %s = flow.dispatch.workgroups(%q) : (tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> =
           (%a, %o) { %v = load %a offsets [0, 0, 0, 1] sizes [4, 1, 8, 16] strides [1, 1, 1, 2]
                      store %v, %o }
    %r = flow.dispatch.workgroups(%s, %cos) = (%b: tensor<4x8x16xf16>, ...) {
           %x = load %b offsets [0, 0, 0] sizes [4, 8, 16] strides [1, 1, 1]  ... }
  =>
    %r = flow.dispatch.workgroups(%q, %cos) = (%b: tensor<4x1x8x32xf16>, ...) {
           %x = load %b offsets [0, 0, 0, 1] sizes [4, 1, 8, 16] strides [1, 1, 1, 2] ... }

Through a reshape (prefill):
    %t = flow.tensor.reshape %s : tensor<4x?x8x16xf16>{%n} -> tensor<4x?x32x8x16xf16>{%p}
  =>
    %t = flow.tensor.reshape %q : tensor<4x?x8x32xf16>{%n} -> tensor<4x?x32x8x32xf16>{%p}
    (the reader loads [0, 0, 0, 0, 1] [4, %p, 32, 8, 16] [1, 1, 1, 1, 2] of it)

Left alone, with the reason: copies whose sliced dims (not read whole) have offsets, sizes or
strides known only at run time; copies read by anything but loads (of any part: offsets and
strides composed) with static offsets and strides in a dispatch, or by an operand tied to a
result; a reshape that moves a sliced dim, or splits one off whole rows. And, named by the
check (`check_*`), what would load other elements than the copy's: its part outside the source
(part-in-source), a reader's outside the copy's (reader-part-in-copy); through a reshape (of a
copy that drops unit dims: S[:, 1, 2, :] of 4x3x5x64 copied to 4x64 and viewed as 4x1x64 was
viewed as 4x5x64), two sliced dims on one view dim (own-view-dim) or swapped (view-dim-order),
a widened view of another element count than the source's (element-count).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, structural_key)

WORKGROUPS = h.FLOW_DISPATCH_WORKGROUPS
_LOAD, _STORE = h.DISPATCH_TENSOR_LOAD, h.DISPATCH_TENSOR_STORE
_ORDINAL, _RESHAPE = h.DISPATCH_WORKLOAD_ORDINAL, h.FLOW_TENSOR_RESHAPE
_RETURN = "flow.return"
_DYN = ir.ShapedType.get_dynamic_size()
_PARTS = ("static_offsets", "static_sizes", "static_strides")


@dataclass
class CopySlice:
    """A copy dispatch: per source dim, the static (offset, size, stride) of a sliced dim, or
    None for a dim read whole; `kept`: per source dim, the copy result dim (None: dropped)."""

    op: ir.Operation
    source: ir.Value  # the tensor the copy reads (outside)
    source_dims: list[ir.Value]  # its dynamic dims (outside)
    sliced: list[tuple[int, int, int] | None]
    kept: list[int | None]
    result_dims: list[ir.Value]  # the dynamic dims of its result (outside)


@dataclass(frozen=True)
class ViewSlice:
    """Sliced dim `source_dim` of the copy as `span` dims of the reshaped source (more than one:
    split on whole rows): the first one's extent, and the offset and stride of the copy's part."""

    extent: int
    offset: int
    stride: int
    source_dim: int = -1
    span: int = 1


@dataclass
class Read:
    """A dispatch operand reading the copy, directly or through `reshape` (`view`: view dim ->
    ViewSlice, `wide`: the widened view's shape)."""

    reader: ir.Operation
    operand: int  # the reader's operand number
    reshape: ir.Operation | None
    view: dict[int, ViewSlice] | None = None
    wide: list[int] | None = None


@dataclass
class SliceFold:
    copy: CopySlice
    reads: list[Read]


def _static_parts(op: ir.Operation) -> tuple[list[int], list[int], list[int]]:
    """(offsets, sizes, strides) of a dispatch.tensor.load or store, dynamic ones as kDynamic."""
    return tuple(h.i64_array(op, name) for name in _PARTS)


def match_copy(op: ir.Operation) -> CopySlice | None:
    """The dispatch as a CopySlice if its body only loads part of one tensor operand and
    stores it whole into its one result."""
    seg = h.segment_sizes(op)
    if len(op.results) != 1 or seg[0] + seg[1] < 1 or any(t != -1 for t in h.tied_operands(op)):
        return None
    body = op.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    loads = [o for o in ops if o.name == _LOAD]
    stores = [o for o in ops if o.name == _STORE]
    if len(loads) != 1 or len(stores) != 1 or \
            any(o.name not in (_LOAD, _STORE, _ORDINAL, _RETURN) for o in ops):
        return None
    load, store = loads[0], stores[0]
    n_args = seg[1]
    args = list(body.arguments)
    if store.operands[0] != load.results[0] or load.operands[0] not in args[:n_args]:
        return None
    result_type = op.results[0].type
    s_off, s_size, s_stride = _static_parts(store)
    if any(s_off) or any(st != 1 for st in s_stride) or \
            list(store.results) or len(s_size) != result_type.rank:
        return None
    arg_no = args.index(load.operands[0])
    source = op.operands[seg[0] + arg_no]
    src_shape = list(source.type.shape)
    offsets, sizes, strides = _static_parts(load)
    lseg, loperands = h.segment_sizes(load), list(load.operands)  # source, dims, offsets, sizes
    dyn_sizes = iter(loperands[sum(lseg[:3]):sum(lseg[:4])])
    src_dyn = iter(loperands[1:1 + lseg[1]])
    sliced: list[tuple[int, int, int] | None] = []
    for d, extent in enumerate(src_shape):
        size_value = next(dyn_sizes) if sizes[d] == _DYN else None
        dim_value = next(src_dyn) if extent == _DYN else None
        # A unit dim read at 0 is whole, whatever its stride (one element).
        whole = offsets[d] == 0 and (strides[d] == 1 or sizes[d] == extent == 1) and (
            sizes[d] == extent != _DYN or (size_value is not None and size_value == dim_value))
        if whole:
            sliced.append(None)
        elif _DYN in (offsets[d], sizes[d], strides[d], extent):
            return None  # a part known only at run time
        else:
            sliced.append((offsets[d], sizes[d], strides[d]))
    if all(part is None for part in sliced):
        return None
    kept = _kept_dims(src_shape, sliced, list(result_type.shape))
    if kept is None:
        return None
    source_dims = [op.operands[i] for i in h.argument_dims(op)[arg_no]]
    result_dims = list(op.operands)[sum(seg[:3]):sum(seg[:4])]
    return CopySlice(op, source, source_dims, sliced, kept, result_dims)


def _kept_dims(src_shape: list[int], sliced: list[tuple[int, int, int] | None],
               result_shape: list[int]) -> list[int | None] | None:
    """Per source dim, the result dim it becomes (None: a unit dim the copy drops), matched
    from the left as MLIR does."""
    kept: list[int | None] = []
    j = 0
    for d, extent in enumerate(src_shape):
        size = extent if sliced[d] is None else sliced[d][1]
        if j < len(result_shape) and result_shape[j] == size:
            kept.append(j)
            j += 1
        elif size == 1:
            kept.append(None)
        else:
            return None
    return kept if j == len(result_shape) else None


def _static_loads(arg: ir.Value, rank: int) -> bool:
    """Every use of a dispatch argument is a load of a part of it with static offsets and
    strides."""
    for user in h.users(arg):
        if user.name != _LOAD or user.operands[0] != arg:
            return False
        offsets, sizes, strides = _static_parts(user)
        if _DYN in offsets or _DYN in strides or len(sizes) != rank:
            return False
    return True


def _reads(copy: CopySlice) -> list[Read]:
    """The dispatch operands reading the copy's result; NoMatch if anything else reads it."""
    reads: list[Read] = []
    result = copy.op.results[0]
    for use in result.uses:
        user = h.use_owner(use)
        if user.name == _RESHAPE and use.operand_number == 0:
            for use2 in user.results[0].uses:
                reader = h.use_owner(use2)
                reads.append(_read(reader, use2.operand_number, user))
        else:
            reads.append(_read(user, use.operand_number, None))
    if not reads:
        raise NoMatch("nothing reads the copy")
    return reads


def _read(reader: ir.Operation, operand: int, reshape: ir.Operation | None) -> Read:
    if reader.name != WORKGROUPS:
        raise NoMatch(f"read by {reader.name}, which cannot load the slice itself")
    seg = h.segment_sizes(reader)
    if not seg[0] <= operand < seg[0] + seg[1]:
        raise NoMatch("read as a workload or dim of a dispatch")
    if operand - seg[0] in h.tied_operands(reader):
        raise NoMatch("read by a dispatch operand tied to its result (written in place)")
    arg = reader.regions[0].blocks[0].arguments[operand - seg[0]]
    if not _static_loads(arg, reader.operands[operand].type.rank):
        raise NoMatch("a reading dispatch loads it at offsets known only at run time, or "
                      "passes it on")
    return Read(reader, operand, reshape)


def _same_dims(reshape: ir.Operation, shape: list[int], view: list[int], n: int) -> bool:
    """The first `n` dims of the copy's `shape` and the reshape's `view` are the same."""
    if shape[:n] != view[:n]:
        return False
    source_dims, result_dims = _reshape_dims(reshape)
    dynamic = sum(1 for size in shape[:n] if size == _DYN)
    return source_dims[:dynamic] == result_dims[:dynamic]


def _reshape_dims(reshape: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    """The run-time sizes of a flow.tensor.reshape's source and result dims (outside)."""
    seg = h.segment_sizes(reshape)
    operands = list(reshape.operands)
    return operands[1:1 + seg[1]], operands[1 + seg[1]:]


def _reshaped_slices(copy: CopySlice, reshape: ir.Operation) -> list[tuple[int, ViewSlice]]:
    """Per sliced dim of the copy (its part of the source in the source's rank: dropped unit
    dims are a reshape too), the view dim it becomes and its ViewSlice there, each placed on
    its own (`plan_fold` checks them together). A sliced dim keeps its place (the dims before
    it, or all after it, the same on both sides), or is split into static dims with the same
    dims around: with stride 1 and an offset and extent that the inner dims' product P divides,
    the source dim is split into (extent / P, inner dims), the part starting at offset / P."""
    view = list(reshape.results[0].type.shape)
    src_shape = list(copy.source.type.shape)
    shape = [extent if part is None else part[1] for extent, part in zip(src_shape, copy.sliced)]
    out: list[tuple[int, ViewSlice]] = []
    for d, part in enumerate(copy.sliced):
        if part is None:
            continue
        offset, size, stride = part
        tail = len(shape) - d  # dims from d on
        after = shape[d + 1:]
        if len(view) >= tail and all(a == b != _DYN for a, b in zip(shape[d:], view[-tail:])):
            out.append((len(view) - tail, ViewSlice(src_shape[d], offset, stride, d)))
        elif len(view) > d and _same_dims(reshape, shape, view, d + 1):
            out.append((d, ViewSlice(src_shape[d], offset, stride, d)))
        elif _same_dims(reshape, shape, view, d) and \
                all(a == b != _DYN for a, b in zip(after, view[len(view) - len(after):])):
            split = view[d:len(view) - len(after)]
            inner = math.prod(split[1:])
            if not split or _DYN in split or math.prod(split) != size or stride != 1 or \
                    offset % inner or src_shape[d] % inner:
                raise NoMatch(f"the reshape to {view} splits sliced dim {d} where the slice "
                              "does not fall on whole rows of the split")
            out.append((d, ViewSlice(src_shape[d] // inner, offset // inner, 1, d,
                                     len(split))))
        else:
            raise NoMatch(f"the reshape to {view} moves sliced dim {d}")
    return out


# ---------------------------------------------------------------- invariant checks
# Each raises NoMatch("<check>: ...") rather than let the fold load other elements.

def _inside(offset: int, size: int, stride: int, extent: int) -> bool:
    """The part (size kDynamic: known at run time) starts and, if static, ends in [0, extent)."""
    last = offset + (0 if size == _DYN else (size - 1) * stride)
    return offset >= 0 and stride >= 1 and (size == _DYN or size >= 1) and last < extent


def check_part_in_source(copy: CopySlice) -> None:
    """part-in-source: the copy's part of each sliced dim is inside the source's extent."""
    for d, part in enumerate(copy.sliced):
        if part is not None and not _inside(*part, copy.source.type.shape[d]):
            raise NoMatch(f"part-in-source: the copy's part {list(part)} (offset, size, stride) "
                          f"of source dim {d} is not inside its extent "
                          f"{copy.source.type.shape[d]}")


def check_reader_part_in_copy(copy: CopySlice, read: Read,
                              placed: list[tuple[int, ViewSlice]] | None) -> None:
    """reader-part-in-copy: each load of the reader reads inside the copy's part of every sliced
    dim (its result dim, or the view dim it became): composed, inside the source's part."""
    extents = {copy.kept[d]: part[1] for d, part in enumerate(copy.sliced)
               if part is not None and copy.kept[d] is not None} if placed is None else \
        {j: read.reshape.results[0].type.shape[j] for j, _ in placed}
    reader = read.reader
    for load in h.users(reader.regions[0].blocks[0].arguments[
            read.operand - h.segment_sizes(reader)[0]]):
        for k, part in enumerate(zip(*_static_parts(load))):
            if k in extents and not _inside(*part, extents[k]):
                raise NoMatch(f"reader-part-in-copy: a reader loads {list(part)} (offset, size, "
                              f"stride) of dim {k} of extent {extents[k]}, outside the copy's part")


def check_own_view_dims(placed: list[tuple[int, ViewSlice]], view: list[int]) -> None:
    """own-view-dim: each sliced dim becomes view dims of its own (not two unit dims on one)."""
    owner: dict[int, int] = {}
    for j, part in placed:
        for k in range(j, j + part.span):
            if owner.setdefault(k, part.source_dim) != part.source_dim:
                raise NoMatch(f"own-view-dim: sliced dims {owner[k]} and {part.source_dim} both "
                              f"become dim {k} of the reshape to {view}")


def check_view_order(placed: list[tuple[int, ViewSlice]], view: list[int]) -> None:
    """view-dim-order: the sliced dims keep their order in the view (unit dims could swap)."""
    in_order = sorted(placed, key=lambda placement: placement[1].source_dim)
    for (j, first), (k, second) in itertools.pairwise(in_order):
        if k < j + first.span:
            raise NoMatch(f"view-dim-order: sliced dims {first.source_dim} and "
                          f"{second.source_dim} become dims {j} and {k} of the reshape to "
                          f"{view}, in the other order")


def check_element_count(copy: CopySlice, reshape: ir.Operation, wide: list[int]) -> None:
    """element-count: the widened view has the source's element count. The view has the copy's,
    so prod(wide) / prod(view) must be prod(source) / prod(copy): exact fractions over the dims
    that differ (static), the run-time ones the same values (the copy's and its reshape's)."""
    if not copy.result_dims == _reshape_dims(reshape)[0] == copy.source_dims:
        raise NoMatch("element-count: the copy or its reshape has other run-time dims than the "
                      "source")
    view = list(reshape.results[0].type.shape)
    differ = [(w, v) for w, v in zip(wide, view) if w != v]
    widened = None if len(wide) != len(view) or any(_DYN in pair for pair in differ) else \
        math.prod(Fraction(w, v) for w, v in differ)
    sliced = math.prod(Fraction(extent, part[1]) for extent, part in
                       zip(copy.source.type.shape, copy.sliced) if part is not None)
    if widened != sliced:
        raise NoMatch(f"element-count: the widened view {wide} has {widened} times the elements "
                      f"of the view {view}, the source {sliced} times the copy's")


def plan_fold(copy: CopySlice) -> SliceFold:
    reads = _reads(copy)
    check_part_in_source(copy)
    for read in reads:
        placed = None
        if read.reshape is not None:
            placed = _reshaped_slices(copy, read.reshape)
            view = list(read.reshape.results[0].type.shape)
            check_own_view_dims(placed, view)
            check_view_order(placed, view)
            read.view = dict(placed)
            read.wide = [read.view[j].extent if j in read.view else n for j, n in enumerate(view)]
            check_element_count(copy, read.reshape, read.wide)
        check_reader_part_in_copy(copy, read, placed)
    return SliceFold(copy, reads)


def _set_arg_type(reader: ir.Operation, operand: int, tensor_type: ir.Type) -> ir.Value:
    arg = reader.regions[0].blocks[0].arguments[operand - h.segment_sizes(reader)[0]]
    arg.set_type(ir.Type.parse(f"!iree_tensor_ext.dispatch.tensor<readonly:{tensor_type}>"))
    return arg


def _set_parts(load: ir.Operation, *parts: list[int]) -> None:
    for name, values in zip(_PARTS, parts, strict=True):
        load.attributes[name] = ir.DenseI64ArrayAttr.get(values)


def _fold_direct(copy: CopySlice, read: Read) -> None:
    """The reader binds the source and loads the copy's part of it (dropping the same unit
    dims); its dynamic dims are the source's, which are the copy's (whole dims)."""
    reader = read.reader
    reader.operands[read.operand] = copy.source
    dims_of = h.argument_dims(reader)[read.operand - h.segment_sizes(reader)[0]]
    for i, dim in zip(dims_of, copy.source_dims):
        reader.operands[i] = dim
    arg = _set_arg_type(reader, read.operand, copy.source.type)
    for load in h.users(arg):
        offsets, sizes, strides = _static_parts(load)
        parts = []
        for d, part in enumerate(copy.sliced):
            k = copy.kept[d]
            if k is None:  # a unit dim the copy drops
                parts.append(part if part is not None else (0, 1, 1))
            elif part is None:  # the copy reads it whole: the reader's part of it
                parts.append((offsets[k], sizes[k], strides[k]))
            else:  # the reader's part of the copy's part
                parts.append((part[0] + offsets[k] * part[2], sizes[k], part[2] * strides[k]))
        new_offsets, new_sizes, new_strides = (list(column) for column in zip(*parts))
        _set_parts(load, new_offsets, new_sizes, new_strides)


def _fold_reshaped(copy: CopySlice, read: Read) -> None:
    """The reshape is applied to the source instead (the sliced dims widened to the
    source's, as the plan checked); the reader loads the copy's part of that."""
    old = read.reshape
    wide_type = ir.RankedTensorType.get(read.wide, copy.source.type.element_type,
                                        loc=old.location)
    result_dims = _reshape_dims(old)[1]
    with old.location, ir.InsertionPoint(old):
        new = ir.Operation.create(
            _RESHAPE, results=[wide_type],
            operands=[copy.source, *copy.source_dims, *result_dims],
            attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                [1, len(copy.source_dims), len(result_dims)])})
    read.reader.operands[read.operand] = new.results[0]
    arg = _set_arg_type(read.reader, read.operand, wide_type)
    for load in h.users(arg):
        offsets, sizes, strides = _static_parts(load)
        for view_dim, part in read.view.items():  # the reader's part of the copy's part
            offsets[view_dim] = part.offset + offsets[view_dim] * part.stride
            strides[view_dim] = part.stride * strides[view_dim]
        _set_parts(load, offsets, sizes, strides)


def fold_copy(plan: SliceFold) -> str:
    copy = plan.copy
    reshaped = sum(read.reshape is not None for read in plan.reads)
    text = (f"{copy.op.results[0].type} copy of {copy.source.type} loaded by "
            f"{len(plan.reads)} dispatch operand(s) from the source"
            + (f" ({reshaped} through a reshape of it)" if reshaped else ""))
    for read in plan.reads:
        (_fold_direct if read.reshape is None else _fold_reshaped)(copy, read)
    for reshape in dict.fromkeys(read.reshape for read in plan.reads
                                 if read.reshape is not None):
        if not list(reshape.results[0].uses):
            reshape.erase()
    copy.op.erase()
    for reader in dict.fromkeys(read.reader for read in plan.reads):
        merge_repeated_operands(reader)
    return text


def merge_repeated_operands(op: ir.Operation) -> ir.Operation:
    """The dispatch with each tensor operand passed once (IREE's later passes expect that:
    RoPE's even and odd columns, once folded, are the same source twice); the uses of a
    repeated argument become uses of its first one."""
    seg, operands = h.segment_sizes(op), list(op.operands)
    args = list(op.regions[0].blocks[0].arguments)
    spans, tied, n = h.argument_dims(op), h.tied_operands(op), seg[1]
    seen: list[tuple[int, ir.Value, list[ir.Value]]] = []
    drop: set[int] = set()
    for i in range(n):
        value = operands[seg[0] + i]
        if not isinstance(value.type, ir.RankedTensorType) or i in tied:
            continue
        dims = [operands[k] for k in spans[i]]
        first = next((j for j, v, d in seen if v == value and d == dims
                      and args[j].type == args[i].type), None)
        if first is None:
            seen.append((i, value, dims))
            continue
        args[i].replace_all_uses_with(args[first])
        drop.add(i)
    if not drop:
        return op
    new, _ = h.rebuild_workgroups(op, [i for i in range(n) if i not in drop], [], [])
    b.replace_op(op, new)
    return new


@dataclass(frozen=True)
class ForwardSliceDispatches(CandidatePass[SliceFold]):
    """Folds copy-only dispatches (IREE's `slow_memcpy` of a non-contiguous slice) into the
    dispatches that load them. Sure of its gain: it runs after dispatch creation and removes
    a dispatch that exists."""

    name = "forward-slice-dispatches"
    phase = "flow"
    description = ("a dispatch that only copies a non-contiguous slice (RoPE's even/odd "
                   "columns) -> its readers load the slice from the source themselves")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[SliceFold]]:
        for op in (o.operation for o in block.operations):
            copy = match_copy(op) if op.name == WORKGROUPS else None
            if copy is None:
                continue
            key = structural_key("copy-dispatch", h.type_text(copy.source),
                                 h.type_text(op.results[0]), tuple(copy.sliced))
            yield Candidate.of(key, op, f"{op.results[0].type} copy of {copy.source.type}",
                               lambda copy=copy: plan_fold(copy))

    def footprint(self, candidate: Candidate[SliceFold], ctx: PassContext) -> Footprint:
        plan = candidate.plan
        ops = [plan.copy.op, *(read.reader for read in plan.reads),
               *(read.reshape for read in plan.reads if read.reshape is not None)]
        return Footprint.of(reads=ops, writes=ops)

    def apply(self, candidate: Candidate[SliceFold], ctx: PassContext) -> str:
        return fold_copy(candidate.plan)
