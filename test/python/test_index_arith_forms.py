"""index_arith's linear forms (`forms.py`: `linear_form`, `same_value`), the proof that two
sizes IREE computes in different ways are equal (forward-slice-dispatches relies on it).

Sound: on seeded random programs of addi, subi, muli, constants, `util.assume.int`, index casts
and ops a form does not model (divsi, a product of two unknowns), at i16, i32, i64 and index,
every value's form evaluated at random inputs (negative and edge ones too) is the evaluator's
value, modulo 2^w. Complete: no leaf of a form is an op the forms model (so a form that stops
early fails here, not only one that computes wrong). `same_value` says yes to values equal by
the ring's laws, no to values that differ, to other widths and to non-integers."""

from __future__ import annotations

import random
import re

import pytest
from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler import ir_helpers as h

TYPES = {"i16": 16, "i32": 32, "i64": 64, "index": 64}
MODELLED = ("arith.constant", "arith.addi", "arith.subi", "util.assume.int")
ARGS = 3


def _edge(w: int, rng: random.Random) -> int:
    top = 1 << (w - 1)
    return rng.choice((0, 1, -1, 2, -top, top - 1, rng.randrange(-top, top),
                       rng.randint(-100, 100)))


def random_program(t: str, rng: random.Random, ops: int = 14) -> str:
    """A function of ARGS arguments of type `t` (and one i32 argument cast to `t`, where `t`
    is index: a cast between other widths is a leaf) returning every value it computes."""
    w = TYPES[t]
    lines, names = [], [f"%a{i}" for i in range(ARGS)]
    if t == "index":
        lines.append("%w = arith.index_cast %n : i32 to index")  # other widths: a leaf
        lines.append("%s = arith.index_cast %a0 : index to i64")  # the same width: followed
        lines.append("%sb = arith.index_castui %s : i64 to index")
        names += ["%w", "%sb"]
    for k in range(ops):
        x, y = rng.choice(names), rng.choice(names)
        kind = rng.choice(("addi", "subi", "muli_const", "muli", "constant", "assume",
                           "divsi", "addi", "subi", "muli_const"))
        out = f"%v{k}"
        if kind == "constant":
            lines.append(f"{out} = arith.constant {_edge(w, rng)} : {t}")
        elif kind == "muli_const":
            c = f"%c{k}"
            lines.append(f"{c} = arith.constant {_edge(w, rng)} : {t}")
            a, b = (x, c) if rng.random() < 0.5 else (c, x)
            lines.append(f"{out} = arith.muli {a}, {b} : {t}")
        elif kind == "assume":
            lines.append(f"{out} = util.assume.int {x}<umin = 0, umax = 4096> : {t}")
        else:
            lines.append(f"{out} = arith.{kind} {x}, {y} : {t}")
        names.append(out)
    args = ", ".join(f"%a{i}: {t}" for i in range(ARGS))
    results = ", ".join(names)
    types = ", ".join([t] * len(names))
    body = "\n  ".join(lines)
    return (f"util.func @f({args}, %n: i32) -> ({types}) {{\n  {body}\n"
            f"  util.return {results} : {types}\n}}")


def _returned(module: ir.Module) -> list[ir.Value]:
    func = module.body.operations[0]
    return list(list(func.regions[0].blocks[0].operations)[-1].operands)


def _evaluate_form(form: ia.forms.Form, w: int, env, memo) -> int:
    terms, constant = form
    total = constant + sum(x * ia.evaluate(v, env, memo) for v, x in terms)
    return total % (1 << w)


@pytest.mark.parametrize("t", list(TYPES))
def test_forms_evaluate_to_the_programs_values(t):
    w = TYPES[t]
    rng = random.Random(w * 7 + len(t))
    for _ in range(25):
        with ir.Context():
            module = ir.Module.parse(random_program(t, rng))
            values = _returned(module)
            forms = [ia.linear_form(v) for v in values]
            for form in forms:
                for leaf, coefficient in form[0]:
                    op = h.defining_op(leaf)
                    assert 0 < coefficient < 1 << w, form
                    assert op is None or op.name not in MODELLED, op
                    if op is not None and op.name == "arith.muli":  # two unknowns
                        assert all(ia.linear_form(x)[0] for x in op.operands), op
                    if op is not None and op.name.startswith("arith.index_cast"):
                        assert ia.int_width(op.operands[0].type) != w, op  # other widths
                assert 0 <= form[1] < 1 << w, form
            for _ in range(6):
                inputs = {}

                memo: dict = {}

                def env(value, inputs=inputs, memo=memo):
                    op = h.defining_op(value)
                    if op is not None and op.name == "util.assume.int":  # its operand
                        return ia.evaluate(op.operands[h.result_index(value)], env, memo)
                    width = ia.int_width(value.type)
                    return inputs.setdefault(value, ia.unsigned(_edge(width, rng), width))

                for value, form in zip(values, forms):
                    try:
                        expected = ia.evaluate(value, env, memo)
                        got = _evaluate_form(form, w, env, memo)
                    except ia.Undefined:  # a division by zero or overflow: no value
                        continue
                    assert got == expected, (str(value), form)


SAME = """
util.func @f(%x: index, %y: index, %n: i32, %m: i64, %f: f32, %g: f32) -> () {
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %cm1 = arith.constant -1 : index
  %xy = arith.addi %x, %y : index
  %xy3 = arith.muli %xy, %c3 : index           // (x + y) * 3
  %x3 = arith.muli %c3, %x : index
  %y3 = arith.muli %y, %c3 : index
  %x3y3 = arith.addi %x3, %y3 : index          // 3x + 3y
  %xyy = arith.subi %xy, %y : index            // x + y - y
  %x2 = arith.muli %x, %c2 : index
  %xx = arith.addi %x, %x : index              // x + x
  %xm1 = arith.muli %x, %cm1 : index
  %negx = arith.subi %y, %xy : index           // y - (x + y)
  %x32 = arith.muli %x, %c32 : index
  %ax32 = util.assume.int %x32<umin = 0, umax = 4096> : index   // assume.int(x * 32)
  %ax = util.assume.int %x<umin = 0, umax = 128> : index
  %ax_32 = arith.muli %ax, %c32 : index        // assume.int(x) * 32
  %mi = arith.index_cast %m : i64 to index
  %mi1 = arith.addi %mi, %c2 : index
  %mi2 = arith.addi %c2, %mi : index
  %ni = arith.index_cast %n : i32 to index
  %n64 = arith.extsi %n : i32 to i64
  %n64i = arith.index_cast %n64 : i64 to index
  %xy_xy = arith.muli %x, %y : index           // two unknowns: a leaf
  %yx_yx = arith.muli %y, %x : index
  %c5i = arith.constant 5 : index
  %c5 = arith.constant 5 : i64
  %c6 = arith.constant 6 : i64
  %c5w = arith.constant 5 : i32
  %two = arith.addi %c2, %c3 : index
  %sum = arith.addf %f, %g : f32
  %sum2 = arith.addf %f, %g : f32
  util.return
}"""

EQUAL = [("xy3", "x3y3"), ("xyy", "x"), ("x2", "xx"), ("xm1", "negx"), ("ax32", "ax_32"),
         ("mi1", "mi2"), ("two", "c5i"), ("c5i", "c5"), ("x", "x"), ("sum", "sum")]
UNEQUAL = [("x3", "x2"), ("xy", "x"), ("x3y3", "xx"), ("xm1", "x"), ("ni", "n64i"),
           ("xy_xy", "yx_yx"), ("c5", "c6"), ("c5w", "c5"), ("sum", "sum2"), ("x", "y")]


def _named(module: ir.Module, text: str) -> dict[str, ir.Value]:
    block = module.body.operations[0].regions[0].blocks[0]
    names = dict(zip(("x", "y", "n", "m", "f", "g"), block.arguments))
    defined = re.findall(r"^\s*%(\w+) = ", text, re.M)  # the ops' names, in order
    ops = list(block.operations)[:-1]
    assert len(defined) == len(ops)
    return {**names, **{name: op.result for name, op in zip(defined, ops)}}


def test_same_value_by_the_rings_laws_and_not_otherwise():
    """Equal: distributivity, x + y - y, x + x = 2x, -x two ways, assume.int(x * 32) and
    assume.int(x) * 32, commuted sums, constants folded, an index and an i64 of the same
    pattern (index is 64 bits wide), a value and itself (a float too).
    Unequal: other coefficients or constants, an i32 extended two ways (a leaf each: not
    proven), x*y and y*x (products of unknowns are leaves), an i32 and an i64 five, two
    float ops, two arguments."""
    with ir.Context():
        module = ir.Module.parse(SAME)
        values = _named(module, SAME)
        for a, b in EQUAL:
            assert ia.same_value(values[a], values[b]), (a, b)
            assert ia.same_value(values[b], values[a]), (b, a)
        for a, b in UNEQUAL:
            assert not ia.same_value(values[a], values[b]), (a, b)
        same, other = [values[a] for a, _ in EQUAL], [values[b] for _, b in EQUAL]
        assert ia.same_values(same, other)
        assert not ia.same_values(same, other[:-1])
        assert not ia.same_values(same, other[:-1] + [values["y"]])
        assert not ia.same_values([values["x3"], values["xy3"]], [values["x2"], values["x3y3"]])


def _chain(n: int) -> str:
    """n ops on x, each of the last, cycling through `+ 1`, util.assume.int, index_cast to i64
    and index_castui back (every kind a form follows), and x + (the number of additions)."""
    lines, last, adds = [], "%x", 0
    for i in range(n):
        kind = i % 4
        if kind == 0:
            lines += [f"%k{i} = arith.constant 1 : index", f"%s{i} = arith.addi {last}, %k{i} : index"]
            adds += 1
        elif kind == 1:
            lines.append(f"%s{i} = util.assume.int {last}<umin = 0, umax = 4096> : index")
        elif kind == 2:
            lines.append(f"%s{i} = arith.index_cast {last} : index to i64")
        else:
            lines.append(f"%s{i} = arith.index_castui {last} : i64 to index")
        last = f"%s{i}"
    assert n % 4 in (0, 1)  # the chain's value an index
    body = "\n  ".join(lines + [f"%cn = arith.constant {adds} : index",
                                "%direct = arith.addi %x, %cn : index"])
    return (f"util.func @f(%x: index) -> (index, index) {{\n  {body}\n"
            f"  util.return {last}, %direct : index, index\n}}")


@pytest.mark.parametrize("n, equal", [(32, True), (33, False), (3000, False)])
def test_forms_follow_32_levels_of_ops(n, equal):
    """A form follows ops 32 levels deep, whatever their kind (a cost bound: deeper values
    are leaves, which is sound); a chain of 3000 ops is a leaf, not a RecursionError."""
    with ir.Context():
        module = ir.Module.parse(_chain(n))
        chain, direct = _returned(module)
        assert ia.same_value(chain, direct) is equal
