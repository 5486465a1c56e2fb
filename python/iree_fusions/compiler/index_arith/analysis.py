"""The analysis: residues of the integer scalars and tensors an index computation reads
(`IndexAnalysis`)."""

from __future__ import annotations

import re

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_ADDI, ARITH_ANDI, ARITH_CMPI, ARITH_CONSTANT, ARITH_MAXSI, ARITH_MAXUI, ARITH_MINSI,
    ARITH_MINUI, ARITH_MULI, ARITH_ORI, ARITH_REMSI, ARITH_SELECT, ARITH_SHLI, ARITH_SHRSI,
    ARITH_SHRUI, ARITH_SUBI, ARITH_XORI, LINALG_FILL, LINALG_GENERIC, LINALG_INDEX, VIEWS
)

from .concrete import BINARY, CASTS, UTIL_ASSUME_INT, attr_int, int_width, signed
from .abstract import (ANY, Residues, add, cast_residues, divide, exact, hull, multiply,
                       negate, residues)

_NE, _SLT = 1, 2  # arith.cmpi predicates
_ASSUMPTION = re.compile(r"(umin|umax|udiv)\s*=\s*(\d+)")


def floor_mod_divisor(select: ir.Operation) -> int | None:
    """C if `select` is torch's floor-mod by a positive constant C:
    r = remsi(x, C); select(r != 0 and r < 0, r + C, r) (then r + C cannot wrap: r > -C)."""
    cond, then, other = (h.defining_op(v) for v in select.operands)
    if other is None or other.name != ARITH_REMSI:
        return None
    divisor = h.const_int(other.operands[1])
    if not divisor or divisor <= 0:
        return None
    r = other.results[0]
    if then is None or then.name != ARITH_ADDI or r not in list(then.operands) or \
            select.operands[2] != r or cond is None:
        return None
    added = then.operands[1] if then.operands[0] == r else then.operands[0]
    if h.const_int(added) != divisor:
        return None
    tests = [cond] if cond.name == ARITH_CMPI else (
        [h.defining_op(v) for v in cond.operands] if cond.name == ARITH_ANDI else [])
    # The select must add C exactly when r < 0: `r < 0`, alone or and-ed with `r != 0`.
    kinds = []
    for test in tests:
        if test is None or test.name != ARITH_CMPI or test.operands[0] != r or \
                h.const_int(test.operands[1]) != 0:
            return None
        kinds.append(attr_int(test, "predicate"))
    return divisor if sorted(kinds) in ([_SLT], [_NE, _SLT]) else None


def _writes_every_element(op: ir.Operation) -> bool:
    """Every element of each result is a value the body yields: each output's map is a
    permutation of the loops (each iteration writes an element of its own and every element
    is written; a map with a constant leaves the others as they were). A body that reads an
    init is no exception: the scalar analysis takes an init argument as anything
    (`_block_argument`), so what it yields from one is anything too."""
    return all(m.is_permutation for m in h.indexing_maps(op)[h.num_dps_inputs(op):])


def _loop_extent(op: ir.Operation | ir.OpView, dim: int) -> int | None:
    """The static range of loop `dim` of a linalg op, from an operand that reads it as a dim;
    None when only run-time sizes give it."""
    for value, amap in zip(op.operation.operands, h.indexing_maps(op)):
        t = h.tensor_type(value)
        for expr, size in zip(amap.results, t.shape if t is not None else ()):
            if isinstance(expr, ir.AffineDimExpr) and expr.position == dim and \
                    not ir.ShapedType.is_dynamic_size(size):
                return size
    return None


class IndexAnalysis:
    """Residues of integer scalars and of the elements of integer tensors, memoized; `visited`:
    the ops read on the way (a plan's footprint). A tensor's elements are followed through
    reshapes, casts, splat constants, fills and elementwise generics that write every element
    (the yielded scalar); a scalar through the ops of `BINARY` and `CASTS` it bounds,
    constants, `linalg.index` (its loop's range), torch's floor-mod, selects, and
    `util.assume.int` ranges; anything else (a page id read from a tensor) is ANY."""

    def __init__(self) -> None:
        self.memo: dict[ir.Value, Residues] = {}
        self.visited: list[ir.Operation] = []

    def tensor(self, value: ir.Value) -> Residues:
        """Residues of every element of an integer tensor."""
        if value not in self.memo:
            self.memo[value] = self._tensor(value)
        return self.memo[value]

    def scalar(self, value: ir.Value) -> Residues:
        if value not in self.memo:
            width = int_width(value.type)
            self.memo[value] = ANY if width is None else self._scalar(value, width)
        return self.memo[value]

    def _tensor(self, value: ir.Value) -> Residues:
        op = h.defining_op(value)
        if op is None:
            return ANY
        self.visited.append(op)
        if op.name in VIEWS:
            return self.tensor(op.operands[0])
        width = int_width(ir.ShapedType(value.type).element_type)
        if width is None:
            return ANY
        if op.name == ARITH_CONSTANT:
            splat = h.splat_value(op)
            return (exact(width, splat.value, splat.value)
                    if isinstance(splat, ir.IntegerAttr) else ANY)
        if op.name == LINALG_FILL:
            return self.scalar(op.operands[0])
        if op.name != LINALG_GENERIC or not _writes_every_element(op):
            return ANY
        body = list(h.body_block(op).operations)
        return self.scalar(body[-1].operands[h.result_index(value)])

    def _block_argument(self, value: ir.Value) -> Residues:
        """An input element of the generic whose body the argument is."""
        owner = ir.BlockArgument(value).owner.owner
        number = ir.BlockArgument(value).arg_number
        if owner is None or owner.operation.name != LINALG_GENERIC:
            return ANY
        inputs = h.dps_inputs(owner)
        return self.tensor(inputs[number]) if number < len(inputs) else ANY

    def _scalar(self, value: ir.Value, width: int) -> Residues:
        op = h.defining_op(value)
        if op is None:
            return self._block_argument(value)
        name = op.name
        if name == ARITH_CONSTANT:
            c = h.const_int(value)
            return ANY if c is None else exact(width, c, c)
        if name == LINALG_INDEX:
            extent = _loop_extent(op.parent, attr_int(op, "dim"))
            return exact(width, 0, (extent or 1 << (width - 1)) - 1) if extent != 0 else ANY
        if name in CASTS:
            source = op.operands[0]
            return cast_residues(name, self.scalar(source), int_width(source.type), width)
        if name == UTIL_ASSUME_INT:
            return self._assumed(op, h.result_index(value), width)
        if name == ARITH_SELECT:
            divisor = floor_mod_divisor(op)
            if divisor is not None:
                return exact(width, 0, divisor - 1)
            return hull(self.scalar(op.operands[1]), self.scalar(op.operands[2]), width)
        if name in (ARITH_MINSI, ARITH_MAXSI, ARITH_MINUI, ARITH_MAXUI):
            return hull(self.scalar(op.operands[0]), self.scalar(op.operands[1]), width)
        if name not in BINARY:
            return ANY
        a = self.scalar(op.operands[0])
        if name == ARITH_ADDI:
            return add(a, self.scalar(op.operands[1]), width)
        if name == ARITH_SUBI:
            return add(a, negate(self.scalar(op.operands[1]), width), width)
        if name == ARITH_MULI:
            return multiply(a, self.scalar(op.operands[1]), width)
        c = h.const_int(op.operands[1])
        if name == ARITH_SHLI:
            if c is None or not 0 <= c < width:
                return ANY
            return multiply(a, exact(width, 1 << c, 1 << c), width)
        if name in (ARITH_SHRSI, ARITH_SHRUI):
            return ANY if c is None or not 0 <= c < width else divide(name, a, 1 << c, width)
        if name == ARITH_ANDI and c is not None and signed(c, width) >= 0:
            return exact(width, 0, signed(c, width))  # the result's bits are the mask's
        if name in (ARITH_ANDI, ARITH_ORI, ARITH_XORI):
            return ANY
        return divide(name, a, c, width)

    def _assumed(self, op: ir.Operation, index: int, width: int) -> Residues:
        """The range IREE's `util.assume.int` states for operand `index` (the hull of its
        per-call-site assumptions; umin/umax preferred to udiv), ANY where it states none."""
        per_operand = ir.ArrayAttr(op.attributes["assumptions"])
        if index >= len(per_operand):
            return ANY
        out: Residues | None = None
        for assumption in ir.ArrayAttr(per_operand[index]):
            fields = dict((k, int(v)) for k, v in _ASSUMPTION.findall(str(assumption)))
            if "umin" in fields and "umax" in fields:
                r = exact(width, fields["umin"], fields["umax"])
            elif "udiv" in fields:
                r = residues(width, fields["udiv"], 0, 0)
            else:
                return ANY
            out = r if out is None else hull(out, r, width)
        return out or ANY


