"""index_arith's analysis on one op at a time, with the exact range it must give (issue 58):
each op the analysis models (addi, subi, muli, shli, the divisions and remainders, shrsi, shrui,
andi, min/max, select, torch's floor-mod, the casts) applied to operand sets it is told by
`util.assume.int`, at i8/i16/i32/i64/index, its answer compared with a hand-computed set; the
set is checked against the evaluator (every member of the operands) and shown tight (its ends
reached, its modulus not doubled), so an analysis that answers "anything", widens a bound by
one or keeps too large a stride fails here. Also the builder the other single-op tests use
(`Case`, `analyse`): test_index_arith_random_ops.py, test_index_arith_iree.py."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia

WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
CASTS = ("extsi", "extui", "trunci", "index_cast", "index_castui")


def interval(width: int, lo: int, hi: int) -> ia.Residues:
    """The patterns of the integers lo..hi (not normalized: `residues` would make a full
    window ANY)."""
    return ia.Residues(1 << width, lo, hi)


def strided(modulus: int, lo: int, hi: int) -> ia.Residues:
    """modulus * k + [lo, hi], k any integer."""
    return ia.Residues(modulus, lo, hi)


@dataclass(frozen=True)
class Case:
    """arith.`op` (or "select": select on an unknown i1, "floormod": torch's floor-mod by the
    constant second operand) at type `t`, on operands that are each a set of patterns
    (Residues: built from util.assume.int ranges plus a constant) or a constant (int);
    a cast's result type is `to`."""

    op: str
    t: str
    operands: tuple
    to: str = ""

    @property
    def result_type(self) -> str:
        return self.to or self.t


def _set_lines(n: int, r: ia.Residues, t: str) -> tuple[list[str], str]:
    """IR computing a value that takes any pattern of `r` (from function arguments %p{n},
    %q{n}), and its name."""
    w = WIDTH[t]
    if r == ia.ANY:
        return [], f"%p{n}"
    lines = [f"%u{n} = util.assume.int %p{n}<umin = 0, umax = {r.hi - r.lo}> : {t}",
             f"%l{n} = arith.constant {ia.signed(r.lo, w)} : {t}"]
    base = f"%u{n}"
    if r.modulus != 1 << w:
        lines += [f"%k{n} = util.assume.int %q{n}<udiv = {r.modulus}> : {t}",
                  f"%s{n} = arith.addi %k{n}, %u{n} : {t}"]
        base = f"%s{n}"
    return lines + [f"%x{n} = arith.addi {base}, %l{n} : {t}"], f"%x{n}"


def _function(i: int, case: Case) -> tuple[str, list[int | None]]:
    """The function of a case, and for each operand the position in its body of the op
    defining the operand's value (None: a constant; -1: the argument itself, for ANY)."""
    t, w = case.t, WIDTH[case.t]
    lines: list[str] = []
    names, where = [], []
    for n, operand in enumerate(case.operands):
        if isinstance(operand, ia.Residues):
            body, name = _set_lines(n, operand, t)
            where.append(len(lines) + len(body) - 1 if body else -1)
        else:
            name = f"%c{n}"
            body = [f"{name} = arith.constant {ia.signed(operand, w)} : {t}"]
            where.append(None)
        lines += body
        names.append(name)
    if case.op in CASTS:
        lines.append(f"%r = arith.{case.op} {names[0]} : {t} to {case.to}")
    elif case.op == "select":
        lines.append(f"%r = arith.select %cond, {names[0]}, {names[1]} : {t}")
    elif case.op == "floormod":
        x, c = names
        lines += [f"%rem = arith.remsi {x}, {c} : {t}", f"%zero = arith.constant 0 : {t}",
                  f"%nz = arith.cmpi ne, %rem, %zero : {t}",
                  f"%neg = arith.cmpi slt, %rem, %zero : {t}",
                  "%both = arith.andi %nz, %neg : i1",
                  f"%up = arith.addi %rem, {c} : {t}",
                  f"%r = arith.select %both, %up, %rem : {t}"]
    else:
        lines.append(f"%r = arith.{case.op} {', '.join(names)} : {t}")
    args = ", ".join(f"%{p}{n}: {t}" for n in range(len(case.operands)) for p in "pq")
    body = "\n".join(f"  {line}" for line in lines)
    return (f"util.func @case{i}({args}, %cond: i1) -> {case.result_type} {{\n{body}\n"
            f"  util.return %r : {case.result_type}\n}}"), where


def _operand_values(func: ir.Operation, where: list[int | None]) -> list[ir.Value]:
    """The values standing for the set operands, in order."""
    block = func.regions[0].blocks[0]
    ops, args = list(block.operations), list(block.arguments)
    return [args[2 * n] if at == -1 else ops[at].results[0]
            for n, at in enumerate(where) if at is not None]


def analyse(cases: list[Case], members: list[list[tuple[int, ...]]] | None = None
            ) -> list[tuple[ia.Residues, list[int | None]]]:
    """For each case: the analysis' set of its result and, for each tuple of members of its set
    operands (one pattern each, in order; a select's condition is both), the evaluator's result
    (None: undefined)."""
    built = [_function(i, c) for i, c in enumerate(cases)]
    text = "module {\n" + "\n".join(f for f, _ in built) + "\n}"
    out = []
    with ir.Context():
        module = ir.Module.parse(text)
        analysis = ia.IndexAnalysis()
        funcs = [op.operation for op in module.body.operations]
        for i, (case, func, (_, where)) in enumerate(zip(cases, funcs, built)):
            block = func.regions[0].blocks[0]
            result = list(block.operations)[-1].operands[0]
            values = _operand_values(func, where)
            cond = list(block.arguments)[-1]
            got = []
            for tup in (members[i] if members else []):
                for c in ((0, 1) if case.op == "select" else (0,)):
                    memo = dict(zip(values, tup))
                    memo[cond] = c
                    try:
                        got.append(ia.evaluate(result, _no_env, memo))
                    except ia.Undefined:
                        got.append(None)
            out.append((analysis.scalar(result), got))
    return out


def _no_env(value: ir.Value) -> int:
    raise AssertionError(f"no value for {value}")


def members(r: ia.Residues, width: int, rng: random.Random, n: int = 24, every: int = 0
            ) -> list[int]:
    """n patterns of `r`: its ends, the ends moved by a period, and random members (all of them
    where there are at most max(n, every))."""
    size = 1 << width
    span = r.hi - r.lo
    if (span + 1) * (size // r.modulus) <= max(n, every):
        return sorted({(r.lo + d + k * r.modulus) % size for d in range(span + 1)
                       for k in range(size // r.modulus)})
    picks = {(end + k * r.modulus) % size for end in (r.lo, r.hi) for k in (0, 1, -1)}
    while len(picks) < n:
        k = rng.choice((0, 1, -1, 2, -3, rng.randrange(-size, size)))
        picks.add((r.lo + rng.randint(0, span) + k * r.modulus) % size)
    return sorted(picks)


def canonical(r: ia.Residues) -> tuple[int, int, int]:
    """(modulus, lo reduced modulo it, window width - 1): equal sets, equal tuples."""
    return (r.modulus, r.lo % r.modulus, r.hi - r.lo)


I8, I16, I32, I64 = 8, 16, 32, 64
# (case, the set its result must be: (modulus, lo, hi), or None for ANY)
EXACT = [
    # Remainders: the sign of the dividend (of C's result: truncated division), one period.
    (Case("remsi", "i64", (interval(I64, -7, 5), 4)), (1 << 64, -3, 3)),
    (Case("remsi", "i64", (interval(I64, -7, -1), 4)), (1 << 64, -3, 0)),
    (Case("remsi", "i32", (interval(I32, -4, -1), 4)), (1 << 32, -3, 0)),  # one period, < 0
    (Case("remsi", "i32", (interval(I32, 5, 7), 4)), (1 << 32, 1, 3)),
    (Case("remsi", "i8", (interval(I8, -128, 127), 100)), (1 << 8, -99, 99)),
    (Case("remui", "i32", (interval(I32, 5, 7), 4)), (1 << 32, 1, 3)),
    (Case("remsi", "i32", (interval(I32, 0, 5), 8)), (1 << 32, 0, 5)),  # one period from 0
    (Case("remui", "i8", (interval(I8, -1, -1), 4)), (1 << 8, 3, 3)),   # 255 mod 4
    (Case("remui", "i64", (interval(I64, -3, 3), 8)), (1 << 64, 0, 7)),  # wraps unsigned
    # Divisions by a constant: truncated, floored, ceiled, unsigned.
    (Case("divsi", "i64", (interval(I64, -7, 7), 2)), (1 << 64, -3, 3)),
    (Case("divsi", "i32", (interval(I32, -7, -7), 2)), (1 << 32, -3, -3)),
    (Case("floordivsi", "i64", (interval(I64, -7, 7), 2)), (1 << 64, -4, 3)),
    (Case("ceildivsi", "i64", (interval(I64, -7, 7), 2)), (1 << 64, -3, 4)),
    (Case("divsi", "i8", (interval(I8, -128, 127), 3)), (1 << 8, -42, 42)),
    (Case("divui", "i8", (interval(I8, -2, -1), 2)), (1 << 8, 127, 127)),  # 254, 255
    (Case("divui", "i8", (ia.ANY, 2)), (1 << 8, 0, 127)),  # any pattern: 0 .. 255 / 2
    (Case("divsi", "i8", (ia.ANY, 2)), (1 << 8, -64, 63)),
    (Case("ceildivui", "i16", (interval(I16, 5, 9), 4)), (1 << 16, 2, 3)),
    (Case("divsi", "i64", (interval(I64, -7, 7), -1)), None),  # negative divisors: unmodelled
    (Case("remsi", "i64", (interval(I64, -7, 7), 0)), None),   # by zero: undefined, no crash
    # Shifts.
    (Case("shrsi", "i32", (interval(I32, -5, 5), 1)), (1 << 32, -3, 2)),
    (Case("shrui", "i8", (interval(I8, -4, -1), 1)), (1 << 8, 126, 127)),
    (Case("shli", "i64", (interval(I64, 0, 5), 3)), (1 << 64, 0, 40)),
    (Case("shli", "i8", (ia.ANY, 5)), (32, 0, 0)),
    # Products: by a constant, and of two strided sets (the smaller stride survives).
    (Case("muli", "i64", (interval(I64, -3, 2), -4)), (1 << 64, -8, 12)),
    (Case("muli", "i64", (ia.ANY, 768)), (256, 0, 0)),
    (Case("muli", "i32", (ia.ANY, 3)), None),  # 3 is odd: 3 * p is every i32
    (Case("muli", "i64", (strided(4, 1, 1), strided(4, 2, 2))), (4, 2, 2)),
    (Case("muli", "i64", (strided(8, 3, 3), strided(8, 5, 5))), (8, 7, 7)),
    (Case("muli", "i32", (strided(16, 0, 0), strided(2, 1, 1))), (16, 0, 0)),
    (Case("muli", "i64", (strided(8, -1, -1), strided(4, 2, 2))), (4, 2, 2)),
    # Sums and differences: windows add, moduli meet, wrap kept.
    (Case("addi", "i8", (interval(I8, 120, 127), interval(I8, 0, 3))), (1 << 8, 120, 130)),
    (Case("subi", "i64", (interval(I64, 0, 10), interval(I64, 3, 5))), (1 << 64, -5, 7)),
    (Case("addi", "i64", (strided(16, 2, 3), interval(I64, 0, 4))), (16, 2, 7)),
    (Case("subi", "i64", (strided(16, 2, 3), strided(64, 1, 1))), (16, 1, 2)),
    (Case("addi", "index", (interval(I64, 1 << 62, (1 << 62) + 3), 1 << 62)),
     (1 << 64, 1 << 63, (1 << 63) + 3)),  # index is 64 bits: no wrap at 2^32
    # Results that are one of the operands.
    (Case("minsi", "i64", (interval(I64, 0, 12), interval(I64, 5, 12))), (1 << 64, 0, 12)),
    (Case("maxui", "i8", (interval(I8, -2, 3), interval(I8, -2, 0))), (1 << 8, -2, 3)),
    (Case("select", "i8", (interval(I8, 250, 255), interval(I8, 0, 3))), (1 << 8, 250, 259)),
    (Case("select", "i64", (interval(I64, -5, -1), interval(I64, 2, 4))), (1 << 64, -5, 4)),
    (Case("maxsi", "i64", (strided(8, 1, 2), strided(16, 4, 5))), (8, 1, 5)),
    (Case("andi", "i64", (ia.ANY, 15)), (1 << 64, 0, 15)),
    (Case("andi", "i64", (ia.ANY, -16)), None),
    (Case("floormod", "i64", (interval(I64, -100, 100), 8)), (1 << 64, 0, 7)),
    # Casts: signed or unsigned reading, truncation keeps residues.
    (Case("extsi", "i8", (interval(I8, -1, 2),), "i64"), (1 << 64, -1, 2)),
    (Case("extui", "i8", (interval(I8, -1, 2),), "i64"), (1 << 8, -1, 2)),
    (Case("extui", "i8", (interval(I8, 3, 200),), "i32"), (1 << 32, 3, 200)),
    (Case("extsi", "i8", (interval(I8, 3, 200),), "i16"), (1 << 8, 3, 200)),
    (Case("extsi", "i8", (interval(I8, 120, 128),), "i64"), (1 << 8, 120, 128)),  # to INT_MIN
    (Case("extui", "i8", (interval(I8, -8, 0),), "i64"), (1 << 8, -8, 0)),  # 248..255, 0
    (Case("index_cast", "i32", (interval(I32, -5, 5),), "index"), (1 << 64, -5, 5)),
    (Case("index_castui", "i32", (interval(I32, -5, 5),), "index"), (1 << 32, -5, 5)),
    (Case("index_castui", "i32", (interval(I32, 5, 9),), "index"), (1 << 64, 5, 9)),
    (Case("index_cast", "index", (interval(I64, 1 << 40, (1 << 40) + 5),), "i32"),
     (1 << 32, 0, 5)),
    (Case("trunci", "i64", (interval(I64, 250, 260),), "i8"), (1 << 8, 250, 260)),
    (Case("trunci", "i64", (interval(I64, 0, 300),), "i8"), None),
    (Case("extsi", "i32", (strided(4, 1, 1),), "i64"), (4, 1, 1)),
]


def _set_operands(case: Case) -> list[ia.Residues]:
    return [r for r in case.operands if isinstance(r, ia.Residues)]


def _member_tuples(case: Case, rng: random.Random) -> list[tuple[int, ...]]:
    sets = _set_operands(case)
    sets = [members(r, WIDTH[case.t], rng, 30, 512 if len(sets) == 1 else 40) for r in sets]
    tuples = [()]
    for s in sets:
        tuples = [t + (x,) for t in tuples for x in s]
    return tuples if len(tuples) <= 1600 else rng.sample(tuples, 1600)


def test_exact_ranges():
    """The analysis gives exactly the expected set for each hand-picked op; each expected set
    holds every result of the operands' members and is tight: its ends are reached (modulo its
    modulus) and its modulus doubled would lose some result."""
    rng = random.Random(58)
    tuples = [_member_tuples(case, rng) for case, _ in EXACT]
    wrong = []
    for (case, want), (got, results) in zip(EXACT, analyse([c for c, _ in EXACT], tuples)):
        results = [x for x in results if x is not None]
        if want is None:
            if got != ia.ANY:
                wrong.append((case, "ANY", got))
            continue
        expected = ia.Residues(*want)
        if got == ia.ANY or canonical(got) != canonical(expected):
            wrong.append((case, expected, got))
        outside = [x for x in results if not expected.contains(x)]
        assert not outside, (case, expected, outside[:5])
        m, lo, hi = want
        ends = {lo % m, hi % m}
        assert ends <= {x % m for x in results}, (case, "an end not reached", want)
        if m < 1 << WIDTH[case.result_type]:
            assert not all(ia.Residues(2 * m, lo, hi).contains(x) for x in results), \
                (case, "a larger modulus would hold every result", want)
    assert not wrong, wrong


@pytest.mark.parametrize("test, results", [
    ("arith.cmpi ne, %r, %zero", (15, -7)), ("arith.cmpi sgt, %r, %zero", (15, -7)),
    ("arith.cmpi slt, %r, %one", (8,)),  # r < 1: adds C to r = 0 too
    ("arith.cmpi slt, %x, %zero", (8,)),  # the dividend's sign: x = -8 gives r + C = 8
    ("arith.andi %ne, %xneg : i1", (8,)),  # r != 0 and x < 0: x = -8 .. 0 not all adjusted
], ids=["ne", "sgt", "slt-one", "slt-dividend", "and-dividend"])
def test_floor_mod_lookalikes_are_not_floor_mod(test, results):
    """Selects that add C under another condition than r < 0 (alone or with r != 0) are not
    torch's floor-mod: the analysis must not give [0, C - 1] (each listed result is one the
    IR computes)."""
    kind = test.split()[1].rstrip(",") if test.startswith("arith.cmpi") else "andi"
    text = f"""
util.func @f(%p: i64) -> i64 {{
  %u = util.assume.int %p<umin = 0, umax = 200> : i64
  %c100 = arith.constant -100 : i64
  %x = arith.addi %u, %c100 : i64
  %c8 = arith.constant 8 : i64
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %r = arith.remsi %x, %c8 : i64
  %ne = arith.cmpi ne, %r, %zero : i64
  %xneg = arith.cmpi slt, %x, %zero : i64
  %t = {test if kind == "andi" else test + " : i64"}
  %up = arith.addi %r, %c8 : i64
  %s = arith.select %t, %up, %r : i64
  util.return %s : i64
}}"""
    with ir.Context():
        module = ir.Module.parse(text)
        ret = list(module.body.operations[0].regions[0].blocks[0].operations)[-1]
        got = ia.IndexAnalysis().scalar(ret.operands[0])
    assert all(got.contains(ia.unsigned(x, 64)) for x in results), (kind, got)


TENSORS = """
util.func @f(%t: tensor<5x7xi64>) -> (tensor<5x7xi64>, tensor<35xi64>, tensor<5x7xi64>) {
  %e = tensor.empty() : tensor<5x7xi64>
  %c3 = arith.constant 3 : i64
  %fill = linalg.fill ins(%c3 : i64) outs(%e : tensor<5x7xi64>) -> tensor<5x7xi64>
  %splat = arith.constant dense<-2> : tensor<5x7xi64>
  %g:3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%fill, %splat, %t : tensor<5x7xi64>, tensor<5x7xi64>, tensor<5x7xi64>)
      outs(%e, %e, %e : tensor<5x7xi64>, tensor<5x7xi64>, tensor<5x7xi64>) {
  ^bb0(%a: i64, %b: i64, %in: i64, %o0: i64, %o1: i64, %o2: i64):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %x = arith.index_cast %i1 : index to i64
    %y = arith.muli %x, %a : i64
    %z = arith.addi %y, %b : i64
    %r = arith.index_cast %i0 : index to i64
    linalg.yield %z, %r, %in : i64, i64, i64
  } -> (tensor<5x7xi64>, tensor<5x7xi64>, tensor<5x7xi64>)
  %flat = tensor.collapse_shape %g#1 [[0, 1]] : tensor<5x7xi64> into tensor<35xi64>
  util.return %g#0, %flat, %g#2 : tensor<5x7xi64>, tensor<35xi64>, tensor<5x7xi64>
}"""


def test_tensor_elements_exact():
    """Through a tensor's producers: a fill and a splat constant read as a generic's inputs,
    loop indices (their static extents), a reshape; an input the function is given is ANY.
    (linalg.index 1 of 7) * 3 - 2 is exactly [-2, 16]; linalg.index 0 of 5 is [0, 4]."""
    with ir.Context():
        module = ir.Module.parse(TENSORS)
        ret = list(module.body.operations[0].regions[0].blocks[0].operations)[-1]
        analysis = ia.IndexAnalysis()
        got = [analysis.tensor(v) for v in ret.operands]
    assert got == [ia.Residues(1 << 64, -2, 16), ia.Residues(1 << 64, 0, 4), ia.ANY], got


LOOP_EXTENTS = """
util.func @f(%t: tensor<?x1x0xi64>) -> (tensor<?x1x0xi64>, tensor<?x1x0xi64>,
                                         tensor<?x1x0xi64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %t, %c0 : tensor<?x1x0xi64>
  %e = tensor.empty(%n) : tensor<?x1x0xi64>
  %g:3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
      affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
      affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t : tensor<?x1x0xi64>) outs(%e, %e, %e : tensor<?x1x0xi64>, tensor<?x1x0xi64>,
      tensor<?x1x0xi64>) {
  ^bb0(%in: i64, %o0: i64, %o1: i64, %o2: i64):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %x0 = arith.index_cast %i0 : index to i64
    %x1 = arith.index_cast %i1 : index to i64
    %x2 = arith.index_cast %i2 : index to i64
    linalg.yield %x0, %x1, %x2 : i64, i64, i64
  } -> (tensor<?x1x0xi64>, tensor<?x1x0xi64>, tensor<?x1x0xi64>)
  util.return %g#0, %g#1, %g#2 : tensor<?x1x0xi64>, tensor<?x1x0xi64>, tensor<?x1x0xi64>
}"""


def test_loop_indices_of_run_time_one_and_zero_extents():
    """linalg.index of a loop whose extent only run-time sizes give is a non-negative index,
    [0, 2^63 - 1] (an index's signed range); of a loop of extent 1, exactly 0; of an empty
    loop (extent 0: its body never runs), anything."""
    with ir.Context():
        module = ir.Module.parse(LOOP_EXTENTS)
        ret = list(module.body.operations[0].regions[0].blocks[0].operations)[-1]
        analysis = ia.IndexAnalysis()
        got = [analysis.tensor(v) for v in ret.operands]
    assert got == [ia.Residues(1 << 64, 0, (1 << 63) - 1), ia.Residues(1 << 64, 0, 0),
                   ia.ANY], got


@pytest.mark.parametrize("lo, hi, c", [(-5, 0, 8), (-20, 0, 8), (0, 20, 8), (0, 0, 3),
                                       (-9, -1, 4), (1, 9, 4), (-5, 1, 8), (-1, 5, 8),
                                       (-20, 1, 8), (-1, 20, 8)])
def test_a_remainder_has_its_dividends_sign(lo, hi, c):
    """remsi of a dividend that is never positive is never positive, and of one never
    negative never negative (C's remainder takes the dividend's sign), whatever the period;
    each remainder of the range is in the set (a range that crosses 0 by one, either way)."""
    ((got, _),) = analyse([Case("remsi", "i32", (interval(32, lo, hi), c))])
    low, high = ia.as_signed(got, 32)
    assert (high <= 0) if hi <= 0 else True, got
    assert (low >= 0) if lo >= 0 else True, got
    from iree_fusions.compiler.index_arith.concrete import trunc_div

    assert all(got.contains(ia.unsigned(x - c * trunc_div(x, c), 32))
               for x in range(lo, hi + 1)), got


def test_disjoint_is_brute_force_disjointness():
    """disjoint(a, b) is None exactly when no i8 pattern is in both (random residue sets:
    moduli 2..256, every width of their windows, touching and overlapping ends)."""
    rng = random.Random(58)
    patterns = range(1 << 8)
    for _ in range(3000):
        sets = []
        for _ in range(2):
            m = 1 << rng.randint(1, 8)
            lo = rng.randrange(-m, m)
            sets.append(ia.residues(8, m, lo, lo + rng.randrange(m - 1)))
        a, b = sets
        if ia.ANY in sets:
            continue
        shared = any(a.contains(x) and b.contains(x) for x in patterns)
        proven = ia.disjoint(a, b) is None
        assert not (proven and shared), (a, b)  # sound
        assert proven == (not shared), (a, b)  # and exact for two residue windows


def _writer(maps: str, iterators: str, outs: int = 1, body: str = "") -> str:
    """A generic over a [4, 2] loop nest that yields linalg.index 0 (plus `body`'s %y, which
    may read the init %o) into `outs` i64 outputs of 4x2 (the function's arguments), the
    last returned."""
    t = "tensor<4x2xi64>"
    names = ["%t", "%u"][:outs]
    yielded = "%y" if body else "%x"
    return f"""util.func @f({", ".join(f"{n}: {t}" for n in names)}) -> {t} {{
  %g:{outs} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}} outs({", ".join(names)} : {", ".join([t] * outs)}) {{
  ^bb0({", ".join(f"%o{i}: i64" for i in range(outs))}):
    %i = linalg.index 0 : index
    %x = arith.index_cast %i : index to i64{body}
    linalg.yield {", ".join([yielded] * outs)} : {", ".join(["i64"] * outs)}
  }} -> ({", ".join([t] * outs)})
  util.return %g#{outs - 1} : {t}
}}"""


IDENTITY = "affine_map<(d0, d1) -> (d0, d1)>"
WRITES = {
    # a map with a constant: column 1 keeps the function's argument (anything)
    "constant-in-map": (_writer("affine_map<(d0) -> (d0, 0)>", '"parallel"'), None),
    # two outputs, the one returned written at column 0 only
    "second-output": (_writer(f"{IDENTITY}, affine_map<(d0, d1) -> (d0, 0)>",
                              '"parallel", "parallel"', outs=2), None),
    # an init read: the element is the argument's plus the index
    "init-read": (_writer(IDENTITY, '"parallel", "parallel"',
                          body="\n    %y = arith.addi %x, %o0 : i64"), None),
    # each element written once, whatever the iterator types say: the index's range
    "reduction-iterator": (_writer(IDENTITY, '"parallel", "reduction"'), (1 << 64, 0, 3)),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_generics_elements_are_its_yields_only_where_it_writes_every_one(name):
    """A tensor's elements are the body's yielded values only where every element is written
    and no init is read; else they may be the init's (a function argument here: anything)."""
    text, want = WRITES[name]
    with ir.Context():
        module = ir.Module.parse(text)
        ret = list(module.body.operations[0].regions[0].blocks[0].operations)[-1]
        got = ia.IndexAnalysis().tensor(ret.operands[0])
    assert got == (ia.ANY if want is None else ia.Residues(*want)), got
