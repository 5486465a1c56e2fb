"""The fold: each reader binds the copy's source (or a reshape of it) and loads the copy's
part itself; repeated operands merged."""

from __future__ import annotations

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h

from .match import RESHAPE, CopySlice, Read
from .plan import SliceFold, reshape_dims

def _set_arg_type(reader: ir.Operation, operand: int, tensor_type: ir.Type) -> ir.Value:
    arg = h.Workgroups(reader).body_argument(operand)
    arg.set_type(ir.Type.parse(f"!iree_tensor_ext.dispatch.tensor<readonly:{tensor_type}>"))
    return arg


def _set_parts(load: ir.Operation, *parts: list[int]) -> None:
    for name, values in zip(h.SLICE_PARTS, parts, strict=True):
        load.attributes[name] = ir.DenseI64ArrayAttr.get(values)


def _fold_direct(copy: CopySlice, read: Read) -> None:
    """The reader binds the source and loads the copy's part of it (dropping the same unit
    dims); its dynamic dims are the source's, which are the copy's (whole dims)."""
    reader = read.reader
    reader.operands[read.operand] = copy.source
    dispatch = h.Workgroups(reader)
    dims_of = dispatch.argument_dims[dispatch.argument_number(read.operand)]
    for i, dim in zip(dims_of, copy.source_dims):
        reader.operands[i] = dim
    arg = _set_arg_type(reader, read.operand, copy.source.type)
    for load in h.users(arg):
        offsets, sizes, strides = h.static_parts(load)
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
    result_dims = reshape_dims(old)[1]
    with old.location, ir.InsertionPoint(old):
        new = ir.Operation.create(
            RESHAPE, results=[wide_type],
            operands=[copy.source, *copy.source_dims, *result_dims],
            attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                [1, len(copy.source_dims), len(result_dims)])})
    read.reader.operands[read.operand] = new.results[0]
    arg = _set_arg_type(read.reader, read.operand, wide_type)
    for load in h.users(arg):
        offsets, sizes, strides = h.static_parts(load)
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
        b.merge_repeated_operands(reader)
    return text


