"""Symbolic equality of integer values: linear forms modulo 2^w (sizes IREE computes twice
in different ways)."""

from __future__ import annotations

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_ADDI, ARITH_CONSTANT, ARITH_INDEX_CAST, ARITH_INDEX_CASTUI, ARITH_MULI, ARITH_SUBI
)

from .concrete import INDEX_WIDTH, UTIL_ASSUME_INT, int_width, unsigned

Form = tuple[frozenset, int]  # ({(leaf value, coefficient)}, constant), modulo 2^w


def linear_form(value: ir.Value, width: int | None = None, depth: int = 0) -> Form:
    """`value` as a sum of leaves times coefficients plus a constant, modulo 2^w (the ring's
    own operations, so exact whatever wraps): through constants, addi, subi, muli by a
    constant, index_cast between equal widths and `util.assume.int` (which returns its
    operand); any other value is a leaf."""
    width = width or int_width(value.type) or INDEX_WIDTH
    op = h.defining_op(value)
    leaf: Form = (frozenset({(value, 1)}), 0)
    if op is None or depth > 32:
        return leaf
    name = op.name
    if name == ARITH_CONSTANT:
        c = h.const_int(value)
        return leaf if c is None else (frozenset(), unsigned(c, width))
    if name == UTIL_ASSUME_INT:
        return linear_form(op.operands[h.result_index(value)], width, depth + 1)
    if name in (ARITH_INDEX_CAST, ARITH_INDEX_CASTUI) and \
            int_width(op.operands[0].type) == width:
        return linear_form(op.operands[0], width, depth + 1)
    if name not in (ARITH_ADDI, ARITH_SUBI, ARITH_MULI):
        return leaf
    a, b = (linear_form(v, width, depth + 1) for v in op.operands)
    if name == ARITH_MULI:
        if a[0] and b[0]:
            return leaf
        (terms, c), k = (a, b[1]) if not b[0] else (b, a[1])
        return _form({v: x * k for v, x in terms}, c * k, width)
    sign = 1 if name == ARITH_ADDI else -1
    coefficients: dict[ir.Value, int] = dict(a[0])
    for v, x in b[0]:
        coefficients[v] = coefficients.get(v, 0) + sign * x
    return _form(coefficients, a[1] + sign * b[1], width)


def _form(coefficients: dict, constant: int, width: int) -> Form:
    terms = frozenset((v, unsigned(x, width)) for v, x in coefficients.items()
                      if unsigned(x, width))
    return terms, unsigned(constant, width)


def same_value(a: ir.Value, b: ir.Value) -> bool:
    """Two integer values provably equal: the same value, or the same linear form (sizes IREE
    computes twice: `assume.int(n * 32)` and `assume.int(n) * 32`)."""
    if a == b:
        return True
    width = int_width(a.type)
    return width is not None and width == int_width(b.type) and \
        linear_form(a) == linear_form(b)


def same_values(a: list[ir.Value], b: list[ir.Value]) -> bool:
    """Two lists of integer values, pairwise `same_value`."""
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
