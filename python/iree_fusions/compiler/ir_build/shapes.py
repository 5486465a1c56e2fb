"""Shapes of new tensors: reshapes, sizes static or dynamic (`Size`), slices, index constants."""

from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor

from .. import ir_helpers as h
from .attributes import reassociation_attr

# ---------------------------------------------------------------- reshapes


def collapse(value: ir.Value, groups: list[list[int]], result_type: ir.Type) -> ir.Value:
    return tensor.CollapseShapeOp(result_type, value, reassociation_attr(groups)).result


def expand(value: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    elt = ir.RankedTensorType(value.type).element_type
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, elt), value,
                                reassociation_attr(groups), [], shape).result


def merge_groups(src: list[int], dst: list[int]) -> list[list[int]] | None:
    """Reassociation that collapses shape `src` into `dst` by merging consecutive dims."""
    if not dst:
        return None
    groups, i = [], 0
    for d in dst:
        group, size = [], 1
        while i < len(src) and (size < d or not group):
            group.append(i)
            size *= src[i]
            i += 1
        if size != d:
            return None
        groups.append(group)
    while i < len(src) and src[i] == 1:
        groups[-1].append(i)
        i += 1
    return groups if i == len(src) else None


def reshape_to(value: ir.Value, shape: list[int]) -> ir.Value:
    """A row-major reshape: one collapse_shape or expand_shape when possible, else both."""
    src = list(value.type.shape)
    if src == shape:
        return value
    elt = value.type.element_type
    groups = merge_groups(src, shape)
    if groups is not None:
        return collapse(value, groups, ir.RankedTensorType.get(shape, elt))
    groups = merge_groups(shape, src)
    if groups is not None:
        return expand(value, groups, shape)
    flat = collapse(value, [list(range(len(src)))],
                    ir.RankedTensorType.get([h.numel(src)], elt))
    return expand(flat, [list(range(len(shape)))], shape)


# ---------------------------------------------------------------- dynamic sizes

# A size of a new tensor: static (int) or an `index` value (a dynamic dim).
Size = int | ir.Value


def size_of(value: ir.Value, dim: int) -> Size:
    """Dim `dim` of a ranked tensor: its static size, or a `tensor.dim` (at the current
    insertion point and location) of a dynamic one."""
    size = ir.RankedTensorType(value.type).shape[dim]
    if not ir.ShapedType.is_dynamic_size(size):
        return size
    index = arith.ConstantOp(ir.IndexType.get(), dim).result
    return tensor.DimOp(value, index).result


def mixed_shape(value: ir.Value) -> list[Size]:
    """Every dim of a ranked tensor (size_of each)."""
    return [size_of(value, d) for d in range(ir.RankedTensorType(value.type).rank)]


def split_sizes(sizes: Sequence[Size]) -> tuple[list[int], list[ir.Value]]:
    """(static sizes with the dynamic sentinel for values, the values): the operand form of
    slices, expand_shape and friends."""
    static = [s if isinstance(s, int) else ir.ShapedType.get_dynamic_size() for s in sizes]
    return static, [s for s in sizes if not isinstance(s, int)]


def tensor_type_of(sizes: Sequence[Size], element_type: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(split_sizes(sizes)[0], element_type)


def extract_slice(source: ir.Value, offsets: Sequence[Size], sizes: Sequence[Size],
                  result_type: ir.Type | None = None) -> ir.Value:
    """A unit-stride tensor.extract_slice with static or dynamic offsets and sizes;
    `result_type` may drop unit dims (a rank-reducing slice)."""
    static_offsets, dyn_offsets = split_sizes(offsets)
    static_sizes, dyn_sizes = split_sizes(sizes)
    if result_type is None:
        result_type = tensor_type_of(sizes, ir.RankedTensorType(source.type).element_type)
    return tensor.ExtractSliceOp(result_type, source, dyn_offsets, dyn_sizes, [],
                                 static_offsets, static_sizes, [1] * len(sizes)).result


def insert_slice(source: ir.Value, dest: ir.Value, offsets: Sequence[Size],
                 sizes: Sequence[Size]) -> ir.Value:
    """A unit-stride tensor.insert_slice with static or dynamic offsets and sizes."""
    static_offsets, dyn_offsets = split_sizes(offsets)
    static_sizes, dyn_sizes = split_sizes(sizes)
    return tensor.InsertSliceOp(source, dest, dyn_offsets, dyn_sizes, [], static_offsets,
                                static_sizes, [1] * len(sizes)).result


def expand_mixed(value: ir.Value, groups: list[list[int]], sizes: Sequence[Size]) -> ir.Value:
    """tensor.expand_shape to `sizes` (static or dynamic: `output_shape` operands)."""
    static, dynamic = split_sizes(sizes)
    elt = ir.RankedTensorType(value.type).element_type
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(static, elt), value,
                                reassociation_attr(groups), dynamic, static).result


def size_from_key(key: h.DimKey) -> Size:
    """A size named by `ir_helpers.dim_key` as a static size or an index value: the value
    IREE holds, or a `tensor.dim` (at the current insertion point and location) for a
    (tensor, dim) key."""
    if isinstance(key, tuple):
        return size_of(*key)
    return key


# ---------------------------------------------------------------- scalars and slices
# At the current insertion point and location.


def index_const(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def index_value(size: Size) -> ir.Value:
    """An index value of a size (a constant for a static one)."""
    return index_const(size) if isinstance(size, int) else size


def cmpi(pred: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), lhs, rhs).result


def slice_out(value: ir.Value, offsets: Sequence[Size], sizes: Sequence[Size],
              result_shape: Sequence[Size]) -> ir.Value:
    """A unit-stride extract_slice (rank-reducing to `result_shape`), sizes and offsets
    static or dynamic."""
    result_t = tensor_type_of(result_shape, ir.RankedTensorType(value.type).element_type)
    return extract_slice(value, offsets, sizes, result_t)
