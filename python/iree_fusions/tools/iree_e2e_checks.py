"""IREE's check module, in Python: a check-module test file (IREE's tests/e2e) with its
`check.expect_*` calls turned into results of their functions, and the checks applied to the
results as IREE's check module applies them (runtime/src/iree/modules/check/module.cc).

A test function is public, takes no arguments and returns nothing; each call

    check.expect_eq(%a, %b) : tensor<4xi32>            expect_almost_eq(%a, %b, atol 1e-2)
    check.expect_eq_const(%a, dense<...>) : ...         expect_almost_eq_const(...)
    check.expect_true(%x) : i32                         expect_false, expect_all_true

becomes results of its function (a `_const` form's value an `arith.constant`; element types
numpy has no type for widened exactly: other floats to f32, i1 and odd integer widths to the
next of i8..i64, index to i64), and a `Check` says which results and how to compare them:
expect_eq byte for byte, expect_almost_eq `a == e or both NaN or (e finite and |a - e| <=
atol + rtol |e|)` in f64 with IREE's defaults atol 1e-4, rtol 0."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from iree_fusions.compiler.ir_helpers.names import (
    CHECK_EXPECT_ALL_TRUE, CHECK_EXPECT_ALMOST_EQ, CHECK_EXPECT_ALMOST_EQ_CONST,
    CHECK_EXPECT_EQ, CHECK_EXPECT_EQ_CONST, CHECK_EXPECT_FALSE, CHECK_EXPECT_TRUE, FUNC_FUNC,
    FUNC_RETURN,
)

DEFAULT_ATOL, DEFAULT_RTOL = 1e-4, 0.0  # CheckOps.td: expect_almost_eq's defaults
CHECK_KINDS = {CHECK_EXPECT_EQ: "eq", CHECK_EXPECT_EQ_CONST: "eq",
               CHECK_EXPECT_ALMOST_EQ: "almost_eq", CHECK_EXPECT_ALMOST_EQ_CONST: "almost_eq",
               CHECK_EXPECT_TRUE: "true", CHECK_EXPECT_FALSE: "false",
               CHECK_EXPECT_ALL_TRUE: "all_true"}
# IREE 3.13 reads some ops of these files (from an earlier IREE) in a newer syntax only: the
# updates, each keeping the lines where they are (locations stay the file's).
SYNTAX_UPDATES = [
    # iree_linalg_ext.attention / online_attention: indexing_maps became a property.
    (re.compile(r"(iree_linalg_ext\.(?:online_)?attention\s*)\{(\s*indexing_maps\s*=\s*"
                r"\[[^\]]*\]\s*)\}"), r"\1<\2>"),
]
# Element types the runtime hands to numpy as they are; others are widened exactly.
NUMPY_TYPES = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "complex<f32>", "complex<f64>"}


@dataclass(frozen=True)
class Check:
    """One check call of a test function: its kind, the function results that hold its
    operands (actual first), its tolerance and where it is in the file."""

    kind: str
    results: tuple[int, ...]
    where: str
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL


def updated_source(text: str) -> str:
    """The file's text in the syntax IREE 3.13 reads (`SYNTAX_UPDATES`)."""
    for pattern, replacement in SYNTAX_UPDATES:
        text = pattern.sub(replacement, text)
    return text


def rewrite_checks(path: str) -> tuple[str, dict[str, list[Check]]]:
    """The file's IR with each test function's check calls turned into its results, and
    per test function (in file order) its checks. Locations stay the file's."""
    from iree.compiler import ir
    from iree.compiler.dialects import arith, func

    tests: dict[str, list[Check]] = {}
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parseFile(path)
        for op in module.body.operations:
            if op.operation.name != FUNC_FUNC:
                continue
            checks = _collect_checks(op)
            ftype = op.attributes["function_type"].value
            private = "sym_visibility" in op.attributes and \
                op.attributes["sym_visibility"].value != "public"
            name = op.attributes["sym_name"].value
            if not checks:
                continue
            returns = [b.operations[len(b.operations) - 1] for b in op.regions[0].blocks
                       if b.operations[len(b.operations) - 1].name == FUNC_RETURN]
            if private or ftype.inputs or ftype.results or len(returns) != 1 or \
                    any(c.block != returns[0].operation.block for c in checks):
                raise ValueError(f"{path}: @{name}: check calls elsewhere than in the block "
                                 "that returns from a public () -> () function")
            values, found = [], []
            for c in checks:
                kind = CHECK_KINDS[c.name]
                attrs = {n: c.attributes[n] for n in c.attributes}
                unary = kind in ("true", "false", "all_true") or "value" in attrs
                operands = list(c.operands)[-1 if unary else -2:]  # after the device
                with ir.InsertionPoint(c), c.location:
                    if "value" in attrs:
                        operands = [operands[-1], arith.ConstantOp(operands[-1].type,
                                                                   attrs["value"]).result]
                    first = len(values)
                    values += [_numpy_typed(v) for v in operands]
                atol = attrs["atol"].value if "atol" in attrs else DEFAULT_ATOL
                rtol = attrs["rtol"].value if "rtol" in attrs else DEFAULT_RTOL
                found.append(Check(kind, tuple(range(first, len(values))), _where(c.location),
                                   atol, rtol))
                c.erase()
            ret = returns[0]
            with ir.InsertionPoint(ret), ret.location:
                func.ReturnOp(values)
            ret.erase()
            op.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([], [v.type for v in values]))
            tests[name] = found
        return module.operation.get_asm(enable_debug_info=True), tests


def _where(location) -> str:
    """`file:line:col` of a location (`loc("dir/file":line:col)`), else as printed."""
    text = str(location)
    if text.startswith('loc("') and '":' in text:
        path, _, rest = text[5:-1].partition('":')
        return f"{os.path.basename(path)}:{rest}"
    return text


def _collect_checks(func_op) -> list:
    """The check calls anywhere in a function, in order."""
    found = []

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name in CHECK_KINDS:
                        found.append(inner.operation)
                    visit(inner.operation)

    visit(func_op.operation)
    return found


def _numpy_typed(value):
    """`value`, or its exact widening to a type numpy holds: other floats (bf16, f8, f4)
    to f32, i1 and odd integer widths to the next of i8..i64 (zero-extended: equality and
    non-zero are kept), index to i64."""
    from iree.compiler import ir
    from iree.compiler.dialects import arith

    t = value.type
    shaped = isinstance(t, ir.RankedTensorType)
    elt = t.element_type if shaped else t
    if str(elt) in NUMPY_TYPES or not isinstance(elt, (ir.FloatType, ir.IntegerType,
                                                       ir.IndexType)):
        return value
    if isinstance(elt, ir.IndexType):
        new, build = ir.IntegerType.get_signless(64), arith.IndexCastOp
    elif isinstance(elt, ir.IntegerType):
        width = next(w for w in (8, 16, 32, 64) if w >= elt.width)
        new, build = ir.IntegerType.get_signless(width), arith.ExtUIOp
    else:
        new, build = ir.F32Type.get(), arith.ExtFOp
    if shaped:
        new = ir.RankedTensorType.get(t.shape, new)
    return build(new, value).result


# ---------------------------------------------------------------- the checks

def close(actual, expected, atol: float, rtol: float):
    """IREE's iree_math_fuzzy_compare_f64 per element: equal, both NaN, or expected finite and
    |a - e| <= atol + rtol |e| (atol and rtol are f32 attributes, compared in f64)."""
    import numpy as np

    a, e = (np.asarray(x).astype(np.float64) for x in (actual, expected))
    atol, rtol = float(np.float32(atol)), float(np.float32(rtol))
    with np.errstate(invalid="ignore", over="ignore"):
        return (a == e) | (np.isnan(a) & np.isnan(e)) | (
            np.isfinite(e) & (np.abs(a - e) <= atol + rtol * np.abs(e)))


def same_bits(a, b) -> bool:
    """Equal dtypes, shapes and bytes."""
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def failed_check(check: Check, values: list) -> str | None:
    """Why `check` fails on a function's results, or None where it holds."""
    import numpy as np

    v = [np.asarray(values[i]) for i in check.results]
    if check.kind in ("true", "false", "all_true"):
        nonzero = v[0] != 0
        holds = {"true": nonzero.all(), "all_true": nonzero.all(),
                 "false": not nonzero.any()}[check.kind]
        return None if holds else f"expect_{check.kind} at {check.where}: got {v[0]!r}"
    lhs, rhs = v
    if lhs.dtype != rhs.dtype or lhs.shape != rhs.shape:
        return (f"expect_{check.kind} at {check.where}: {lhs.dtype}{list(lhs.shape)} vs "
                f"{rhs.dtype}{list(rhs.shape)}")
    if lhs.size == 0:
        return None
    if check.kind == "eq":  # per element, byte for byte
        as_bytes = [np.ascontiguousarray(x).reshape(-1).view(np.uint8).reshape(x.size, -1)
                    for x in (lhs, rhs)]
        bad = (as_bytes[0] != as_bytes[1]).any(axis=1).reshape(lhs.shape)
    else:
        bad = ~close(lhs, rhs, check.atol, check.rtol)
    if not bad.any():
        return None
    i = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return (f"expect_{check.kind} at {check.where}: {int(bad.sum())} element(s) differ, "
            f"first at {tuple(int(x) for x in i)}: {lhs[i]!r} vs {rhs[i]!r}")


def differs_from_stock(checks: list[Check], plugin: list, stock: list, exact: bool
                       ) -> str | None:
    """Why the plugin's results of one function do not agree with stock's: bit for bit when
    `exact` (the plugin changed nothing) and for the operands of exact checks, else within
    the tolerance of the almost_eq check they are operands of."""
    import numpy as np

    tolerance: dict[int, tuple[float, float]] = {}
    for c in checks:
        if c.kind == "almost_eq" and not exact:
            tolerance.update({i: (c.atol, c.rtol) for i in c.results})
    for i, (p, s) in enumerate(zip(plugin, stock)):
        if same_bits(p, s):
            continue
        p, s = np.asarray(p), np.asarray(s)
        if i in tolerance and p.dtype == s.dtype and p.shape == s.shape \
                and close(p, s, *tolerance[i]).all():
            continue
        how = "bit for bit" if i not in tolerance else \
            "within atol={:g}, rtol={:g}".format(*tolerance[i])
        return f"result {i} ({checks_of(checks, i)}) differs from stock's {how}"
    return None


def checks_of(checks: list[Check], index: int) -> str:
    """The checks a function result is an operand of, as text."""
    return ", ".join(f"expect_{c.kind} at {c.where}" for c in checks if index in c.results)
