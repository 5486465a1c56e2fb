"""Tensors joined along a dim, in the three forms the passes need (one place: each builds
different IR, for a reason its docstring gives):

* `concat`: `tensor.concat` along a dim (IREE lowers it in its own way: merge-cache-scatters'
  updates and indices);
* `concat_as_generic`: two equal pieces as one elementwise generic over a new leading dim of
  2, collapsed (an op IREE fuses with its producers where a concat would stay a copy:
  merge-cache-scatters under aggressive fusion);
* `stack_by_slices`: `tensor.empty` and one `tensor.insert_slice` per piece, on a new
  leading dim (`stack_by_slices`, batch-mlp-towers' stacked operands, zero-padded when asked)
  or along dim 0 (`concat_by_slices`, batch-gathers' load-time table stack).
"""

from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg

from .attributes import map_attr
from .bodies import fill, generic
from .shapes import Size, cmpi, collapse, index_const, insert_slice, mixed_shape


def concat(values: Sequence[ir.Value], dim: int = 0) -> ir.Value:
    """`tensor.concat` of static tensors along `dim`."""
    types = [ir.RankedTensorType(v.type) for v in values]
    shape = list(types[0].shape)
    shape[dim] = sum(t.shape[dim] for t in types)
    result = ir.RankedTensorType.get(shape, types[0].element_type)
    return tensor.ConcatOp(result, dim, list(values)).result


def concat_as_generic(values: Sequence[ir.Value]) -> ir.Value:
    """Two static [n, ...] tensors joined along dim 0 by one generic [2, n, ...] yielding
    select(index 0 == 0, a, b), collapsed to [2n, ...] (the concatenation's value)."""
    first_t = ir.RankedTensorType(values[0].type)
    rank = first_t.rank
    init = tensor.EmptyOp([2, *first_t.shape], first_t.element_type).result

    def first_or_second(args: list[ir.Value]) -> ir.Value:
        first = cmpi("eq", linalg.IndexOp(0).result, index_const(0))
        return arith.SelectOp(first, args[0], args[1]).result

    gen = generic(list(values), [init], [map_attr(rank + 1, range(1, rank + 1))] * 2 +
                  [map_attr(rank + 1, range(rank + 1))], ["parallel"] * (rank + 1),
                  first_or_second)
    joined = ir.RankedTensorType.get([2 * first_t.shape[0], *first_t.shape[1:]],
                                     first_t.element_type)
    return collapse(gen.results[0], [[0, 1], *([d] for d in range(2, rank + 1))], joined)


def stack_by_slices(values: Sequence[ir.Value], pad_shape: list[int] | None = None
                    ) -> ir.Value:
    """[T, ...]: `tensor.empty` + one insert_slice per value at index i of a new leading dim;
    with `pad_shape`, a zero-filled [T, *pad_shape] each value is written at the origin of.
    Dynamic dims take their sizes from the first value (the caller proved them equal)."""
    first_t = values[0].type
    shape: list[Size] = mixed_shape(values[0]) if pad_shape is None else list(pad_shape)
    result = tensor.EmptyOp([len(values), *shape], first_t.element_type).result
    if pad_shape is not None and any(list(value.type.shape) != shape for value in values):
        elt = first_t.element_type
        zero = arith.ConstantOp(elt, 0.0 if isinstance(elt, ir.FloatType) else 0).result
        result = fill(zero, result)
    for i, value in enumerate(values):
        sizes = list(value.type.shape) if value.type.has_static_shape else shape
        result = insert_slice(value, result, [i] + [0] * len(shape), [1, *sizes])
    return result


def concat_by_slices(values: Sequence[ir.Value]) -> ir.Value:
    """Static [rows_i, ...] tensors joined along dim 0: `tensor.empty` [sum rows_i, ...] + one
    insert_slice per value at its first row."""
    types = [ir.RankedTensorType(v.type) for v in values]
    rest = list(types[0].shape[1:])
    result = tensor.EmptyOp([sum(t.shape[0] for t in types), *rest],
                            types[0].element_type).result
    start = 0
    for value, value_t in zip(values, types):
        result = insert_slice(value, result, [start] + [0] * len(rest),
                              [value_t.shape[0], *rest])
        start += value_t.shape[0]
    return result
