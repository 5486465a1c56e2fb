"""The concrete domain: the bit pattern each integer op computes, as MLIR's arith folders
define it (two's complement, wrap at the width; signed and unsigned readings)."""

from __future__ import annotations

from collections.abc import Callable

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_ADDI, ARITH_ANDI, ARITH_CEILDIVSI, ARITH_CEILDIVUI, ARITH_CMPI, ARITH_CONSTANT,
    ARITH_DIVSI, ARITH_DIVUI, ARITH_EXTSI, ARITH_EXTUI, ARITH_FLOORDIVSI, ARITH_INDEX_CAST,
    ARITH_INDEX_CASTUI, ARITH_MAXSI, ARITH_MAXUI, ARITH_MINSI, ARITH_MINUI, ARITH_MULI, ARITH_ORI,
    ARITH_REMSI, ARITH_REMUI, ARITH_SELECT, ARITH_SHLI, ARITH_SHRSI, ARITH_SHRUI, ARITH_SUBI,
    ARITH_TRUNCI, ARITH_XORI
)

INDEX_WIDTH = 64  # IREE's 64-bit targets (llvm-cpu on x86-64/aarch64, CUDA, ROCm, Vulkan)
UTIL_ASSUME_INT = h.UTIL_ASSUME_INT


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


class Undefined(Exception):
    """The op's result is undefined (poison or UB) for these operands."""


def trunc_div(a: int, b: int) -> int:
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
    ARITH_DIVSI: _signed_division(trunc_div),
    ARITH_REMSI: _signed_division(lambda a, b: a - trunc_div(a, b) * b),
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


def attr_int(op: ir.Operation, name: str) -> int:
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
        out = unsigned(attr_int(op, "value"), w)
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
        pred = h.CMPI_PREDICATES[attr_int(op, "predicate")]
        out = int(_CMPI[pred](a, b, int_width(op.operands[0].type)))
    else:
        out = env(value)
    memo[value] = out
    return out


