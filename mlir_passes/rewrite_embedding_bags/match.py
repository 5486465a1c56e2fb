"""Recognition of torch-mlir's `F.embedding_bag(mode="sum")` generic: with fixed-length bags
(offsets b * L, known at compile time) or with offsets known only at run time.

The generic scans every index for every bag (quadratic in the batch); its bag condition is
checked by evaluating the body's integer code at every bag's boundaries (for the run-time
form, on several trial offsets vectors).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_ADDF, ARITH_ADDI, ARITH_ANDI, ARITH_CEILDIVSI, ARITH_CEILDIVUI, ARITH_CMPI,
    ARITH_CONSTANT, ARITH_DIVSI, ARITH_DIVUI, ARITH_MULI, ARITH_ORI, ARITH_SELECT, ARITH_SUBI,
    ARITH_XORI, LINALG_FILL, LINALG_GENERIC, LINALG_INDEX, LINALG_YIELD, TENSOR_COLLAPSE_SHAPE,
    TENSOR_DIM, TENSOR_EXTRACT
)
from iree_fusions.compiler.protocol import NoMatch



BAG_BODY_OPS = (ARITH_SELECT, ARITH_ADDF, TENSOR_EXTRACT, LINALG_YIELD, LINALG_INDEX,
                ARITH_CONSTANT, ARITH_CMPI, ARITH_ANDI, ARITH_ORI, ARITH_XORI,
                ARITH_ADDI, ARITH_SUBI, ARITH_MULI) + h.INT_CASTS


@dataclass(eq=False)
class EmbeddingBag:
    """The plan of an embedding_bag rewrite: out[b, d] = sum_l table[idx[b*L + l], d]."""

    op: ir.Operation
    table: ir.Value
    flat_index: ir.Value  # [B*L]
    bags: int | ir.Value  # static, or the index value of a dynamic count
    length: int

    @property
    def bags_text(self) -> str:
        return str(self.bags) if isinstance(self.bags, int) else "?"


def is_bag_like(op: ir.Operation) -> bool:
    """A generic with two inputs (indices, offsets) and a reduction: what may be a bag."""
    return (op.name == LINALG_GENERIC and h.num_dps_inputs(op) == 2
            and "reduction" in h.iterator_types(op))


class _Unknown(Exception):
    pass


DIVISIONS = (ARITH_CEILDIVUI, ARITH_CEILDIVSI, ARITH_DIVUI, ARITH_DIVSI)
# Ops _eval_int computes on host-side sizes (the leaves it cannot compute are the free sizes).
SIZE_OPS = (ARITH_CONSTANT, ARITH_ADDI, ARITH_SUBI, ARITH_MULI, ARITH_CMPI,
            ARITH_SELECT) + DIVISIONS + h.INT_CASTS


def _eval_int(value: ir.Value, env: dict, tensors: dict, memo: dict) -> int:
    """Evaluates an integer/i1 scalar as the IR computes it (fixed width, wrap, signed and
    unsigned ops: `index_arith.evaluate`), for the loop indices `env[("dim", d)]`, the values
    `env[value]`, the free sizes `env[size_key]` and the known tensors `tensors` read by
    `tensor.extract`; an integer read signed (an i1 as 0 or 1). _Unknown where a leaf is
    not given or the result is undefined (a division by zero)."""
    for bound, x in env.items():
        if isinstance(bound, ir.Value) and bound not in memo:
            memo[bound] = ia.unsigned(x, ia.int_width(bound.type) or 64)

    def leaf(v: ir.Value) -> int:
        width = ia.int_width(v.type)
        op = h.defining_op(v)
        if width is None or op is None:
            raise _Unknown
        if op.name == TENSOR_DIM and h.size_key(v) in env:  # a free size, read again
            return ia.unsigned(env[h.size_key(v)], width)
        if op.name == LINALG_INDEX:
            return ia.unsigned(env[("dim", ir.IntegerAttr(op.attributes["dim"]).value)], width)
        if op.name == TENSOR_EXTRACT and op.operands[0] in tensors and len(op.operands) == 2:
            data = tensors[op.operands[0]]
            index = _eval_int(op.operands[1], env, tensors, memo)
            if not 0 <= index < len(data):
                raise _Unknown
            return ia.unsigned(data[index], width)
        raise _Unknown

    try:
        pattern = ia.evaluate(value, leaf, memo)
    except ia.Undefined:
        raise _Unknown from None
    width = ia.int_width(value.type)
    return pattern if width == 1 else ia.signed(pattern, width)


def _known_int_vector(value: ir.Value, env: dict | None = None,
                      size: int | None = None) -> list[int] | None:
    """Contents of a 1-d integer tensor computed from loop indices only, or a dense constant
    (a dynamic one: `size` entries, with the values of `env` for the sizes it reads)."""
    tensor_t = h.tensor_type(value)
    op = h.defining_op(value)
    if tensor_t is None or tensor_t.rank > 1 or op is None or \
            (size is None and not tensor_t.has_static_shape):
        return None
    if size is None:
        size = tensor_t.shape[0] if tensor_t.rank else 1
    if op.name == ARITH_CONSTANT and isinstance(op.attributes["value"], ir.DenseIntElementsAttr):
        return [int(elem) for elem in op.attributes["value"]]
    if op.name == LINALG_FILL:
        fill = h.const_int(op.operands[0])
        return None if fill is None else [fill] * size
    if op.name != LINALG_GENERIC or h.dps_inputs(op) or len(op.results) != 1:
        return None
    block = h.body_block(op)
    yielded = list(block.operations)[-1].operation.operands[0]
    out = []
    for i in range(size):
        try:
            out.append(_eval_int(yielded, {**(env or {}), ("dim", 0): i}, {}, {}))
        except (_Unknown, KeyError):
            return None
    return out


def _bag_loops(op: ir.Operation, dynamic: bool = False
               ) -> tuple[tuple[int | None, int, int], int | None, int | None]:
    """(loops (bag, position, column), N ids, B bags) of a (bag, position, column) generic
    over (ids, offsets); with `dynamic`, N and B are None where dynamic."""
    its = h.iterator_types(op) if op.name == LINALG_GENERIC else []
    # B > 1: loops (bag b, position j, column d). B = 1 (unit dims folded): loops (j, d) and
    # the offsets are a 0-d tensor.
    if its == ["parallel", "reduction", "parallel"]:
        dims, expect = (0, 1, 2), [[1], [0], [0, 2]]
    elif its == ["reduction", "parallel"]:
        dims, expect = (None, 0, 1), [[0], [], [1]]
    else:
        raise NoMatch("not-bag-generic", "not a (bag, position, column) generic")
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    if len(ins) != 2 or len(outs) != 1:
        raise NoMatch("operands", "expects indices and offsets")
    if [h.map_dim_positions(map_) for map_ in h.indexing_maps(op)] != expect:
        raise NoMatch("maps", "unexpected indexing maps")
    idx_t, off_t = h.tensor_type(ins[0]), h.tensor_type(ins[1])
    res_t = h.tensor_type(op.results[0])
    if idx_t is None or off_t is None or res_t is None:
        raise NoMatch("unranked", "operands are not ranked tensors")
    if not dynamic and not (idx_t.has_static_shape and off_t.has_static_shape and
                            res_t.has_static_shape):
        raise NoMatch("dynamic-shapes", "dynamic shapes")

    def static(size: int) -> int | None:
        return None if ir.ShapedType.is_dynamic_size(size) else size

    return dims, static(idx_t.shape[0]), (static(off_t.shape[0]) if off_t.rank else 1)


def _bag_summand(op: ir.Operation, dims: tuple[int | None, int, int]
                 ) -> tuple[ir.Operation, ir.Operation, bool]:
    """(select, table extract, row first) of a body that yields `cond ? row + out : out`
    with row = table[ids[j], d] of a captured 2-d table."""
    res_t = h.tensor_type(op.results[0])
    block = h.body_block(op)
    idx_arg, _, out_arg = block.arguments
    body = [body_op.operation for body_op in block.operations]
    yielded = body[-1].operands[0]
    sel = h.defining_op(yielded)
    if sel is None or sel.name != ARITH_SELECT or sel.operands[2] != out_arg:
        raise NoMatch("body-not-select", "body does not select between out and out + row")
    add = h.defining_op(sel.operands[1])
    if add is None or add.name != ARITH_ADDF or out_arg not in list(add.operands):
        raise NoMatch("body-not-sum", "body does not accumulate a sum")
    row_first = add.operands[1] == out_arg
    row = add.operands[0] if row_first else add.operands[1]
    extract = h.defining_op(row)
    if extract is None or extract.name != TENSOR_EXTRACT or len(extract.operands) != 3:
        raise NoMatch("summand-not-extract", "summand is not a table element")
    table = extract.operands[0]
    tab_t = h.static_type(table)
    if tab_t is None or tab_t.rank != 2 or h.defined_inside(table, op) or \
            tab_t.shape[1] != res_t.shape[-1] or tab_t.element_type != res_t.element_type:
        raise NoMatch("summand-not-table", "summand is not a row of a captured table")
    col = h.defining_op(extract.operands[2])
    if col is None or col.name != LINALG_INDEX or \
            ir.IntegerAttr(col.attributes["dim"]).value != dims[2] or \
            not h.traces_to(extract.operands[1], idx_arg):
        raise NoMatch("table-index", "table element is not [idx[j], d]")
    return sel, extract, row_first


def _check_body_ops(op: ir.Operation, extract: ir.Operation, known_offsets: list[int] | None
                    ) -> None:
    """Nothing else is read or has effects: the body reads the table element and the offsets
    (or, with known offsets, a tensor of the same contents)."""
    offsets = h.dps_inputs(op)[1]
    for body_op in h.body_block(op).operations:
        body_op = body_op.operation
        if body_op.name not in BAG_BODY_OPS:
            raise NoMatch("body-op", f"unexpected {body_op.name} in the bag body")
        if body_op.name == TENSOR_EXTRACT and body_op != extract and \
                body_op.operands[0] != offsets and \
                (known_offsets is None or
                 _known_int_vector(body_op.operands[0]) != known_offsets):
            raise NoMatch("body-reads-tensor", "body reads an unknown tensor")


def match_embedding_bag(op: ir.Operation) -> EmbeddingBag:
    """torch-mlir's F.embedding_bag(mode="sum") lowering with fixed-length bags.

    A generic over (bag b, position j, column d): out[b, d] += table[idx[j], d] when
    offsets[b] <= j < next(b). Recognized when the offsets are b * L (2-d ids) and the
    condition, evaluated at every bag's boundaries, selects exactly positions [b*L, b*L+L).
    Variable-length bags raise VariableBags (see match_offsets_bag).
    """
    dims, id_count, bags = _bag_loops(op, dynamic=True)
    if id_count is None or bags is None:
        return _match_dynamic_embedding_bag(op, dims)
    if bags == 0 or id_count % bags:
        raise VariableBags("variable-bags", "bags are not of one fixed length")
    length = id_count // bags
    ins = h.dps_inputs(op)
    offsets = _known_int_vector(ins[1])
    if offsets != [bag * length for bag in range(bags)]:
        raise VariableBags("offsets-not-strided", "offsets are not b * L (variable-length bags)")
    sel, extract, _ = _bag_summand(op, dims)
    _check_body_ops(op, extract, offsets)
    _check_bag_condition(op, sel.operands[0], dims, [offsets], id_count,
                         "bag condition does not select [b*L, b*L+L)")
    if not h.is_zero_fill(h.dps_inits(op)[0]):
        raise NoMatch("nonzero-start", "bag sum does not start from zero")
    return EmbeddingBag(op, extract.operands[0], ins[0], bags, length)


TRIAL_SIZES = (1, 2, 3, 5, 8, 13)  # values a dynamic size takes in the symbolic checks


def _match_dynamic_embedding_bag(op: ir.Operation, dims: tuple) -> EmbeddingBag:
    """The fixed-length form with a dynamic batch: the ids' length N, the offsets' count and
    the result's rows are computed on the host from one dynamic size s (a dynamic export
    with shape facts: `util.assume.int`). For s in TRIAL_SIZES the bags must have one
    length L (N = B * L), the offsets must be b * L and the condition must select
    [b*L, b*L+L); two or more free sizes (a dynamic export without shape facts: each
    argument's batch its own value) block it, as nothing in the IR ties them."""
    ids, offsets = h.dps_inputs(op)
    res = op.results[0]
    exprs = [_size_expr(ids, 0), _size_expr(res, 0),
             _size_expr(offsets, 0) if h.tensor_type(offsets).rank else ([], lambda env: 1)]
    if any(expr is None for expr in exprs):
        raise NoMatch("unknown-dynamic-size",
                      "embedding_bag with dynamic sizes IREE holds no value for")
    sel, extract, _ = _bag_summand(op, dims)
    captured = [value for inner in h.walk_ops(op) for value in inner.operands
                if not h.defined_inside(value, op) and isinstance(value.type, (ir.IntegerType,
                                                                        ir.IndexType))]
    off_op = h.defining_op(offsets)
    if off_op is not None and off_op.name == LINALG_GENERIC:
        captured += [value for inner in h.walk_ops(off_op) for value in inner.operands
                     if not h.defined_inside(value, off_op)
                     and isinstance(value.type, (ir.IntegerType, ir.IndexType))]
    leaves = _free_sizes([value for roots, _ in exprs for value in roots] + captured)
    if len(leaves) != 1:
        names = ", ".join(sorted(h.size_text(value) for value in leaves))
        raise NoMatch("separate-dynamic-sizes",
                      f"the bag count and the ids' length come from separate dynamic sizes "
                      f"({names}): nothing in the IR says the bags have one fixed length")
    leaf = leaves.pop()
    length = None
    for trial in TRIAL_SIZES:
        env = {leaf: trial}
        try:
            id_count, rows, bags = (size(env) for _, size in exprs)
        except (_Unknown, KeyError):
            raise NoMatch("sizes-unknown", "embedding_bag sizes not understood") from None
        if bags != rows or bags == 0 or id_count % bags or \
                (length is not None and id_count // bags != length):
            raise VariableBags("variable-bags-op", "bags are not of one fixed length")
        length = id_count // bags
        vector = _known_int_vector(offsets, env, bags)
        if vector != [bag * length for bag in range(bags)]:
            raise VariableBags("offsets-not-strided-op",
                               "offsets are not b * L (variable-length bags)")
        _check_body_ops(op, extract, vector)
        _check_bag_condition(op, sel.operands[0], dims, [vector], id_count,
                             "bag condition does not select [b*L, b*L+L)", env)
    if not h.is_zero_fill(h.dps_inits(op)[0]):
        raise NoMatch("nonzero-start-op", "bag sum does not start from zero")
    return EmbeddingBag(op, extract.operands[0], ids, h.dim_value(res, 0), length)


def _size_expr(value: ir.Value, dim: int
               ) -> tuple[list[h.DimKey], Callable[[dict], int]] | None:
    """(index values it reads, its size for given values of the free sizes) of a tensor's
    dim: static, the value IREE holds for it, or the product of the dims a collapse_shape
    merged; None if unknown."""
    held = h.dim_key(value, dim)
    if isinstance(held, int):
        return [], lambda env: held
    if isinstance(held, ir.Value):
        return [held], lambda env: _eval_int(held, env, {}, {})
    op = h.defining_op(value)
    if op is None:  # a dim of an argument: a free size itself
        return [held], lambda env: env[held]
    if op is None or op.name != TENSOR_COLLAPSE_SHAPE:
        return None
    group = h.reassociation(op)[dim]
    parts = [_size_expr(op.operands[0], dim_pos) for dim_pos in group]
    if any(part is None for part in parts):
        return None
    return ([root for roots, _ in parts for root in roots],
            lambda env: math.prod(size(env) for _, size in parts))


def _free_sizes(values: list[h.DimKey]) -> set[h.DimKey]:
    """The sizes the host-side integer code of `values` reads that _eval_int cannot
    compute (dims read at run time: hal.buffer_view.dim, util.assume.int, tensor.dim, as
    h.size_key names them; arguments)."""
    leaves, seen, work = set(), set(), list(values)
    while work:
        size = work.pop()
        if size in seen:
            continue
        seen.add(size)
        op = h.defining_op(size) if isinstance(size, ir.Value) else None
        if op is None or op.name not in SIZE_OPS:
            leaves.add(h.size_key(size) if isinstance(size, ir.Value) else size)
        elif op.name != ARITH_CONSTANT:
            work += list(op.operands)
    return leaves


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
    dims, id_count, bags = _bag_loops(op)
    sel, extract, row_first = _bag_summand(op, dims)
    _check_body_ops(op, extract, None)
    _check_bag_condition(op, sel.operands[0], dims, _trial_offsets(bags, id_count), id_count,
                         "bag condition does not select [offsets[b], offsets[b+1])")
    if not h.is_zero_fill(h.dps_inits(op)[0]):
        raise NoMatch("nonzero-start-offsets", "bag sum does not start from zero")
    ids, offsets = h.dps_inputs(op)
    return OffsetsBag(op, extract.operands[0], ids, offsets, bags, id_count, row_first)


def _trial_offsets(bags: int, id_count: int) -> list[list[int]]:
    """Offsets vectors the bag condition is checked on: even and uneven splits, empty bags,
    every id in the first or the last bag, offsets decreasing and out of [0, N]."""
    rng = random.Random(0)
    uneven = sorted(rng.randrange(id_count + 1) for _ in range(bags))
    uneven[0] = 0
    out = [[bag * id_count // bags for bag in range(bags)], uneven, [0] * bags,
           [0] + [id_count] * (bags - 1), [rng.randrange(-2, id_count + 3) for _ in range(bags)]]
    if bags == 1:
        out += [[min(1, id_count)], [id_count // 2]]
    return out


def _check_bag_condition(op: ir.Operation, cond: ir.Value, dims: tuple,
                         vectors: list[list[int]], id_count: int, mismatch: str,
                         sizes: dict | None = None) -> None:
    """For each offsets vector o, the condition selects exactly positions
    o[b] <= j < next(b) of bag b, next(b) = o[b + 1] (N for the last bag): checked at every
    bag's boundaries, the first and the last position."""
    b_dim, j_dim, d_dim = dims
    off_arg = h.body_block(op).arguments[1]
    reads = [body_op.operation.operands[0] for body_op in h.body_block(op).operations
             if body_op.operation.name == TENSOR_EXTRACT and len(body_op.operation.operands) == 2]
    for offsets in vectors:
        tensors = {value: offsets for value in reads}
        bags = len(offsets)
        for bag in range(bags):
            start = offsets[bag]
            end = offsets[bag + 1] if bag + 1 < bags else id_count
            for pos in {start - 1, start, end - 1, end, 0, id_count - 1}:
                if not 0 <= pos < id_count:
                    continue
                env = {**(sizes or {}), ("dim", j_dim): pos, ("dim", d_dim): 0, off_arg: start}
                if b_dim is not None:
                    env[("dim", b_dim)] = bag
                try:
                    got = _eval_int(cond, env, tensors, {})
                except (_Unknown, KeyError):
                    raise NoMatch("bag-condition", "bag condition not understood") from None
                if bool(got) != (start <= pos < end):
                    raise NoMatch("bag-condition-mismatch", mismatch)
