"""Attributes and small glue for new ops: affine maps, iterator types, reassociations, the
linalg builders, the first result of what a builder returns."""

from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir

# ---------------------------------------------------------------- attributes


def linalg_builders():
    """`iree.compiler.dialects.linalg`: the builders of named ops (`fill`, `batch_matmul`,
    `batch_vecmat`, `transpose`), imported when a rewrite first builds one."""
    from iree.compiler.dialects import linalg as builders

    return builders


def dims_map(n_dims: int, dims: Sequence[int | None]) -> ir.AffineMap:
    """(d0, ..., d{n-1}) -> (d_dims[0], ...); a None result is the constant 0."""
    return ir.AffineMap.get(n_dims, 0, [
        ir.AffineConstantExpr.get(0) if d is None else ir.AffineDimExpr.get(d) for d in dims])


def map_attr(n_dims: int, dims: Sequence[int | None]) -> ir.AffineMapAttr:
    return ir.AffineMapAttr.get(dims_map(n_dims, dims))


def iterator_types_attr(kinds: Sequence[str]) -> ir.ArrayAttr:
    """`["parallel", "reduction"]` -> the iterator_types attribute of a linalg.generic."""
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def reassociation_attr(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g])
                             for g in groups])


def first_result(built: ir.Value | ir.OpView | ir.Operation) -> ir.Value:
    """The value of a builder that returns either a Value or an op (linalg.fill, ...)."""
    return built if isinstance(built, ir.Value) else built.results[0]
