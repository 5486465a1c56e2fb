"""Which ops are reshapes on a path: expand_shape / collapse_shape, and a `tensor.reshape`
(torch's `view` with dynamic sizes, `tensor.reshape %x(%from_elements)`) whose shapes determine
the expand_shape / collapse_shape it is. Sizes are `ir_helpers.dim_key`s."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_INDEX_CAST, ARITH_INDEX_CASTUI, RESHAPES, TENSOR_COLLAPSE_SHAPE, TENSOR_EXPAND_SHAPE,
    TENSOR_FROM_ELEMENTS, TENSOR_RESHAPE
)


@dataclass
class ReshapeView:
    """An expand_shape / collapse_shape, or a tensor.reshape that is one: its kind, groups
    (collapsed dim -> expanded dims) and the sizes of its expanded side."""

    op: ir.Operation
    kind: str  # "tensor.expand_shape" or "tensor.collapse_shape"
    groups: list[list[int]]
    expanded: list[h.DimKey]  # sizes of the expanded side (the result of an expand)


def reshape_view(op: ir.Operation) -> ReshapeView | None:
    """The op as an expand_shape / collapse_shape, or None (another op, or a tensor.reshape
    whose shapes do not determine one: its dynamic dims must pair up with equal sizes)."""
    if op.name in RESHAPES:
        side = op.results[0] if op.name == TENSOR_EXPAND_SHAPE else op.operands[0]
        return ReshapeView(op, op.name, h.reassociation(op), list(h.shape_keys(side)))
    if op.name != TENSOR_RESHAPE:
        return None
    src = list(h.shape_keys(op.operands[0]))
    res = _reshape_result_keys(op, src)
    if res is None:
        return None
    groups = _pair_dims(src, res)
    if groups is not None and len(res) > len(src):
        return ReshapeView(op, TENSOR_EXPAND_SHAPE, groups, res)
    groups = _pair_dims(res, src)
    if groups is not None and len(src) > len(res):
        return ReshapeView(op, TENSOR_COLLAPSE_SHAPE, groups, src)
    return None


def _reshape_result_keys(op: ir.Operation, src: list[h.DimKey]) -> list[h.DimKey] | None:
    """The result sizes of a tensor.reshape: static ones from its type, dynamic ones from the
    shape operand (`tensor.from_elements` of index casts); one dynamic dim on each side with
    equal static products is the source's (the element counts are equal)."""
    shape = list(ir.RankedTensorType(op.results[0].type).shape)
    dyn = [i for i, size in enumerate(shape) if ir.ShapedType.is_dynamic_size(size)]
    src_dyn = [key for key in src if not isinstance(key, int)]
    res: list[h.DimKey] = list(shape)
    if len(dyn) == 1 and len(src_dyn) == 1 and h.numel(
            [key for key in src if isinstance(key, int)]) == h.numel(
            [size for i, size in enumerate(shape) if i not in dyn]):
        res[dyn[0]] = src_dyn[0]
        return res
    elements = h.defining_op(op.operands[1])
    if elements is None or elements.name != TENSOR_FROM_ELEMENTS:
        return None
    for i in dyn:
        elem = elements.operands[i]
        cast = h.defining_op(elem)
        if cast is None or cast.name not in (ARITH_INDEX_CAST, ARITH_INDEX_CASTUI):
            return None
        res[i] = h.size_key(cast.operands[0])
    return res


def _pair_dims(small: list[h.DimKey], big: list[h.DimKey]) -> list[list[int]] | None:
    """Groups of `big`'s dims, one per dim of `small`, each of equal size: a dynamic dim pairs
    with one equal dynamic dim, a static one with consecutive static dims of equal product
    (unit dims join the group before them)."""
    groups, pos = [], 0
    for key in small:
        group = []
        if not isinstance(key, int):
            if pos >= len(big) or big[pos] != key:
                return None
            group, pos = [pos], pos + 1
        else:
            size = 1
            while pos < len(big) and isinstance(big[pos], int) and (size < key or not group):
                size *= big[pos]
                group.append(pos)
                pos += 1
            if size != key or not group:
                return None
        groups.append(group)
    while groups and pos < len(big) and big[pos] == 1:
        groups[-1].append(pos)
        pos += 1
    return groups if pos == len(big) else None


def normalize_reshape(view: ReshapeView) -> ir.Operation:
    """Replaces a tensor.reshape by the expand_shape / collapse_shape it is; returns it."""
    op = view.op
    with ir.InsertionPoint(op), op.location:
        if view.kind == TENSOR_EXPAND_SHAPE:
            sizes = [b.size_from_key(key) for key in view.expanded]
            new = b.expand_mixed(op.operands[0], view.groups, sizes)
        else:
            new = b.collapse(op.operands[0], view.groups, op.results[0].type)
    op.results[0].replace_all_uses_with(new)
    op.erase()
    return h.defining_op(new)


def is_reshape(op: ir.Operation) -> bool:
    """An expand_shape / collapse_shape, or a tensor.reshape that is one (reshape_view)."""
    return op.name in RESHAPES or (op.name == TENSOR_RESHAPE and reshape_view(op) is not None)


def size_text(key: h.DimKey) -> str:
    """A size for a reason: the number, or `?` (a dynamic size)."""
    return str(key) if isinstance(key, int) else "?"
