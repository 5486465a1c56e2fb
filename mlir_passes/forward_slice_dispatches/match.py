"""Which dispatches are copies of a slice, and what reads them (match_copy, find_reads)."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.compiler.ir_helpers.names import FLOW_RETURN

WORKGROUPS = h.FLOW_DISPATCH_WORKGROUPS
LOAD, STORE = h.DISPATCH_TENSOR_LOAD, h.DISPATCH_TENSOR_STORE
ORDINAL, RESHAPE = h.DISPATCH_WORKLOAD_ORDINAL, h.FLOW_TENSOR_RESHAPE
RETURN = FLOW_RETURN
DYN = ir.ShapedType.get_dynamic_size()


@dataclass(frozen=True)
class ViewSlice:
    """Sliced dim `source_dim` of the copy as `span` dims of the reshaped source (more than one:
    split on whole rows): the first one's extent, and the offset and stride of the copy's part."""

    extent: int
    offset: int
    stride: int
    source_dim: int
    span: int = 1


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


@dataclass
class Read:
    """A dispatch operand reading the copy, directly or through `reshape` (`view`: view dim ->
    ViewSlice, `wide`: the widened view's shape)."""

    reader: ir.Operation
    operand: int  # the reader's operand number
    reshape: ir.Operation | None
    view: dict[int, ViewSlice] | None = None
    wide: list[int] | None = None


class WholeCopy(NoMatch):
    """A copy of the whole source (no slice to load in place): not a slice, not reported."""


def copy_like(op: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """(load, store) of a dispatch whose body only loads a tensor and stores into its one
    result (IREE's `slow_memcpy` dispatches): the copies the pass looks at, else None."""
    if op.name != WORKGROUPS or len(op.results) != 1:
        return None
    ops = [o.operation for o in op.regions[0].blocks[0].operations]
    loads = [o for o in ops if o.name == LOAD]
    stores = [o for o in ops if o.name == STORE]
    if len(loads) != 1 or len(stores) != 1 or \
            any(o.name not in (LOAD, STORE, ORDINAL, RETURN) for o in ops):
        return None
    return loads[0], stores[0]


def match_copy(op: ir.Operation) -> CopySlice:
    """A copy-like dispatch as a CopySlice: it loads part of one tensor operand (static
    offsets, sizes and strides on the dims it slices) and stores it whole into its result;
    NoMatch otherwise, with the reason."""
    dispatch = h.Workgroups(op)
    load, store = (h.DispatchTensorAccess(access) for access in copy_like(op))
    if h.tied_operands(op)[0] != -1:  # its one result
        raise NoMatch("copy-in-place",
                      "a copy into an operand tied to its result (written in place)")
    args = dispatch.body_arguments
    if store.value != load.value or load.tensor not in args[:len(dispatch.arguments)]:
        raise NoMatch("copy-stores-other",
                      "a copy that stores something else than what it loads from an operand")
    result_type = op.results[0].type
    s_off, s_size, s_stride = store.parts
    if any(s_off) or any(st != 1 for st in s_stride) or s_size != list(result_type.shape):
        raise NoMatch("copy-partial-store", "a copy that writes part of its result")
    arg_no = args.index(load.tensor)
    source = dispatch.arguments[arg_no]
    src_shape = list(source.type.shape)
    offsets, sizes, strides = load.parts
    dyn_sizes = iter(load.dynamic_sizes)
    src_dyn = iter(load.tensor_dims)
    sliced: list[tuple[int, int, int] | None] = []
    for d, extent in enumerate(src_shape):
        size_value = next(dyn_sizes) if sizes[d] == DYN else None
        dim_value = next(src_dyn) if extent == DYN else None
        # A unit dim read at 0 is whole, whatever its stride (one element).
        whole = offsets[d] == 0 and (strides[d] == 1 or sizes[d] == extent == 1) and (
            sizes[d] == extent != DYN or size_value is not None and dim_value is not None
            and ia.same_value(h.dispatch_operand(op, size_value),
                              h.dispatch_operand(op, dim_value)))
        if whole:
            sliced.append(None)
        elif DYN in (offsets[d], sizes[d], strides[d], extent):
            raise NoMatch("runtime-slice-dim",
                          f"dim {d} of the source is sliced at offsets, sizes or strides "
                          "known only at run time")
        else:
            sliced.append((offsets[d], sizes[d], strides[d]))
    if all(part is None for part in sliced):
        raise WholeCopy("whole-copy", "a copy of the whole source (no slice to load in place)")
    kept = h.kept_dims([extent if part is None else part[1]
                        for extent, part in zip(src_shape, sliced)], list(result_type.shape))
    if kept is None:
        raise NoMatch("copy-drops-dim",
                      "a copy whose result drops a dim that is not a unit dim of its part")
    source_dims = [op.operands[i] for i in dispatch.argument_dims[arg_no]]
    result_dims = dispatch.result_dims
    return CopySlice(op, source, source_dims, sliced, kept, result_dims)


def _static_loads(arg: ir.Value, rank: int) -> bool:
    """Every use of a dispatch argument is a load of a part of it with static offsets and
    strides."""
    for user in h.users(arg):
        if user.name != LOAD:  # (a load's source is its only binding operand)
            return False
        offsets, sizes, strides = h.static_parts(user)
        if DYN in offsets or DYN in strides or len(sizes) != rank:
            return False
    return True


def find_reads(copy: CopySlice) -> list[Read]:
    """The dispatch operands reading the copy's result; NoMatch if anything else reads it."""
    reads: list[Read] = []
    result = copy.op.results[0]
    for use in result.uses:
        user = h.use_owner(use)
        if user.name == RESHAPE and use.operand_number == 0:
            for use2 in user.results[0].uses:
                reader = h.use_owner(use2)
                reads.append(_read(reader, use2.operand_number, user))
        else:
            reads.append(_read(user, use.operand_number, None))
    if not reads:
        raise NoMatch("no-reader", "nothing reads the copy")
    return reads


def _read(reader: ir.Operation, operand: int, reshape: ir.Operation | None) -> Read:
    if reader.name != WORKGROUPS:
        raise NoMatch("reader-not-dispatch",
                      f"read by {reader.name}, which cannot load the slice itself")
    dispatch = h.Workgroups(reader)
    # (a tensor is an argument of the dispatch: its workload and dims are index values)
    argument = dispatch.argument_number(operand)
    if argument in h.tied_operands(reader):
        raise NoMatch("reader-in-place",
                      "read by a dispatch operand tied to its result (written in place)")
    arg = dispatch.body_argument(operand)
    if not _static_loads(arg, reader.operands[operand].type.rank):
        raise NoMatch("reader-runtime-load",
                      "a reading dispatch loads it at offsets known only at run time, or "
                      "passes it on")
    return Read(reader, operand, reshape)

