"""The abstract domain: sets of patterns `m * k + [lo, hi] (mod 2^w)`, m a power of two
dividing 2^w, and the transfer functions of the integer ops over them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from iree_fusions.compiler.ir_helpers import (
    ARITH_CEILDIVSI, ARITH_CEILDIVUI, ARITH_DIVSI, ARITH_DIVUI, ARITH_EXTUI, ARITH_FLOORDIVSI,
    ARITH_INDEX_CASTUI, ARITH_REMSI, ARITH_REMUI, ARITH_SHRSI, ARITH_SHRUI
)

from .concrete import signed, trunc_div, unsigned

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
    fn = {ARITH_DIVSI: trunc_div, ARITH_FLOORDIVSI: lambda x, y: x // y,
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


