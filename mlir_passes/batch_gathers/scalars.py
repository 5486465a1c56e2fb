"""Scalar code in gather bodies (constant tables, select chains, wrapped indices, bounds and size
checks), at the current insertion point and location."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, cf, tensor

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import TENSOR_DIM

from .match import Lookup


# ---------------------------------------------------------------- scalar code in bodies
# At the current insertion point and location (inside a generic's body).


def int_table(values: Sequence[int], width: int = 64) -> ir.Value:
    """An `arith.constant dense<[...]> : tensor<N x i{width}>` (IREE cannot clone
    `tensor<Nxindex>` constants into dispatches: tables of i64 are read and cast)."""
    table_t = ir.RankedTensorType.get([len(values)], ir.IntegerType.get_signless(width))
    data = np.asarray(values, dtype=np.int64 if width == 64 else np.int32)
    return arith.ConstantOp(table_t, ir.DenseElementsAttr.get(data, type=table_t)).result


def entry(table: ir.Value, key: ir.Value) -> ir.Value:
    """table[key] as an index, from an integer constant table."""
    elem = tensor.ExtractOp(table, [key]).result
    return arith.IndexCastOp(ir.IndexType.get(), elem).result


def select_chain(key: ir.Value, values: list[ir.Value], keys: list[int]) -> ir.Value:
    """values[i] where key == keys[i] (values[0] for any other key)."""
    acc = values[0]
    for value, case_key in zip(values[1:], keys[1:]):
        is_case = b.cmpi("eq", key, b.index_const(case_key))
        acc = arith.SelectOp(is_case, value, acc).result
    return acc


def wrap_index(idx: ir.Value, rows: ir.Value) -> ir.Value:
    """idx < 0 ? idx + rows : idx (the wrap of the generics the gather replaces, on the
    lookup's own table's rows)."""
    negative = b.cmpi("slt", idx, b.index_const(0))
    return arith.SelectOp(negative, arith.AddIOp(idx, rows).result, idx).result


def emit_checks(checks: tuple[str | None, str | None], raw: ir.Value, idx: ir.Value,
                rows: ir.Value, skip: ir.Value | None = None) -> None:
    """The lookup's bounds checks: the original index against its own table's rows
    (`skip`: true where the check does not apply)."""
    upper, lower = checks
    if upper is not None:
        in_bounds = b.cmpi("slt", idx, rows)
        if skip is not None:
            in_bounds = arith.OrIOp(skip, in_bounds).result
        cf.AssertOp(in_bounds, upper)
    if lower is not None:
        zero = arith.ConstantOp(raw.type, 0).result
        in_bounds = b.cmpi("sge", raw, zero)
        if skip is not None:
            in_bounds = arith.OrIOp(skip, in_bounds).result
        cf.AssertOp(in_bounds, lower)


def index_in_shape(lookup: Lookup) -> ir.Value:
    """The lookup's index tensor in its index shape (a gather's indices carry a trailing
    unit dim: collapsed)."""
    rank = len(lookup.index_sizes)
    actual = ir.RankedTensorType(lookup.index.type).rank
    if actual == rank:
        return lookup.index
    groups = [[i] for i in range(rank - 1)] + [list(range(rank - 1, actual))]
    shape = [ir.ShapedType.get_dynamic_size() if size is None else size
             for size in lookup.index_shape]
    return b.collapse(lookup.index, groups, ir.RankedTensorType.get(shape, lookup.index_elem))


def materialize(size: h.DimKey) -> b.Size:
    """A size as a builder operand: static, the index value that holds it, or a
    `tensor.dim` (at the current insertion point) of a dim no op carries."""
    return b.size_of(*size) if isinstance(size, tuple) else size


def emit_size_checks(checks: Sequence[tuple[h.DimKey, h.DimKey]], what: str,
                     block: ir.Block) -> None:
    """Host-side checks that two sizes a rewrite treats as one are equal: the batches of a
    concat's slots, which torch.cat requires to be equal and a dynamic export without shape
    facts carries as separate values. An unequal pair stops the call with an error (where
    the original filled the concat's rows with undefined values, or wrote past them).

    They go right after the last op of `block` that defines a size they compare (the
    arguments' imports): host code between two dispatches would cut the call into several
    stream submissions (bench/results/code-costs.md, batch-gathers)."""
    if not checks:
        return
    for key in (size_key for pair in checks for size_key in pair):
        if isinstance(key, ir.Value):
            batching.hoist_chain(key, block, _is_size_op)
    order = h.block_positions(block)
    values = (key[0] if isinstance(key, tuple) else key
              for pair in checks for key in pair)
    last = h.last_definition((v for v in values if isinstance(v, ir.Value)), order)
    insertion = ir.InsertionPoint.at_block_begin(block) if last < 0 else \
        ir.InsertionPoint(h.op_at(order, last + 1))
    with insertion:
        for lhs, rhs in checks:
            equal = b.cmpi("eq", materialize(lhs), materialize(rhs))
            cf.AssertOp(equal, f"batch-gathers: {what}: batch sizes differ ({h.size_text(lhs)} "
                        f"vs {h.size_text(rhs)}; torch.cat needs them equal)")


def _is_size_op(op: ir.Operation) -> bool:
    """Host-side scalar code that computes a size (arith on index/integer scalars,
    tensor.dim, util.assume.int): pure, so it may move up to right after what it reads."""
    return (not len(op.regions) and len(op.results) == 1
            and not isinstance(op.results[0].type, ir.RankedTensorType)
            and (op.name.startswith("arith.") or op.name in (TENSOR_DIM, h.UTIL_ASSUME_INT)))
