"""What the pass works on: embedding lookups (generic row extracts, `iree_linalg_ext.gather`),
pooled bags (a lookup summed over one index axis, optionally divided: `.mean(1)`), concats
(`tensor.empty` filled by `insert_slice`s along the feature axis), batched gather slots, and
the view chains that produce lookup indices.

Matchers raise `NoMatch` with the reason at the check that failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_ADDF, ARITH_ADDI, ARITH_ANDI, ARITH_CMPI,
                                              ARITH_CONSTANT, ARITH_DIVF, ARITH_ORI, ARITH_SELECT,
                                              CF_ASSERT, LINALG_GENERIC, LINALG_INDEX, LINALG_YIELD,
                                              TENSOR_EXTRACT)
from iree_fusions.compiler.protocol import NoMatch

LOOKUP_BODY_OPS = h.INT_CASTS + (ARITH_CMPI, ARITH_CONSTANT, ARITH_ANDI, ARITH_ORI,
                             CF_ASSERT, LINALG_INDEX, TENSOR_EXTRACT, LINALG_YIELD)
SWAPPED = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt", "ugt": "ult",
           "ule": "uge", "uge": "ule"}
MAX_UNROLLED_BAG = 64  # longest bag whose sum is unrolled in the gather body


# ---------------------------------------------------------------- lookups


@dataclass(eq=False)
class Lookup:
    """One embedding lookup, optionally pooled (summed) over one index axis."""

    op: ir.Operation
    table: ir.Value
    index: ir.Value
    rows: int
    dim: int
    elem: ir.Type
    index_elem: ir.Type
    # The index tensor's dims: static sizes, or keys of dynamic ones (h.dim_key: the index
    # value IREE holds for the dim; equal keys are equal sizes).
    index_sizes: tuple[h.DimKey, ...]
    checks: tuple[str | None, str | None]  # messages of the (upper, lower) bound asserts
    # The index is wrapped (i < 0 ? i + rows : i, as ONNX's Gather and `W[ids]` lower it)
    # by `wrapped`, elementwise generics the batched gather replaces: `index` is the raw one.
    wrapped: ir.Value | None = None
    pool: ir.Operation | None = None
    pool_axis: int | None = None
    mean: ir.Operation | None = None  # divides the pooled sum by a constant (mean bags)
    divisor: ir.Attribute | None = None  # that constant
    # Devices its inputs come from (multi-device programs; see h.block_placements): only
    # lookups with equal placements are merged.
    placement: frozenset[str] = frozenset()

    @property
    def result(self) -> ir.Value:
        return (self.mean or self.pool or self.op).results[0]

    @property
    def index_shape(self) -> tuple[int | None, ...]:
        """The index tensor's shape, None for a dynamic dim."""
        return tuple(size if isinstance(size, int) else None for size in self.index_sizes)

    @property
    def ops(self) -> list[ir.Operation]:
        return [part for part in (self.op, self.pool, self.mean) if part is not None]

    @property
    def inputs(self) -> tuple[ir.Value, ...]:
        """The values the lookup reads."""
        return (self.index, self.table)

    @property
    def pooling(self) -> str | None:
        """None, "sum" or "mean"."""
        return None if self.pool is None else "mean" if self.mean is not None else "sum"

    @property
    def wrap(self) -> bool:
        return self.wrapped is not None

    def shape_key(self) -> tuple:
        """What lookups merged across tables must share."""
        return (self.dim, str(self.elem), str(self.index_elem), self.checks, self.wrap,
                self.index_shape, self.pool_axis, str(self.divisor))

    def table_key(self) -> tuple:
        """What lookups of one table merged without offsets must share (index shapes may
        differ when unpooled: the flat layout)."""
        return (self.table, str(self.elem), str(self.index_elem), self.checks, self.wrap,
                self.index_shape if self.pool is not None else None, self.pool_axis,
                str(self.divisor))

    def describe(self) -> str:
        shape = shape_text(self.index_shape) or "scalar"
        return (f"dim {self.dim}, {self.elem}, {self.index_elem} indices of shape {shape}"
                f"{', pooled' if self.pool is not None else ''}")


def shape_text(shape: tuple[int | None, ...]) -> str:
    return "x".join("?" if size is None else str(size) for size in shape)


def index_count(members: list[Lookup], dynamic_estimate: int) -> int:
    """Indices the members read; a dynamic dim counts as its upper bound when IREE holds one
    (`util.assume.int`), else as `dynamic_estimate`."""
    def size(key: h.DimKey) -> int:
        bound = h.assumed_max(key)
        return dynamic_estimate if bound is None else bound

    return sum(math.prod(size(dim_key) for dim_key in member.index_sizes) for member in members)


def distinct_tables(members: list[Lookup]) -> list[ir.Value]:
    """The members' tables, each once, in first-appearance order."""
    out: list[ir.Value] = []
    for member in members:
        if member.table not in out:
            out.append(member.table)
    return out


def is_lookup_like(op: ir.Operation) -> bool:
    """An `iree_linalg_ext.gather`, or an all-parallel one-input generic reading a table in
    its body: what the pass tries to match as a lookup."""
    if op.name == h.LINALG_EXT_GATHER:
        return True
    return (op.name == LINALG_GENERIC and h.num_dps_inputs(op) == 1
            and h.is_elementwise_generic(op) and h.reads_table_in_body(op))  # cheap first


def mark_immutable_load(value: ir.Value) -> None:
    """Marks a `util.global.load` of a global that is not `mutable` as `immutable` (what the
    load is, said on the load: h.is_constant_like reads it there). A normalization that
    changes no value."""
    op = h.defining_op(value)
    if op is None or op.name != h.UTIL_GLOBAL_LOAD or "is_immutable" in op.attributes:
        return
    symbol = h.global_symbol(op)
    module = op
    while module.parent is not None:
        module = module.parent.operation if hasattr(module.parent, "operation") else module.parent
    for top in module.regions[0].blocks[0].operations:
        top = top.operation
        if top.name == h.UTIL_GLOBAL and top.attributes["sym_name"].value == symbol:
            if "is_mutable" not in top.attributes:
                op.attributes["is_immutable"] = ir.UnitAttr.get()
            return


def _classify_assert(op: ir.Operation, index_arg: ir.Value, rows: int) -> str | None:
    """'upper' (idx < rows), 'lower' (idx >= 0), or None for any other condition."""
    cond = h.defining_op(op.operands[0])
    if cond is None or cond.name != ARITH_CMPI:
        return None
    pred = h.CMPI_PREDICATES[ir.IntegerAttr(cond.attributes["predicate"]).value]
    lhs, rhs = cond.operands
    if h.traces_to(rhs, index_arg) and not h.traces_to(lhs, index_arg):
        lhs, rhs = rhs, lhs
        pred = SWAPPED.get(pred, pred)
    if not h.traces_to(lhs, index_arg):
        return None
    bound = h.const_int(rhs)
    if bound is None:
        return None
    if (pred in ("slt", "ult") and bound == rows) or (pred in ("sle", "ule") and bound == rows - 1):
        return "upper"
    if (pred == "sge" and bound == 0) or (pred == "sgt" and bound == -1):
        return "lower"
    return None


def match_generic_lookup(op: ir.Operation) -> Lookup:
    """A generic over the index tensor whose body extracts full table rows."""
    if op.name != LINALG_GENERIC or len(op.results) != 1:
        raise NoMatch("not-one-result-generic", "not a single-result linalg.generic")
    if any(iterator != "parallel" for iterator in h.iterator_types(op)):
        raise NoMatch("lookup-reduces", "lookup generic has a reduction")
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    if len(ins) != 1 or len(outs) != 1:
        raise NoMatch("not-one-index-one-output", "expects one index input and one output")
    res_t, idx_t = h.tensor_type(op.results[0]), h.tensor_type(ins[0])
    if res_t is None or idx_t is None:
        raise NoMatch("lookup-unranked", "operands are not ranked tensors")
    if idx_t.rank != res_t.rank - 1:
        raise NoMatch("not-row-gather", _not_a_row_gather(op, idx_t.rank, res_t.rank))
    if not isinstance(idx_t.element_type, ir.IntegerType):
        raise NoMatch("index-not-integer", "index tensor is not integer")
    rank = res_t.rank
    in_map, out_map = h.indexing_maps(op)
    # Any loop order (ONNX imports, interchanged generics): the result's dims are a
    # permutation of the loops, the index is read at the loops of its leading dims, and the
    # column loop is the loop of its last dim.
    out_dims, in_dims = h.map_dim_positions(out_map), h.map_dim_positions(in_map)
    if not h.is_permutation(out_dims, rank) or in_dims != out_dims[:rank - 1]:
        raise NoMatch("index-map-not-leading", "index map is not the result's leading dims")
    column_loop = out_dims[-1]
    block = h.body_block(op)
    in_arg, out_arg = block.arguments[0], block.arguments[1]
    if list(out_arg.uses):
        raise NoMatch("body-reads-output", "body reads the output")
    body = [body_op.operation for body_op in block.operations]
    extra = sorted({body_op.name for body_op in body if body_op.name not in LOOKUP_BODY_OPS})
    if extra:
        raise NoMatch("body-not-lookup", _wrap_reason(body, in_arg) or
                      f"body does more than a bounds-checked row extract ({', '.join(extra)})")
    extracts = [body_op for body_op in body if body_op.name == TENSOR_EXTRACT]
    if len(extracts) != 1:
        raise NoMatch("no-single-extract", "body has no single tensor.extract")
    extract = extracts[0]
    table, row = extract.operands[0], extract.operands[1]
    col = extract.operands[2] if len(extract.operands) == 3 else None
    tab_t = h.static_type(table)
    if col is None or tab_t is None or tab_t.rank != 2 or h.defined_inside(table, op):
        raise NoMatch("extract-not-table", "extract is not from a captured 2-d table")
    col_op = h.defining_op(col)
    if col_op is None or col_op.name != LINALG_INDEX or \
            ir.IntegerAttr(col_op.attributes["dim"]).value != column_loop:
        raise NoMatch("column-not-last-loop", "column is not the loop of the result's last dim")
    if not h.traces_to(row, in_arg):
        raise NoMatch("row-not-index", "row is not the index input")
    if tab_t.shape[1] != res_t.shape[-1] or tab_t.element_type != res_t.element_type:
        raise NoMatch("rows-mismatch", "result rows do not match the table's rows")
    yields = body[-1]
    if yields.name != LINALG_YIELD or yields.operands[0] != extract.results[0]:
        raise NoMatch("yields-other", "body does not yield the extracted element")
    checks: dict[str, str] = {}
    for assert_op in body:
        if assert_op.name != CF_ASSERT:
            continue
        kind = _classify_assert(assert_op, in_arg, tab_t.shape[0])
        if kind is None or kind in checks:
            raise NoMatch("bounds-check-unknown", "bounds check not understood")
        checks[kind] = ir.StringAttr(assert_op.attributes["msg"]).value
    index, wrapped = ins[0], None
    if not checks and (raw := unwrap_index(ins[0], tab_t.shape[0])) is not None:
        index, wrapped = raw, ins[0]
    return Lookup(op, table, index, tab_t.shape[0], tab_t.shape[1], res_t.element_type,
                  idx_t.element_type, h.shape_keys(index),
                  (checks.get("upper"), checks.get("lower")), wrapped)


def unwrap_index(value: ir.Value, rows: int) -> ir.Value | None:
    """x when `value` is x < 0 ? x + rows : x, elementwise over x (identity maps): one
    generic, or ONNX's three (compare, add, select); else None."""
    op = h.defining_op(value)
    if not _plain_elementwise(op, value):
        return None
    block = h.body_block(op)
    ins = h.dps_inputs(op)
    sel = h.defining_op(list(block.operations)[-1].operation.operands[0])
    if sel is None or sel.name != ARITH_SELECT:
        return None
    cond, yes, if_not = (_elementwise_of(operand, block, ins) for operand in sel.operands)
    if cond is None or yes is None or if_not is None or if_not[0] != "x":
        return None
    raw = if_not[1]
    if cond != ("neg", raw) or yes != (("add", rows), raw):
        return None
    return raw


def _plain_elementwise(op: ir.Operation | None, value: ir.Value) -> bool:
    """A one-result all-parallel generic with identity maps whose body reads no outputs."""
    return (op is not None and op.name == LINALG_GENERIC and len(op.results) == 1
            and h.is_elementwise_generic(op) and h.tensor_type(value) is not None
            and all(h.is_identity_map(map_) for map_ in h.indexing_maps(op))
            and not list(h.body_block(op).arguments[len(h.dps_inputs(op)):][0].uses))


def _elementwise_of(scalar: ir.Value, block: ir.Block, ins: list[ir.Value]
                    ) -> tuple | None:
    """(f, x) when the scalar `scalar` of a generic body is f(x[i]) for an input tensor x, with f
    "x" (x itself), "neg" (x < 0) or ("add", c) (x + c): directly in the body, or through
    an input produced by a one-input elementwise generic doing f."""
    def of_body(scalar: ir.Value, blk: ir.Block, inputs: list[ir.Value]) -> tuple | None:
        if isinstance(scalar.owner, ir.Block):
            if scalar.owner != blk or ir.BlockArgument(scalar).arg_number >= len(inputs):
                return None
            return "x", inputs[ir.BlockArgument(scalar).arg_number]
        def_op = h.defining_op(scalar)
        if def_op is None or def_op.name not in (ARITH_CMPI, ARITH_ADDI):
            return None
        arg, rhs = def_op.operands
        inner = of_body(arg, blk, inputs)
        if inner is None or inner[0] != "x":
            return None
        bound = h.const_int(rhs)
        if def_op.name == ARITH_CMPI and bound == 0 and \
                h.CMPI_PREDICATES[ir.IntegerAttr(def_op.attributes["predicate"]).value] == "slt":
            return "neg", inner[1]
        if def_op.name == ARITH_ADDI and bound is not None:
            return ("add", bound), inner[1]
        return None

    found = of_body(scalar, block, ins)
    if found is None or found[0] != "x":
        return found
    producer = h.defining_op(found[1])  # an input computed by its own generic
    if not _plain_elementwise(producer, found[1]) or len(h.dps_inputs(producer)) != 1:
        return found
    pblock = h.body_block(producer)
    inner = of_body(list(pblock.operations)[-1].operation.operands[0], pblock,
                    h.dps_inputs(producer))
    return found if inner is None or inner[0] == "x" else inner


def _slice_text(table_t: ir.RankedTensorType) -> str:
    """`whole [16x32] slices` (or `0-d elements`) of a table of rank != 2."""
    if table_t.rank < 2:
        return "single elements"
    return f"whole [{'x'.join(map(str, table_t.shape[1:]))}] slices"


def _not_a_row_gather(op: ir.Operation, index_rank: int, result_rank: int) -> str:
    """Why a static generic whose result rank is not index rank + 1 is no row lookup: what
    its body extracts from, in words."""
    block = h.body_block(op)
    extracts = [inner.operation for inner in block.operations
                if inner.operation.name == TENSOR_EXTRACT]
    if len(extracts) == 1 and not h.defined_inside(extracts[0].operands[0], op):
        extract = extracts[0]
        table_t = h.static_type(extract.operands[0])
        trailing = [h.defining_op(operand) for operand in extract.operands[2:]]
        slice_loops = [ir.IntegerAttr(index_op.attributes["dim"]).value if index_op is not None and
                       index_op.name == LINALG_INDEX else None for index_op in trailing]
        if table_t is not None and table_t.rank >= 3 and \
                slice_loops == list(range(index_rank, result_rank)):
            return (f"gathers {_slice_text(table_t)} of a {table_t.rank}-d table ({table_t}) "
                    "by index (`W[ids]`, index_select: e.g. MoE expert weights): batching supports "
                    "row gathers of 2-d tables")
    return (f"result rank {result_rank} is not index rank {index_rank} + 1: not a row gather "
            "of a 2-d table")


def _wrap_reason(body: list[ir.Operation], index_arg: ir.Value) -> str | None:
    """The reason for a body that wraps negative indices (`i < 0 ? i + rows : i`: how
    `W[ids]` indexing lowers), or None for any other extra ops."""
    for op in body:
        if op.name != ARITH_SELECT:
            continue
        cond, wrapped, plain = (h.defining_op(operand) for operand in op.operands)
        if cond is not None and cond.name == ARITH_CMPI and plain is None and \
                op.operands[2] == index_arg and wrapped is not None and \
                wrapped.name == ARITH_ADDI and index_arg in list(wrapped.operands) and \
                h.CMPI_PREDICATES[ir.IntegerAttr(cond.attributes["predicate"]).value] == "slt":
            return ("body wraps negative indices (i < 0 ? i + rows : i, as `W[ids]` indexing "
                    "lowers): batching supports F.embedding's bounds-checked row extract")
    return None


def match_ext_gather(op: ir.Operation) -> Lookup:
    """iree_linalg_ext.gather of full rows of a 2-d source along dim 0 (no bounds checks)."""
    if list(op.attributes["dimension_map"]) != [0] or op.regions and \
            len(op.regions[0].blocks) and len(op.regions[0].blocks[0].operations) > 1:
        raise NoMatch("gather-not-dim0", "gather is not a row gather along dim 0")
    if len(op.operands) != 3 or len(op.results) != 1:  # (source, indices, init)
        raise NoMatch("gather-operands", "unexpected gather operands")
    source, indices = op.operands[0], op.operands[1]
    # (ranked tensors: a gather with a result has tensor semantics, and the verifier admits
    # ranked tensors only)
    src_t, idx_t = h.tensor_type(source), h.tensor_type(indices)
    res_t = h.tensor_type(op.results[0])
    if src_t.rank != 2:
        raise NoMatch("gather-not-rows",
                      f"gathers {_slice_text(src_t)} of a {src_t.rank}-d source ({src_t}): "
                      "batching supports row gathers of 2-d tables")
    if not src_t.has_static_shape:
        raise NoMatch("dynamic-table",
                      f"the source's shape {src_t} is dynamic (a table's rows and columns are "
                      "stacked at load: they must be static)")
    sizes = h.shape_keys(indices)
    if len(sizes) == res_t.rank and sizes[-1] == 1:
        sizes = sizes[:-1]  # explicit index depth 1
    pattern = [size if isinstance(size, int) else None for size in sizes] + [src_t.shape[1]]
    if [None if ir.ShapedType.is_dynamic_size(dim) else dim for dim in res_t.shape] != pattern or \
            not sizes:
        raise NoMatch("gather-result-shape", "result shape is not indices x row")
    return Lookup(op, source, indices, src_t.shape[0], src_t.shape[1], res_t.element_type,
                  idx_t.element_type, sizes, (None, None))


def match_lookup(op: ir.Operation, unroll_means: bool) -> Lookup:
    """A lookup-like op as a Lookup, with the sum (and mean) that pool it when there is one.
    `unroll_means`: a mean is matched only where the batched body unrolls the bag sum."""
    lookup = match_ext_gather(op) if op.name == h.LINALG_EXT_GATHER else \
        match_generic_lookup(op)
    pool = match_sum_pool(lookup)
    if pool is not None and pool[0].block == op.block:
        lookup.pool, lookup.pool_axis = pool
        mean = match_mean(lookup.pool)
        length = lookup.index_shape[lookup.pool_axis]
        unrolled = length is not None and length <= MAX_UNROLLED_BAG and unroll_means
        if mean is not None and mean[0].block == op.block and unrolled:
            lookup.mean, lookup.divisor = mean
    consumer = absorbing_consumer(lookup.result)
    if consumer is not None:
        raise NoMatch("fused-by-stock",
                      f"its only consumer ({consumer.name}) fuses it in stock IREE: batching "
                      "would add a dispatch")
    return lookup


def absorbing_consumer(value: ir.Value) -> ir.Operation | None:
    """The one linalg.generic that reads `value` as an input: IREE fuses a gather into such a
    consumer's dispatch (one dispatch for both; not so for linalg.matmul, inserts into a
    concat, results, or several consumers: bench/results/code-costs.md, batch-gathers)."""
    uses = h.users(value)
    if len(uses) == 1 and uses[0].name == LINALG_GENERIC and \
            value in h.dps_inputs(uses[0]):
        return uses[0]
    return None


# ---------------------------------------------------------------- pooling


def match_sum_pool(lookup: Lookup) -> tuple[ir.Operation, int] | None:
    """The lookup's only user sums it over one index axis into a zero-filled init."""
    uses = h.users(lookup.op.results[0])
    if len(uses) != 1:
        return None
    op = uses[0]
    if op.name != LINALG_GENERIC or h.dps_inputs(op) != [lookup.op.results[0]]:
        return None
    its = h.iterator_types(op)
    red = [i for i, iterator in enumerate(its) if iterator == "reduction"]
    rank = len(lookup.index_shape) + 1
    if len(its) != rank or len(red) != 1 or red[0] >= rank - 1:
        return None
    in_map, out_map = h.indexing_maps(op)
    if not h.is_identity_map(in_map) or \
            h.map_dim_positions(out_map) != [i for i in range(rank) if i != red[0]]:
        return None
    block = h.body_block(op)
    body = [body_op.operation for body_op in block.operations]
    if len(body) != 2 or body[0].name != ARITH_ADDF or body[1].operands[0] != body[0].results[0]:
        return None
    if set(body[0].operands) != {block.arguments[0], block.arguments[1]}:
        return None
    if not h.is_zero_fill(h.dps_inits(op)[0]):
        return None
    return op, red[0]


def match_mean(pool: ir.Operation) -> tuple[ir.Operation, ir.Attribute] | None:
    """The pooled sum's only user divides it by a constant scalar: `.mean(1)` of a bag."""
    uses = h.users(pool.results[0])
    if len(uses) != 1 or uses[0].name != LINALG_GENERIC:
        return None
    op = uses[0]
    if h.dps_inputs(op) != [pool.results[0]] or not h.is_elementwise_generic(op) or \
            not all(h.is_identity_map(map_) for map_ in h.indexing_maps(op)):
        return None
    block = h.body_block(op)
    body = [body_op.operation for body_op in block.operations]
    if len(body) != 2 or body[0].name != ARITH_DIVF or \
            body[0].operands[0] != block.arguments[0] or \
            body[1].operands[0] != body[0].results[0]:
        return None
    cst = h.defining_op(body[0].operands[1])
    if cst is None or cst.name != ARITH_CONSTANT or \
            not isinstance(cst.attributes["value"], ir.FloatAttr):
        return None
    return op, cst.attributes["value"]
