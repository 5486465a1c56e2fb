"""Random index generics (integer arithmetic of i8/i16/i32/i64/index values, as the paged-cache
index chains are) and the brute-force check of `index_arith`'s abstract domain against its
concrete one (test_index_arith.py)."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler import ir_helpers as h

TYPES = ("i8", "i16", "i32", "i64", "index")
WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
BINARY = ("addi", "subi", "muli", "divsi", "divui", "floordivsi", "ceildivsi", "ceildivui",
          "remsi", "remui", "shli", "shrsi", "shrui", "andi", "ori", "xori", "minsi", "maxsi",
          "minui", "maxui")
DIVIDES = ("divsi", "divui", "floordivsi", "ceildivsi", "ceildivui", "remsi", "remui")
SHIFTS = ("shli", "shrsi", "shrui")
PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
# The inputs: %a (i64) and %b (i32) elements, any value; loop indices %i0, %i1.
INPUT_TYPES = ("i64", "i32")


def interesting(width: int) -> list[int]:
    """Values that meet a width's edges (wrap points, sign bit) and small ones."""
    top = 1 << (width - 1)
    return sorted({0, 1, -1, 2, 3, 7, 8, 32, 127, 128, 255, 256, top - 1, -top, top // 3,
                   -(top // 3) - 1, 1431655765, -1431655765})


@dataclass
class IndexGeneric:
    """A module with one function @f(%a: tensor<RxCxi64>, %b: tensor<RxCxi32>) whose one
    linalg.generic yields an integer of `result` type computed from %a, %b and the loop
    indices; `body`: its ops, for messages."""

    text: str
    shape: tuple[int, int]
    result: str
    body: list[str]


class _Builder:
    def __init__(self, rng: random.Random, safe: bool):
        self.rng, self.safe = rng, safe
        self.lines: list[str] = ["%i0 = linalg.index 0 : index", "%i1 = linalg.index 1 : index"]
        self.pool: dict[str, list[str]] = {"i64": ["%a"], "i32": ["%b"], "index": ["%i0", "%i1"]}
        self.n = 0
        self.last = ("%a", "i64")

    def fresh(self, t: str, line: str) -> str:
        name = f"%v{self.n}"
        self.n += 1
        self.lines.append(f"{name} = {line}")
        self.pool.setdefault(t, []).append(name)
        self.last = (name, t)
        return name

    def constant(self, t: str, values: list[int] | None = None) -> str:
        value = self.rng.choice(values or interesting(WIDTH[t]))
        value = ia.signed(value, WIDTH[t])
        name = f"%c{self.n}"
        self.n += 1
        self.lines.append(f"{name} = arith.constant {value} : {t}")
        return name

    def operand(self, t: str) -> str:
        if t not in self.pool or self.rng.random() < 0.25:
            return self.constant(t)
        return self.rng.choice(self.pool[t])

    def divisor(self, kind: str, t: str) -> str:
        """A nonzero constant (safe: positive, so no signed overflow), or any operand."""
        if self.safe or self.rng.random() < 0.7:
            return self.constant(t, [1, 2, 3, 4, 7, 8, 32, 128, 1000] +
                                 ([] if self.safe else [-1, -3, 255]))
        return self.operand(t)

    def step(self) -> None:
        rng = self.rng
        kind = rng.choice(("binary", "binary", "binary", "cast", "cast", "select", "floormod",
                           "scale", "scale"))
        t = rng.choice(sorted(self.pool))
        if kind == "scale":  # a page id times a cache stride, plus a small offset
            c = self.constant(t, [2, 3, 4, 32, 128, 256, 768, 1 << 20])
            x = self.fresh(t, f"arith.muli {rng.choice(self.pool[t])}, {c} : {t}")
            self.fresh(t, f"arith.addi {x}, {self.operand(t)} : {t}")
        elif kind == "binary":
            op = rng.choice(BINARY)
            a = self.operand(t)
            if op in DIVIDES:
                b = self.divisor(op, t)
            elif op in SHIFTS:
                b = self.constant(t, list(range(WIDTH[t])) if self.safe else [0, 1, 3, 7, 63])
            else:
                b = self.operand(t)
            self.fresh(t, f"arith.{op} {a}, {b} : {t}")
        elif kind == "cast":
            to = rng.choice([x for x in TYPES if x != t])
            a = rng.choice(self.pool[t])
            w_in, w_out = WIDTH[t], WIDTH[to]
            if "index" in (t, to):
                op = rng.choice(("index_cast", "index_castui"))
                if w_in == w_out and t == to:
                    return
            elif w_out > w_in:
                op = rng.choice(("extsi", "extui"))
            elif w_out < w_in:
                op = "trunci"
            else:
                return
            self.fresh(to, f"arith.{op} {a} : {t} to {to}")
        elif kind == "select":
            x, y = self.operand(t), self.operand(t)
            c = f"%p{self.n}"
            self.n += 1
            self.lines.append(f"{c} = arith.cmpi {rng.choice(PREDICATES)}, {x}, {y} : {t}")
            self.fresh(t, f"arith.select {c}, {self.operand(t)}, {self.operand(t)} : {t}")
        else:  # torch's floor-mod by a positive constant
            x = rng.choice(self.pool[t])
            c = self.constant(t, [2, 3, 8, 32, 100])
            z = self.constant(t, [0])
            r = self.fresh(t, f"arith.remsi {x}, {c} : {t}")
            nz = f"%p{self.n}"
            neg = f"%q{self.n}"
            both = f"%r{self.n}"
            self.n += 1
            self.lines += [f"{nz} = arith.cmpi ne, {r}, {z} : {t}",
                           f"{neg} = arith.cmpi slt, {r}, {z} : {t}",
                           f"{both} = arith.andi {nz}, {neg} : i1"]
            up = self.fresh(t, f"arith.addi {r}, {c} : {t}")
            self.fresh(t, f"arith.select {both}, {up}, {r} : {t}")


def generate(seed: int, ops: int, safe: bool = False, name: str = "f") -> IndexGeneric:
    """A random index generic of `ops` steps; `safe`: no division by zero or -1 and no
    shift by the width (code that a CPU may trap on), for running it compiled."""
    rng = random.Random(seed)
    builder = _Builder(rng, safe)
    for _ in range(ops):
        builder.step()
    last, t = builder.last
    if t == "index":  # a tensor of index cannot leave the function
        last = builder.fresh("i64", f"arith.index_cast {last} : index to i64")
        t = "i64"
    shape = (rng.randint(1, 4), rng.randint(1, 4))
    return IndexGeneric(function_text(name, shape, t, builder.lines, last), shape, t,
                        builder.lines)


def function_text(name: str, shape: tuple[int, int], result: str, body: list[str],
                  last: str) -> str:
    rows, cols = shape
    ops = "\n".join(f"    {line}" for line in body)
    return f"""
util.func public @{name}(%ta: tensor<{rows}x{cols}xi64>, %tb: tensor<{rows}x{cols}xi32>)
    -> tensor<{rows}x{cols}x{result}> {{
  %e = tensor.empty() : tensor<{rows}x{cols}x{result}>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}}
      ins(%ta, %tb : tensor<{rows}x{cols}xi64>, tensor<{rows}x{cols}xi32>)
      outs(%e : tensor<{rows}x{cols}x{result}>) {{
  ^bb0(%a: i64, %b: i32, %o: {result}):
{ops}
    linalg.yield {last} : {result}
  }} -> tensor<{rows}x{cols}x{result}>
  util.return %r : tensor<{rows}x{cols}x{result}>
}}
"""


def the_generic(module: ir.Module) -> ir.Operation:
    func = next(op.operation for op in module.body.operations
                if op.operation.name == "util.func")
    block = func.regions[0].blocks[0]
    return next(op.operation for op in block.operations
                if op.operation.name == "linalg.generic")


def concrete_results(generic: ir.Operation, a: int, b: int, i0: int, i1: int) -> int:
    """The pattern the generic yields at loop point (i0, i1) for input elements a and b
    (ia.Undefined where the IR's result is undefined)."""
    block = h.body_block(generic)
    args = list(block.arguments)
    values = {args[0]: ia.unsigned(a, 64), args[1]: ia.unsigned(b, 32)}

    def env(value: ir.Value) -> int:
        if value in values:
            return values[value]
        op = h.defining_op(value)
        if op is not None and op.name == "linalg.index":
            return (i0, i1)[ir.IntegerAttr(op.attributes["dim"]).value]
        raise AssertionError(f"no value for {value}")

    yielded = list(block.operations)[-1].operands[0]
    return ia.evaluate(yielded, env, {})


def counterexample(text: str, seed: int = 0, inputs: int = 9) -> tuple | None:
    """A point whose concrete result the analysis' Residues of the generic's result do not
    contain: (a, b, i0, i1, pattern, residues), or None (sound on every point tried: every
    loop point, `inputs` values of each input drawn from `interesting` and at random)."""
    rng = random.Random(seed)

    def draw(width: int) -> list[int]:
        edges = interesting(width)
        return rng.sample(edges, min(inputs - 2, len(edges))) + \
            [rng.randrange(-(1 << (width - 1)), 1 << (width - 1)) for _ in range(2)]

    with ir.Context():
        module = ir.Module.parse(text)
        generic = the_generic(module)
        result = ia.IndexAnalysis().tensor(generic.results[0])
        ranges = h.loop_ranges(generic)
        for a, b in itertools.product(draw(64), draw(32)):
            for i0, i1 in itertools.product(range(ranges[0]), range(ranges[1])):
                try:
                    got = concrete_results(generic, a, b, i0, i1)
                except ia.Undefined:
                    continue
                if not result.contains(got):
                    return (a, b, i0, i1, got, result)
    return None
