"""Affine maps (dim positions, permutations) and reshape reassociations."""

from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir


def is_identity_map(m: ir.AffineMap) -> bool:
    return m.n_dims == len(m.results) and all(
        isinstance(r, ir.AffineDimExpr) and r.position == i
        for i, r in enumerate(m.results)
    )


def map_dim_positions(m: ir.AffineMap) -> list[int] | None:
    """[d_i for each result] when every result is a plain dim, else None."""
    out = []
    for r in m.results:
        if not isinstance(r, ir.AffineDimExpr):
            return None
        out.append(r.position)
    return out


def is_permutation(dims: Sequence[int] | None, n: int) -> bool:
    return dims is not None and len(dims) == n and sorted(dims) == list(range(n))


def is_projected_permutation(dims: Sequence[int] | None, n: int) -> bool:
    return dims is not None and len(set(dims)) == len(dims) and all(0 <= d < n for d in dims)


def reassociation(op: ir.Operation) -> list[list[int]]:
    """The reassociation groups of a tensor.expand_shape / collapse_shape."""
    return [[ir.IntegerAttr(i).value for i in group]
            for group in ir.ArrayAttr(op.attributes["reassociation"])]
