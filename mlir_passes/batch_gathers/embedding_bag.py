"""Recognition of torch-mlir's `F.embedding_bag(mode="sum")` generic: with fixed-length bags
(offsets b * L, known at compile time) or with offsets known only at run time.

The generic scans every index for every bag (quadratic in the batch); its bag condition is
checked by evaluating the body's integer code at every bag's boundaries (for the run-time
form, on several trial offsets vectors).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import NoMatch

from .match import CASTS, CMPI, traces_to, is_zero_fill

BAG_BODY_OPS = ("arith.select", "arith.addf", "tensor.extract", "linalg.yield", "linalg.index",
                "arith.constant", "arith.cmpi", "arith.andi", "arith.ori", "arith.xori",
                "arith.addi", "arith.subi", "arith.muli") + CASTS


@dataclass(eq=False)
class EmbeddingBag:
    """The plan of an embedding_bag rewrite: out[b, d] = sum_l table[idx[b*L + l], d]."""

    op: ir.Operation
    table: ir.Value
    flat_index: ir.Value  # [B*L]
    bags: int
    length: int


def is_bag_like(op: ir.Operation) -> bool:
    """A generic with two inputs (indices, offsets) and a reduction: what may be a bag."""
    return (op.name == "linalg.generic" and len(h.dps_inputs(op)) == 2
            and "reduction" in h.iterator_types(op))


class _Unknown(Exception):
    pass


def _eval_int(value: ir.Value, env: dict, tensors: dict, memo: dict) -> int:
    """Evaluates an integer/i1 scalar of a generic body for concrete loop indices."""
    if value in env:
        return env[value]
    if value in memo:
        return memo[value]
    op = h.defining_op(value)
    if op is None:
        raise _Unknown
    name = op.name

    def ev(v: ir.Value) -> int:
        return _eval_int(v, env, tensors, memo)

    if name == "arith.constant":
        c = h.const_int(value)
        if c is None:
            raise _Unknown
        out = int(c)
    elif name == "linalg.index":
        out = env[("dim", ir.IntegerAttr(op.attributes["dim"]).value)]
    elif name in CASTS:
        out = ev(op.operands[0])
    elif name in ("arith.addi", "arith.subi", "arith.muli"):
        a, b = ev(op.operands[0]), ev(op.operands[1])
        out = a + b if name == "arith.addi" else a - b if name == "arith.subi" else a * b
    elif name == "arith.cmpi":
        a, b = ev(op.operands[0]), ev(op.operands[1])
        pred = CMPI[ir.IntegerAttr(op.attributes["predicate"]).value]
        if pred[0] == "u" and (a < 0 or b < 0):
            raise _Unknown
        out = int({"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b,
                   "sge": a >= b, "ult": a < b, "ule": a <= b, "ugt": a > b,
                   "uge": a >= b}[pred])
    elif name in ("arith.andi", "arith.ori", "arith.xori"):
        a, b = ev(op.operands[0]), ev(op.operands[1])
        out = a & b if name == "arith.andi" else a | b if name == "arith.ori" else a ^ b
    elif name == "arith.select":
        out = ev(op.operands[1]) if ev(op.operands[0]) else ev(op.operands[2])
    elif name == "tensor.extract" and op.operands[0] in tensors and len(op.operands) == 2:
        data = tensors[op.operands[0]]
        i = ev(op.operands[1])
        if not 0 <= i < len(data):
            raise _Unknown
        out = data[i]
    else:
        raise _Unknown
    memo[value] = out
    return out


def _known_int_vector(value: ir.Value) -> list[int] | None:
    """Contents of a 1-d integer tensor computed from loop indices only, or a dense constant."""
    t = h.static_type(value)
    op = h.defining_op(value)
    if t is None or t.rank > 1 or op is None:
        return None
    size = t.shape[0] if t.rank else 1
    if op.name == "arith.constant" and isinstance(op.attributes["value"], ir.DenseIntElementsAttr):
        return [int(x) for x in op.attributes["value"]]
    if op.name == "linalg.fill":
        c = h.const_int(op.operands[0])
        return None if c is None else [c] * size
    if op.name != "linalg.generic" or h.dps_inputs(op) or len(op.results) != 1:
        return None
    block = h.body_block(op)
    yielded = list(block.operations)[-1].operation.operands[0]
    out = []
    for i in range(size):
        try:
            out.append(_eval_int(yielded, {("dim", 0): i}, {}, {}))
        except (_Unknown, KeyError):
            return None
    return out


@dataclass(frozen=True)
class _BagForm:
    """The loops, operands and summand of torch-mlir's embedding_bag generic."""

    ids: ir.Value  # [N]
    offsets: ir.Value  # [B] (0-d at B = 1)
    n: int
    bags: int
    dims: tuple[int | None, int, int]  # loops (bag, position, column); bag None at B = 1
    table: ir.Value
    extract: ir.Operation  # table[ids[j], d]
    select: ir.Operation  # cond ? out + row : out
    row_first: bool  # the sum is row + out (else out + row)


def _bag_loops(op: ir.Operation) -> tuple[tuple[int | None, int, int], int, int]:
    """(loops (bag, position, column), N ids, B bags) of a (bag, position, column) generic
    over static (ids, offsets)."""
    its = h.iterator_types(op) if op.name == "linalg.generic" else []
    # B > 1: loops (bag b, position j, column d). B = 1 (unit dims folded): loops (j, d) and
    # the offsets are a 0-d tensor.
    if its == ["parallel", "reduction", "parallel"]:
        dims, expect = (0, 1, 2), [[1], [0], [0, 2]]
    elif its == ["reduction", "parallel"]:
        dims, expect = (None, 0, 1), [[0], [], [1]]
    else:
        raise NoMatch("not a (bag, position, column) generic")
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    if len(ins) != 2 or len(outs) != 1:
        raise NoMatch("expects indices and offsets")
    if [h.map_dim_positions(m) for m in h.indexing_maps(op)] != expect:
        raise NoMatch("unexpected indexing maps")
    idx_t, off_t = h.static_type(ins[0]), h.static_type(ins[1])
    res_t = h.static_type(op.results[0])
    if idx_t is None or off_t is None or res_t is None:
        raise NoMatch("dynamic shapes")
    return dims, idx_t.shape[0], (off_t.shape[0] if off_t.rank else 1)


def _bag_summand(op: ir.Operation, dims: tuple[int | None, int, int]
                 ) -> tuple[ir.Operation, ir.Operation, bool]:
    """(select, table extract, row first) of a body that yields `cond ? row + out : out`
    with row = table[ids[j], d] of a captured 2-d table."""
    res_t = h.static_type(op.results[0])
    block = h.body_block(op)
    idx_arg, _, out_arg = block.arguments
    body = [o.operation for o in block.operations]
    yielded = body[-1].operands[0]
    sel = h.defining_op(yielded)
    if sel is None or sel.name != "arith.select" or sel.operands[2] != out_arg:
        raise NoMatch("body does not select between out and out + row")
    add = h.defining_op(sel.operands[1])
    if add is None or add.name != "arith.addf" or out_arg not in list(add.operands):
        raise NoMatch("body does not accumulate a sum")
    row_first = add.operands[1] == out_arg
    row = add.operands[0] if row_first else add.operands[1]
    ex = h.defining_op(row)
    if ex is None or ex.name != "tensor.extract" or len(ex.operands) != 3:
        raise NoMatch("summand is not a table element")
    table = ex.operands[0]
    tab_t = h.static_type(table)
    if tab_t is None or tab_t.rank != 2 or h.defined_inside(table, op) or \
            tab_t.shape[1] != res_t.shape[-1] or tab_t.element_type != res_t.element_type:
        raise NoMatch("summand is not a row of a captured table")
    col = h.defining_op(ex.operands[2])
    if col is None or col.name != "linalg.index" or \
            ir.IntegerAttr(col.attributes["dim"]).value != dims[2] or \
            not traces_to(ex.operands[1], idx_arg):
        raise NoMatch("table element is not [idx[j], d]")
    return sel, ex, row_first


def _check_body_ops(op: ir.Operation, ex: ir.Operation, known_offsets: list[int] | None
                    ) -> None:
    """Nothing else is read or has effects: the body reads the table element and the offsets
    (or, with known offsets, a tensor of the same contents)."""
    offsets = h.dps_inputs(op)[1]
    for o in h.body_block(op).operations:
        o = o.operation
        if o.name not in BAG_BODY_OPS:
            raise NoMatch(f"unexpected {o.name} in the bag body")
        if o.name == "tensor.extract" and o != ex and o.operands[0] != offsets and (
                known_offsets is None or _known_int_vector(o.operands[0]) != known_offsets):
            raise NoMatch("body reads an unknown tensor")


def match_embedding_bag(op: ir.Operation) -> EmbeddingBag:
    """torch-mlir's F.embedding_bag(mode="sum") lowering with fixed-length bags.

    A generic over (bag b, position j, column d): out[b, d] += table[idx[j], d] when
    offsets[b] <= j < next(b). Recognized when the offsets are b * L (2-d ids) and the
    condition, evaluated at every bag's boundaries, selects exactly positions [b*L, b*L+L).
    Variable-length bags raise VariableBags (see match_offsets_bag).
    """
    dims, n, bags = _bag_loops(op)
    if bags == 0 or n % bags:
        raise VariableBags("bags are not of one fixed length")
    length = n // bags
    ins = h.dps_inputs(op)
    offsets = _known_int_vector(ins[1])
    if offsets != [b * length for b in range(bags)]:
        raise VariableBags("offsets are not b * L (variable-length bags)")
    sel, ex, _ = _bag_summand(op, dims)
    _check_body_ops(op, ex, offsets)
    _check_bag_condition(op, sel.operands[0], dims, [offsets], n,
                         "bag condition does not select [b*L, b*L+L)")
    if not is_zero_fill(h.dps_inits(op)[0]):
        raise NoMatch("bag sum does not start from zero")
    return EmbeddingBag(op, ex.operands[0], ins[0], bags, length)


class VariableBags(NoMatch):
    """The bags are not of one fixed length: the offsets form may still apply."""


@dataclass(eq=False)
class OffsetsBag:
    """F.embedding_bag(mode="sum") with run-time offsets (variable-length bags):
    out[b, d] = sum of table[ids[j], d] over j in [max(offsets[b], 0), min(next(b), N)),
    next(b) = offsets[b + 1] (N for the last bag), summed from the fill value in increasing
    j, as the generic it replaces does."""

    op: ir.Operation
    table: ir.Value
    ids: ir.Value  # [N]
    offsets: ir.Value  # [B] (0-d at B = 1)
    bags: int
    n: int
    row_first: bool  # the body adds row + sum (else sum + row)
    placement: frozenset[str] = frozenset()  # devices its inputs come from (see Lookup)

    @property
    def result(self) -> ir.Value:
        return self.op.results[0]

    @property
    def ops(self) -> list[ir.Operation]:
        return [self.op]

    @property
    def inputs(self) -> tuple[ir.Value, ...]:
        return (self.ids, self.offsets, self.table)

    @property
    def dim(self) -> int:
        return h.static_type(self.table).shape[1]

    @property
    def elem(self) -> ir.Type:
        return h.static_type(self.table).element_type

    @property
    def init(self) -> ir.Value:
        return h.dps_inits(self.op)[0]


def match_offsets_bag(op: ir.Operation) -> OffsetsBag:
    """torch-mlir's F.embedding_bag(mode="sum") lowering with offsets known only at run time.

    The generic scans every id for every bag and adds table[ids[j]] where
    offsets[b] <= j < next(b). The condition is checked by evaluating the body's integer
    code at the boundaries of every bag for several offsets vectors (variable lengths, empty
    bags, all ids in one bag, offsets out of order or out of range).
    """
    dims, n, bags = _bag_loops(op)
    sel, ex, row_first = _bag_summand(op, dims)
    _check_body_ops(op, ex, None)
    _check_bag_condition(op, sel.operands[0], dims, _trial_offsets(bags, n), n,
                         "bag condition does not select [offsets[b], offsets[b+1])")
    if not is_zero_fill(h.dps_inits(op)[0]):
        raise NoMatch("bag sum does not start from zero")
    ids, offsets = h.dps_inputs(op)
    return OffsetsBag(op, ex.operands[0], ids, offsets, bags, n, row_first)


def _trial_offsets(bags: int, n: int) -> list[list[int]]:
    """Offsets vectors the bag condition is checked on: even and uneven splits, empty bags,
    every id in the first or the last bag, offsets decreasing and out of [0, N]."""
    rng = random.Random(0)
    uneven = sorted(rng.randrange(n + 1) for _ in range(bags))
    uneven[0] = 0
    out = [[b * n // bags for b in range(bags)], uneven, [0] * bags, [0] + [n] * (bags - 1),
           [rng.randrange(-2, n + 3) for _ in range(bags)]]
    if bags == 1:
        out += [[min(1, n)], [n // 2]]
    return out


def _check_bag_condition(op: ir.Operation, cond: ir.Value, dims: tuple,
                         vectors: list[list[int]], n: int, mismatch: str) -> None:
    """For each offsets vector o, the condition selects exactly positions
    o[b] <= j < next(b) of bag b, next(b) = o[b + 1] (N for the last bag): checked at every
    bag's boundaries, the first and the last position."""
    b_dim, j_dim, d_dim = dims
    off_arg = h.body_block(op).arguments[1]
    reads = [o.operation.operands[0] for o in h.body_block(op).operations
             if o.operation.name == "tensor.extract" and len(o.operation.operands) == 2]
    for offsets in vectors:
        tensors = {v: offsets for v in reads}
        bags = len(offsets)
        for b in range(bags):
            start = offsets[b]
            end = offsets[b + 1] if b + 1 < bags else n
            for j in {start - 1, start, end - 1, end, 0, n - 1}:
                if not 0 <= j < n:
                    continue
                env = {("dim", j_dim): j, ("dim", d_dim): 0, off_arg: start}
                if b_dim is not None:
                    env[("dim", b_dim)] = b
                try:
                    got = _eval_int(cond, env, tensors, {})
                except (_Unknown, KeyError):
                    raise NoMatch("bag condition not understood") from None
                if bool(got) != (start <= j < end):
                    raise NoMatch(mismatch)
