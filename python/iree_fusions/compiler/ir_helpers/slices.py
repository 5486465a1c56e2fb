"""Slices: the offsets, sizes and strides of the ops that take them (`tensor.extract_slice`,
`tensor.insert_slice`, `iree_tensor_ext.dispatch.tensor.load` / `.store`), static or given at
run time, and which source dims a rank-reducing slice keeps."""

from __future__ import annotations

from iree.compiler import ir

from .values import i64_array

# The attributes that hold a slice's static offsets, sizes and strides (kDynamic: an operand).
SLICE_PARTS = ("static_offsets", "static_sizes", "static_strides")


def static_parts(op: ir.Operation) -> tuple[list[int], list[int], list[int]]:
    """(offsets, sizes, strides) of a slice op, the dynamic ones as kDynamic."""
    return tuple(i64_array(op, name) for name in SLICE_PARTS)


def has_dynamic_offsets(op: ir.Operation) -> bool:
    """A slice op with an offset or stride given at run time."""
    return any(ir.ShapedType.is_dynamic_size(v) for name in ("static_offsets", "static_strides")
               for v in i64_array(op, name))


def slice_sizes(op: ir.Operation) -> list[int | ir.Value]:
    """The sizes of a tensor.insert_slice / extract_slice: static, or its size operands (the
    dynamic operands are offsets, sizes, strides, in that order, at the end)."""
    dynamic = iter(op.operands[len(op.operands) - _dynamic_count(op, "static_sizes")
                               - _dynamic_count(op, "static_strides"):])
    return [next(dynamic) if ir.ShapedType.is_dynamic_size(size) else size
            for size in i64_array(op, "static_sizes")]


def _dynamic_count(op: ir.Operation, attr: str) -> int:
    return sum(ir.ShapedType.is_dynamic_size(size) for size in i64_array(op, attr))


def kept_dims(sizes: list[int], result_shape: list[int]) -> list[int | None] | None:
    """Per source dim of a slice of `sizes` (kDynamic for a size given at run time), the
    result dim it becomes, or None for a unit dim the slice drops; matched from the left as
    MLIR does (which of several unit dims is kept does not matter: a unit dim's index is 0
    either way). None when the sizes cannot give `result_shape` that way."""
    kept: list[int | None] = []
    j = 0
    for size in sizes:
        if j < len(result_shape) and result_shape[j] == size:
            kept.append(j)
            j += 1
        elif size == 1:
            kept.append(None)
        else:
            return None
    return kept if j == len(result_shape) else None


def dropped_dims(op: ir.Operation) -> list[int] | None:
    """The source dims an extract_slice drops (unit sizes), or None when that is ambiguous."""
    kept = kept_dims(i64_array(op, "static_sizes"), list(op.results[0].type.shape))
    return None if kept is None else [dim for dim, to in enumerate(kept) if to is None]
