"""index_arith against IREE itself, op by op (issue 58): every integer op the package models
(addi, subi, muli, andi, ori, xori, the min/max, cmpi and select, divsi, remsi, floordivsi,
ceildivsi, divui, remui, ceildivui, shli, shrsi, shrui; extsi, extui, trunci, index_cast,
index_castui) at i8, i32, i64 and index, on a table of edge operands (0, +-1, values around the
divisors, the width's INT_MIN and INT_MAX and their neighbours, thirds that wrap when tripled),
every pair of them, and by the constants the analysis models (magic-number divisions), compiled
once for llvm-cpu and run. (i) The evaluator (`ia.evaluate`, walking the same IR) gives exactly
IREE's result for every element; (ii) the analysis of the op on operand sets that contain
table values (the value alone, intervals between table values either way round the ring,
strided sets, anything) contains IREE's result for every pair of table values in them."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest
from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler import ir_helpers as h
from test_index_arith_single_ops import WIDTH, Case, analyse

pytestmark = pytest.mark.numerics  # compiled and run: also for CI's other CPUs (--cpu)

TYPES = ("i8", "i32", "i64", "index")  # index: i64 tensors, the op on index values
STORAGE = {"i8": "i8", "i32": "i32", "i64": "i64", "index": "i64"}
DTYPE = {"i8": np.int8, "i32": np.int32, "i64": np.int64}
PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
# Ops on pairs of table values a, b; their second operand is input column 1 (b), 2 (b as a
# signed divisor: 0, and -1 against INT_MIN, replaced by 7), 3 (b as an unsigned divisor: 0
# replaced) or 4 (b modulo the width: a shift).
PAIR_OPS = (("addi", 1), ("subi", 1), ("muli", 1), ("andi", 1), ("ori", 1), ("xori", 1),
            ("minsi", 1), ("maxsi", 1), ("minui", 1), ("maxui", 1),
            ("divsi", 2), ("remsi", 2), ("floordivsi", 2), ("ceildivsi", 2),
            ("divui", 3), ("remui", 3), ("ceildivui", 3), ("shli", 4), ("shrsi", 4), ("shrui", 4))
SIGNED_DIVISIONS = ("divsi", "remsi", "floordivsi", "ceildivsi")
UNSIGNED_DIVISIONS = ("divui", "remui", "ceildivui")
CONSTANT_OPS = SIGNED_DIVISIONS + UNSIGNED_DIVISIONS + ("shli", "shrsi", "shrui", "muli", "andi")
# Casts of a table value of each type, to a result type (index results cast to i64).
CASTS = {"i8": [("extsi", "i32"), ("extui", "i32"), ("extsi", "i64"), ("extui", "i64"),
                ("index_cast", "index"), ("index_castui", "index")],
         "i32": [("extsi", "i64"), ("extui", "i64"), ("trunci", "i8"),
                 ("index_cast", "index"), ("index_castui", "index")],
         "i64": [("trunci", "i32"), ("trunci", "i8")],
         "index": [("index_cast", "i32"), ("index_castui", "i32"), ("index_cast", "i8"),
                   ("index_castui", "i8")]}
OUTPUTS = 24  # per function: a dispatch has at most 32 bindings


def table(width: int) -> list[int]:
    """The operands, signed: small ones, values around the divisors, the width's edges."""
    top = 1 << (width - 1)
    values = {0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 7, -7, 8, -8, 9, -9, 99, 100, 101, -99,
              -100, -101, 127, -128, 255, 256, top - 1, top - 2, -top, -top + 1, -top + 2,
              top // 2, -(top // 2), top // 3, -(top // 3) - 1, 1431655765, -1431655765}
    return sorted(v for v in values if -top <= v < top)


def constants(op: str, width: int) -> list[int]:
    """The constant operands each op is compiled with (then LLVM lowers a division by a
    constant with multiplications and shifts)."""
    top = 1 << (width - 1)
    if op in SIGNED_DIVISIONS:
        return [1, 2, 3, 7, 8, 100, -1, -2, -3, -8, -100, top - 1, -top]
    if op in UNSIGNED_DIVISIONS:
        return [1, 2, 3, 7, 8, 100, -1, -top, -top + 1]
    if op in ("shli", "shrsi", "shrui"):
        return [0, 1, 3, width - 1]
    return {"muli": [3, -1, -3, ia.signed(768, width), -top], "andi": [15, -16]}[op]


@dataclass(frozen=True)
class Output:
    """One result of a function: arith.`op` of input column 0 and `second` (an input column,
    a constant, None for a cast), of type `type`; with a `predicate` p, "select" is
    select(cmpi p a b, a, b) and "cmpi" is select(cmpi p a b, 1, 0)."""

    op: str
    type: str
    second: int | None
    constant: int | None = None
    predicate: str = ""

    def lines(self, k: int, t: str) -> list[str]:
        if self.second is None and self.constant is None:
            return [f"%v{k} = arith.{self.op} %x0 : {t} to {self.type}"]
        if self.predicate:
            pick = "%x0, %x1" if self.op == "select" else f"%one{k}, %zero{k}"
            return [f"%one{k} = arith.constant 1 : {t}", f"%zero{k} = arith.constant 0 : {t}",
                    f"%p{k} = arith.cmpi {self.predicate}, %x0, %x1 : {t}",
                    f"%v{k} = arith.select %p{k}, {pick} : {t}"]
        if self.constant is not None:
            return [f"%k{k} = arith.constant {self.constant} : {t}",
                    f"%v{k} = arith.{self.op} %x0, %k{k} : {t}"]
        return [f"%v{k} = arith.{self.op} %x0, %x{self.second} : {t}"]


@dataclass
class Function:
    """@name(columns...) -> outputs: one generic over 1-D tensors of t's storage type."""

    name: str
    t: str
    columns: list[list[int]]  # the input elements, signed
    outputs: list[Output]

    def text(self) -> str:
        t, st, n, count = self.t, STORAGE[self.t], len(self.columns[0]), len(self.columns)
        lines = [f"%x{i} = arith.index_cast %in{i} : i64 to index" for i in range(count)] \
            if t == "index" else []
        names = []
        for k, out in enumerate(self.outputs):
            lines += out.lines(k, t)
            names.append(f"%v{k}")
            if out.type == "index":
                lines.append(f"%y{k} = arith.index_cast %v{k} : index to i64")
                names[-1] = f"%y{k}"
        if t != "index":
            lines = [line.replace("%x", "%in") for line in lines]
        types = [STORAGE[out.type] for out in self.outputs]
        ins = ", ".join([f"tensor<{n}x{st}>"] * count)
        results = ", ".join(f"tensor<{n}x{ty}>" for ty in types)
        maps = ", ".join(["affine_map<(d0) -> (d0)>"] * (count + len(types)))
        args = ", ".join([f"%in{i}: {st}" for i in range(count)] +
                         [f"%o{i}: {ty}" for i, ty in enumerate(types)])
        empties = "".join(f"\n  %e{i} = tensor.empty() : tensor<{n}x{ty}>"
                          for i, ty in enumerate(types))
        body = "".join(f"\n    {line}" for line in lines)
        return f"""
util.func public @{self.name}({", ".join(f"%t{i}: tensor<{n}x{st}>" for i in range(count))})
    -> ({results}) {{{empties}
  %r:{len(types)} = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel"]}}
      ins({", ".join(f"%t{i}" for i in range(count))} : {ins})
      outs({", ".join(f"%e{i}" for i in range(len(types)))} : {results}) {{
  ^bb0({args}):{body}
    linalg.yield {", ".join(names)} : {", ".join(types)}
  }} -> ({results})
  util.return {", ".join(f"%r#{i}" for i in range(len(types)))} : {results}
}}"""


def functions(t: str) -> list[Function]:
    """The functions of type t: every op of PAIR_OPS and every cmpi predicate (its i1 and a
    select by it) on every pair of table values, every op of CONSTANT_OPS by each of its
    constants, and the casts."""
    w = WIDTH[t]
    values = table(w)
    a = [x for x in values for _ in values]
    b = [y for _ in values for y in values]
    d = [7 if y == 0 or (y == -1 and x == -(1 << (w - 1))) else y for x, y in zip(a, b)]
    e = [7 if y == 0 else y for y in b]
    s = [y % w for y in b]
    by_constant = [Output(op, t, None, c) for op in CONSTANT_OPS for c in constants(op, w)]
    out = [Function(f"pairs_{t}", t, [a, b, d, e, s], [Output(op, t, i) for op, i in PAIR_OPS]),
           Function(f"compares_{t}", t, [a, b],
                    [Output(op, t, 1, predicate=p) for p in PREDICATES
                     for op in ("select", "cmpi")]),
           Function(f"casts_{t}", t, [values], [Output(op, to, None) for op, to in CASTS[t]])]
    for i in range(0, len(by_constant), OUTPUTS):
        out.append(Function(f"constants{i // OUTPUTS}_{t}", t, [values],
                            by_constant[i:i + OUTPUTS]))
    return out


FUNCTIONS = [f for t in TYPES for f in functions(t)]
MODULE = "module {" + "".join(f.text() for f in FUNCTIONS) + "\n}"


@pytest.fixture(scope="module")
def iree_results() -> dict[str, list[list[int]]]:
    """function -> its results, as patterns at each result's width: all functions compiled in
    one module for llvm-cpu and run."""
    from iree_fusions.harness import api

    loaded = api.load(api.compile_str(MODULE, stock=True).output)
    out = {}
    for f in FUNCTIONS:
        arrays = [np.array(x, dtype=DTYPE[STORAGE[f.t]]) for x in f.columns]
        out[f.name] = [[ia.unsigned(int(v), 8 * r.dtype.itemsize) for v in r]
                       for r in loaded(f.name, *arrays)]
    return out


def test_evaluator_is_iree(iree_results):
    """(i) For every function and element, `ia.evaluate` on the generic's body gives IREE's
    result exactly (only a signed division of INT_MIN by the constant -1 is undefined)."""
    wrong, undefined = [], 0
    with ir.Context():
        module = ir.Module.parse(MODULE)
        for f, func in zip(FUNCTIONS, module.body.operations):
            generic = next(op.operation for op in func.regions[0].blocks[0].operations
                           if op.operation.name == "linalg.generic")
            block = h.body_block(generic)
            yields = list(list(block.operations)[-1].operands)
            args = list(block.arguments)
            results = iree_results[f.name]
            width = WIDTH[f.t]
            for n in range(len(f.columns[0])):
                memo = {args[i]: ia.unsigned(column[n], width)
                        for i, column in enumerate(f.columns)}
                for k, value in enumerate(yields):
                    try:
                        want = ia.evaluate(value, _no_env, memo)
                    except ia.Undefined:
                        undefined += 1
                        continue
                    if want != results[k][n]:
                        wrong.append((f.name, f.outputs[k], [c[n] for c in f.columns],
                                      results[k][n], want))
    assert not wrong, (len(wrong), wrong[:8])
    assert undefined == 4 * 4, undefined  # the signed divisions of INT_MIN by -1, 4 types


def _no_env(value: ir.Value) -> int:
    raise AssertionError(f"no value for {value}")


def around(x: int, w: int, values: list[int], rng: random.Random) -> ia.Residues:
    """A set holding x: x alone, an interval from x to another table value or from one to x
    (the short or the long way round the ring), a strided set, or anything."""
    size = 1 << w
    kind = rng.choice(("point", "interval", "interval", "interval", "strided", "strided",
                       "any"))
    if kind == "point":
        return ia.Residues(size, x, x)
    if kind == "interval":
        y = rng.choice(values)
        lo, hi = (x, y) if rng.random() < 0.5 else (y, x)
        return ia.Residues(size, lo, lo + (hi - lo) % size)
    if kind == "strided":
        modulus = 1 << rng.randint(1, w - 1)
        span = min(rng.choice((0, 0, 1, 3, 100)), modulus - 2)
        lo = x - rng.randint(0, span)
        return ia.Residues(modulus, lo, lo + span)
    return ia.ANY


def _analysis_cases(f: Function, results: list[list[int]], rng: random.Random
                    ) -> tuple[list[Case], list[list[int]]]:
    """Cases of f's ops on sets around its operands (the second a constant where the analysis
    models only that), and for each the IREE results of the pairs of operands in them."""
    w = WIDTH[f.t]
    values = table(w)
    size = 1 << w
    cases, held = [], []
    for k, out in enumerate(f.outputs):
        if out.op == "cmpi":  # not an op of the analysis
            continue
        for n in rng.sample(range(len(f.columns[0])), min(12, len(f.columns[0]))):
            x = f.columns[0][n]
            xs = around(x, w, values, rng)
            if out.second is None and out.constant is None:
                case = Case(out.op, f.t, (xs,), out.type)
                inside = [m for m, x1 in enumerate(f.columns[0]) if xs.contains(x1 % size)]
            elif out.constant is not None or out.second > 1:
                c = out.constant if out.constant is not None else f.columns[out.second][n]
                case = Case(out.op, f.t, (xs, c))
                seconds = [c] * len(f.columns[0]) if out.constant is not None else \
                    f.columns[out.second]
                inside = [m for m, (x1, c1) in enumerate(zip(f.columns[0], seconds))
                          if c1 == c and xs.contains(x1 % size)]
            else:
                ys = around(f.columns[1][n], w, values, rng)
                case = Case(out.op, f.t, (xs, ys))
                inside = [m for m, (x1, y1) in enumerate(zip(f.columns[0], f.columns[1]))
                          if xs.contains(x1 % size) and ys.contains(y1 % size)]
            cases.append(case)
            held.append([results[k][m] for m in inside])
    return cases, held


def test_analysis_contains_iree(iree_results):
    """(ii) For each op, the analysis' set of its result, on operand sets around table values,
    holds IREE's result for every pair of table values in the sets (and of its constant)."""
    rng = random.Random(58)
    cases, held = [], []
    for f in FUNCTIONS:
        c, r = _analysis_cases(f, iree_results[f.name], rng)
        cases += c
        held += r
    unsound = []
    for case, (got, _), results in zip(cases, analyse(cases), held):
        w = WIDTH[case.result_type]
        unsound += [(case, ia.signed(x, w), got) for x in results if not got.contains(x)]
    assert not unsound, (len(unsound), unsound[:8])
