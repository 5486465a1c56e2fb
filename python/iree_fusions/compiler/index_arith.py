"""Integer index arithmetic as the IR computes it: fixed widths, two's-complement wrap, signed
and unsigned ops, in two domains over the same ops.

An integer SSA value of width w is a bit pattern, an element of Z/2^w; `arith.addi`, `subi`,
`muli` and `shli` are the ring's operations (they wrap), the signed ops (`divsi`, `remsi`,
`extsi`, `index_cast`, ...) read the pattern as an integer in [-2^(w-1), 2^(w-1)), the unsigned
ones (`divui`, `remui`, `extui`, `index_castui`, ...) as one in [0, 2^w). `index` is 64 bits
wide (IREE's 64-bit targets: llvm-cpu on x86-64/aarch64, CUDA, ROCm, Vulkan).

- **Concrete** (`evaluate`, `Concrete`): the value of every op for given inputs, as MLIR's
  arith folders define it; an undefined result (division by zero, a signed division that
  overflows, a shift by the width or more) raises `Undefined`. The reference the abstract
  domain is tested against (test_index_arith.py: random index generics, brute force).
- **Abstract** (`Residues`, `IndexAnalysis`): a set of patterns `m * k + r (mod 2^w)`, k any
  integer, r in [lo, hi], with m a power of two dividing 2^w. Because m divides 2^w, the ring's
  operations keep residues modulo m exactly, wrap or not: sharktank's cache rows
  `768 * page + [0, 127]` (page any i64, which may wrap) are `256 * k + [0, 127]` in Z/2^64,
  and V's `... + [128, 255]` never meets them. m = 2^w is an interval of patterns; a cast
  keeps it an interval only when no wrap can cross the boundary it reads at (`extui` of an
  i8 in [-1, 2] is {255, 0, 1, 2}, residues modulo 256, not [-1, 2]); anything the analysis
  cannot bound is m = 1 (`ANY`). `disjoint` proves that two sets share no pattern.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_ADDI, ARITH_ANDI, ARITH_CEILDIVSI, ARITH_CEILDIVUI, ARITH_CMPI, ARITH_CONSTANT,
    ARITH_DIVSI, ARITH_DIVUI, ARITH_EXTSI, ARITH_EXTUI, ARITH_INDEX_CAST, ARITH_INDEX_CASTUI,
    ARITH_MULI, ARITH_ORI, ARITH_SELECT, ARITH_SUBI, ARITH_XORI, LINALG_FILL, LINALG_GENERIC,
    LINALG_INDEX, RESHAPES, TENSOR_CAST
)

INDEX_WIDTH = 64

ARITH_FLOORDIVSI = "arith.floordivsi"
ARITH_REMSI = "arith.remsi"
ARITH_REMUI = "arith.remui"
ARITH_SHLI = "arith.shli"
ARITH_SHRSI = "arith.shrsi"
ARITH_SHRUI = "arith.shrui"
ARITH_TRUNCI = "arith.trunci"
ARITH_MINSI, ARITH_MAXSI = "arith.minsi", "arith.maxsi"
ARITH_MINUI, ARITH_MAXUI = "arith.minui", "arith.maxui"
UTIL_ASSUME_INT = "util.assume.int"


def int_width(t: ir.Type) -> int | None:
    """Bits of an integer or index type (index: INDEX_WIDTH), else None."""
    if isinstance(t, ir.IndexType):
        return INDEX_WIDTH
    if isinstance(t, ir.IntegerType):
        return t.width
    return None


def unsigned(x: int, width: int) -> int:
    """The pattern of x in [0, 2^width)."""
    return x % (1 << width)


def signed(x: int, width: int) -> int:
    """The pattern of x read as a signed integer, in [-2^(width-1), 2^(width-1))."""
    x = unsigned(x, width)
    return x - (1 << width) if x >> (width - 1) else x


# ------------------------------------------------------------------ the concrete domain


class Undefined(Exception):
    """The op's result is undefined (poison or UB) for these operands."""


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _signed_division(fn: Callable[[int, int], int]) -> Callable[[list[int], int], int]:
    def apply(args: list[int], w: int) -> int:
        a, b = signed(args[0], w), signed(args[1], w)
        if b == 0 or (a == -(1 << (w - 1)) and b == -1):
            raise Undefined("signed division by zero or overflow")
        return unsigned(fn(a, b), w)
    return apply


def _unsigned_division(fn: Callable[[int, int], int]) -> Callable[[list[int], int], int]:
    def apply(args: list[int], w: int) -> int:
        if args[1] == 0:
            raise Undefined("unsigned division by zero")
        return fn(args[0], args[1])
    return apply


def _shift(fn: Callable[[int, int, int], int]) -> Callable[[list[int], int], int]:
    def apply(args: list[int], w: int) -> int:
        if args[1] >= w:
            raise Undefined("a shift by the width or more")
        return unsigned(fn(args[0], args[1], w), w)
    return apply


_CMPI = {"eq": lambda a, b, w: a == b, "ne": lambda a, b, w: a != b,
         "slt": lambda a, b, w: signed(a, w) < signed(b, w),
         "sle": lambda a, b, w: signed(a, w) <= signed(b, w),
         "sgt": lambda a, b, w: signed(a, w) > signed(b, w),
         "sge": lambda a, b, w: signed(a, w) >= signed(b, w),
         "ult": lambda a, b, w: a < b, "ule": lambda a, b, w: a <= b,
         "ugt": lambda a, b, w: a > b, "uge": lambda a, b, w: a >= b}

# Same-width ops: (operand patterns, width) -> result pattern.
BINARY: dict[str, Callable[[list[int], int], int]] = {
    ARITH_ADDI: lambda a, w: unsigned(a[0] + a[1], w),
    ARITH_SUBI: lambda a, w: unsigned(a[0] - a[1], w),
    ARITH_MULI: lambda a, w: unsigned(a[0] * a[1], w),
    ARITH_ANDI: lambda a, w: a[0] & a[1],
    ARITH_ORI: lambda a, w: a[0] | a[1],
    ARITH_XORI: lambda a, w: a[0] ^ a[1],
    ARITH_DIVSI: _signed_division(_trunc_div),
    ARITH_REMSI: _signed_division(lambda a, b: a - _trunc_div(a, b) * b),
    ARITH_FLOORDIVSI: _signed_division(lambda a, b: a // b),
    ARITH_CEILDIVSI: _signed_division(lambda a, b: -(-a // b)),
    ARITH_DIVUI: _unsigned_division(lambda a, b: a // b),
    ARITH_REMUI: _unsigned_division(lambda a, b: a % b),
    ARITH_CEILDIVUI: _unsigned_division(lambda a, b: -(-a // b)),
    ARITH_SHLI: _shift(lambda a, b, w: a << b),
    ARITH_SHRUI: _shift(lambda a, b, w: a >> b),
    ARITH_SHRSI: _shift(lambda a, b, w: signed(a, w) >> b),
    ARITH_MINSI: lambda a, w: min(a, key=lambda x: signed(x, w)),
    ARITH_MAXSI: lambda a, w: max(a, key=lambda x: signed(x, w)),
    ARITH_MINUI: lambda a, w: min(a),
    ARITH_MAXUI: lambda a, w: max(a),
}


def cast(name: str, x: int, w_in: int, w_out: int) -> int:
    """A width cast of pattern x: sign-extending (extsi, index_cast widening), zero-extending
    (extui, index_castui widening) or truncating."""
    if w_out <= w_in or name in (ARITH_EXTUI, ARITH_INDEX_CASTUI):
        return unsigned(x, w_out)
    return unsigned(signed(x, w_in), w_out)


CASTS = (ARITH_EXTSI, ARITH_EXTUI, ARITH_TRUNCI, ARITH_INDEX_CAST, ARITH_INDEX_CASTUI)


def _attr_int(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def evaluate(value: ir.Value, env: Callable[[ir.Value], int], memo: dict[ir.Value, int]
             ) -> int:
    """The pattern of an integer scalar: ops above are computed, any other value (a block
    argument, `linalg.index`, `tensor.extract`, ...) is asked of `env`; raises Undefined."""
    if value in memo:
        return memo[value]
    op = h.defining_op(value)
    w = int_width(value.type)
    if op is None or w is None:
        out = env(value)
    elif op.name == ARITH_CONSTANT:
        out = unsigned(_attr_int(op, "value"), w)
    elif op.name in BINARY:
        out = BINARY[op.name]([evaluate(v, env, memo) for v in op.operands], w)
    elif op.name in CASTS:
        out = cast(op.name, evaluate(op.operands[0], env, memo),
                   int_width(op.operands[0].type), w)
    elif op.name == ARITH_SELECT:
        out = evaluate(op.operands[1] if evaluate(op.operands[0], env, memo)
                       else op.operands[2], env, memo)
    elif op.name == ARITH_CMPI:
        a, b = (evaluate(v, env, memo) for v in op.operands)
        pred = h.CMPI_PREDICATES[_attr_int(op, "predicate")]
        out = int(_CMPI[pred](a, b, int_width(op.operands[0].type)))
    else:
        out = env(value)
    memo[value] = out
    return out


# ------------------------------------------------------------------ the abstract domain


@dataclass(frozen=True)
class Residues:
    """The patterns `modulus * k + r (mod 2^w)` for any integer k and r in [lo, hi], at the
    width w of the value they describe; `modulus` a power of two dividing 2^w (2^w: an
    interval of patterns; 1: anything). Build with `residues(w, ...)`, which normalizes."""

    modulus: int
    lo: int
    hi: int

    def contains(self, pattern: int) -> bool:
        return (pattern - self.lo) % self.modulus <= self.hi - self.lo

    @property
    def residue(self) -> int | None:
        """The one residue of a window of width 1 (with modulus 2^w: a constant)."""
        return self.lo if self.lo == self.hi else None


ANY = Residues(1, 0, 0)


def residues(width: int, modulus: int, lo: int, hi: int) -> Residues:
    """Residues at `width`, normalized: the modulus reduced to its common part with 2^width
    (a power of two), a window that covers every residue made ANY."""
    modulus = math.gcd(modulus, 1 << width)
    if hi - lo + 1 >= modulus:
        return ANY
    return Residues(modulus, lo, hi)


def exact(width: int, lo: int, hi: int) -> Residues:
    """The patterns of the integers lo..hi."""
    return residues(width, 0, lo, hi)


def _read_as(r: Residues, width: int, base: int) -> tuple[int, int] | None:
    """[lo, hi] as integers read from the pattern range [base, base + 2^width) (base 0:
    unsigned, -2^(width-1): signed), when r is an interval that no wrap splits there."""
    size = 1 << width
    if r.modulus != size:
        return None
    shift = (r.lo - base) // size * size
    lo, hi = r.lo - shift, r.hi - shift
    return (lo, hi) if hi < base + size else None


def as_signed(r: Residues, width: int) -> tuple[int, int] | None:
    return _read_as(r, width, -(1 << (width - 1)))


def as_unsigned(r: Residues, width: int) -> tuple[int, int] | None:
    return _read_as(r, width, 0)


def add(a: Residues, b: Residues, width: int) -> Residues:
    return residues(width, math.gcd(a.modulus, b.modulus), a.lo + b.lo, a.hi + b.hi)


def negate(a: Residues, width: int) -> Residues:
    return residues(width, a.modulus, -a.hi, -a.lo)


def multiply(a: Residues, b: Residues, width: int) -> Residues:
    """(m k + [l1, h1]) * (n j + [l2, h2]): exact for a constant factor; for two windows of
    one residue each, m n kj + m k r2 + n j r1 + r1 r2 (residues modulo gcd(mn, m r2, n r1))."""
    for x, c in ((a, b), (b, a)):
        if c.modulus == 1 << width and c.residue is not None:
            factor = signed(c.residue, width)
            ends = (x.lo * factor, x.hi * factor)
            return residues(width, x.modulus * abs(factor), min(ends), max(ends))
    if a.residue is not None and b.residue is not None:
        r1, r2 = a.residue, b.residue
        modulus = math.gcd(a.modulus * b.modulus, a.modulus * r2, b.modulus * r1)
        return residues(width, modulus, r1 * r2, r1 * r2)
    return ANY


def hull(a: Residues, b: Residues, width: int) -> Residues:
    """A set holding both (select, min, max: the result is one of the operands); two
    intervals are joined the shorter way round the ring."""
    size = 1 << width
    if a.modulus == b.modulus == size:
        joins = []
        for x, y in ((a, b), (b, a)):
            shift = (y.lo - x.lo) // size * size  # y moved to start in [x.lo, x.lo + size)
            joins.append((x.lo, max(x.hi, y.hi - shift)))
        lo, hi = min(joins, key=lambda j: j[1] - j[0])
        return residues(width, size, lo, hi)
    return residues(width, math.gcd(a.modulus, b.modulus), min(a.lo, b.lo), max(a.hi, b.hi))


def cast_residues(name: str, r: Residues, w_in: int, w_out: int) -> Residues:
    """A cast's result: truncation keeps residues modulo 2^w_out; an extension keeps the
    value read signed (extsi, index_cast) or unsigned (extui, index_castui), so an interval
    stays one where that reading does not wrap inside it; else residues modulo 2^w_in."""
    if w_out <= w_in:
        return residues(w_out, r.modulus, r.lo, r.hi)
    read = as_unsigned(r, w_in) if name in (ARITH_EXTUI, ARITH_INDEX_CASTUI) \
        else as_signed(r, w_in)
    if read is not None:
        return exact(w_out, *read)
    return residues(w_out, r.modulus, r.lo, r.hi)


def _monotone(fn: Callable[[int, int], int], bounds: tuple[int, int], c: int, width: int
              ) -> Residues:
    """fn(x, c) over x in bounds, fn nondecreasing in x (a division by a positive c)."""
    return exact(width, fn(bounds[0], c), fn(bounds[1], c))


def divide(name: str, a: Residues, divisor: int | None, width: int) -> Residues:
    """A division or remainder by a constant: the quotients or remainders of a's range read
    signed or unsigned (the whole range when a is not an interval there)."""
    if divisor is None:
        return ANY
    is_signed = name in (ARITH_DIVSI, ARITH_FLOORDIVSI, ARITH_CEILDIVSI, ARITH_REMSI,
                         ARITH_SHRSI)
    half = 1 << (width - 1)
    c = signed(divisor, width) if is_signed else unsigned(divisor, width)
    if c <= 0:
        return ANY
    full = (-half, half - 1) if is_signed else (0, (1 << width) - 1)
    bounds = (as_signed(a, width) if is_signed else as_unsigned(a, width)) or full
    if name in (ARITH_REMSI, ARITH_REMUI):
        lo, hi = bounds
        if lo // c == hi // c and lo >= 0:
            return exact(width, lo % c, hi % c)  # one period, nonnegative: x mod c
        return exact(width, 0 if lo >= 0 else -(c - 1), c - 1 if hi > 0 else 0)
    fn = {ARITH_DIVSI: _trunc_div, ARITH_FLOORDIVSI: lambda x, y: x // y,
          ARITH_CEILDIVSI: lambda x, y: -(-x // y), ARITH_DIVUI: lambda x, y: x // y,
          ARITH_CEILDIVUI: lambda x, y: -(-x // y), ARITH_SHRSI: lambda x, y: x // y,
          ARITH_SHRUI: lambda x, y: x // y}[name]
    return _monotone(fn, bounds, c, width)


def disjoint(a: Residues, b: Residues) -> str | None:
    """None if no pattern is in both (values of the same width), else why that is not
    proven."""
    if ANY in (a, b):  # moduli are powers of two: any two above 1 have a common one
        which = "first" if a == ANY else "second"
        return (f"the {which} index set is unbounded (no power-of-two modulus bounds its "
                "residues)")
    modulus = math.gcd(a.modulus, b.modulus)
    width_a, width_b = a.hi - a.lo + 1, b.hi - b.lo + 1
    shift = (b.lo - a.lo) % modulus
    if width_a + width_b <= modulus and width_a <= shift and shift + width_b <= modulus:
        return None
    return f"the indices' residues modulo {modulus} overlap"


# ------------------------------------------------------------------ the analysis


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
        kinds.append(_attr_int(test, "predicate"))
    return divisor if sorted(kinds) in ([_SLT], [_NE, _SLT]) else None


def _writes_every_element(op: ir.Operation) -> bool:
    """Every element of each result is a value the body yields (no init read)."""
    maps = h.indexing_maps(op)
    outs = maps[h.num_dps_inputs(op):]
    n = maps[0].n_dims if maps else 0
    return (all(t == "parallel" for t in h.iterator_types(op))
            and all(m.is_permutation and m.n_dims == n for m in outs)
            and not any(list(arg.uses) for arg in
                        list(h.body_block(op).arguments)[h.num_dps_inputs(op):]))


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
        if op.name in RESHAPES + (TENSOR_CAST,):
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
            extent = _loop_extent(op.parent, _attr_int(op, "dim"))
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
