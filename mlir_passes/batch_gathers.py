"""batch-gathers: independent embedding lookups -> a few batched gathers; concats written in place.

At global-optimization an embedding lookup is a `linalg.generic` over its index tensor whose
body does `tensor.extract %table[%idx, %j]` (after `cf.assert` bounds checks), or an
`iree_linalg_ext.gather`; a bag is that lookup followed by a sum generic over the bag axis
(and, for `.mean(1)`, a division); `F.embedding_bag` is one generic that scans every index
for every bag (quadratic in batch). On each function body the pass

0. rewrites each fixed-length `F.embedding_bag` generic into lookup + pooled sum;
1. cross-table: lookups (or bags) with the same embedding dim, dtype, index shape and
   pooling read one table that stacks the *distinct* constant tables (first-appearance
   order, built once in a `util.initializer`), each index offset by its table's first row
   inside the gather body; bounds checks still compare the original index with its own
   table's rows;
2. same-table: leftover lookups of one table share it without offsets; index tensors of
   different shapes are flattened, gathered once and sliced/reshaped back;
3. a concat (`tensor.empty` + `tensor.insert_slice`s along the feature axis) fed by lookups
   or batched bags is written by one generic (one-id lookups gathered in it, every other
   slot copied in), then a `collapse_shape`: the copy dispatches disappear.

Measured policy (bench/results/batch-gathers.md): a lookup whose only consumer is a generic
is left alone (IREE fuses the two); unpooled groups whose results are sliced back need
`min-sliced-indices` indices; bag sums are unrolled in the body (rows stay contiguous
vector loads). Every read in a batched body is at indices that are uniform along the
embedding column, and the loop order keeps IREE from collapsing the column loop.

    %a = linalg.generic ins(%i0 : tensor<8xi64>) {extract %t0[%i0, %j]}   -> tensor<8x64xf32>
    %b = linalg.generic ins(%i1 : tensor<8xi64>) {extract %t1[%i1, %j]}   -> tensor<8x64xf32>
    %c = insert_slice %a, %b into tensor<8x128xf32>
  =>
    %m = util.global.load @__batch_gathers_table_64xf32   (t0 ++ t1, stacked once at load)
    %g = linalg.generic outs(tensor<8x2x64xf32>)          loops (slot s, b, j)
           { i = s == 0 ? %i0[b] : %i1[b]; assert i < rows[s]; assert i >= 0;
             yield %m[i + first_row[s], j] }
    %c = tensor.collapse_shape %g [[0], [1, 2]] : tensor<8x2x64xf32> into tensor<8x128xf32>
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import FusionPass, PassReport

CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui")
LOOKUP_BODY_OPS = CASTS + ("arith.cmpi", "arith.constant", "arith.andi", "arith.ori",
                           "cf.assert", "linalg.index", "tensor.extract", "linalg.yield")
CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule",
        8: "ugt", 9: "uge"}
TABLE_SYMBOL = "__batch_gathers_table"
MAX_UNROLLED_BAG = 64  # longest bag whose sum is unrolled in the gather body
MIN_WRITER_CHUNK = 4  # a concat writer writes chunks of gcd(slot widths) columns, >= this


# ----------------------------------------------------------------------------- matching


@dataclass(eq=False)
class Lookup:
    """One embedding lookup, optionally pooled (summed) over one index axis."""

    op: ir.Operation
    table: ir.Value
    index: ir.Value
    rows: int
    dim: int
    elem: str
    index_elem: str
    index_shape: tuple[int, ...]
    checks: tuple[str | None, str | None]  # messages of the (upper, lower) bound asserts
    pool: ir.Operation | None = None
    pool_axis: int | None = None
    mean: ir.Operation | None = None  # divides the pooled sum by a constant (mean bags)
    divisor: str | None = None  # that constant, as printed (e.g. "2.000000e+01 : f32")

    @property
    def result(self) -> ir.Value:
        return (self.mean or self.pool or self.op).results[0]

    @property
    def ops(self) -> list[ir.Operation]:
        return [o for o in (self.op, self.pool, self.mean) if o is not None]

    def shape_key(self) -> tuple:
        return (self.dim, self.elem, self.index_elem, self.checks, self.index_shape,
                self.pool_axis, self.divisor)


def _const_int(value: ir.Value) -> int | None:
    op = h.defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return attr.value if isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)) else None


def _traces_to(value: ir.Value, target: ir.Value) -> bool:
    """value is target, possibly through integer/index casts."""
    while True:
        if value == target:
            return True
        op = h.defining_op(value)
        if op is None or op.name not in CASTS:
            return False
        value = op.operands[0]


def _static_tensor(value: ir.Value) -> ir.RankedTensorType | None:
    t = value.type
    return t if isinstance(t, ir.RankedTensorType) and t.has_static_shape else None


def _classify_assert(op: ir.Operation, index_arg: ir.Value, rows: int) -> str | None:
    """'upper' (idx < rows), 'lower' (idx >= 0), or None for any other condition."""
    cond = h.defining_op(op.operands[0])
    if cond is None or cond.name != "arith.cmpi":
        return None
    pred = CMPI[ir.IntegerAttr(cond.attributes["predicate"]).value]
    lhs, rhs = cond.operands
    if _traces_to(rhs, index_arg) and not _traces_to(lhs, index_arg):
        lhs, rhs = rhs, lhs
        pred = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt",
                "ugt": "ult", "ule": "uge", "uge": "ule"}.get(pred, pred)
    if not _traces_to(lhs, index_arg):
        return None
    bound = _const_int(rhs)
    if bound is None:
        return None
    if (pred in ("slt", "ult") and bound == rows) or (pred in ("sle", "ule") and bound == rows - 1):
        return "upper"
    if (pred == "sge" and bound == 0) or (pred == "sgt" and bound == -1):
        return "lower"
    return None


def _defined_inside(value: ir.Value, op: ir.Operation) -> bool:
    owner = value.owner
    node = owner.owner if isinstance(owner, ir.Block) else owner.operation
    while node is not None:
        node = node.operation if hasattr(node, "operation") else node
        if node == op:
            return True
        node = node.parent
    return False


def match_generic_lookup(op: ir.Operation) -> Lookup | str:
    """A generic over the index tensor whose body extracts full table rows."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return "not a single-result linalg.generic"
    if any(it != "parallel" for it in h.iterator_types(op)):
        return "lookup generic has a reduction"
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    if len(ins) != 1 or len(outs) != 1:
        return "expects one index input and one output"
    res_t, idx_t = _static_tensor(op.results[0]), _static_tensor(ins[0])
    if res_t is None or idx_t is None or res_t.rank < 1 or idx_t.rank != res_t.rank - 1:
        return "dynamic or unexpected shapes"
    if not isinstance(idx_t.element_type, ir.IntegerType):
        return "index tensor is not integer"
    rank = res_t.rank
    in_map, out_map = h.indexing_maps(op)
    if not h.is_identity_map(out_map) or h.map_dim_positions(in_map) != list(range(rank - 1)):
        return "index map is not the result's leading dims"
    block = h.body_block(op)
    in_arg, out_arg = block.arguments[0], block.arguments[1]
    if list(out_arg.uses):
        return "body reads the output"
    body = [o.operation for o in block.operations]
    if any(o.name not in LOOKUP_BODY_OPS for o in body):
        return "body does more than a bounds-checked row extract"
    extracts = [o for o in body if o.name == "tensor.extract"]
    if len(extracts) != 1:
        return "body has no single tensor.extract"
    ex = extracts[0]
    table, row, col = ex.operands[0], ex.operands[1], ex.operands[2] if len(ex.operands) == 3 \
        else None
    tab_t = _static_tensor(table)
    if col is None or tab_t is None or tab_t.rank != 2 or _defined_inside(table, op):
        return "extract is not from a captured 2-d table"
    col_op = h.defining_op(col)
    if col_op is None or col_op.name != "linalg.index" or \
            ir.IntegerAttr(col_op.attributes["dim"]).value != rank - 1:
        return "column is not the innermost loop index"
    if not _traces_to(row, in_arg):
        return "row is not the index input"
    if tab_t.shape[1] != res_t.shape[-1] or tab_t.element_type != res_t.element_type:
        return "result rows do not match the table's rows"
    yields = body[-1]
    if yields.name != "linalg.yield" or yields.operands[0] != ex.results[0]:
        return "body does not yield the extracted element"
    checks: dict[str, str] = {}
    for a in body:
        if a.name != "cf.assert":
            continue
        kind = _classify_assert(a, in_arg, tab_t.shape[0])
        if kind is None or kind in checks:
            return "bounds check not understood"
        checks[kind] = ir.StringAttr(a.attributes["msg"]).value
    return Lookup(op, table, ins[0], tab_t.shape[0], tab_t.shape[1], str(res_t.element_type),
                  str(idx_t.element_type), tuple(idx_t.shape),
                  (checks.get("upper"), checks.get("lower")))


def match_ext_gather(op: ir.Operation) -> Lookup | str:
    """iree_linalg_ext.gather of full rows of a 2-d source along dim 0 (no bounds checks)."""
    if list(op.attributes["dimension_map"]) != [0] or op.regions and \
            len(op.regions[0].blocks) and len(op.regions[0].blocks[0].operations) > 1:
        return "gather is not a row gather along dim 0"
    ins = list(op.operands)[:2]  # (source, indices, init): no operandSegmentSizes
    if len(op.operands) != 3 or len(op.results) != 1:
        return "unexpected gather operands"
    src_t, idx_t, res_t = _static_tensor(ins[0]), _static_tensor(ins[1]), \
        _static_tensor(op.results[0])
    if src_t is None or idx_t is None or res_t is None or src_t.rank != 2:
        return "dynamic shapes or source not 2-d"
    idx_shape = tuple(idx_t.shape)
    if len(idx_shape) == res_t.rank and idx_shape[-1] == 1:
        idx_shape = idx_shape[:-1]  # explicit index depth 1
    if tuple(res_t.shape) != idx_shape + (src_t.shape[1],) or not idx_shape:
        return "result shape is not indices x row"
    return Lookup(op, ins[0], ins[1], src_t.shape[0], src_t.shape[1], str(res_t.element_type),
                  str(idx_t.element_type), idx_shape, (None, None))


def match_sum_pool(lk: Lookup) -> tuple[ir.Operation, int] | None:
    """The lookup's only user sums it over one index axis into a zero-filled init."""
    uses = h.users(lk.op.results[0])
    if len(uses) != 1:
        return None
    op = uses[0]
    if op.name != "linalg.generic" or h.dps_inputs(op) != [lk.op.results[0]]:
        return None
    its = h.iterator_types(op)
    red = [i for i, it in enumerate(its) if it == "reduction"]
    rank = len(lk.index_shape) + 1
    if len(its) != rank or len(red) != 1 or red[0] >= rank - 1:
        return None
    in_map, out_map = h.indexing_maps(op)
    if not h.is_identity_map(in_map) or \
            h.map_dim_positions(out_map) != [i for i in range(rank) if i != red[0]]:
        return None
    block = h.body_block(op)
    body = [o.operation for o in block.operations]
    if len(body) != 2 or body[0].name != "arith.addf" or body[1].operands[0] != body[0].results[0]:
        return None
    if set(body[0].operands) != {block.arguments[0], block.arguments[1]}:
        return None
    if not _is_zero_fill(h.dps_inits(op)[0]):
        return None
    return op, red[0]


def match_mean(pool: ir.Operation) -> tuple[ir.Operation, str] | None:
    """The pooled sum's only user divides it by a constant scalar: `.mean(1)` of a bag."""
    uses = h.users(pool.results[0])
    if len(uses) != 1 or uses[0].name != "linalg.generic":
        return None
    op = uses[0]
    if h.dps_inputs(op) != [pool.results[0]] or not h.is_elementwise_generic(op) or \
            not all(h.is_identity_map(m) for m in h.indexing_maps(op)):
        return None
    block = h.body_block(op)
    body = [o.operation for o in block.operations]
    if len(body) != 2 or body[0].name != "arith.divf" or \
            body[0].operands[0] != block.arguments[0] or \
            body[1].operands[0] != body[0].results[0]:
        return None
    cst = h.defining_op(body[0].operands[1])
    if cst is None or cst.name != "arith.constant" or \
            not isinstance(cst.attributes["value"], ir.FloatAttr):
        return None
    return op, str(cst.attributes["value"])


def _is_zero_fill(value: ir.Value) -> bool:
    op = h.defining_op(value)
    if op is None:
        return False
    if op.name == "linalg.fill":
        cst = h.defining_op(op.operands[0])
        return cst is not None and cst.name == "arith.constant" and \
            isinstance(cst.attributes["value"], ir.FloatAttr) and \
            cst.attributes["value"].value == 0.0
    return False


# ------------------------------------------------------------ embedding_bag recognition


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
    ev = lambda v: _eval_int(v, env, tensors, memo)  # noqa: E731
    if name == "arith.constant":
        c = _const_int(value)
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
    t = _static_tensor(value)
    op = h.defining_op(value)
    if t is None or t.rank > 1 or op is None:
        return None
    size = t.shape[0] if t.rank else 1
    if op.name == "arith.constant" and isinstance(op.attributes["value"], ir.DenseIntElementsAttr):
        return [int(x) for x in op.attributes["value"]]
    if op.name == "linalg.fill":
        c = _const_int(op.operands[0])
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


@dataclass(eq=False)
class EmbeddingBag:
    op: ir.Operation
    table: ir.Value
    flat_index: ir.Value  # [B*L]
    bags: int
    length: int


def match_embedding_bag(op: ir.Operation) -> EmbeddingBag | str:
    """torch-mlir's F.embedding_bag(mode="sum") lowering with fixed-length bags.

    A generic over (bag b, position j, column d): out[b, d] += table[idx[j], d] when
    offsets[b] <= j < next(b). Recognized when the offsets are b * L (2-d ids) and the
    condition, evaluated at every bag's boundaries, selects exactly positions [b*L, b*L+L).
    """
    its = h.iterator_types(op) if op.name == "linalg.generic" else []
    # B > 1: loops (bag b, position j, column d). B = 1 (unit dims folded): loops (j, d) and
    # the offsets are a 0-d tensor.
    if its == ["parallel", "reduction", "parallel"]:
        b_dim, j_dim, d_dim, expect = 0, 1, 2, [[1], [0], [0, 2]]
    elif its == ["reduction", "parallel"]:
        b_dim, j_dim, d_dim, expect = None, 0, 1, [[0], [], [1]]
    else:
        return "not a (bag, position, column) generic"
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    if len(ins) != 2 or len(outs) != 1:
        return "expects indices and offsets"
    if [h.map_dim_positions(m) for m in h.indexing_maps(op)] != expect:
        return "unexpected indexing maps"
    idx_t, off_t, res_t = _static_tensor(ins[0]), _static_tensor(ins[1]), \
        _static_tensor(op.results[0])
    if idx_t is None or off_t is None or res_t is None:
        return "dynamic shapes"
    n, bags = idx_t.shape[0], (off_t.shape[0] if off_t.rank else 1)
    if bags == 0 or n % bags:
        return "bags are not of one fixed length"
    length = n // bags
    offsets = _known_int_vector(ins[1])
    if offsets != [b * length for b in range(bags)]:
        return "offsets are not b * L (variable-length bags)"
    block = h.body_block(op)
    idx_arg, off_arg, out_arg = block.arguments
    body = [o.operation for o in block.operations]
    yielded = body[-1].operands[0]
    sel = h.defining_op(yielded)
    if sel is None or sel.name != "arith.select" or sel.operands[2] != out_arg:
        return "body does not select between out and out + row"
    add = h.defining_op(sel.operands[1])
    if add is None or add.name != "arith.addf" or out_arg not in list(add.operands):
        return "body does not accumulate a sum"
    row = add.operands[0] if add.operands[1] == out_arg else add.operands[1]
    ex = h.defining_op(row)
    if ex is None or ex.name != "tensor.extract" or len(ex.operands) != 3:
        return "summand is not a table element"
    table = ex.operands[0]
    tab_t = _static_tensor(table)
    if tab_t is None or tab_t.rank != 2 or _defined_inside(table, op) or \
            tab_t.shape[1] != res_t.shape[-1] or tab_t.element_type != res_t.element_type:
        return "summand is not a row of a captured table"
    col = h.defining_op(ex.operands[2])
    if col is None or col.name != "linalg.index" or \
            ir.IntegerAttr(col.attributes["dim"]).value != d_dim or \
            not _traces_to(ex.operands[1], idx_arg):
        return "table element is not [idx[j], d]"
    for o in body:  # nothing else may be read or have effects
        if o.name not in ("arith.select", "arith.addf", "tensor.extract", "linalg.yield",
                          "linalg.index", "arith.constant", "arith.cmpi", "arith.andi",
                          "arith.ori", "arith.xori", "arith.addi", "arith.subi",
                          "arith.muli") + CASTS:
            return f"unexpected {o.name} in the bag body"
        if o.name == "tensor.extract" and o != ex and o.operands[0] != ins[1] and \
                _known_int_vector(o.operands[0]) != offsets:
            return "body reads an unknown tensor"
    tensors = {ins[1]: offsets}
    for o in body:
        if o.name == "tensor.extract" and o != ex:
            tensors[o.operands[0]] = offsets
    cond = sel.operands[0]
    for b in range(bags):
        for j in {b * length - 1, b * length, b * length + length - 1, b * length + length, 0,
                  n - 1}:
            if not 0 <= j < n:
                continue
            env = {("dim", j_dim): j, ("dim", d_dim): 0, off_arg: offsets[b]}
            if b_dim is not None:
                env[("dim", b_dim)] = b
            try:
                got = _eval_int(cond, env, tensors, {})
            except (_Unknown, KeyError):
                return "bag condition not understood"
            if bool(got) != (b * length <= j < b * length + length):
                return "bag condition does not select [b*L, b*L+L)"
    if not _is_zero_fill(outs[0]):
        return "bag sum does not start from zero"
    return EmbeddingBag(op, table, ins[0], bags, length)


# ----------------------------------------------------------------- concat recognition


@dataclass(eq=False)
class Concat:
    inserts: list[ir.Operation]  # chain order
    batch: int
    widths: list[int]  # per slot, in column order
    slots: list[ir.Operation]  # insert_slice ops ordered by column
    elem: str

    @property
    def chunk(self) -> int:
        """Columns per writer chunk: the gcd of the slot widths."""
        return math.gcd(*self.widths)

    @property
    def final(self) -> ir.Operation:
        return self.inserts[-1]


def _static_attr(op: ir.Operation, name: str) -> list[int]:
    return list(op.attributes[name])


def match_concats(block: ir.Block) -> list[Concat]:
    """tensor.empty [B, W] filled by insert_slices of [B, w] slots along dim 1, each once."""
    found = []
    for op in block.operations:
        op = op.operation
        if op.name != "tensor.insert_slice":
            continue
        dest = h.defining_op(op.operands[1])
        if dest is None or dest.name != "tensor.empty":
            continue
        chain = [op]
        while True:
            uses = h.users(chain[-1].results[0])
            if len(uses) == 1 and uses[0].name == "tensor.insert_slice" and \
                    uses[0].operands[1] == chain[-1].results[0]:
                chain.append(uses[0])
            else:
                break
        c = _concat_from_chain(chain)
        if c is not None:
            found.append(c)
    return found


def _concat_from_chain(chain: list[ir.Operation]) -> Concat | None:
    dest_t = _static_tensor(chain[0].operands[1])
    if dest_t is None or dest_t.rank != 2 or len(chain) < 2:
        return None
    batch, width = dest_t.shape
    cols = []
    for ins in chain:
        if len(ins.operands) != 2:  # dynamic offsets/sizes/strides
            return None
        offs, sizes, strides = (_static_attr(ins, n) for n in
                                ("static_offsets", "static_sizes", "static_strides"))
        src_t = _static_tensor(ins.operands[0])
        if strides != [1, 1] or offs[0] != 0 or sizes[0] != batch or src_t is None or \
                tuple(src_t.shape) not in (tuple(sizes), tuple(x for x in sizes if x != 1)):
            return None
        cols.append((offs[1], sizes[1], ins))
    cols.sort(key=lambda c: c[0])
    start = 0
    for col, w, _ in cols:
        if col != start:
            return None  # gaps or overlaps: not a concat
        start += w
    if start != width:
        return None
    return Concat(chain, batch, [w for _, w, _ in cols], [ins for _, _, ins in cols],
                  str(dest_t.element_type))


# ---------------------------------------------------------------------- the pass


@dataclass(eq=False)
class Group:
    members: list[Lookup]
    kind: str  # "cross" | "same"
    layout: str = "stacked"  # "stacked" [K, S..., D] | "flat" [sum N, D]

    def tables(self) -> list[ir.Value]:
        out: list[ir.Value] = []
        for m in self.members:
            if m.table not in out:
                out.append(m.table)
        return out


@dataclass(frozen=True)
class BatchGathers(FusionPass):
    name = "batch-gathers"
    phase = "linalg"
    description = "embedding lookups -> a few batched gathers, concat written in place"

    # Options (defaults come from bench/results/batch-gathers.md measurements).
    min_group_size: int = 2  # lookups merged into one gather at least
    min_concat_slots: int = 2  # concat slots produced by lookups/batched bags for a writer
    # Unpooled lookups merged and sliced back (not written into a concat): at least this
    # many indices in the group. Measured: 4 x 16 ids 0.69x, 4 x 256 ids 2.4x (results
    # returned); each sliced result costs a copy when it leaves the function.
    min_sliced_indices: int = 1024
    # Bags merged into one gather: at least this many indices in the group. Measured: the
    # issue's model at B = 1 (6 bags x 20 = 120 ids) 0.5-0.8x with its bags merged, 1.0-1.1x
    # without; 2 bags x 20 at B = 8 (320 ids) 1.1-1.4x; 6 bags x 20 at B = 8 (960) ~2x.
    min_pooled_indices: int = 256
    cross_table: bool = True  # merge lookups of different constant tables (with offsets)
    same_table: bool = True  # merge lookups of one table (no offsets)
    concat_writer: bool = True  # write concats of lookups in place
    embedding_bag: bool = True  # rewrite fixed-length F.embedding_bag into lookup + sum
    gather_mode: str = "extract"  # "ins": read indices as block arguments (measured: slower)
    # Concat writer reads one-chunk-wide values as `ins` instead of tensor.extract. Measured
    # (A/B on dlrm-b8, 4 runs): slower by 1.0-1.5x, and IREE did not fuse the writer into
    # the value's producer anyway.
    values_as_ins: bool = False
    max_table_bytes: int = 1 << 30  # largest stacked table built at load
    dedup: bool = True  # a table shared by several lookups is stacked once

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        for func in h.functions(module):
            for block in func.regions[0].blocks:
                self._run_block(module, block, report)

    # -------------------------------------------------------------- per block

    def _run_block(self, module: ir.Operation, block: ir.Block, report: PassReport) -> None:
        if self.embedding_bag:
            for op in [o.operation for o in block.operations]:
                if op.name == "linalg.generic" and len(h.dps_inputs(op)) == 2 and \
                        "reduction" in h.iterator_types(op):
                    bag = match_embedding_bag(op)
                    if isinstance(bag, str):
                        if h.reads_table_in_body(op):
                            report.skip(op, f"embedding_bag-like generic: {bag}")
                        continue
                    rewrite_embedding_bag(bag)
                    report.change(f"embedding_bag {bag.bags} bags x {bag.length} ids: quadratic "
                                  "scan -> lookup + pooled sum")
        lookups = self._collect(block)
        if not lookups:
            self._collect(block, report)  # records why each lookup-like op was left alone
            return
        for lk in lookups:  # index views made just before each lookup are made earlier
            _hoist_view_chain(lk.index, block)
        concats = match_concats(block) if self.concat_writer else []
        writers = self._plan_writers(concats, lookups, report)
        reserved = {op for _, slots in writers for op in slots.values()}
        tables = _TablePool(module, block)
        # Cross-table first: grouping by table first would strand lookups (seed 001).
        for kind, enabled in (("cross", self.cross_table), ("same", self.same_table)):
            while enabled:
                order = _positions(block)
                pending = [lk for lk in self._collect(block) if lk.op not in reserved]
                groups = self._group(pending, order, kind)
                if not groups:
                    break
                emit_group(groups[0], tables, order, report, self.gather_mode == "ins",
                           self.dedup)
        by_op = {lk.op: lk for lk in self._collect(block, report)}
        left = [lk for lk in by_op.values() if lk.op not in reserved]
        order = _positions(block)
        for lk in left:
            report.skip(lk.op, _why_alone(
                lk, left, order, self.min_group_size, self.max_table_bytes,
                (self.min_sliced_indices, self.min_pooled_indices)))
        for concat, slots in writers:
            emit_concat_writer(concat, {s: by_op[op] for s, op in slots.items()}, tables,
                               report, self.values_as_ins, self.dedup)

    def _collect(self, block: ir.Block, report: PassReport | None = None) -> list[Lookup]:
        found = []
        for op in block.operations:
            op = op.operation
            if op.name == "iree_linalg_ext.gather":
                lk = match_ext_gather(op)
            elif op.name == "linalg.generic" and h.reads_table_in_body(op) and \
                    len(h.dps_inputs(op)) == 1 and \
                    all(it == "parallel" for it in h.iterator_types(op)):
                lk = match_generic_lookup(op)
            else:
                continue
            if isinstance(lk, str):
                if report is not None:
                    report.skip(op, lk)
                continue
            pool = match_sum_pool(lk)
            if pool is not None and pool[0].operation.block == block:
                lk.pool, lk.pool_axis = pool
                mean = match_mean(lk.pool)
                unrolled = lk.index_shape[lk.pool_axis] <= MAX_UNROLLED_BAG and \
                    self.gather_mode != "ins"  # the division follows the unrolled sum
                if mean is not None and mean[0].operation.block == block and unrolled:
                    lk.mean, lk.divisor = mean
            consumer = _absorbing_consumer(lk.result)
            if consumer is not None:
                if report is not None:
                    report.skip(op, f"its only consumer ({consumer.name}) fuses it in stock "
                                    "IREE: batching would add a dispatch")
                continue
            found.append(lk)
        return found

    def _plan_writers(self, concats: list[Concat], lookups: list[Lookup],
                      report: PassReport) -> list[tuple[Concat, dict[int, ir.Operation]]]:
        """Concats worth writing in place, with the one-id lookups gathered by the writer."""
        by_result = {lk.result: lk for lk in lookups}
        writers = []
        for c in concats:
            slot_lookups: dict[int, ir.Operation] = {}
            produced = 0
            for s, ins in enumerate(c.slots):
                lk = by_result.get(ins.operands[0])
                if lk is None or len(h.users(lk.result)) != 1:
                    continue
                produced += 1
                one_id = lk.index_shape == (c.batch,) or (c.batch == 1 and not lk.index_shape)
                if lk.pool is None and one_id and h.is_constant_like(lk.table):
                    slot_lookups[s] = lk.op
            by_key: dict[tuple, list[int]] = defaultdict(list)
            for s, op in slot_lookups.items():
                lk = next(x for x in lookups if x.op == op)
                by_key[(lk.dim, lk.elem)].append(s)
            for slots in by_key.values():  # stacked tables over the limit: copied as values
                tabs = list(dict.fromkeys(by_result[c.slots[s].operands[0]].table for s in slots))
                if len(tabs) > 1 and _bytes(tabs) > self.max_table_bytes:
                    for s in slots:
                        del slot_lookups[s]
            if produced < self.min_concat_slots:
                report.skip(c.final, f"concat: {produced} slot(s) from lookups, fewer than "
                                     f"min-concat-slots={self.min_concat_slots}")
                continue
            if c.chunk < MIN_WRITER_CHUNK:
                report.skip(c.final, f"concat: slot widths {sorted(set(c.widths))} share only "
                                     f"{c.chunk}-column chunks (< {MIN_WRITER_CHUNK})")
                continue
            writers.append((c, slot_lookups))
        return writers

    def _group(self, lookups: list[Lookup], order: dict, kind: str) -> list[Group]:
        """Greedy groups in program order among lookups with one key; members independent."""
        by_key: dict[tuple, list[Lookup]] = defaultdict(list)
        for lk in lookups:
            if kind == "cross":
                if not h.is_constant_like(lk.table):
                    continue
                key = lk.shape_key()
            else:
                key = (lk.table, lk.elem, lk.index_elem, lk.checks,
                       lk.index_shape if lk.pool is not None else None, lk.pool_axis,
                       lk.divisor)
            by_key[key].append(lk)
        groups = []
        for members in by_key.values():
            members.sort(key=lambda m: order[m.op])
            open_groups: list[tuple[list[Lookup], int, int]] = []
            for m in members:
                d, u = _def_pos(m, order), _first_use_pos(m, order)
                for i, (g, gd, gu) in enumerate(open_groups):
                    if max(gd, d) < min(gu, u):
                        open_groups[i] = (g + [m], max(gd, d), min(gu, u))
                        break
                else:
                    open_groups.append(([m], d, u))
            for g, _, _ in open_groups:
                if len(g) < self.min_group_size:
                    continue
                grp = Group(g, kind)
                if kind == "cross" and len(grp.tables()) < 2:
                    continue  # one table: left for the same-table stage
                if kind == "cross" and _bytes(grp.tables()) > self.max_table_bytes:
                    continue
                if kind == "same" and len({m.index_shape for m in g}) > 1:
                    grp.layout = "flat"
                if _index_count(g) < (self.min_sliced_indices if g[0].pool is None
                                       else self.min_pooled_indices):
                    continue
                groups.append(grp)
        return groups


def _why_alone(lk: Lookup, left: list[Lookup], order: dict, min_size: int,
               max_bytes: int, min_indices: tuple[int, int]) -> str:
    """Why a lookup is still on its own after both stages."""
    same_key = [o for o in left if o is not lk and o.shape_key() == lk.shape_key()]
    same_table = [o for o in left if o is not lk and o.table == lk.table]
    if not same_key and not same_table:
        return (f"no other lookup with dim {lk.dim}, {lk.elem}, {lk.index_elem} indices of shape "
                f"{'x'.join(map(str, lk.index_shape)) or 'scalar'}"
                f"{', pooled' if lk.pool is not None else ''} (or of the same table)")
    others = same_key + [o for o in same_table if o not in same_key]
    if len(others) + 1 < min_size:
        return f"{len(others) + 1} candidate lookup(s), below min-group-size={min_size}"
    n = _index_count([lk] + others)
    if lk.pool is None and n < min_indices[0]:
        return (f"{n} indices in all candidates, below min-sliced-indices={min_indices[0]} "
                "(results would be sliced back)")
    if lk.pool is not None and n < min_indices[1]:
        return f"{n} indices in all candidate bags, below min-pooled-indices={min_indices[1]}"
    d, u = _def_pos(lk, order), _first_use_pos(lk, order)
    if all(max(d, _def_pos(o, order)) >= min(u, _first_use_pos(o, order)) for o in others):
        return "depends on the other candidates (or they on it): no single place dominates " \
               "their inputs and precedes their uses"
    if not h.is_constant_like(lk.table) and not same_table:
        return "table is not a constant (stacking it would copy it on every call); only " \
               "lookups of the same table merge"
    if _bytes(list(dict.fromkeys([lk.table] + [o.table for o in same_key]))) > max_bytes:
        return f"stacking the tables would exceed max-table-bytes={max_bytes}"
    return "no group formed with the other candidates"


VIEW_OPS = ("tensor.collapse_shape", "tensor.expand_shape", "tensor.cast",
            "iree_tensor_ext.compute_barrier.start")


def _hoist_view_chain(value: ir.Value, block: ir.Block) -> None:
    """Moves the reshapes/barriers that produce `value` up to right after their operands.

    At B = 1 IREE reshapes each id tensor (and opens its compute barrier) just before its
    lookup, after the previous lookup's results were used, which makes independent lookups
    look interleaved. These ops are pure views of values defined earlier."""
    op = h.defining_op(value)
    if op is None or op.name not in VIEW_OPS or op.block != block:
        return
    for operand in op.operands:
        _hoist_view_chain(operand, block)
    order = _positions(block)
    last = -1
    for operand in op.operands:
        d = h.defining_op(operand)
        a = _block_ancestor(d, order) if d is not None else None
        if a is not None:
            last = max(last, order[a])
    if order[op] > last + 1:
        op.move_before(next(o for o, i in order.items() if i == last + 1))


def _index_count(members: list[Lookup]) -> int:
    return sum(math.prod(m.index_shape) for m in members)


def _bytes(values: list[ir.Value]) -> int:
    return sum(h.static_tensor_bytes(v.type) or 0 for v in values)


def _absorbing_consumer(value: ir.Value) -> ir.Operation | None:
    """The one linalg.generic that reads `value` as an input: IREE fuses a gather into such a
    consumer's dispatch (measured: lookup + elementwise consumer = 1 dispatch; not so for
    linalg.matmul, inserts into a concat, results, or several consumers)."""
    uses = h.users(value)
    if len(uses) == 1 and uses[0].name == "linalg.generic" and \
            value in h.dps_inputs(uses[0]):
        return uses[0]
    return None


def _positions(block: ir.Block) -> dict[ir.Operation, int]:
    return {op.operation: i for i, op in enumerate(block.operations)}


def _block_ancestor(op: ir.Operation, order: dict) -> ir.Operation | None:
    while op is not None and op not in order:
        op = op.parent
        op = op.operation if op is not None and hasattr(op, "operation") else op
    return op


def _def_pos(lk: Lookup, order: dict) -> int:
    pos = -1
    for v in (lk.index, lk.table):
        d = h.defining_op(v)
        if d is not None:
            a = _block_ancestor(d, order)
            if a is not None:
                pos = max(pos, order[a])
    return pos


def _first_use_pos(lk: Lookup, order: dict) -> int:
    pos = 1 << 60
    for u in h.users(lk.result):
        a = _block_ancestor(u, order)
        if a is not None:
            pos = min(pos, order[a])
    return pos


# ---------------------------------------------------------------------- rewriting


class _TablePool:
    """Stacks constant tables once, at module load (one util.global per table list)."""

    def __init__(self, module: ir.Operation, block: ir.Block):
        self.module, self.block = module, block
        self.loads: dict[tuple, tuple[ir.Value, list[int]]] = {}

    def stacked(self, tables: list[ir.Value]) -> tuple[ir.Value, list[int]]:
        """(stacked table, first row of each entry of `tables`), built once per table list.
        Entries are constant-like; a repeated entry is stacked again (dedup=0 measurements)."""
        key = tuple(tables)
        if key in self.loads:
            return self.loads[key]
        types = [ir.RankedTensorType(t.type) for t in tables]
        total = sum(t.shape[0] for t in types)
        dim, elem = types[0].shape[1], types[0].element_type
        offsets, row = [], 0
        for ty in types:
            offsets.append(row)
            row += ty.shape[0]
        with self.module.location:
            out_t = ir.RankedTensorType.get([total, dim], elem)

        def build(cloned: list[ir.Value]) -> ir.Value:
            from iree.compiler.dialects import tensor

            acc = tensor.EmptyOp([total, dim], elem).result
            start = 0
            for v, ty in zip(cloned, types):
                acc = tensor.InsertSliceOp(v, acc, [], [], [], [start, 0],
                                           [ty.shape[0], dim], [1, 1]).result
                start += ty.shape[0]
            assert acc.type == out_t
            return acc

        first = next(iter(self.block.operations)).operation
        value = h.hoist_to_initializer(self.module, first, tables, build,
                                       f"{TABLE_SYMBOL}_{dim}x{elem}")
        self.loads[key] = (value, offsets)
        return value, offsets


def _splice(block_anchor: ir.Operation, text: str, args: list[ir.Value]) -> list[ir.Value]:
    """Parses `func.func @f(args) -> results` text, moves its body before the anchor with the
    arguments bound to `args`, and returns the values it returned."""
    ctx = block_anchor.context
    with ctx:
        tmp = ir.Module.parse(text)
    func = next(iter(tmp.body.operations)).operation
    body = func.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    ret = ops[-1]
    results = list(ret.operands)
    for op in ops[:-1]:
        op.move_before(block_anchor)
    for formal, actual in zip(body.arguments, args):
        formal.replace_all_uses_with(actual)
    ret.erase()
    return results


def _t(v: ir.Value | ir.Type) -> str:
    return str(v.type if isinstance(v, ir.Value) else v)


def _tensor_t(shape, elem: str) -> str:
    return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + elem + ">"


def _map(n: int, dims: list[int]) -> str:
    ds = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({ds}) -> ({', '.join(f'd{i}' for i in dims)})>"


def _dense(values: list[int], ty: str) -> str:
    items = ", ".join(str(v) for v in values)
    return f"arith.constant dense<[{items}]> : tensor<{len(values)}x{ty}>"


def _generic(result: str, maps: list[str], iterators: list[str], ins: list[tuple[str, str]],
             init: tuple[str, str], body: list[str], yielded: str, elem: str) -> list[str]:
    """Lines of `result = linalg.generic` with ins [(name, type)] and one init (name, type);
    the block takes one element per input (named as in the body) and `%out`."""
    its = ", ".join(f'"{i}"' for i in iterators)
    ins_clause = (f"ins({', '.join(n for n, _ in ins)} : {', '.join(t for _, t in ins)}) "
                  if ins else "")
    args = [f"%a{j}: {ir.RankedTensorType.parse(t).element_type}" for j, (_, t) in
            enumerate(ins)] + [f"%out: {elem}"]
    return [f"{result} = linalg.generic {{indexing_maps = [{', '.join(maps)}],",
            f"    iterator_types = [{its}]}}",
            f"    {ins_clause}outs({init[0]} : {init[1]}) {{",
            f"^bb0({', '.join(args)}):",
            *("  " + line for line in body),
            f"  linalg.yield {yielded} : {elem}",
            f"}} -> {init[1]}"]


def _func(formals: list[str], lines: list[str], results: list[tuple[str, str]]) -> str:
    """A `func.func` to splice: formals ["%x: type"], body lines, results [(name, type)]."""
    types = ", ".join(t for _, t in results)
    return "\n".join([f"func.func @f({', '.join(formals)}) -> ({types}) {{",
                      *("  " + line for line in lines),
                      f"  func.return {', '.join(n for n, _ in results)} : {types}", "}"])


class _Body:
    """Builds the text of a generic body line by line with fresh SSA names."""

    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def __call__(self, rhs: str) -> str:
        self.n += 1
        name = f"%v{self.n}"
        self.lines.append(f"{name} = {rhs}")
        return name

    def raw(self, line: str) -> None:
        self.lines.append(line)


def _entry(b: _Body, table: str, key: str, n: int) -> str:
    """table[key] as an index, from an i64 constant table (IREE cannot clone `tensor<Nxindex>`
    constants into dispatches)."""
    v = b(f"tensor.extract {table}[{key}] : tensor<{n}xi64>")
    return b(f"arith.index_cast {v} : i64 to index")


def _select_chain(b: _Body, key: str, values: list[str], keys: list[int], ty: str,
                  key_ty: str = "index") -> str:
    """values[i] where key == keys[i] (values[0] for any other key)."""
    acc = values[0]
    for v, k in zip(values[1:], keys[1:]):
        c = b(f"arith.constant {k} : {key_ty}")
        eq = b(f"arith.cmpi eq, {key}, {c} : {key_ty}")
        acc = b(f"arith.select {eq}, {v}, {acc} : {ty}")
    return acc


def _emit_checks(b: _Body, checks, raw_idx: str, idx: str, rows: str, index_elem: str,
                 skip: str | None = None) -> None:
    """The lookup's bounds checks: the original index against its own table's rows."""
    upper, lower = checks
    if upper is not None:
        ok = b(f"arith.cmpi slt, {idx}, {rows} : index")
        if skip is not None:
            ok = b(f"arith.ori {skip}, {ok} : i1")
        b.raw(f'cf.assert {ok}, "{upper}"')
    if lower is not None:
        zero = b(f"arith.constant 0 : {index_elem}")
        ok = b(f"arith.cmpi sge, {raw_idx}, {zero} : {index_elem}")
        if skip is not None:
            ok = b(f"arith.ori {skip}, {ok} : i1")
        b.raw(f'cf.assert {ok}, "{lower}"')


def _index_prelude(name: str, lk: Lookup) -> tuple[list[str], str]:
    """Text that reshapes the index argument `name` to the lookup's index shape (a gather's
    indices carry a trailing unit dim); returns (lines, name of the reshaped value)."""
    actual = list(ir.RankedTensorType(lk.index.type).shape)
    if actual == list(lk.index_shape):
        return [], name
    n = len(lk.index_shape)
    groups = [[i] for i in range(n - 1)] + [list(range(n - 1, len(actual)))]
    reassoc = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
    out = f"{name}c"
    return [f"{out} = tensor.collapse_shape {name} {reassoc} : {_t(lk.index)} into "
            f"{_tensor_t(list(lk.index_shape), lk.index_elem)}"], out


def rewrite_embedding_bag(bag: EmbeddingBag) -> None:
    """out[b, d] = sum_l table[idx[b*L + l], d]: a lookup over [B, L, D] and a sum over L
    (B = 1 with unit dims folded: a lookup over [L, D] and a sum over L)."""
    op = bag.op
    res_t = _static_tensor(op.results[0])
    elem = str(res_t.element_type)
    dim = res_t.shape[-1]
    idx_elem = str(ir.RankedTensorType(bag.flat_index.type).element_type)
    init = h.dps_inits(op)[0]
    ids_shape = [bag.bags, bag.length] if res_t.rank == 2 else [bag.length]
    r = len(ids_shape) + 1
    body = _Body()
    cast = body(f"arith.index_cast %a0 : {idx_elem} to index")
    col = body(f"linalg.index {r - 1} : index")
    row = body(f"tensor.extract %table[{cast}, {col}] : {_t(bag.table)}")
    ids_t = _tensor_t(ids_shape, idx_elem)
    rows_t = _tensor_t(ids_shape + [dim], elem)
    lines = []
    if len(ids_shape) == 2:
        lines.append(f"%ids = tensor.expand_shape %flat [[0, 1]] output_shape "
                     f"[{bag.bags}, {bag.length}] : {_t(bag.flat_index)} into {ids_t}")
    ids = "%ids" if len(ids_shape) == 2 else "%flat"
    its = ["parallel"] * r
    its[r - 2] = "reduction"
    lines += [f"%e = tensor.empty() : {rows_t}",
              *_generic("%rows", [_map(r, list(range(r - 1))), _map(r, list(range(r)))],
                        ["parallel"] * r, [(ids, ids_t)], ("%e", rows_t), body.lines, row,
                        elem),
              *_generic("%sum", [_map(r, list(range(r))),
                                 _map(r, [i for i in range(r) if i != r - 2])],
                        its, [("%rows", rows_t)], ("%init", _t(init)),
                        [f"%s = arith.addf %a0, %out : {elem}"], "%s", elem)]
    text = _func([f"%flat: {_t(bag.flat_index)}", f"%table: {_t(bag.table)}",
                  f"%init: {_t(init)}"], lines, [("%sum", _t(init))])
    (new,) = _splice(op, text, [bag.flat_index, bag.table, init])
    op.results[0].replace_all_uses_with(new)
    op.erase()


def _distinct_slots(members: list[Lookup]) -> tuple[list[Lookup], list[int]]:
    """Members with the same table and index (and pooling) read one slot."""
    slots: list[Lookup] = []
    where = []
    for m in members:
        for i, s in enumerate(slots):
            if s.table == m.table and s.index == m.index and s.pool_axis == m.pool_axis:
                where.append(i)
                break
        else:
            where.append(len(slots))
            slots.append(m)
    return slots, where


def _insertion_anchor(members: list[Lookup], order: dict) -> ir.Operation:
    """The first op that uses a member's result: the batched gather goes as late as it can
    (grouping made sure that every member's first use comes after the last definition the
    group reads). As early as possible (right after that definition) measured worse: in a
    function whose arguments are imported one by one, the gather lands between two imports
    and IREE's stream partitioning then cuts the call into two submissions (dlrm-b8: a host
    wait between the bag dispatch and the rest)."""
    first = min(_first_use_pos(m, order) for m in members)
    return next(op for op, i in order.items() if i == first)


def emit_group(g: Group, tables: _TablePool, order: dict, report: PassReport,
               ins_mode: bool = False, dedup: bool = True) -> None:
    members = g.members
    slots, where = _distinct_slots(members)
    distinct = g.tables()
    first = members[0]
    anchor = _insertion_anchor(members, order)
    if len(distinct) > 1:
        entries = distinct if dedup else [s.table for s in slots]
        table, starts = tables.stacked(entries)
        offsets = [starts[entries.index(s.table)] if dedup else starts[i]
                   for i, s in enumerate(slots)]
    else:
        table, offsets = first.table, [0] * len(slots)
    rows = [s.rows for s in slots]
    if g.layout == "flat":
        results = _emit_flat(slots, table, offsets, rows, anchor)
    else:
        results = _emit_stacked(slots, table, offsets, rows, anchor, ins_mode)
    for m, w in zip(members, where):
        m.result.replace_all_uses_with(results[w])
    for m in members:
        for op in reversed(m.ops):
            op.erase()
    what = "cross-table" if len(distinct) > 1 else "same-table"
    pooled = (f", pooled ({'mean' if first.divisor else 'sum'}) over axis {first.pool_axis}"
              if first.pool is not None else "")
    report.change(
        f"{what}: {len(members)} lookups ({len(slots)} distinct) of {len(distinct)} table(s), "
        f"dim {first.dim}, indices {'x'.join(map(str, first.index_shape))}{pooled} -> 1 "
        f"{g.layout} gather")


def _emit_stacked(slots: list[Lookup], table: ir.Value, offsets: list[int], rows: list[int],
                  anchor: ir.Operation, ins_mode: bool = False) -> list[ir.Value]:
    """One generic writing [K, S..., D] (pooled: summed over the bag axis), sliced per slot.

    Each slot's index is read with `tensor.extract` at the loop indices (uniform along d,
    so every table row is one contiguous vector load). Unpooled, the loops run
    (s..., k, d) with the output map -> (k, s..., d), which keeps IREE from collapsing all
    loops into one (that would turn row reads into per-element gathers); pooled, the loops
    are (k, s..., d) with the bag axis a reduction. ins_mode: indices as `ins` (measured).
    """
    first = slots[0]
    k = len(slots)
    shape = list(first.index_shape)
    r = len(shape)
    elem, ie = first.elem, first.index_elem
    pool = first.pool_axis
    unroll = pool is not None and not ins_mode and shape[pool] <= MAX_UNROLLED_BAG
    loop_dims = [i for i in range(r) if not (unroll and i == pool)]  # index dims as loops
    n = len(loop_dims) + 2
    if not ins_mode and (pool is None or unroll):
        kpos, spos = n - 2, list(range(n - 2))  # loops (s..., k, d)
    else:
        kpos, spos = 0, list(range(1, n - 1))  # loops (k, s..., d)
    dpos = n - 1
    loop_of = dict(zip(loop_dims, spos))  # index dim -> loop
    out_dims = [kpos] + [loop_of[i] for i in range(r) if i != pool] + [dpos]
    out_shape = [k] + [x for i, x in enumerate(shape) if i != pool] + [first.dim]
    its = ["parallel"] * n
    if pool is not None and not unroll:
        its[loop_of[pool]] = "reduction"
    pre: list[str] = []
    names = []
    for j, sl in enumerate(slots):
        lines, name = _index_prelude(f"%i{j}", sl)
        pre += lines
        names.append(name)
    idx_t = _tensor_t(shape, ie)
    b = _Body()
    loop = {}
    for d in sorted({kpos, dpos, *spos}):
        loop[d] = b(f"linalg.index {d} : index")
    kk = loop[kpos]
    rows_v = b(f"arith.constant {rows[0]} : index") if len(set(rows)) == 1 else \
        _entry(b, "%rows", kk, k)
    off = _entry(b, "%offs", kk, k) if any(offsets) else None

    def gather(at: list[str]) -> str:
        if ins_mode:
            chain_in = [f"%a{j}" for j in range(k)]
        else:
            pos = ", ".join(at)
            chain_in = [b(f"tensor.extract {nm}[{pos}] : {idx_t}") for nm in names]
        raw = _select_chain(b, kk, chain_in, list(range(k)), ie)
        idx = b(f"arith.index_cast {raw} : {ie} to index")
        _emit_checks(b, first.checks, raw, idx, rows_v, ie)
        if off is not None:
            idx = b(f"arith.addi {idx}, {off} : index")
        return b(f"tensor.extract %table[{idx}, {loop[dpos]}] : {_t(table)}")

    if unroll:
        # The bag axis unrolled in the body: row reads stay contiguous along d and the sum
        # runs l = 0, 1, ... from zero, like the stock reduction.
        acc = b(f"arith.constant 0.0 : {elem}")
        for l_ in range(shape[pool]):
            c = b(f"arith.constant {l_} : index")
            at = [c if i == pool else loop[loop_of[i]] for i in range(r)]
            acc = b(f"arith.addf {gather(at)}, {acc} : {elem}")
        val = acc
        if first.divisor is not None:
            val = b(f"arith.divf {val}, {b(f'arith.constant {first.divisor}')} : {elem}")
    else:
        assert first.divisor is None, "mean bags are only batched with the unrolled sum"
        val = gather([loop[loop_of[i]] for i in range(r)])
        if pool is not None:
            val = b(f"arith.addf {val}, %out : {elem}")
    out_t = _tensor_t(out_shape, elem)
    slice_t = _tensor_t(out_shape[1:], elem)
    init = "%e"
    pre.append(f"%e = tensor.empty() : {out_t}")
    if pool is not None and not unroll:
        pre += [f"%zero = arith.constant 0.0 : {elem}",
                f"%z = linalg.fill ins(%zero : {elem}) outs(%e : {out_t}) -> {out_t}"]
        init = "%z"
    if len(set(rows)) > 1:
        pre.append(f"%rows = {_dense(rows, 'i64')}")
    if any(offsets):
        pre.append(f"%offs = {_dense(offsets, 'i64')}")
    zeros = ", ".join(["0"] * (len(out_shape) - 1))
    sizes = ", ".join(str(x) for x in out_shape[1:])
    ones = ", ".join(["1"] * len(out_shape))
    slices = [f"%r{j} = tensor.extract_slice %g[{j}, {zeros}] [1, {sizes}] [{ones}] : "
              f"{out_t} to {slice_t}" for j in range(k)]
    if ins_mode:
        ins = [(nm, idx_t) for nm in names]
    elif pool is not None and not unroll:
        # The bag axis appears in no other map: the first index tensor, unused in the
        # body, gives the loops their ranges.
        ins = [(names[0], idx_t)]
    else:
        ins = []
    lines = [*pre, *_generic("%g", [_map(n, spos)] * len(ins) + [_map(n, out_dims)], its, ins,
                             (init, out_t), b.lines, val, elem), *slices]
    text = _func([f"%table: {_t(table)}"] + [f"%i{j}: {_t(sl.index)}"
                                             for j, sl in enumerate(slots)],
                 lines, [(f"%r{j}", slice_t) for j in range(k)])
    return _splice(anchor, text, [table] + [sl.index for sl in slots])


def _emit_flat(slots: list[Lookup], table: ir.Value, offsets: list[int], rows: list[int],
               anchor: ir.Operation) -> list[ir.Value]:
    """Index tensors of different shapes: flattened rows [sum N, D], sliced and reshaped."""
    first = slots[0]
    elem, ie, dim = first.elem, first.index_elem, first.dim
    sizes, starts, start = [], [], 0
    for s in slots:
        count = 1
        for x in s.index_shape:
            count *= x
        sizes.append(count)
        starts.append(start)
        start += count
    total = start
    pre, b = [], _Body()
    flat_names = []
    for j, s in enumerate(slots):
        shape = tuple(ir.RankedTensorType(s.index.type).shape)
        if len(shape) == 1:
            flat_names.append(f"%i{j}")
        else:
            reassoc = "[[" + ", ".join(str(i) for i in range(len(shape))) + "]]"
            pre.append(f"%f{j} = tensor.collapse_shape %i{j} {reassoc} : "
                       f"{_tensor_t(list(shape), ie)} into {_tensor_t([sizes[j]], ie)}")
            flat_names.append(f"%f{j}")
    n = b("linalg.index 0 : index")
    vals, segs = [], []
    for j, s in enumerate(slots):
        st = b(f"arith.constant {starts[j]} : index")
        last = b(f"arith.constant {sizes[j] - 1} : index")
        zero = b("arith.constant 0 : index")
        p = b(f"arith.subi {n}, {st} : index")
        p = b(f"arith.maxsi {p}, {zero} : index")
        p = b(f"arith.minsi {p}, {last} : index")
        vals.append(b(f"tensor.extract {flat_names[j]}[{p}] : {_tensor_t([sizes[j]], ie)}"))
        segs.append(b(f"arith.cmpi sge, {n}, {st} : index"))
    raw, rows_v, off_v = vals[0], None, None
    rows_s = [b(f"arith.constant {r} : index") for r in rows]
    offs_s = [b(f"arith.constant {o} : index") for o in offsets]
    rows_v, off_v = rows_s[0], offs_s[0]
    for j in range(1, len(slots)):
        raw = b(f"arith.select {segs[j]}, {vals[j]}, {raw} : {ie}")
        rows_v = b(f"arith.select {segs[j]}, {rows_s[j]}, {rows_v} : index")
        off_v = b(f"arith.select {segs[j]}, {offs_s[j]}, {off_v} : index")
    idx = b(f"arith.index_cast {raw} : {ie} to index")
    _emit_checks(b, first.checks, raw, idx, rows_v, ie)
    if any(offsets):
        idx = b(f"arith.addi {idx}, {off_v} : index")
    col = b("linalg.index 1 : index")
    val = b(f"tensor.extract %table[{idx}, {col}] : {_t(table)}")
    out_t = _tensor_t([total, dim], elem)
    outs, rets = [], []
    for j, s in enumerate(slots):
        sl_t = _tensor_t([sizes[j], dim], elem)
        outs.append(f"%s{j} = tensor.extract_slice %g[{starts[j]}, 0] [{sizes[j]}, {dim}] [1, 1]"
                    f" : {out_t} to {sl_t}")
        shape = list(s.index_shape) + [dim]
        if len(shape) == 2:
            rets.append((f"%s{j}", sl_t))
        else:
            lead = ", ".join(str(i) for i in range(len(shape) - 1))
            reassoc = f"[[{lead}], [{len(shape) - 1}]]"
            res_t = _tensor_t(shape, elem)
            outs.append(f"%r{j} = tensor.expand_shape %s{j} {reassoc} output_shape "
                        f"[{', '.join(str(x) for x in shape)}] : {sl_t} into {res_t}")
            rets.append((f"%r{j}", res_t))
    lines = [*pre, f"%e = tensor.empty() : {out_t}",
             *_generic("%g", [_map(2, [0, 1])], ["parallel", "parallel"], [], ("%e", out_t),
                       b.lines, val, elem), *outs]
    text = _func([f"%table: {_t(table)}"] + [f"%i{j}: {_t(s.index)}"
                                             for j, s in enumerate(slots)], lines, rets)
    return _splice(anchor, text, [table] + [s.index for s in slots])


def _stacked_source(value: ir.Value, batch: int, dim: int) -> tuple[ir.Value, int] | None:
    """(G, k) when value = extract_slice G[k, 0, 0] [1, B, D] of G: [K, B, D] (or of
    G: [K, D] when B is 1): a slot of a batched gather."""
    op = h.defining_op(value)
    if op is None or op.name != "tensor.extract_slice" or len(op.operands) != 1:
        return None
    src_t = _static_tensor(op.operands[0])
    offs, sizes, strides = (_static_attr(op, n) for n in
                            ("static_offsets", "static_sizes", "static_strides"))
    if src_t is None or list(src_t.shape[1:]) not in ([batch, dim], [dim] if batch == 1
                                                      else None):
        return None
    if any(x != 1 for x in strides) or any(offs[1:]) or sizes != [1] + list(src_t.shape[1:]):
        return None
    return op.operands[0], offs[0]


def emit_concat_writer(c: Concat, slot_lookups: dict[int, Lookup], tables: _TablePool,
                       report: PassReport, values_as_ins: bool = False,
                       dedup: bool = True) -> None:
    """Replaces the concat's insert_slice chain with one generic that writes its slots.

    At B = 1 every slot is a contiguous run of the result, so IREE writes a producer's
    result into it in place (no copy): there the writer covers only the run of slots from
    the first to the last lookup/batched slot, and the other slots keep their inserts (the
    value of a long chain like the MLP would otherwise wait for the writer).
    """
    produced = [s in slot_lookups or _stacked_source(ins.operands[0], c.batch, c.widths[s])
                is not None for s, ins in enumerate(c.slots)]
    s0, s1 = 0, len(c.slots)
    if c.batch == 1 and any(produced):
        s0 = produced.index(True)
        s1 = len(produced) - produced[::-1].index(True)
    run = Concat(c.inserts, c.batch, c.widths[s0:s1], c.slots[s0:s1], c.elem)
    formals, args, lines, fin_t, counts = _writer_lines(
        run, {s - s0: lk for s, lk in slot_lookups.items() if s0 <= s < s1}, tables,
        values_as_ins, dedup)
    result = "%c"
    if (s0, s1) != (0, len(c.slots)):
        dest = c.inserts[0].operands[1]
        formals.append(f"%dest: {_t(dest)}")
        args.append(dest)
        prev, col = "%dest", 0
        for s, (ins, w) in enumerate(zip(c.slots, c.widths)):
            if s == s0:
                lines.append(f"%x{s} = tensor.insert_slice %c into {prev}[0, {col}] "
                             f"[{c.batch}, {sum(run.widths)}] [1, 1] : {fin_t} into {_t(dest)}")
                prev = f"%x{s}"
            elif not s0 <= s < s1:
                src = ins.operands[0]
                formals.append(f"%o{s}: {_t(src)}")
                args.append(src)
                lines.append(f"%x{s} = tensor.insert_slice %o{s} into {prev}[0, {col}] "
                             f"[{c.batch}, {w}] [1, 1] : {_t(src)} into {_t(dest)}")
                prev = f"%x{s}"
            col += w
        result, fin_t = prev, _t(dest)
    text = _func(formals, lines, [(result, fin_t)])
    (new,) = _splice(c.final, text, args)
    c.final.results[0].replace_all_uses_with(new)
    for ins in reversed(c.inserts):
        ins.erase()
    for lk in slot_lookups.values():
        if not list(lk.result.uses):
            for op in reversed(lk.ops):
                op.erase()
    n_lookups, n_groups, n_stacked, n_values = counts
    kept = len(c.slots) - (s1 - s0)
    report.change(
        f"concat of {len(c.slots)} slots (widths {'/'.join(map(str, sorted(set(c.widths))))}) "
        f"written in place by one generic in {run.chunk}-column chunks ({n_lookups} lookups "
        f"gathered in it from {n_groups} table group(s), {n_stacked} from batched gathers, "
        f"{n_values} copied values); {len(c.inserts)} insert_slices removed"
        + (f", {kept} kept (B = 1: written in place by their producers)" if kept else ""))


def _writer_lines(c: Concat, slot_lookups: dict[int, Lookup], tables: _TablePool,
                  values_as_ins: bool, dedup: bool):
    """(formals, args, lines, result type, counts) of the generic writing the concat `c` as
    `%c`, in chunks of q = gcd(widths) columns.

    Loops (chunk, b, lane) write [B, W/q, q] through the map (c, b, l) -> (b, c, l), then a
    collapse_shape gives [B, W]. No two loops are adjacent in the same order in every map,
    so IREE does not collapse them (which would turn row reads into per-element gathers).
    Per chunk, constant tables give the slot's kind and the chunk's place in the slot; every
    read (table rows, other values, batched bags) is at [uniform indices..., sub * q + lane],
    which the vectorizer turns into contiguous loads. Lookups of one (dim, dtype, checks)
    read one stacked table; the index is picked among the lookups' index tensors by slot.
    """
    nslots, bsz, elem, q = len(c.slots), c.batch, c.elem, c.chunk
    nchunks = sum(c.widths) // q
    chunk_slot, chunk_sub = [], []
    for s, w in enumerate(c.widths):
        chunk_slot += [s] * (w // q)
        chunk_sub += list(range(w // q))
    # Sources: lookup groups (by dim/dtype/checks), other values, batched (stacked) gathers.
    groups: dict[tuple, list[int]] = defaultdict(list)
    values: list[int] = []
    stacks: dict[ir.Value, list[tuple[int, int]]] = {}
    for s, ins in enumerate(c.slots):
        if s in slot_lookups:
            lk = slot_lookups[s]
            groups[(lk.dim, lk.elem, lk.index_elem, lk.checks)].append(s)
            continue
        st = _stacked_source(ins.operands[0], bsz, c.widths[s])
        if st is not None:
            stacks.setdefault(st[0], []).append((s, st[1]))
        else:
            values.append(s)
    code = {}  # slot -> kind code
    for g, slots in enumerate(groups.values()):
        code.update({s: g for s in slots})
    base = len(groups)
    code.update({s: base for s in values})
    for g, pairs in enumerate(stacks.values()):
        code.update({s: base + 1 + g for s, _ in pairs})

    pre: list[str] = []
    formals: list[str] = []
    args: list[ir.Value] = []
    ins_names, ins_types, in_maps = [], [], []
    b = _Body()
    b.raw("%c_ = linalg.index 0 : index")
    b.raw("%b_ = linalg.index 1 : index")
    b.raw("%l_ = linalg.index 2 : index")
    qv = b(f"arith.constant {q} : index")
    if chunk_slot == list(range(nchunks)):
        s_v = "%c_"  # one chunk per slot
    else:
        pre.append(f"%slot = {_dense(chunk_slot, 'i64')}")
        s_v = _entry(b, "%slot", "%c_", nchunks)
    kind_v = None
    if len(set(code.values())) > 1:
        pre.append(f"%kinds = {_dense([code[s] for s in range(nslots)], 'i32')}")
        kind_v = b(f"tensor.extract %kinds[{s_v}] : tensor<{nslots}xi32>")

    def column(name: str, members: set[int]) -> str:
        """sub * q + lane, with sub the chunk's place in its slot (0 outside `members`)."""
        subs = [chunk_sub[i] if chunk_slot[i] in members else 0 for i in range(nchunks)]
        if not any(subs):
            return "%l_"
        pre.append(f"%{name} = {_dense(subs, 'i64')}")
        sub = _entry(b, f"%{name}", "%c_", nchunks)
        at = b(f"arith.muli {sub}, {qv} : index")
        return b(f"arith.addi {at}, %l_ : index")

    def is_kind(k: int) -> str:
        kc = b(f"arith.constant {k} : i32")
        return b(f"arith.cmpi eq, {kind_v}, {kc} : i32")

    result = None
    n_lookups = 0
    for g, ((dim, _, ie, checks), slots) in enumerate(groups.items()):
        lks = [slot_lookups[s] for s in slots]
        n_lookups += len(lks)
        distinct: list[ir.Value] = []
        for lk in lks:
            if lk.table not in distinct:
                distinct.append(lk.table)
        if len(distinct) == 1:
            table, start_at = distinct[0], [0] * len(lks)
        elif dedup:
            table, starts = tables.stacked(distinct)
            start_at = [starts[distinct.index(lk.table)] for lk in lks]
        else:
            table, start_at = tables.stacked([lk.table for lk in lks])
        start_of = dict(zip(lks, start_at))
        args.append(table)
        formals.append(f"%table{g}: {_t(table)}")
        idx_t = _tensor_t(list(lks[0].index_shape), ie)
        chain_in = []
        for j, lk in enumerate(lks):
            args.append(lk.index)
            formals.append(f"%i{g}_{j}: {_t(lk.index)}")
            lines, name = _index_prelude(f"%i{g}_{j}", lk)
            pre += lines
            at = "[%b_]" if lk.index_shape else "[]"
            chain_in.append(b(f"tensor.extract {name}{at} : {idx_t}"))
        raw = _select_chain(b, s_v, chain_in, slots, ie)
        idx = b(f"arith.index_cast {raw} : {ie} to index")
        member = dict(zip(slots, lks))
        rows = [member[s].rows if s in member else 0 for s in range(nslots)]
        offs = [start_of[member[s]] if s in member else 0 for s in range(nslots)]
        pre.append(f"%rows{g} = {_dense(rows, 'i64')}")
        rows_v = _entry(b, f"%rows{g}", s_v, nslots)
        skip = None
        if kind_v is not None:
            skip = b(f"arith.xori {is_kind(g)}, {b('arith.constant true')} : i1")
        _emit_checks(b, checks, raw, idx, rows_v, ie, skip)
        if any(offs):
            pre.append(f"%offs{g} = {_dense(offs, 'i64')}")
            idx = b(f"arith.addi {idx}, {_entry(b, f'%offs{g}', s_v, nslots)} : index")
        if skip is not None:
            idx = b(f"arith.select {skip}, {b('arith.constant 0 : index')}, {idx} : index")
        col = column(f"sub{g}", set(slots))
        v = b(f"tensor.extract %table{g}[{idx}, {col}] : {_t(table)}")
        result = v if result is None else b(f"arith.select {is_kind(g)}, {v}, {result} : {elem}")
    if values:
        pvs = []
        for p, s in enumerate(values):
            v = c.slots[s].operands[0]
            args.append(v)
            formals.append(f"%p{p}: {_t(v)}")
            rank = ir.RankedTensorType(v.type).rank
            if c.widths[s] == q and values_as_ins:
                # One chunk wide: read as an input (b, lane) (option values-as-ins).
                ins_names.append(f"%p{p}")
                ins_types.append(_t(v))
                in_maps.append(_map(3, [1, 2] if rank == 2 else [2]))
                pvs.append(f"%a{len(ins_names) - 1}")  # its element in the block
                continue
            col = column(f"subp{p}", {s})
            at = f"%b_, {col}" if rank == 2 else col
            pvs.append(b(f"tensor.extract %p{p}[{at}] : {_t(v)}"))
        pv = _select_chain(b, s_v, pvs, values, elem)
        result = pv if result is None else \
            b(f"arith.select {is_kind(base)}, {pv}, {result} : {elem}")
    for g, (st, pairs) in enumerate(stacks.items()):
        args.append(st)
        formals.append(f"%st{g}: {_t(st)}")
        ks = [0] * nslots
        for s, k in pairs:
            ks[s] = k
        pre.append(f"%stk{g} = {_dense(ks, 'i64')}")
        kv = _entry(b, f"%stk{g}", s_v, nslots)
        col = column(f"subs{g}", {s for s, _ in pairs})
        at = f"{kv}, %b_, {col}" if ir.RankedTensorType(st.type).rank == 3 else f"{kv}, {col}"
        gv = b(f"tensor.extract %st{g}[{at}] : {_t(st)}")
        result = gv if result is None else \
            b(f"arith.select {is_kind(base + 1 + g)}, {gv}, {result} : {elem}")
    out_t = _tensor_t([bsz, nchunks, q], elem)
    fin_t = _tensor_t([bsz, nchunks * q], elem)
    lines = [*pre, f"%e = tensor.empty() : {out_t}",
             *_generic("%w", in_maps + [_map(3, [1, 0, 2])], ["parallel"] * 3,
                       list(zip(ins_names, ins_types)), ("%e", out_t), b.lines, result, elem),
             f"%c = tensor.collapse_shape %w [[0], [1, 2]] : {out_t} into {fin_t}"]
    return formals, args, lines, fin_t, (n_lookups, len(groups),
                                         sum(len(p) for p in stacks.values()), len(values))
