"""index_arith's analysis on random single ops (issue 58): for each op it models, seeded random
operand sets (intervals that start below zero or at a width's edges, strided sets of one or
several residues, anything) and constants (negative, zero, one, the width's edges), at i8, i16,
i32, i64 and index. Sound: the evaluator's result for members of the operands (their ends and
random ones, strides included) is in the analysis' set. Precise where the domain is exact (a
division or shift by a positive constant of an interval that does not wrap where it is read,
a remainder within one non-negative period, sums, products by a constant or of two strided
sets of one residue each, casts, selects, min/max, masks, floor-mods): the analysis' set is
the one computed here from the operands, so an analysis that answers "anything" or widens a
bound fails too. The evaluator is checked against IREE in
test_index_arith_iree.py."""

from __future__ import annotations

import math
import random

import pytest

from iree_fusions.compiler import index_arith as ia
from test_index_arith_single_ops import WIDTH, Case, analyse, canonical, members

TWO_SETS = ("addi", "subi", "muli", "minsi", "maxsi", "minui", "maxui", "select")
BY_CONSTANT = ("divsi", "remsi", "floordivsi", "ceildivsi", "divui", "remui", "ceildivui",
               "shli", "shrsi", "shrui", "andi", "muli_const", "floormod")
CASTS = ("extsi", "extui", "trunci", "index_cast", "index_castui")
SIGNED = ("divsi", "remsi", "floordivsi", "ceildivsi", "shrsi")
UNSIGNED = ("divui", "remui", "ceildivui", "shrui")
INTS = ("i8", "i16", "i32", "i64")
CASES = 70


def random_set(w: int, rng: random.Random, one_residue: bool = False) -> ia.Residues:
    """An interval (often below zero or across a width's edge), a strided set, or ANY."""
    size, top = 1 << w, 1 << (w - 1)
    kind = "strided" if one_residue else rng.choice(("interval",) * 5 + ("strided",) * 4 +
                                                    ("any",))
    if kind == "any":
        return ia.ANY
    if kind == "strided":
        modulus = 1 << rng.randint(1, min(w - 1, rng.choice((4, 12, w - 1))))
        span = 0 if one_residue or rng.random() < 0.4 else rng.randint(1, modulus - 2 or 1)
        span = min(span, modulus - 2)
        lo = rng.randrange(-modulus, modulus)
        return _normal(w, modulus, lo, lo + max(span, 0))
    span = rng.choice((0, 1, rng.randint(2, 20), rng.randint(20, 3000),
                       rng.randrange(min(top, 1 << 62))))
    lo = rng.choice((rng.randint(-40, 10), -top + rng.randint(0, 5), top - rng.randint(0, 25),
                     rng.randint(-3000, 3000), rng.randrange(-top, top)))
    return _normal(w, size, lo, lo + span)


def random_constant(op: str, w: int, rng: random.Random) -> int:
    top = 1 << (w - 1)
    if op in ("shli", "shrsi", "shrui"):
        return rng.choice((0, 1, 2, 3, rng.randrange(w), w - 2, w - 1, w, -1))
    return rng.choice((0, 1, -1, 2, 3, 4, 7, 8, 100, -2, -3, -8, -100, top - 1, -top, top // 2,
                       top // 3, 255, rng.randrange(-top, top)))


def cast_types(op: str, rng: random.Random) -> tuple[str, str]:
    if op in ("index_cast", "index_castui"):
        other = rng.choice(INTS)
        return (other, "index") if rng.random() < 0.5 else ("index", other)
    a, b = sorted(rng.sample(INTS, 2), key=WIDTH.get)
    return (b, a) if op == "trunci" else (a, b)


def random_case(op: str, rng: random.Random) -> Case:
    if op in CASTS:
        t, to = cast_types(op, rng)
        return Case(op, t, (random_set(WIDTH[t], rng),), to)
    t = rng.choice((*INTS, "index"))
    w = WIDTH[t]
    if op in TWO_SETS:
        one = op == "muli" and rng.random() < 0.5  # products of two strided sets
        return Case(op, t, (random_set(w, rng, one), random_set(w, rng, one)))
    x = random_set(w, rng)
    if op in ("remsi", "floormod") and rng.random() < 0.5:  # remainders of negative ranges
        lo = -rng.randint(1, min(3000, 1 << (w - 1)))
        x = _normal(w, 1 << w, lo, rng.randint(lo, min(3000, (1 << (w - 1)) - 1)))
    return Case(op.removesuffix("_const"), t, (x, random_constant(op, w, rng)))


def _cases(op: str) -> tuple[list[Case], list[list[tuple[int, ...]]]]:
    rng = random.Random(f"issue-58-{op}")
    cases = [random_case(op, rng) for _ in range(CASES)]
    tuples = []
    for case in cases:
        sets = [r for r in case.operands if isinstance(r, ia.Residues)]
        n = 10 if len(sets) == 2 else 24
        drawn = [members(r, WIDTH[case.t], rng, n) for r in sets]
        tuples.append([(x,) for x in drawn[0]] if len(drawn) == 1 else
                      [(x, y) for x in drawn[0] for y in drawn[1]])
    return cases, tuples


@pytest.mark.parametrize("op", TWO_SETS + BY_CONSTANT + CASTS)
def test_random_single_ops(op):
    """Sound on every member tried; exact where the domain is (`expected`)."""
    cases, tuples = _cases(op)
    unsound, imprecise = [], []
    for case, (got, results), tups in zip(cases, analyse(cases, tuples), tuples):
        for tup, x in zip((t for t in tups for _ in range(2 if op == "select" else 1)),
                          results):
            if x is not None and not got.contains(x):
                unsound.append((case, tup, x, got))
        want = expected(case, [x for x in results if x is not None])
        if want is not None and not same_set(got, want):
            imprecise.append((case, want, got))
    assert not unsound, unsound[:5]
    assert not imprecise, imprecise[:5]


def same_set(a: ia.Residues, b: ia.Residues) -> bool:
    return canonical(a) == canonical(b) or a == b == ia.ANY


def _reading(r: ia.Residues, w: int, signed: bool) -> tuple[int, int] | None:
    """[lo, hi] of the interval r read signed or unsigned, if no wrap splits it there."""
    if r.modulus != 1 << w:
        return None
    read = ia.signed if signed else ia.unsigned
    lo = read(r.lo, w)
    return (lo, lo + r.hi - r.lo) if read(r.hi, w) == lo + r.hi - r.lo else None


def _hull_of(results: list[int], w: int, signed: bool) -> ia.Residues:
    read = [(ia.signed if signed else ia.unsigned)(x, w) for x in results]
    return ia.Residues(1 << w, min(read), max(read))


def _normal(w: int, modulus: int, lo: int, hi: int) -> ia.Residues:
    modulus = math.gcd(modulus, 1 << w)
    return ia.ANY if hi - lo + 1 >= modulus else ia.Residues(modulus, lo, hi)


def expected(case: Case, results: list[int]) -> ia.Residues | None:
    """The set the analysis must give, where its domain is exact and it is computed here from
    the operands (or the results of their ends, which `members` always includes); None where
    only soundness is asked."""
    w = WIDTH[case.t]
    ops = case.operands
    if case.op in ("addi", "subi"):
        a, b = ops
        if case.op == "subi":
            b = ia.Residues(b.modulus, -b.hi, -b.lo)
        return _normal(w, math.gcd(a.modulus, b.modulus), a.lo + b.lo, a.hi + b.hi)
    if case.op == "muli" and isinstance(ops[1], ia.Residues):
        a, b = ops  # m k + r1 times n j + r2: residues modulo gcd(m n, m r2, n r1)
        if ia.ANY in (a, b) or a.lo != a.hi or b.lo != b.hi or 1 << w in (a.modulus, b.modulus):
            return None
        return _normal(w, math.gcd(a.modulus * b.modulus, a.modulus * b.lo, b.modulus * a.lo),
                       a.lo * b.lo, a.lo * b.lo)
    if case.op in ("select", "minsi", "maxsi", "minui", "maxui"):  # one of the operands
        a, b = ops
        if ia.ANY in (a, b) or a.modulus != 1 << w or b.modulus != 1 << w:
            return None
        size = 1 << w
        spans = [max((a.lo - s) % size + a.hi - a.lo, (b.lo - s) % size + b.hi - b.lo)
                 for s in (a.lo, b.lo)]
        s, span = min(zip((a.lo, b.lo), spans), key=lambda p: p[1])
        return _normal(w, size, s, s + span)
    if case.op in CASTS:
        (x,), w_out = ops, WIDTH[case.to]
        if w_out <= w:
            return _normal(w_out, x.modulus, x.lo, x.hi)
        signed = case.op in ("extsi", "index_cast")
        if results and _reading(x, w, signed) is not None:
            return _hull_of(results, w_out, signed)
        return _normal(w_out, x.modulus, x.lo, x.hi)
    if len(ops) != 2 or isinstance(ops[1], ia.Residues):
        return None
    x, c = ops
    if case.op == "andi":
        return ia.Residues(1 << w, 0, ia.signed(c, w)) if ia.signed(c, w) >= 0 else ia.ANY
    if case.op == "floormod" and ia.signed(c, w) > 0:
        return _normal(w, 1 << w, 0, ia.signed(c, w) - 1)
    if case.op in ("muli", "shli"):
        if case.op == "shli" and not 0 <= c < w:
            return None
        f = ia.signed(1 << c if case.op == "shli" else c, w)
        ends = (x.lo * f, x.hi * f)
        return _normal(w, x.modulus * abs(f), min(ends), max(ends))
    if case.op not in SIGNED + UNSIGNED or not results:
        return None
    signed = case.op in SIGNED
    divisor = 1 << c if case.op in ("shrsi", "shrui") else c
    if case.op in ("shrsi", "shrui") and not 0 <= c < w:
        return None
    if (ia.signed if signed else ia.unsigned)(divisor, w) <= 0:
        return ia.ANY  # a negative or zero divisor is not modelled
    read = _reading(x, w, signed)
    if read is None:
        return None
    if case.op in ("remsi", "remui"):
        d = (ia.signed if signed else ia.unsigned)(divisor, w)
        if read[0] < 0 or read[0] // d != read[1] // d:
            return None
    return _hull_of(results, w, signed)
