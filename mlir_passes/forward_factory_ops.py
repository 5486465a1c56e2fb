"""forward-factory-ops: cheap generated tensors are recomputed inside each consumer, never
passed from one dispatch to another through memory (nvFuser's forwarding of factory ops).

A *factory* value is a tensor computed from nothing but loop indices, scalars and *leaves*
(tiny inputs, constants or globals, e.g. a 0-d `start_pos` or a 16-element inverse-frequency
table, that the op reading them broadcasts): `linalg.fill`, splat constants, all-parallel
`linalg.generic`s with cheap bodies (iota / `arange`, index compares = masks, `cos`/`sin` of
positions, casts, scales), and reshapes, slices, concats (`insert_slice`), broadcasts and
transposes of those. IREE materializes such a value whenever it has an input and feeds several
dispatches, a reduction or a contraction. This pass (linalg phase) scalarizes the factory chain
into the body of every consuming `linalg.generic` (any iterator types), which then computes the
value at its own indices and no longer reads the tensor:

    %pos  = linalg.generic ins(%start : tensor<i64>) { index(0) + start }   : tensor<512xi64>
    %mask = linalg.generic ins(%pos) { select(index(1) <= pos, 0, -inf) }  : tensor<512x512xf32>
    %s    = linalg.generic ins(%scores, %mask) { s / c + m }           : tensor<8x512x512xf32>
  becomes
    %s    = linalg.generic ins(%scores, %start) { i = index(1); j = index(2);
                                                  m = select(j <= i + start, 0, -inf); s / c + m }

A factory value it does not forward (cost, or a reader that is not a generic) is *compacted*:
one generic computes it (several values of one shape: one multi-result generic) from indices and
its leaves instead of the chain, so the chain's dispatches and intermediate tensors disappear
(RoPE: positions, frequencies, two concat copies, cos and sin = 6 dispatches -> 1). Its
flow-phase half, `forward-factory-dispatches` (below), then clones such a dispatch into the
dispatches whose root cannot take it at this phase (`iree_linalg_ext.attention`'s mask).

Not forwarded (each reported with `--fusions-report`): values that leave the function (they are
materialized anyway), expensive generators (more than `max-element-ops` arithmetic ops per
element: RNG-like hashes; reductions are never factory ops), single fills/splats (IREE clones
those itself), and values whose recomputation costs more than the memory traffic it saves.
The cost model, in weighted scalar ops (OP_COST: 1 per cheap op, 8 per division, 200 per
transcendental), with constants measured on llvm-cpu (bench/results/forward-factory-ops.md):

    extra  = cost_per_element * (sum of consumer iterations - elements)   # redundant recompute
    saved  = bytes * (readers + 1 if the producer disappears else readers)
    forward when extra <= ops-per-byte * saved + ops-per-dispatch * (producer disappears)

Fully constant factory chains never reach this pass as chains: IREE's global optimization
const-evaluates them into globals (cos/sin tables) or, for index-only broadcasts (masks), keeps
them and fuses them into their consumers itself; the pass leaves both alone.
"""


from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir
from iree.compiler.dialects import affine, arith, linalg, tensor

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import FusionPass, PassReport, describe_op, describe_value

# Weighted cost of one scalar body op, in "cheap op" units: what one element of a factory value
# costs to recompute inside a consumer. Measured on llvm-cpu (znver4, bench/results): a cheap
# op recomputed in a memory-bound consumer costs ~1.6 ps per element (it hides under the
# consumer's memory traffic), a cos/sin/exp ~0.35 ns, i.e. ~200 cheap ops. Ops that are not
# listed make a generic non-factory.
_CHEAP = 1.0
_DIVISION = 8.0
_TRANSCENDENTAL = 200.0
OP_COST: dict[str, float] = {
    **{f"arith.{n}": _CHEAP for n in (
        "addi", "subi", "muli", "andi", "ori", "xori", "shli", "shrui", "shrsi", "cmpi",
        "cmpf", "select", "addf", "subf", "mulf", "negf", "maxnumf", "minnumf", "maximumf",
        "minimumf", "maxsi", "minsi", "maxui", "minui", "extsi", "extui", "trunci", "extf",
        "truncf", "sitofp", "uitofp", "fptosi", "fptoui", "bitcast")},
    "arith.index_cast": 0.0,
    "arith.index_castui": 0.0,
    "arith.constant": 0.0,
    **{f"arith.{n}": _DIVISION for n in (
        "divf", "divsi", "divui", "remsi", "remui", "remf", "floordivsi", "ceildivsi",
        "ceildivui")},
    "math.absf": _CHEAP, "math.absi": _CHEAP, "math.copysign": _CHEAP,
    "math.floor": _CHEAP, "math.ceil": _CHEAP, "math.round": _CHEAP, "math.trunc": _CHEAP,
    "math.sqrt": 2 * _DIVISION, "math.rsqrt": 2 * _DIVISION,
    **{f"math.{n}": _TRANSCENDENTAL for n in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh",
        "atan", "atan2", "erf", "powf", "fpowi", "ipowi", "sinh", "cosh")},
    "linalg.index": 0.0,
    "linalg.yield": 0.0,
}
LEAF_READ_COST = 1.0  # tensor.extract of a leaf element (a cached scalar load)
INDEX_MATH_COST = 1.0  # per dim of index arithmetic (reshapes, slices)
CONCAT_COST = 3.0  # bounds compare + select + clamp of an insert_slice

_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")
# Where a leaf may come from (through the look-through ops): inputs, constants, globals.
_LEAF_SOURCES = ("hal.tensor.import", "arith.constant", "util.global.load",
                 "iree_tensor_ext.dispatch.tensor.load")
_LEAF_LOOK_THROUGH = ("iree_tensor_ext.compute_barrier.start", "tensor.cast",
                      "tensor.expand_shape", "tensor.collapse_shape", "flow.tensor.reshape")
_ESCAPES = ("util.return", "func.return", "hal.tensor.export", "hal.tensor.alias",
            "iree_tensor_ext.compute_barrier.end", "util.global.store", "flow.tensor.transfer",
            "util.call", "func.call")


@dataclass
class Factory:
    """A factory value: how much one element costs and which ops and leaves it depends on."""

    value: ir.Value
    cost: float  # weighted ops to recompute one element (OP_COST)
    ops: list[ir.Operation] = field(default_factory=list)  # chain ops, producers first
    leaves: list[ir.Value] = field(default_factory=list)
    scalar_ops: int = 0  # arithmetic ops per element along the chain (generator length)


def _static_shape(value: ir.Value) -> list[int] | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    return list(t.shape)


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _result_index(value: ir.Value) -> int:
    owner = h.defining_op(value)
    return [r for r in owner.results].index(value)


def _splat_attr(op: ir.Operation) -> ir.Attribute | None:
    value = op.attributes["value"]
    if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
        return value.get_splat_value()
    return None


def _i64_array(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _reassociation(op: ir.Operation) -> list[list[int]]:
    return [[ir.IntegerAttr(i).value for i in group]
            for group in ir.ArrayAttr(op.attributes["reassociation"])]


class FactoryAnalysis:
    """Decides which values of a function are factory values (memoized), and why not."""

    def __init__(self, max_leaf_elements: int, max_element_ops: int,
                 isolated: bool = False):
        self.max_leaf_elements = max_leaf_elements
        self.max_element_ops = max_element_ops
        # Inside a dispatch body the chain is cloned into another dispatch: scalars it captures
        # must be constants (they are cloned along).
        self.isolated = isolated
        self._memo: dict[ir.Value, Factory | None] = {}
        self.reasons: dict[ir.Value, str] = {}

    def is_leaf(self, value: ir.Value) -> bool:
        """A tiny tensor read from outside the computation: an input, a constant, a global."""
        shape = _static_shape(value)
        if shape is None or _numel(shape) > self.max_leaf_elements:
            return False
        op = h.defining_op(value)
        while op is not None and op.name in _LEAF_LOOK_THROUGH:
            op = h.defining_op(op.operands[0])
        return op is None or op.name in _LEAF_SOURCES

    def info(self, value: ir.Value) -> Factory | None:
        if value in self._memo:
            return self._memo[value]
        self._memo[value] = None  # cycles cannot happen in SSA, but be safe
        result, reason = self._analyze(value)
        if result is not None and result.scalar_ops > self.max_element_ops:
            reason = (f"expensive generator: {result.scalar_ops} ops per element > "
                      f"max-element-ops={self.max_element_ops}")
            result = None
        self._memo[value] = result
        if result is None:
            self.reasons[value] = reason
        return result

    def _operand(self, value: ir.Value, deps: list[Factory], leaves: list[ir.Value],
                 result: ir.Value | None = None) -> str | None:
        """Adds a factory operand to deps, or a leaf to leaves; returns a reason if neither.

        A leaf must be expanded (broadcast) by the op reading it: at most half as many elements
        as `result`. An op that reads a tiny input elementwise computes data, it does not
        generate it."""
        sub = self.info(value)
        if sub is not None:
            deps.append(sub)
            return None
        if self.is_leaf(value):
            if result is not None and 2 * _numel(_static_shape(value)) > _numel(
                    _static_shape(result)):
                return (f"operand {describe_value(value)} is read elementwise, not generated "
                        f"from a smaller leaf")
            leaves.append(value)
            return None
        why = self.reasons.get(value, "not a factory value")
        return f"operand {describe_value(value)} is neither a factory value nor a leaf ({why})"

    def _combine(self, value: ir.Value, op: ir.Operation, own_cost: float,
                 deps: list[Factory], leaves: list[ir.Value], own_ops: int = 0) -> Factory:
        ops: list[ir.Operation] = []
        all_leaves: list[ir.Value] = list(leaves)
        for d in deps:
            ops += [o for o in d.ops if o not in ops]
            all_leaves += [v for v in d.leaves if v not in all_leaves]
        ops.append(op)
        cost = own_cost + sum(d.cost for d in deps) + LEAF_READ_COST * len(leaves)
        scalar_ops = own_ops + sum(d.scalar_ops for d in deps)
        return Factory(value, cost, ops, all_leaves, scalar_ops)

    def _analyze(self, value: ir.Value) -> tuple[Factory | None, str]:
        op = h.defining_op(value)
        if op is None:
            return None, "a block argument"
        if _static_shape(value) is None:
            return None, "not a statically shaped tensor"
        name = op.name
        if name == "arith.constant":
            if _splat_attr(op) is None:
                return None, "a non-splat constant"
            return Factory(value, 0.0, [op]), ""
        if name == "tensor.empty":
            return None, "tensor.empty (no contents)"
        if name == "linalg.fill":
            if self.isolated and not _is_constant(op.operands[0]):
                return None, "a fill of a non-constant scalar"
            return Factory(value, 0.0, [op]), ""
        if name == "linalg.generic":
            return self._analyze_generic(value, op)
        deps: list[Factory] = []
        leaves: list[ir.Value] = []
        if name == "tensor.insert_slice":
            if any(s != 1 for s in _i64_array(op, "static_strides")) or len(op.operands) != 2:
                return None, "insert_slice with strides or dynamic offsets"
            src, dest = op.operands
            if len(_static_shape(src) or []) != len(_static_shape(dest) or [None]):
                return None, "rank-changing insert_slice"
            # Into a tensor.empty (the first piece of a concat): elements outside the slice are
            # undefined, so the source value may stand for them.
            dest_op = h.defining_op(dest)
            operands = (src,) if dest_op is not None and dest_op.name == "tensor.empty" else (
                src, dest)
            for v in operands:
                reason = self._operand(v, deps, leaves, value)
                if reason:
                    return None, reason
            return self._combine(value, op, CONCAT_COST, deps, leaves), ""
        if name == "tensor.extract_slice":
            if len(op.operands) != 1:
                return None, "extract_slice with dynamic offsets"
            if len(_i64_array(op, "static_sizes")) != len(_static_shape(value)) and \
                    _dropped_dims(op) is None:
                return None, "rank-reducing extract_slice that drops non-unit dims"
            reason = self._operand(op.operands[0], deps, leaves, value)
            if reason:
                return None, reason
            return self._combine(value, op, INDEX_MATH_COST, deps, leaves), ""
        if name in _RESHAPES:
            if len(op.operands) != 1 or _static_shape(op.operands[0]) is None:
                return None, "dynamic reshape"
            reason = self._operand(op.operands[0], deps, leaves, value)
            if reason:
                return None, reason
            cost = INDEX_MATH_COST * (len(_static_shape(value)) +
                                      (_DIVISION if name == "tensor.collapse_shape" else 0))
            return self._combine(value, op, cost, deps, leaves), ""
        if name in ("linalg.broadcast", "linalg.transpose"):
            reason = self._operand(op.operands[0], deps, leaves, value)
            if reason:
                return None, reason
            return self._combine(value, op, 0.0, deps, leaves), ""
        return None, f"produced by {name}"

    def _analyze_generic(self, value: ir.Value, op: ir.Operation) -> tuple[Factory | None, str]:
        if any(it != "parallel" for it in h.iterator_types(op)):
            return None, "a generic with reduction loops"
        maps = h.indexing_maps(op)
        ins, inits = h.dps_inputs(op), h.dps_inits(op)
        for m in maps[len(ins):]:
            if not m.is_permutation:
                return None, "a generic whose result map is not a permutation"
        body = h.body_block(op)
        own, own_ops = 0.0, 0
        for body_op in body.operations:
            body_op = body_op.operation
            if len(body_op.regions) or body_op.name not in OP_COST:
                return None, f"its body has {body_op.name}"
            own += OP_COST[body_op.name]
            own_ops += OP_COST[body_op.name] > 0
            if self.isolated and any(
                    not _is_constant(v) and not _defined_in(v, body) for v in body_op.operands):
                return None, "its body captures a non-constant value"

        deps: list[Factory] = []
        leaves: list[ir.Value] = []
        args = list(body.arguments)
        for i, v in enumerate(ins):
            if not list(args[i].uses):
                continue
            reason = self._operand(v, deps, leaves, value)
            if reason:
                return None, reason
        for j, v in enumerate(inits):
            if not list(args[len(ins) + j].uses):
                continue
            reason = self._operand(v, deps, leaves, value)
            if reason:
                return None, f"its body reads an init: {reason}"
        return self._combine(value, op, own, deps, leaves, own_ops), ""


def _is_constant(value: ir.Value) -> bool:
    op = h.defining_op(value)
    return op is not None and op.name == "arith.constant"


def _defined_in(value: ir.Value, block: ir.Block) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return owner == block
    return owner.operation.block == block


def _dropped_dims(op: ir.Operation) -> list[int] | None:
    """Source dims an extract_slice drops (unit sizes), or None when that is ambiguous."""
    sizes = _i64_array(op, "static_sizes")
    result = _static_shape(op.results[0])
    dropped, r = [], 0
    for k, s in enumerate(sizes):
        if r < len(result) and result[r] == s:
            r += 1
        elif s == 1:
            dropped.append(k)
        else:
            return None
    return dropped if r == len(result) else None


class Scalarizer:
    """Emits, at an insertion point inside a linalg body, one element of a factory value.

    `value_at(v, idx)` returns the scalar `v[idx]` (idx: index-typed values), memoized so that
    one body computes each (value, indices) once.
    """

    def __init__(self, analysis: FactoryAnalysis, ip: ir.InsertionPoint, loc: ir.Location,
                 leaf_map: dict[ir.Value, ir.Value] | None = None):
        self.analysis = analysis
        self.ip = ip
        self.loc = loc
        # Leaves as seen where the value is emitted (another dispatch loads them itself).
        self.leaf_map = leaf_map or {}
        self._memo: dict[tuple, ir.Value] = {}
        self._generic_memo: dict[tuple, list[ir.Value]] = {}
        self._consts: dict[int, ir.Value] = {}

    # ------------------------------------------------------------ index arithmetic
    def const(self, n: int) -> ir.Value:
        if n not in self._consts:
            with self.ip, self.loc:
                self._consts[n] = arith.ConstantOp(ir.IndexType.get(), n).result
        return self._consts[n]

    def _binary(self, cls, a: ir.Value, b: ir.Value) -> ir.Value:
        with self.ip, self.loc:
            return cls(a, b).result

    def add(self, a: ir.Value, n: int) -> ir.Value:
        return a if n == 0 else self._binary(arith.AddIOp, a, self.const(n))

    def affine(self, expr: ir.AffineExpr, dims: list[ir.Value]) -> ir.Value:
        if isinstance(expr, ir.AffineDimExpr):
            return dims[expr.position]
        if isinstance(expr, ir.AffineConstantExpr):
            return self.const(expr.value)
        amap = ir.AffineMap.get(len(dims), 0, [expr])
        with self.ip, self.loc:
            return affine.AffineApplyOp(amap, dims).result

    def linearize(self, idx: list[ir.Value], sizes: list[int]) -> ir.Value:
        out = None
        for i, s in zip(idx, sizes):
            if out is None:
                out = i
                continue
            scaled = self._binary(arith.MulIOp, out, self.const(s)) if s != 1 else out
            out = self._binary(arith.AddIOp, scaled, i)
        return out if out is not None else self.const(0)

    def delinearize(self, i: ir.Value, sizes: list[int]) -> list[ir.Value]:
        out: list[ir.Value] = []
        for k in range(len(sizes)):
            inner = _numel(sizes[k + 1:])
            q = self._binary(arith.DivUIOp, i, self.const(inner)) if inner != 1 else i
            out.append(self._binary(arith.RemUIOp, q, self.const(sizes[k])) if k else q)
        return out

    # ------------------------------------------------------------ values
    def value_at(self, value: ir.Value, idx: list[ir.Value]) -> ir.Value:
        key = (value, *idx)
        if key not in self._memo:
            self._memo[key] = self._emit(value, idx)
        return self._memo[key]

    def _emit(self, value: ir.Value, idx: list[ir.Value]) -> ir.Value:
        if self.analysis.info(value) is None:  # a leaf: one element read
            with self.ip, self.loc:
                return tensor.ExtractOp(self.leaf_map.get(value, value), idx).result
        op = h.defining_op(value)
        name = op.name
        if name == "arith.constant":
            with self.ip, self.loc:
                return arith.ConstantOp(value.type.element_type, _splat_attr(op)).result
        if name == "linalg.fill":
            return self.captured(op.operands[0])
        if name == "linalg.generic":
            return self._emit_generic(op, _result_index(value), idx)
        if name == "tensor.insert_slice":
            return self._emit_insert_slice(op, idx)
        if name == "tensor.extract_slice":
            offsets = _i64_array(op, "static_offsets")
            strides = _i64_array(op, "static_strides")
            dropped = set(_dropped_dims(op) or [])
            src_idx, r = [], 0
            for k, off in enumerate(offsets):
                if k in dropped:
                    src_idx.append(self.const(off))
                    continue
                i = idx[r]
                r += 1
                if strides[k] != 1:
                    i = self._binary(arith.MulIOp, i, self.const(strides[k]))
                src_idx.append(self.add(i, off))
            return self.value_at(op.operands[0], src_idx)
        if name == "tensor.expand_shape":
            result_shape = _static_shape(value)
            src_idx = [self.linearize([idx[d] for d in g], [result_shape[d] for d in g])
                       for g in _reassociation(op)]
            return self.value_at(op.operands[0], src_idx)
        if name == "tensor.collapse_shape":
            src_shape = _static_shape(op.operands[0])
            src_idx: list[ir.Value] = [None] * len(src_shape)
            for r, g in enumerate(_reassociation(op)):
                parts = (self.delinearize(idx[r], [src_shape[d] for d in g])
                         if len(g) > 1 else [idx[r]])
                for d, p in zip(g, parts):
                    src_idx[d] = p
            return self.value_at(op.operands[0], src_idx)
        if name == "linalg.broadcast":
            dims = set(_i64_array(op, "dimensions"))
            src_idx = [i for k, i in enumerate(idx) if k not in dims]
            return self.value_at(op.operands[0], src_idx)
        if name == "linalg.transpose":
            perm = _i64_array(op, "permutation")
            src_idx: list[ir.Value] = [None] * len(perm)
            for k, p in enumerate(perm):
                src_idx[p] = idx[k]
            return self.value_at(op.operands[0], src_idx)
        raise AssertionError(f"not a factory op: {name}")

    def _concat_pieces(self, op: ir.Operation) -> list[tuple[list[int], list[int]]] | None:
        """(offsets, sizes) of each piece when `op` ends a chain of insert_slices of one source
        value into a tensor.empty (`cat(x, x, ...)`), else None."""
        src = op.operands[0]
        pieces = []
        while op is not None and op.name == "tensor.insert_slice":
            if op.operands[0] != src:
                return None
            pieces.append((_i64_array(op, "static_offsets"), _i64_array(op, "static_sizes")))
            op = h.defining_op(op.operands[1])
        return pieces if op is not None and op.name == "tensor.empty" else None

    def _emit_insert_slice(self, op: ir.Operation, idx: list[ir.Value]) -> ir.Value:
        pieces = self._concat_pieces(op)
        if pieces is not None and len(pieces) > 1:
            # cat(x, x, ...): select where in x to read, then compute x once.
            src = op.operands[0]
            src_shape = _static_shape(src)
            src_idx = []
            for k, i in enumerate(idx):
                offs = [p[0][k] for p in pieces]
                if len(set(offs)) == 1:
                    src_idx.append(self.add(i, -offs[0]) if offs[0] else i)
                    continue
                with self.ip, self.loc:
                    cur = arith.SubIOp(i, self.const(offs[0])).result
                    for off, size in zip(offs[1:], [p[1][k] for p in pieces[1:]]):
                        lo = arith.CmpIOp(arith.CmpIPredicate.sge, i, self.const(off)).result
                        hi = arith.CmpIOp(arith.CmpIPredicate.slt, i,
                                          self.const(off + size)).result
                        inside = arith.AndIOp(lo, hi).result
                        shifted = arith.SubIOp(i, self.const(off)).result
                        cur = arith.SelectOp(inside, shifted, cur).result
                    clamped = arith.MaxSIOp(cur, self.const(0)).result
                    src_idx.append(arith.MinSIOp(clamped, self.const(src_shape[k] - 1)).result)
            return self.value_at(src, src_idx)
        src, dest = op.operands
        offsets = _i64_array(op, "static_offsets")
        sizes = _i64_array(op, "static_sizes")
        full = _static_shape(dest)
        conds, src_idx = [], []
        i1 = ir.IntegerType.get_signless(1)
        for k, (i, off, size) in enumerate(zip(idx, offsets, sizes)):
            if off == 0 and size == full[k]:
                src_idx.append(i)
                continue
            with self.ip, self.loc:
                lo = arith.CmpIOp(arith.CmpIPredicate.sge, i, self.const(off)).result
                hi = arith.CmpIOp(arith.CmpIPredicate.slt, i, self.const(off + size)).result
                conds.append(arith.AndIOp(lo, hi).result)
                # Clamped into the source, so the unselected branch never reads out of bounds.
                shifted = arith.SubIOp(i, self.const(off)).result
                clamped = arith.MaxSIOp(shifted, self.const(0)).result
                src_idx.append(arith.MinSIOp(clamped, self.const(size - 1)).result)
        src_val = self.value_at(src, src_idx)
        dest_op = h.defining_op(dest)
        if not conds or (dest_op is not None and dest_op.name == "tensor.empty"):
            return src_val
        dest_val = self.value_at(dest, idx)
        with self.ip, self.loc:
            cond = conds[0]
            for c in conds[1:]:
                cond = arith.AndIOp(cond, c).result
            assert cond.type == i1
            return arith.SelectOp(cond, src_val, dest_val).result

    def _emit_generic(self, op: ir.Operation, result: int, idx: list[ir.Value]) -> ir.Value:
        maps = h.indexing_maps(op)
        ins, inits = h.dps_inputs(op), h.dps_inits(op)
        out_map = maps[len(ins) + result]
        loops: list[ir.Value] = [None] * out_map.n_dims
        for k, e in enumerate(out_map.results):
            loops[e.position] = idx[k]
        key = (op, *loops)
        if key in self._generic_memo:
            return self._generic_memo[key][result]
        body = h.body_block(op)
        args = list(body.arguments)
        mapping: dict[ir.Value, ir.Value] = {}
        operands = [*ins, *inits]
        for a, v, m in zip(args, operands, maps):
            if list(a.uses):
                mapping[a] = self.value_at(v, [self.affine(e, loops) for e in m.results])
        yielded: list[ir.Value] = []
        for body_op in body.operations:
            body_op = body_op.operation
            if body_op.name == "linalg.yield":
                yielded = [mapping[v] if v in mapping else self.captured(v)
                           for v in body_op.operands]
                break
            if body_op.name == "linalg.index":
                dim = ir.IntegerAttr(body_op.attributes["dim"]).value
                mapping[body_op.results[0]] = loops[dim]
                continue
            operands = [mapping[v] if v in mapping else self.captured(v)
                        for v in body_op.operands]
            with self.ip, self.loc:
                clone = body_op.clone()
            for n, v in enumerate(operands):
                clone.operands[n] = v
            for old, new in zip(body_op.results, clone.results):
                mapping[old] = new
        self._generic_memo[key] = yielded
        return yielded[result]

    def captured(self, value: ir.Value) -> ir.Value:
        """A scalar a cloned body captures from outside: constants are cloned next to it."""
        op = h.defining_op(value)
        if op is None or op.name != "arith.constant":
            return value
        key = ("captured", value)
        if key not in self._memo:
            with self.ip, self.loc:
                self._memo[key] = op.clone().results[0]
        return self._memo[key]


def _loop_ranges(op: ir.Operation) -> list[int] | None:
    """Static loop ranges of a linalg op with indexing maps, from its operand shapes."""
    maps = h.indexing_maps(op)
    operands = [*h.dps_inputs(op), *h.dps_inits(op)]
    ranges: list[int | None] = [None] * maps[0].n_dims
    for v, m in zip(operands, maps):
        shape = _static_shape(v) if isinstance(v.type, ir.RankedTensorType) else []
        if shape is None:
            return None
        for e, s in zip(m.results, shape):
            if isinstance(e, ir.AffineDimExpr):
                ranges[e.position] = s
    return None if any(r is None for r in ranges) else ranges


def _is_forwardable_consumer(op: ir.Operation) -> str | None:
    """None if the pass can recompute a factory operand inside op; else the reason why not."""
    if op.name != "linalg.generic":
        return f"consumer {op.name} is not a linalg.generic"
    for body_op in h.body_block(op).operations:
        if len(body_op.operation.regions):
            return "consumer body has nested regions"
    if _loop_ranges(op) is None:
        return "consumer has dynamic loop ranges"
    return None


@dataclass
class Root:
    """A factory value read by ops that are not factory ops."""

    factory: Factory
    consumers: list[tuple[ir.Operation, int]] = field(default_factory=list)  # (generic, ins #)
    blocked: list[str] = field(default_factory=list)  # users it cannot be forwarded into
    escapes: bool = False


@dataclass(frozen=True)
class ForwardFactoryOps(FusionPass):
    name = "forward-factory-ops"
    phase = "linalg"
    description = ("recomputes cheap generated tensors (fill, iota, masks, RoPE tables) inside "
                   "each consuming generic instead of passing them between dispatches")

    # Weighted ops that cost as much as one byte written or read between dispatches, and as
    # one dispatch launch. Measured on llvm-cpu (bench/results/forward-factory-ops.md): a
    # 512x512 mask recomputed for 32 heads still wins (needs >= 27); cos/sin tables recomputed
    # for 1 head win (needs >= 19), for 2 heads (S=128, D=128) lose 1-2% (needs < 56);
    # ~13 us per dispatch on local-task at ~1.6 ps per cheap op.
    ops_per_byte: float = 32.0
    ops_per_dispatch: float = 8.0e6
    # Arithmetic ops per element above which a generator is "expensive" (RNG-like hashes;
    # RoPE's chain has ~8).
    max_element_ops: int = 40
    # Largest non-factory tensor a factory chain may read element-wise (start_pos, inv_freq).
    max_leaf_elements: int = 4096
    # Forward regardless of the byte/recompute balance (measurements only).
    ignore_cost: bool = False
    # Factory values that stay materialized (cost, or a consumer that is not a generic) are
    # computed by one generic from indices and leaves (one dispatch) instead of their chain;
    # values of one shape share that generic.
    compact: bool = True

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        for func in h.functions(module):
            blocks = list(func.regions[0].blocks)
            if len(blocks) != 1:
                report.skip(func, "function with several blocks")
                continue
            self._run_on_block(blocks[0], report)

    # ------------------------------------------------------------ analysis
    def _collect_roots(self, block: ir.Block, analysis: FactoryAnalysis,
                       report: PassReport) -> list[Root]:
        roots: list[Root] = []
        for op in block.operations:
            op = op.operation
            if op.name in ("arith.constant", "tensor.empty"):
                continue
            for value in op.results:
                if not isinstance(value.type, ir.RankedTensorType):
                    continue
                users = h.users(value)
                if not users:
                    continue
                if analysis.info(value) is None:
                    reason = analysis.reasons.get(value, "")
                    if reason.startswith("expensive generator"):
                        report.skip(op, reason)
                    continue
                root = Root(analysis.info(value))
                for use in value.uses:
                    user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                    if user.name in _ESCAPES or user.parent != op.parent:
                        root.escapes = user.name in _ESCAPES
                        root.blocked.append(f"used by {user.name}")
                        continue
                    if any(analysis.info(r) is not None for r in user.results):
                        continue  # the factory chain goes on in that user
                    reason = _is_forwardable_consumer(user)
                    n_in = len(h.dps_inputs(user)) if user.name == "linalg.generic" else 0
                    if reason is None and use.operand_number >= n_in:
                        reason = "used as the init of a generic"
                    if reason:
                        root.blocked.append(reason)
                    else:
                        root.consumers.append((user, use.operand_number))
                if root.consumers or root.blocked:
                    roots.append(root)
        return roots

    def _decide(self, root: Root) -> tuple[bool, str]:
        f = root.factory
        elements = _numel(_static_shape(f.value))
        nbytes = h.static_tensor_bytes(f.value.type) or 0
        if len(f.ops) == 1 and f.ops[0].name in ("linalg.fill", "arith.constant"):
            return False, "a fill/splat: IREE already clones it into its consumers"
        if root.escapes:
            return False, "the value is a function result (materialized anyway)"
        if not root.consumers:
            return False, "; ".join(sorted(set(root.blocked)))
        consumers = {id(c): c for c, _ in root.consumers}
        if not f.leaves and not root.blocked and all(
                o.name in ("linalg.generic", "linalg.fill", "arith.constant") for o in f.ops) \
                and all(h.is_elementwise_generic(c) for c in consumers.values()):
            return False, ("computed from indices only and read by elementwise generics: IREE "
                           "fuses it into them itself")
        # The consumer body recomputes the value once per iteration (broadcast dims repeat it).
        iterations = sum(_numel(_loop_ranges(c)) for c in consumers.values())
        extra = f.cost * (iterations - elements)
        disappears = not root.blocked
        saved = nbytes * (len(consumers) + (1 if disappears else 0))
        budget = self.ops_per_byte * saved + (self.ops_per_dispatch if disappears else 0)
        detail = (f"{f.cost:g} weighted ops/element x {iterations} iterations vs {elements} "
                  f"elements: {extra:.3g} extra ops; {saved} bytes saved, budget {budget:.3g}")
        if self.ignore_cost or extra <= budget:
            return True, detail
        return False, f"recomputing costs more than it saves ({detail})"

    # ------------------------------------------------------------ rewrite
    def _run_on_block(self, block: ir.Block, report: PassReport) -> None:
        analysis = FactoryAnalysis(self.max_leaf_elements, self.max_element_ops)
        roots = self._collect_roots(block, analysis, report)
        plan: dict[ir.Operation, dict[int, ir.Value]] = {}
        order: list[ir.Operation] = []
        chain_ops: list[ir.Operation] = []
        compact: list[Root] = []
        for root in roots:
            ok, detail = self._decide(root)
            where = h.defining_op(root.factory.value)
            if not ok:
                report.skip(where, detail)
                if self.compact and _worth_compacting(root):
                    compact.append(root)
                continue
            report.change(
                f"forwarded {root.factory.value.type} from {describe_op(where)} "
                f"({len(root.factory.ops)} op chain) into {len(root.consumers)} consuming "
                f"generic(s); {detail}")
            if root.blocked:
                report.skip(where, "kept materialized for: " + "; ".join(sorted(set(root.blocked))))
                if self.compact and _worth_compacting(root):
                    compact.append(root)
            for consumer, operand in root.consumers:
                if consumer not in plan:
                    plan[consumer] = {}
                    order.append(consumer)
                plan[consumer][operand] = root.factory.value
            chain_ops += [o for o in root.factory.ops if o not in chain_ops]
        for consumer in order:
            _forward_into_generic(consumer, plan[consumer], analysis)
        for group in _group_by_shape(compact):
            self._compact(group, analysis, report)
            chain_ops += [o for r in group for o in r.factory.ops if o not in chain_ops]
        _erase_dead(chain_ops)

    def _compact(self, group: list[Root], analysis: FactoryAnalysis, report: PassReport) -> None:
        """Materializes the roots of one shape with one input-less generic (one dispatch)."""
        values = [r.factory.value for r in group]
        users = [u for v in values for u in h.users(v)]
        first = min(users, key=_block_position)
        leaves = [leaf for r in group for leaf in r.factory.leaves]
        if any(h.defining_op(leaf) is not None and not
               h.defining_op(leaf).is_before_in_block(first) for leaf in leaves):
            if len(group) > 1:
                for r in group:
                    self._compact([r], analysis, report)
            return
        gen = _extracts_to_inputs(build_factory_generic(values, first, analysis))
        for v, new in zip(values, gen.results):
            for user in h.users(v):
                if user != gen and not any(analysis.info(r) is not None for r in user.results):
                    user.replace_uses_of_with(v, new)
        ops = sum(len(r.factory.ops) for r in group)
        report.change(f"compacted {len(values)} materialized factory value(s) "
                      f"{', '.join(str(v.type) for v in values)} ({ops} chain ops) into one "
                      f"linalg.generic reading {len(h.dps_inputs(gen))} leaf input(s)")

    def __post_init__(self) -> None:
        if self.max_leaf_elements < 1:
            raise ValueError("max-leaf-elements must be >= 1")


def _rebuild_generic(op: ir.Operation, keep: list[int],
                     extra: list[tuple[ir.Value, ir.AffineMap]]) -> tuple[ir.Operation, list]:
    """A copy of generic `op` reading ins[keep] + extra values (with their maps), its body moved
    over. Returns the new op and the new block args of the extra inputs; block args of dropped
    inputs keep their uses in the moved body, for the caller to replace. `op` stays (results
    not replaced) until the caller erases it."""
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    maps = h.indexing_maps(op)
    new_maps = [maps[i] for i in keep] + [m for _, m in extra] + maps[len(ins):]
    loc = op.location
    with loc, ir.InsertionPoint(op):
        new = linalg.GenericOp(
            [r.type for r in op.results], [ins[i] for i in keep] + [v for v, _ in extra], outs,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
            op.attributes["iterator_types"])
    for attr_name in [a if isinstance(a, str) else a.name for a in op.attributes]:
        if attr_name not in ("indexing_maps", "iterator_types", "operandSegmentSizes"):
            new.operation.attributes[attr_name] = op.attributes[attr_name]
    old_block = h.body_block(op)
    old_args = list(old_block.arguments)
    kept_args = [old_args[i] for i in keep]
    out_args = old_args[len(ins):]
    types = ([a.type for a in kept_args] + [v.type.element_type for v, _ in extra]
             + [a.type for a in out_args])
    with loc:
        new_block = new.regions[0].blocks.append(*types)
    for body_op in list(old_block.operations):
        new_block.append(body_op.operation)
    new_args = list(new_block.arguments)
    n_keep, n_extra = len(kept_args), len(extra)
    for old, new_arg in zip(kept_args + out_args, new_args[:n_keep] + new_args[n_keep + n_extra:]):
        old.replace_all_uses_with(new_arg)
    return new.operation, new_args[n_keep:n_keep + n_extra]


def _replace_generic(old: ir.Operation, new: ir.Operation) -> None:
    for a, b in zip(old.results, new.results):
        a.replace_all_uses_with(b)
    old.erase()


def _forward_into_generic(consumer: ir.Operation, forwarded: dict[int, ir.Value],
                          analysis: FactoryAnalysis) -> ir.Operation:
    """Rebuilds `consumer` without the forwarded ins; its body recomputes them."""
    n_in = len(h.dps_inputs(consumer))
    maps = h.indexing_maps(consumer)
    old_args = list(h.body_block(consumer).arguments)
    new, _ = _rebuild_generic(consumer, [i for i in range(n_in) if i not in forwarded], [])
    body = h.body_block(new)
    first = list(body.operations)[0]
    loc = consumer.location
    scalarizer = Scalarizer(analysis, ir.InsertionPoint(first), loc)
    with ir.InsertionPoint(first), loc:
        loops = [linalg.IndexOp(d).result for d in range(maps[0].n_dims)]
    for i, value in sorted(forwarded.items()):
        if list(old_args[i].uses):
            idx = [scalarizer.affine(e, loops) for e in maps[i].results]
            old_args[i].replace_all_uses_with(scalarizer.value_at(value, idx))
    _replace_generic(consumer, new)
    return _extracts_to_inputs(new)


def _index_dim(value: ir.Value, body: ir.Block) -> ir.AffineExpr | None:
    """d_k if value is `linalg.index k` of this body, a constant expr for an index constant."""
    op = h.defining_op(value)
    if op is None:
        return None
    if op.name == "linalg.index" and op.block == body:
        return ir.AffineDimExpr.get(ir.IntegerAttr(op.attributes["dim"]).value)
    if op.name == "arith.constant" and isinstance(op.attributes["value"], ir.IntegerAttr):
        return ir.AffineConstantExpr.get(ir.IntegerAttr(op.attributes["value"]).value)
    return None


def _extracts_to_inputs(gen: ir.Operation) -> ir.Operation:
    """`tensor.extract %leaf[index(i), ...]` of a value defined outside the body becomes an
    input read through an indexing map: a plain operand instead of a gather."""
    body = h.body_block(gen)
    n_dims = h.indexing_maps(gen)[0].n_dims
    extra: list[tuple[ir.Value, ir.AffineMap]] = []
    reads: list[tuple[ir.Operation, int]] = []
    for op in body.operations:
        op = op.operation
        if op.name != "tensor.extract" or op.operands[0].owner == gen:
            continue
        source = op.operands[0]
        if isinstance(source.owner, ir.Block) and source.owner == body:
            continue
        exprs = [_index_dim(v, body) for v in list(op.operands)[1:]]
        if any(e is None for e in exprs):
            continue
        amap = ir.AffineMap.get(n_dims, 0, exprs)
        key = next((n for n, (v, m) in enumerate(extra) if v == source and m == amap), None)
        if key is None:
            key = len(extra)
            extra.append((source, amap))
        reads.append((op, key))
    if not extra:
        return gen
    n_in = len(h.dps_inputs(gen))
    new, args = _rebuild_generic(gen, list(range(n_in)), extra)
    for op, key in reads:
        op.results[0].replace_all_uses_with(args[key])
        op.erase()
    _replace_generic(gen, new)
    return new


def _block_position(op: ir.Operation) -> int:
    for n, other in enumerate(op.block.operations):
        if other.operation == op:
            return n
    return 0


def _worth_compacting(root: Root) -> bool:
    """A materialized root whose chain forms more than one dispatch. Index-only chains (no
    leaf) IREE fuses into one dispatch, or into their consumers, by itself."""
    if root.escapes or not root.factory.leaves:
        return False
    heavy = [o for o in root.factory.ops
             if o.name in ("linalg.generic", "tensor.insert_slice", "linalg.broadcast",
                           "linalg.transpose", "tensor.extract_slice")]
    return len(heavy) > 1 or any(o.name == "tensor.insert_slice" for o in heavy)


def _group_by_shape(roots: list[Root]) -> list[list[Root]]:
    groups: dict[tuple, list[Root]] = {}
    for r in roots:
        groups.setdefault(tuple(r.factory.value.type.shape), []).append(r)
    return list(groups.values())


def build_factory_generic(values: list[ir.Value], before: ir.Operation,
                          analysis: FactoryAnalysis) -> ir.Operation:
    """One input-less generic, inserted before `before`, whose results are `values` (factory
    values of one shape) computed from loop indices and leaves only."""
    shape = list(values[0].type.shape)
    rank = len(shape)
    loc = before.location
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    with loc, ir.InsertionPoint(before):
        empties = [tensor.EmptyOp(shape, v.type.element_type).result for v in values]
        gen = linalg.GenericOp([v.type for v in values], [], empties,
                               ir.ArrayAttr.get([ident] * len(values)),
                               ir.ArrayAttr.get([parallel] * rank))
        block = gen.regions[0].blocks.append(*[v.type.element_type for v in values])
    ip = ir.InsertionPoint(block)
    with ip, loc:
        loops = [linalg.IndexOp(d).result for d in range(rank)]
    scalarizer = Scalarizer(analysis, ip, loc)
    scalars = [scalarizer.value_at(v, loops) for v in values]
    with ip, loc:
        linalg.YieldOp(scalars)
    return gen.operation


def _erase_dead(ops: list[ir.Operation]) -> None:
    """Erases chain ops left without uses, consumers first, and the tensor.empty inits they
    leave unused."""
    empties: list[ir.Operation] = []
    for op in reversed(ops):
        if all(not list(r.uses) for r in op.results):
            for v in op.operands:
                d = h.defining_op(v)
                if d is not None and d.name == "tensor.empty" and d not in empties:
                    empties.append(d)
            op.erase()
    for op in empties:
        if not list(op.results[0].uses):
            op.erase()


# ================================================================ flow phase

_WORKGROUPS = "flow.dispatch.workgroups"
_LOAD = "iree_tensor_ext.dispatch.tensor.load"
_STORE = "iree_tensor_ext.dispatch.tensor.store"


def _static_full_access(op: ir.Operation, shape: list[int]) -> bool:
    """A dispatch.tensor.load/store of the whole tensor: zero offsets, full sizes, unit strides."""
    if len(op.operands) != (2 if op.name == _STORE else 1):
        return False  # dynamic offsets/sizes/dims
    return (all(o == 0 for o in _i64_array(op, "static_offsets"))
            and _i64_array(op, "static_sizes") == shape
            and all(s == 1 for s in _i64_array(op, "static_strides")))


def _segments(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _tied(op: ir.Operation) -> list[int]:
    if "tied_operands" not in op.attributes:
        return [-1] * len(op.results)
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["tied_operands"])]


def _entry_block(op: ir.Operation) -> ir.Block:
    return op.regions[0].blocks[0]


@dataclass
class FactoryDispatch:
    """A dispatch whose results are factory values of its (tiny) operands."""

    op: ir.Operation
    stored: list[ir.Value]  # per result: the value stored into it, inside the body
    loads: dict[ir.Value, ir.Value]  # body load result -> operand (outside)
    analysis: FactoryAnalysis


@dataclass(frozen=True)
class ForwardFactoryDispatches(FusionPass):
    """The flow-phase half: a dispatch that only builds a factory tensor (from tiny operands)
    is cloned into each consuming dispatch whose root cannot take it at the linalg phase
    (`iree_linalg_ext.attention`'s mask), so the tensor is never written to memory.

        %m = flow.dispatch.workgroups(%start) { mask = generic(load %start) ; store mask }
        %o = flow.dispatch.workgroups(%q, %k, %v, %m) { attention(q, k, v, load %m) }
      becomes
        %o = flow.dispatch.workgroups(%q, %k, %v, %start) {
               mask = generic(load %start) [recomputed, in the consumer's shape]
               attention(q, k, v, mask) }
    """

    name = "forward-factory-dispatches"
    phase = "flow"
    description = ("clones dispatches that only build a generated tensor (an attention mask) "
                   "into the dispatches that read it")

    # ':'-separated ops that may read a forwarded tensor inside the consumer dispatch.
    consumers: str = "iree_linalg_ext.attention"
    ops_per_byte: float = ForwardFactoryOps.ops_per_byte
    ops_per_dispatch: float = ForwardFactoryOps.ops_per_dispatch
    max_element_ops: int = ForwardFactoryOps.max_element_ops
    max_leaf_elements: int = ForwardFactoryOps.max_leaf_elements
    ignore_cost: bool = False

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        allowed = tuple(n for n in self.consumers.split(":") if n)
        for func in h.functions(module):
            for block in func.regions[0].blocks:
                producers = [self._factory_dispatch(op.operation) for op in block.operations
                             if op.operation.name == _WORKGROUPS]
                producers = [p for p in producers if p is not None]
                # A producer fed by another one could be rebuilt as its consumer: leave chains
                # of factory dispatches to the first producer only.
                ops = [p.op for p in producers]
                for p in producers:
                    feeders = [h.defining_op(v) for v in p.op.operands]
                    if not any(f is not None and f in ops for f in feeders):
                        self._forward(p, allowed, report)

    def _factory_dispatch(self, op: ir.Operation) -> FactoryDispatch | None:
        seg = _segments(op)
        if seg[0] or seg[2] or seg[3] or any(t != -1 for t in _tied(op)):
            return None
        operands = list(op.operands)
        for v in operands:
            shape = _static_shape(v)
            if shape is None or _numel(shape) > self.max_leaf_elements:
                return None
        body = _entry_block(op)
        args = list(body.arguments)
        loads: dict[ir.Value, ir.Value] = {}
        stored: list[ir.Value | None] = [None] * len(op.results)
        analysis = FactoryAnalysis(self.max_leaf_elements, self.max_element_ops, isolated=True)
        for body_op in body.operations:
            body_op = body_op.operation
            if body_op.name == _LOAD:
                src = body_op.operands[0]
                if src not in args[:len(operands)]:
                    return None
                operand = operands[args.index(src)]
                if not _static_full_access(body_op, _static_shape(operand)):
                    return None
                loads[body_op.results[0]] = operand
            elif body_op.name == _STORE:
                target = body_op.operands[1]
                if target not in args[len(operands):]:
                    return None
                n = args.index(target) - len(operands)
                if not _static_full_access(body_op, list(op.results[n].type.shape)):
                    return None
                stored[n] = body_op.operands[0]
        if any(v is None for v in stored):
            return None
        for v in stored:
            if analysis.info(v) is None:
                return None
        return FactoryDispatch(op, stored, loads, analysis)

    def _forward(self, producer: FactoryDispatch, allowed: tuple[str, ...],
                 report: PassReport) -> None:
        op = producer.op
        # consumer dispatch -> [(operand #, result #, the consumer's view type)]
        plan: dict[ir.Operation, list[tuple[int, int, ir.Type]]] = {}
        order: list[ir.Operation] = []
        for n, result in enumerate(op.results):
            for use in result.uses:
                user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                operand, view = use.operand_number, result.type
                if user.name == "flow.tensor.reshape" and len(user.operands) == 1 and \
                        _static_shape(user.results[0]) is not None:
                    # A reshape of a static tensor: the consumer sees another shape.
                    for use2 in user.results[0].uses:
                        user2 = use2.owner.operation if hasattr(use2.owner, "operation") \
                            else use2.owner
                        self._consider(user2, use2.operand_number, n, user.results[0].type,
                                       allowed, plan, order, report, op)
                    continue
                self._consider(user, operand, n, view, allowed, plan, order, report, op)
        for consumer in order:
            self._clone_into(producer, consumer, plan[consumer], report)
        for u in [u for r in op.results for u in h.users(r)]:
            if u.name == "flow.tensor.reshape" and not list(u.results[0].uses):
                u.erase()
        if all(not list(r.uses) for r in op.results):
            op.erase()

    def _consider(self, user: ir.Operation, operand: int, result: int, view: ir.Type,
                  allowed: tuple[str, ...], plan, order, report: PassReport,
                  producer: ir.Operation) -> None:
        if user.name != _WORKGROUPS:
            return
        seg = _segments(user)
        if seg[0] or operand >= seg[1] or _tied(user).count(operand):
            return
        arg = list(_entry_block(user).arguments)[operand]
        loads = h.users(arg)
        if len(loads) != 1 or loads[0].name != _LOAD or \
                not _static_full_access(loads[0], list(view.shape)):
            report.skip(user, "reads the factory tensor partially or more than once")
            return
        readers = h.users(loads[0].results[0])
        if not readers or any(r.name not in allowed for r in readers):
            names = sorted({r.name for r in readers})
            report.skip(user, f"reads the factory tensor in {', '.join(names)} (not in "
                        f"consumers={':'.join(allowed)})")
            return
        if user not in plan:
            plan[user] = []
            order.append(user)
        plan[user].append((operand, result, view))

    def _clone_into(self, producer: FactoryDispatch, consumer: ir.Operation,
                    forwarded: list[tuple[int, int, ir.Type]], report: PassReport) -> None:
        elements = sum(_numel(list(v.shape)) for _, _, v in forwarded)
        cost = max(producer.analysis.info(producer.stored[r]).cost for _, r, _ in forwarded)
        nbytes = sum(h.static_tensor_bytes(v) or 0 for _, _, v in forwarded)
        # Each element is computed once in the consumer (its codegen fuses the producer into
        # the reading op's tiles); the saving is the write and the read of the tensor.
        budget = self.ops_per_byte * 2 * nbytes
        if not self.ignore_cost and cost * elements > budget + self.ops_per_dispatch:
            report.skip(consumer, f"recomputing {elements} elements x {cost:g} ops costs more "
                        f"than moving {nbytes} bytes")
            return
        old_operands = list(consumer.operands)
        drop = {o for o, _, _ in forwarded}
        leaves = [v for v in dict.fromkeys(producer.loads.values())]
        kept = [v for i, v in enumerate(old_operands) if i not in drop]
        new_leaves = [v for v in leaves if v not in kept]
        new_operands = kept + new_leaves
        position = {}
        for i in range(len(old_operands)):
            if i not in drop:
                position[i] = len([j for j in range(i) if j not in drop])
        tied = [position[t] if t != -1 else -1 for t in _tied(consumer)]
        loc = consumer.location
        with loc, ir.InsertionPoint(consumer):
            new = ir.Operation.create(
                _WORKGROUPS, results=[r.type for r in consumer.results], operands=new_operands,
                attributes={
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, len(new_operands), 0, 0]),
                    "tied_operands": ir.ArrayAttr.get(
                        [ir.IntegerAttr.get(ir.IndexType.get(), t) for t in tied]),
                },
                regions=2)
        for attr_name in [a if isinstance(a, str) else a.name for a in consumer.attributes]:
            if attr_name not in ("operandSegmentSizes", "tied_operands"):
                new.attributes[attr_name] = consumer.attributes[attr_name]
        old_body = _entry_block(consumer)
        old_args = list(old_body.arguments)
        n_old = len(old_operands)
        leaf_arg_types = {}
        for load, operand in producer.loads.items():
            src_arg = h.defining_op(load).operands[0]
            leaf_arg_types[operand] = src_arg.type
        kept_args = [a for i, a in enumerate(old_args[:n_old]) if i not in drop]
        result_args = old_args[n_old:]
        types = ([a.type for a in kept_args] + [leaf_arg_types[v] for v in new_leaves]
                 + [a.type for a in result_args])
        with loc:
            body = new.regions[0].blocks.append(*types)
        for body_op in list(old_body.operations):
            body.append(body_op.operation)
        new_args = list(body.arguments)
        for old, arg in zip(kept_args, new_args[:len(kept_args)]):
            old.replace_all_uses_with(arg)
        for old, arg in zip(result_args, new_args[len(kept_args) + len(new_leaves):]):
            old.replace_all_uses_with(arg)
        arg_of = {v: new_args[new_operands.index(v)] for v in leaves}
        count_old = consumer.regions[1].blocks[0]
        with loc:
            count = new.regions[1].blocks.append(*[a.type for a in count_old.arguments])
        for body_op in list(count_old.operations):
            count.append(body_op.operation)
        for old, arg in zip(count_old.arguments, count.arguments):
            old.replace_all_uses_with(arg)
        # Leaves: load them in the consumer as the producer did.
        first = list(body.operations)[0]
        leaf_map = {}
        for load, operand in producer.loads.items():
            load_op = h.defining_op(load)
            with ir.InsertionPoint(first):
                clone = load_op.clone()
            clone.operands[0] = arg_of[operand]
            leaf_map[load] = clone.results[0]
        for operand, result, view in forwarded:
            old_load = h.users(old_args[operand])[0]
            value = self._emit_view(producer, result, view, old_load, leaf_map)
            old_load.results[0].replace_all_uses_with(value)
            old_load.erase()
        for old, new_result in zip(consumer.results, new.results):
            old.replace_all_uses_with(new_result)
        consumer.erase()
        report.change(
            f"cloned {describe_op(producer.op)} ({', '.join(str(v) for _, _, v in forwarded)}) "
            f"into the dispatch at {describe_op(new)}; it now reads "
            f"{', '.join(str(v.type) for v in leaves) or 'nothing'} instead")

    def _emit_view(self, producer: FactoryDispatch, result: int, view: ir.Type,
                   before: ir.Operation, leaf_map: dict) -> ir.Value:
        """The producer's result `result`, as the consumer views it (a row-major reshape),
        computed by an input-less generic inserted before `before`."""
        stored = producer.stored[result]
        src_shape = list(stored.type.shape)
        shape = list(view.shape)
        rank = len(shape)
        loc = before.location
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        with loc, ir.InsertionPoint(before):
            empty = tensor.EmptyOp(shape, view.element_type)
            gen = linalg.GenericOp(
                [view], [], [empty.result],
                ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))]),
                ir.ArrayAttr.get([parallel] * rank))
            block = gen.regions[0].blocks.append(view.element_type)
        ip = ir.InsertionPoint(block)
        with ip, loc:
            loops = [linalg.IndexOp(d).result for d in range(rank)]
        scalarizer = Scalarizer(producer.analysis, ip, loc, leaf_map)
        idx = loops
        if src_shape != shape:
            flat = scalarizer.linearize(loops, shape)
            idx = scalarizer.delinearize(flat, src_shape)
        scalar = scalarizer.value_at(stored, idx)
        with ip, loc:
            linalg.YieldOp([scalar])
        return _extracts_to_inputs(gen.operation).results[0]
