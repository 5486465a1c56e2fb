"""Which values are factory values, what one element costs to recompute, and why not."""

from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir
from iree.compiler.dialects import arith

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_CONSTANT, ARITH_INDEX_CAST, ARITH_INDEX_CASTUI,
                                              LINALG_BROADCAST, LINALG_FILL, LINALG_GENERIC,
                                              LINALG_INDEX, LINALG_TRANSPOSE, LINALG_YIELD,
                                              RESHAPES, TENSOR_CAST, TENSOR_COLLAPSE_SHAPE,
                                              TENSOR_EMPTY, TENSOR_EXPAND_SHAPE,
                                              TENSOR_EXTRACT_SLICE, TENSOR_INSERT_SLICE,
                                              describe_value)
from iree_fusions.compiler.ir_helpers.names import (
    ARITH_PREFIX, COMPUTE_BARRIER_START, DISPATCH_TENSOR_LOAD, FLOW_TENSOR_RESHAPE,
    HAL_TENSOR_IMPORT, MATH_PREFIX,
    MATH_ABSF, MATH_ABSI, MATH_CEIL, MATH_COPYSIGN, MATH_FLOOR, MATH_ROUND, MATH_RSQRT,
    MATH_SQRT, MATH_TRUNC,
)

# Weighted cost of one scalar body op, in "cheap op" units: what one element of a factory value
# costs to recompute inside a consumer. Measured on llvm-cpu (znver4, bench/results): a cheap
# op recomputed in a memory-bound consumer costs ~1.6 ps per element (it hides under the
# consumer's memory traffic), a cos/sin/exp ~0.35 ns, i.e. ~200 cheap ops. Ops that are not
# listed make a generic non-factory.
_CHEAP = 1.0
_DIVISION = 8.0
_TRANSCENDENTAL = 200.0
OP_COST: dict[str, float] = {
    **{ARITH_PREFIX + n: _CHEAP for n in (
        "addi", "subi", "muli", "andi", "ori", "xori", "shli", "shrui", "shrsi", "cmpi",
        "cmpf", "select", "addf", "subf", "mulf", "negf", "maxnumf", "minnumf", "maximumf",
        "minimumf", "maxsi", "minsi", "maxui", "minui", "extsi", "extui", "trunci", "extf",
        "truncf", "sitofp", "uitofp", "fptosi", "fptoui", "bitcast")},
    ARITH_INDEX_CAST: 0.0,
    ARITH_INDEX_CASTUI: 0.0,
    ARITH_CONSTANT: 0.0,
    **{ARITH_PREFIX + n: _DIVISION for n in (
        "divf", "divsi", "divui", "remsi", "remui", "remf", "floordivsi", "ceildivsi",
        "ceildivui")},
    MATH_ABSF: _CHEAP, MATH_ABSI: _CHEAP, MATH_COPYSIGN: _CHEAP,
    MATH_FLOOR: _CHEAP, MATH_CEIL: _CHEAP, MATH_ROUND: _CHEAP, MATH_TRUNC: _CHEAP,
    MATH_SQRT: 2 * _DIVISION, MATH_RSQRT: 2 * _DIVISION,
    **{MATH_PREFIX + n: _TRANSCENDENTAL for n in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh",
        "atan", "atan2", "erf", "powf", "fpowi", "ipowi", "sinh", "cosh")},
    LINALG_INDEX: 0.0,
    LINALG_YIELD: 0.0,
}
LEAF_READ_COST = 1.0  # tensor.extract of a leaf element (a cached scalar load)
INDEX_MATH_COST = 1.0  # per dim of index arithmetic (reshapes, slices)
CONCAT_COST = 3.0  # bounds compare + select + clamp of an insert_slice

# Where a leaf may come from (through the look-through ops): inputs, constants, globals.
_LEAF_SOURCES = (HAL_TENSOR_IMPORT, ARITH_CONSTANT, h.UTIL_GLOBAL_LOAD,
                 DISPATCH_TENSOR_LOAD, h.FLOW_TENSOR_CONSTANT)
_LEAF_LOOK_THROUGH = (COMPUTE_BARRIER_START, TENSOR_CAST,
                      TENSOR_EXPAND_SHAPE, TENSOR_COLLAPSE_SHAPE, FLOW_TENSOR_RESHAPE)


@dataclass
class Factory:
    """A factory value: how much one element costs and which ops and leaves it depends on."""

    value: ir.Value
    cost: float  # weighted ops to recompute one element (OP_COST)
    ops: list[ir.Operation] = field(default_factory=list)  # chain ops, producers first
    leaves: list[ir.Value] = field(default_factory=list)
    scalar_ops: int = 0  # arithmetic ops per element along the chain (generator length)


class FactoryAnalysis:
    """Decides which values of a function are factory values (memoized), and why not."""

    def __init__(self, max_leaf_elements: int, max_element_ops: int,
                 isolated: bool = False, block: ir.Block | None = None,
                 dynamic_estimate: int = h.LONG_DYNAMIC_DIM):
        self.max_leaf_elements = max_leaf_elements
        self.max_element_ops = max_element_ops
        # How many elements a dynamic dim without a `util.assume.int` bound counts as.
        self.dynamic_estimate = dynamic_estimate
        # Inside a dispatch body the chain is cloned into another dispatch: scalars it captures
        # must be constants (they are cloned along).
        self.isolated = isolated
        # With a block, chains stay inside it: a value defined in another block is no factory
        # value (it can still be a leaf).
        self.block = block
        self._memo: dict[ir.Value, Factory | None] = {}
        # Why a value is no factory value (a `Because` is put into words when read).
        self.reasons: dict[ir.Value, str | Because] = {}
        # The values that are no factory values only for their cost (max_element_ops).
        self.expensive: set[ir.Value] = set()

    def is_leaf(self, value: ir.Value) -> bool:
        """A tiny tensor read from outside the computation: an input, a constant, a global, a
        parameter."""
        shape = h.static_shape(value)
        if shape is None or h.numel(shape) > self.max_leaf_elements:
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
            self.expensive.add(value)
        self._memo[value] = result
        if result is None:
            self.reasons[value] = reason
        return result

    def _operand(self, value: ir.Value, deps: list[Factory], leaves: list[ir.Value],
                 result: ir.Value | None = None) -> str | Because | None:
        """Adds a factory operand to deps, or a leaf to leaves; returns a reason if neither.

        A leaf must be expanded (broadcast) by the op reading it: at most half as many elements
        as `result`. An op that reads a tiny input elementwise computes data, it does not
        generate it; an integer constant is the exception: positions an exporter folded
        (ONNX's `arange(S)` arrives as a literal), and IREE folds constant-only ops itself."""
        sub = self.info(value)
        if sub is not None:
            deps.append(sub)
            return None
        if self.is_leaf(value):
            if result is not None and not _integer_constant(value) and 2 * h.numel(
                    h.static_shape(value)) > h.estimated_numel(result, self.dynamic_estimate):
                return Because("operand ", value, " is read elementwise, not generated from "
                               "a smaller leaf")
            leaves.append(value)
            return None
        why = self.reasons.get(value, "not a factory value")
        return Because("operand ", value, " is neither a factory value nor a leaf (", why, ")")

    def _combine(self, value: ir.Value, op: ir.Operation, own_cost: float,
                 deps: list[Factory], leaves: list[ir.Value], own_ops: int = 0) -> Factory:
        ops: list[ir.Operation] = []
        all_leaves: list[ir.Value] = list(leaves)
        for dep in deps:
            ops += [dep_op for dep_op in dep.ops if dep_op not in ops]
            all_leaves += [leaf for leaf in dep.leaves if leaf not in all_leaves]
        ops.append(op)
        cost = own_cost + sum(dep.cost for dep in deps) + LEAF_READ_COST * len(leaves)
        scalar_ops = own_ops + sum(dep.scalar_ops for dep in deps)
        return Factory(value, cost, ops, all_leaves, scalar_ops)

    def _analyze(self, value: ir.Value) -> tuple[Factory | None, str | Because]:
        op = h.defining_op(value)
        if op is None:
            return None, "a block argument"
        if self.block is not None and op.block != self.block:
            return None, "defined in another block"
        if h.static_shape(value) is None and self.isolated:
            return None, "a dynamically shaped tensor inside a dispatch"
        name = op.name
        if name == ARITH_CONSTANT:
            if h.splat_value(op) is None:
                return None, "a non-splat constant"
            return Factory(value, 0.0, [op]), ""
        if name == TENSOR_EMPTY:
            return None, "tensor.empty (no contents)"
        if name == LINALG_FILL:
            if self.isolated and not h.is_constant(op.operands[0]):
                return None, "a fill of a non-constant scalar"
            return Factory(value, 0.0, [op]), ""
        if name == LINALG_GENERIC:
            return self._analyze_generic(value, op)
        deps: list[Factory] = []
        leaves: list[ir.Value] = []
        if name == TENSOR_INSERT_SLICE:
            src, dest = op.operands[:2]
            problem = slice_problem(op, dest)
            if problem:
                return None, problem
            if h.tensor_type(src).rank != h.tensor_type(dest).rank:
                return None, "rank-changing insert_slice"
            # Into a tensor.empty (the first piece of a concat): elements outside the slice are
            # undefined, so the source value may stand for them.
            dest_op = h.defining_op(dest)
            operands = (src,) if dest_op is not None and dest_op.name == TENSOR_EMPTY else (
                src, dest)
            for operand in operands:
                reason = self._operand(operand, deps, leaves, value)
                if reason:
                    return None, reason
            return self._combine(value, op, CONCAT_COST, deps, leaves), ""
        if name == TENSOR_EXTRACT_SLICE:
            if h.has_dynamic_offsets(op) or any(
                    ir.ShapedType.is_dynamic_size(stride)
                    for stride in h.i64_array(op, "static_strides")):
                return None, "extract_slice with dynamic offsets or strides"
            if len(h.i64_array(op, "static_sizes")) != h.tensor_type(value).rank and \
                    h.dropped_dims(op) is None:
                return None, "rank-reducing extract_slice that drops non-unit dims"
            reason = self._operand(op.operands[0], deps, leaves, value)
            if reason:
                return None, reason
            return self._combine(value, op, INDEX_MATH_COST, deps, leaves), ""
        if name in RESHAPES:
            if self.isolated and len(op.operands) != 1:
                return None, "dynamic reshape inside a dispatch"
            if name == TENSOR_COLLAPSE_SHAPE:  # the body delinearizes over the source dims
                problem = missing_sizes(op.operands[0], [dim for group in h.reassociation(op)
                                                         if len(group) > 1 for dim in group])
                if problem:
                    return None, problem
            reason = self._operand(op.operands[0], deps, leaves, value)
            if reason:
                return None, reason
            cost = INDEX_MATH_COST * (h.tensor_type(value).rank +
                                      (_DIVISION if name == TENSOR_COLLAPSE_SHAPE else 0))
            return self._combine(value, op, cost, deps, leaves), ""
        if name in (LINALG_BROADCAST, LINALG_TRANSPOSE):
            reason = self._operand(op.operands[0], deps, leaves, value)
            if reason:
                return None, reason
            return self._combine(value, op, 0.0, deps, leaves), ""
        return None, f"produced by {name}"

    def _analyze_generic(self, value: ir.Value, op: ir.Operation
                         ) -> tuple[Factory | None, str | Because]:
        if not h.is_elementwise_generic(op):
            return None, "a generic with reduction loops"
        # Operands first: most generics read a computed activation, which the memo already
        # knows is no factory value, so the body is read only for the few that may be one.
        # (The verdict does not depend on the order of the checks; only the reason's text
        # names the first check that failed.)
        body = h.body_block(op)
        n_in = h.num_dps_inputs(op)
        deps: list[Factory] = []
        leaves: list[ir.Value] = []
        for i, (operand, arg) in enumerate(zip(op.operands, body.arguments)):
            if not list(arg.uses):
                continue
            reason = self._operand(operand, deps, leaves, value)
            if reason:
                return None, reason if i < n_in else Because("its body reads an init: ", reason)
        maps = h.indexing_maps(op)
        for map_ in maps[n_in:]:
            if not map_.is_permutation:
                return None, "a generic whose result map is not a permutation"
        own, own_ops = 0.0, 0
        for body_op in body.operations:
            body_op = body_op.operation
            if len(body_op.regions) or body_op.name not in OP_COST:
                return None, f"its body has {body_op.name}"
            own += OP_COST[body_op.name]
            own_ops += OP_COST[body_op.name] > 0
            if self.isolated and any(not h.is_constant(operand) and not h.defined_in(operand, body)
                                     for operand in body_op.operands):
                return None, "its body captures a non-constant value"
        return self._combine(value, op, own, deps, leaves, own_ops), ""


class Because:
    """A reason put together only when it is read (most are never read: a value that is no
    factory value is only asked why when it is reported)."""

    def __init__(self, *parts: object) -> None:
        self.parts = parts

    def __str__(self) -> str:
        return "".join(describe_value(part) if isinstance(part, ir.Value) else str(part)
                       for part in self.parts)


def _integer_constant(value: ir.Value) -> bool:
    """A tensor of integers known at load time (folded positions: an `arith.constant`, or an
    external parameter when the ONNX importer externalized the literal)."""
    return h.is_constant_like(value) and isinstance(h.tensor_type(value).element_type,
                                                    ir.IntegerType)


def slice_problem(op: ir.Operation, full: ir.Value) -> str | None:
    """Why an insert_slice cannot be scalarized (None: it can): strides must be 1, offsets
    static, and a dynamic size must cover the whole dim of `full` (a concat's other dims)."""
    strides = h.i64_array(op, "static_strides")
    if any(stride != 1 for stride in strides):
        return "insert_slice with strides"
    if h.has_dynamic_offsets(op):
        return "insert_slice with dynamic offsets"
    sizes = h.slice_sizes(op)
    for dim, (off, size) in enumerate(zip(h.i64_array(op, "static_offsets"), sizes)):
        if not isinstance(size, int) and (
                off != 0 or h.size_key(size) != size_key(available_size(full, dim))):
            return f"insert_slice with a dynamic size along dim {dim} that is not the whole dim"
    return None


def available_size(value: ir.Value, dim: int) -> int | ir.Value | None:
    """Dim `dim` of a chain value as a static size or an index value already in the IR that a
    body (or a new tensor.empty) after the chain may use: a `tensor.empty` / expand_shape /
    `flow.tensor.tie_shape` operand, through the inits of linalg ops, the dests of
    insert_slices, the sizes of extract_slices and unit collapse groups. None when only a
    `tensor.dim` of the chain would give it (that would keep the chain alive)."""
    tensor_t = h.tensor_type(value)
    if not ir.ShapedType.is_dynamic_size(tensor_t.shape[dim]):
        return tensor_t.shape[dim]
    op = h.defining_op(value)
    if op is None:
        return None
    if op.name in h.SHAPE_CARRIERS and len(op.results) == 1:
        dyn = [i for i, size in enumerate(tensor_t.shape) if ir.ShapedType.is_dynamic_size(size)]
        sizes = [operand for operand in op.operands if isinstance(operand.type, ir.IndexType)]
        return sizes[len(sizes) - len(dyn) + dyn.index(dim)] if len(sizes) >= len(dyn) else None
    if op.name == TENSOR_CAST:
        return available_size(op.operands[0], dim)
    if op.name == TENSOR_INSERT_SLICE:
        return available_size(op.operands[1], dim)
    if op.name == TENSOR_EXTRACT_SLICE:
        return h.slice_sizes(op)[dim] if h.dropped_dims(op) == [] else None
    if op.name == TENSOR_COLLAPSE_SHAPE:
        group = h.reassociation(op)[dim]
        src = op.operands[0]
        dynamic = [sdim for sdim in group
                   if ir.ShapedType.is_dynamic_size(h.tensor_type(src).shape[sdim])]
        return available_size(src, dynamic[0]) if len(dynamic) == 1 and h.numel(
            [h.tensor_type(src).shape[sdim] for sdim in group if sdim not in dynamic]) == 1 \
            else None
    if "operandSegmentSizes" in op.attributes and op.name.startswith("linalg."):
        inits = h.dps_inits(op)
        i = h.result_index(value)
        return available_size(inits[i], dim) if i < len(inits) else None
    return None


def size_key(size: int | ir.Value | None) -> h.DimKey | None:
    """The key (ir_helpers.size_key) of an available size, to compare two of them."""
    return size if size is None or isinstance(size, int) else h.size_key(size)


def built_size(value: ir.Value, dim: int, build: bool = True) -> int | ir.Value | None:
    """available_size, or for a collapse_shape's group of several dims the product of their
    sizes (arith.muli at the current insertion point; `build=False`: only whether it can)."""
    size = available_size(value, dim)
    op = h.defining_op(value)
    if size is not None or op is None or op.name != TENSOR_COLLAPSE_SHAPE:
        return size
    parts = [built_size(op.operands[0], sdim, build) for sdim in h.reassociation(op)[dim]]
    if any(part is None for part in parts):
        return None
    if not build:
        return 0
    out: int | ir.Value = 1
    for part in parts:
        if isinstance(part, int) and isinstance(out, int):
            out *= part
            continue
        lhs = out if isinstance(out, ir.Value) else arith.ConstantOp(ir.IndexType.get(), out).result
        rhs = part if isinstance(part, ir.Value) else \
            arith.ConstantOp(ir.IndexType.get(), part).result
        out = arith.MulIOp(lhs, rhs).result
    return out


def missing_sizes(value: ir.Value, dims: list[int], products: bool = False) -> str | None:
    """Why a body cannot compute with these dims of `value` (None: their sizes are in reach;
    `products`: also as products of collapsed dims, built outside a body)."""
    for dim in dims:
        if (built_size(value, dim, build=False) if products
                else available_size(value, dim)) is None:
            return (f"dim {dim} of {describe_value(value)} is dynamic and no op in reach holds "
                    "its size")
    return None
