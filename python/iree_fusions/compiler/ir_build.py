"""Shared IR builders used by every pass: generics, bodies, reshapes, scalar index math,
dead-op erasure, load-time globals. Built with the MLIR Python builders of iree-base-compiler
3.13; new ops take the location given by the caller (the ops they replace).

The queries these go with are in `ir_helpers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from iree.compiler import ir
from iree.compiler.dialects import affine, arith, tensor
# The linalg op classes (GenericOp, FillOp, IndexOp, YieldOp). Not the package
# `iree.compiler.dialects.linalg`: importing it builds the OpDSL library of named ops (~60 ms,
# a fifth of a small compile); `linalg_builders()` gives it to the few rewrites that need it.
from iree.compiler.dialects import _linalg_ops_gen as linalg

from . import ir_helpers as h
from .ir_helpers import LINALG_INDEX, LINALG_YIELD

# ---------------------------------------------------------------- attributes


def linalg_builders():
    """`iree.compiler.dialects.linalg`: the builders of named ops (`fill`, `batch_matmul`,
    `batch_vecmat`, `transpose`), imported when a rewrite first builds one."""
    from iree.compiler.dialects import linalg as builders

    return builders


def dims_map(n_dims: int, dims: Sequence[int | None]) -> ir.AffineMap:
    """(d0, ..., d{n-1}) -> (d_dims[0], ...); a None result is the constant 0."""
    return ir.AffineMap.get(n_dims, 0, [
        ir.AffineConstantExpr.get(0) if d is None else ir.AffineDimExpr.get(d) for d in dims])


def map_attr(n_dims: int, dims: Sequence[int | None]) -> ir.AffineMapAttr:
    return ir.AffineMapAttr.get(dims_map(n_dims, dims))


def iterator_types_attr(kinds: Sequence[str]) -> ir.ArrayAttr:
    """`["parallel", "reduction"]` -> the iterator_types attribute of a linalg.generic."""
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def reassociation_attr(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g])
                             for g in groups])


def first_result(built: ir.Value | ir.OpView | ir.Operation) -> ir.Value:
    """The value of a builder that returns either a Value or an op (linalg.fill, ...)."""
    return built if isinstance(built, ir.Value) else built.results[0]


# ---------------------------------------------------------------- generics and bodies


def new_generic(inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
                maps: Sequence[ir.AffineMapAttr], iterators: Sequence[str]) -> ir.Operation:
    """A linalg.generic (no body yet) at the current insertion point and location."""
    op = linalg.GenericOp([v.type for v in inits], list(inputs), list(inits),
                          ir.ArrayAttr.get(list(maps)), iterator_types_attr(iterators))
    return op.operation


def append_body_block(op: ir.Operation, values: Sequence[ir.Value]) -> ir.Block:
    """The body block of a new generic: one argument per operand, of its element type."""
    types = [ir.RankedTensorType(v.type).element_type if isinstance(v.type, ir.RankedTensorType)
             else v.type for v in values]
    return op.regions[0].blocks.append(*types)


def clone_body(src: ir.Operation, dst_block: ir.Block,
               arg_map: Sequence[int | ir.Value | None] | None = None,
               index_map: dict[int, int] | None = None,
               yield_into: list | None = None) -> None:
    """Clones src's body into dst_block (at its end); src block arg i -> dst arg arg_map[i]
    (default: by position), or the value arg_map[i] itself (one computed earlier in
    dst_block).

    `index_map` renumbers `linalg.index` dims. With `yield_into` the terminator is not
    cloned: its operands (mapped) are appended to the list, so that several bodies can be
    merged into one.
    """
    src_block = h.body_block(src)
    mapping: dict = {}
    for i, arg in enumerate(src_block.arguments):
        j = i if arg_map is None else arg_map[i]
        if isinstance(j, ir.Value):
            mapping[arg] = j
        elif j is not None:
            mapping[arg] = dst_block.arguments[j]
    with ir.InsertionPoint(dst_block):
        for bop in src_block.operations:
            bop = bop.operation
            if yield_into is not None and bop.name == LINALG_YIELD:
                yield_into.extend(mapping.get(v, v) for v in bop.operands)
                continue
            new = bop.clone()
            for i, v in enumerate(list(new.operands)):
                if v in mapping:
                    new.operands[i] = mapping[v]
            if bop.name == LINALG_INDEX and index_map is not None:
                dim = ir.IntegerAttr(bop.attributes["dim"]).value
                new.attributes["dim"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                           index_map[dim])
            for old, res in zip(bop.results, new.results):
                mapping[old] = res


def rebuild_generic_inputs(op: ir.Operation, keep: list[int],
                           extra: list[tuple[ir.Value, ir.AffineMap]]
                           ) -> tuple[ir.Operation, list[ir.Value]]:
    """A copy of generic `op` reading ins[keep] + extra values (with their maps), its body
    moved over. Returns the new op and the new block args of the extra inputs; block args of
    dropped inputs keep their uses in the moved body, for the caller to replace. `op` stays
    (results not replaced) until the caller replaces it (`replace_op`)."""
    ins, outs = h.dps_inputs(op), h.dps_inits(op)
    maps = h.indexing_maps(op)
    new_maps = [maps[i] for i in keep] + [m for _, m in extra] + maps[len(ins):]
    loc = op.location
    with loc, ir.InsertionPoint(op):
        new = linalg.GenericOp(
            [r.type for r in op.results], [ins[i] for i in keep] + [v for v, _ in extra], outs,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
            op.attributes["iterator_types"])
    for attr_name in h.attr_names(op):
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


def replace_op(old: ir.Operation, new: ir.Operation) -> None:
    """Replaces every result of `old` by the same result of `new` and erases `old`."""
    for a, b in zip(old.results, new.results):
        a.replace_all_uses_with(b)
    old.erase()


# ---------------------------------------------------------------- reshapes


def collapse(value: ir.Value, groups: list[list[int]], result_type: ir.Type) -> ir.Value:
    return tensor.CollapseShapeOp(result_type, value, reassociation_attr(groups)).result


def expand(value: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    elt = ir.RankedTensorType(value.type).element_type
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, elt), value,
                                reassociation_attr(groups), [], shape).result


def merge_groups(src: list[int], dst: list[int]) -> list[list[int]] | None:
    """Reassociation that collapses shape `src` into `dst` by merging consecutive dims."""
    if not dst:
        return None
    groups, i = [], 0
    for d in dst:
        group, size = [], 1
        while i < len(src) and (size < d or not group):
            group.append(i)
            size *= src[i]
            i += 1
        if size != d:
            return None
        groups.append(group)
    while i < len(src) and src[i] == 1:
        groups[-1].append(i)
        i += 1
    return groups if i == len(src) else None


def reshape_to(value: ir.Value, shape: list[int]) -> ir.Value:
    """A row-major reshape: one collapse_shape or expand_shape when possible, else both."""
    src = list(value.type.shape)
    if src == shape:
        return value
    elt = value.type.element_type
    groups = merge_groups(src, shape)
    if groups is not None:
        return collapse(value, groups, ir.RankedTensorType.get(shape, elt))
    groups = merge_groups(shape, src)
    if groups is not None:
        return expand(value, groups, shape)
    flat = collapse(value, [list(range(len(src)))],
                    ir.RankedTensorType.get([h.numel(src)], elt))
    return expand(flat, [list(range(len(shape)))], shape)


# ---------------------------------------------------------------- scalar code in bodies


class BodyBuilder:
    """Emits scalar code (index math, reads) at an insertion point inside a linalg body.

    Index constants are created once per builder; `with b:` enters the insertion point and
    location for plain builder calls (`arith.SelectOp(...)`)."""

    def __init__(self, ip: ir.InsertionPoint, loc: ir.Location):
        self.ip, self.loc = ip, loc
        self._consts: dict[int, ir.Value] = {}

    def __enter__(self) -> BodyBuilder:
        self.ip.__enter__()
        self.loc.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.loc.__exit__(*exc)
        self.ip.__exit__(*exc)

    def const(self, n: int) -> ir.Value:
        """An index constant (one per value per builder)."""
        if n not in self._consts:
            with self:
                self._consts[n] = arith.ConstantOp(ir.IndexType.get(), n).result
        return self._consts[n]

    def binary(self, cls, a: ir.Value, b: ir.Value) -> ir.Value:
        with self:
            return cls(a, b).result

    def add(self, a: ir.Value, n: int) -> ir.Value:
        return a if n == 0 else self.binary(arith.AddIOp, a, self.const(n))

    def affine(self, expr: ir.AffineExpr, dims: list[ir.Value]) -> ir.Value:
        """The value of an affine expression of the loop values `dims`."""
        if isinstance(expr, ir.AffineDimExpr):
            return dims[expr.position]
        if isinstance(expr, ir.AffineConstantExpr):
            return self.const(expr.value)
        amap = ir.AffineMap.get(len(dims), 0, [expr])
        with self:
            return affine.AffineApplyOp(amap, dims).result

    def size(self, s: int | ir.Value) -> ir.Value:
        """A size as an index value: a constant, or the (dynamic) value itself."""
        return s if isinstance(s, ir.Value) else self.const(s)

    def product(self, sizes: Sequence[int | ir.Value]) -> int | ir.Value:
        """The product of static and dynamic sizes: an int when all are static."""
        static = h.numel([s for s in sizes if isinstance(s, int)])
        out: int | ir.Value = static
        for s in sizes:
            if isinstance(s, ir.Value):
                out = s if out == 1 else self.binary(arith.MulIOp, self.size(out), s)
        return out

    def linearize(self, idx: list[ir.Value], sizes: Sequence[int | ir.Value]) -> ir.Value:
        """Row-major linear index of `idx` in a tensor of `sizes` (static or dynamic)."""
        out = None
        for i, s in zip(idx, sizes):
            if out is None:
                out = i
                continue
            scaled = self.binary(arith.MulIOp, out, self.size(s)) if s != 1 else out
            out = self.binary(arith.AddIOp, scaled, i)
        return out if out is not None else self.const(0)

    def delinearize(self, i: ir.Value, sizes: Sequence[int | ir.Value]) -> list[ir.Value]:
        """The indices of the row-major linear index `i` in a tensor of `sizes` (static or
        dynamic)."""
        out: list[ir.Value] = []
        for k in range(len(sizes)):
            inner = self.product(sizes[k + 1:])
            q = self.binary(arith.DivUIOp, i, self.size(inner)) if inner != 1 else i
            out.append(self.binary(arith.RemUIOp, q, self.size(sizes[k])) if k else q)
        return out


# ---------------------------------------------------------------- cleanup


def erase_dead(roots: Iterable[ir.Operation | ir.Value],
               erasable: Callable[[ir.Operation], bool]) -> None:
    """Erases the ops of `roots` (or defining `roots`) that `erasable` accepts once none of
    their results is used, then, recursively, the erasable ops that fed them.

    Dead ops are all found first and erased afterwards, users before producers: a Python
    handle of an erased op is unusable (not even for hashing), so none is touched after."""
    work: list[ir.Operation] = []
    for r in roots:
        op = h.defining_op(r) if isinstance(r, ir.Value) else r.operation
        if op is not None:
            work.append(op)
    dead: dict[ir.Operation, None] = {}  # insertion order: users before their producers
    while work:
        op = work.pop()
        if not erasable(op) or op in dead:
            continue
        if all(u in dead for r in op.results for u in h.users(r)):
            dead[op] = None
            work += [f for f in map(h.defining_op, op.operands) if f is not None]
    for op in dead:
        op.erase()


def of_kind(*names: str) -> Callable[[ir.Operation], bool]:
    """An `erasable` predicate for erase_dead: ops with one of these names."""
    return lambda op: op.name in names


# ---------------------------------------------------------------- load-time globals


def unique_symbol(module: ir.Operation, hint: str) -> str:
    taken = {
        op.operation.attributes["sym_name"].value
        for op in module.regions[0].blocks[0].operations
        if "sym_name" in op.operation.attributes
    }
    name, i = hint, 0
    while name in taken:
        i += 1
        name = f"{hint}_{i}"
    return name


def hoist_to_initializer(
    module: ir.Operation,
    before: ir.Operation,
    constant_inputs: list[ir.Value],
    build: Callable[[list[ir.Value]], ir.Value],
    name_hint: str,
) -> ir.Value:
    """Computes `build(inputs)` once, at module load, and returns its load at `before`.

    `constant_inputs` must be constant-like (see is_constant_like); their defining ops are
    cloned into a new `util.initializer`, where `build(cloned_inputs) -> ir.Value` creates the
    expression (e.g. stacking weights). The result is stored into a new immutable
    `util.global`, and a `util.global.load` of it is inserted before `before`. This is how a
    pass makes a constant expression cost nothing per call without IREE's const-eval (which
    has already run at this phase).
    """
    from iree.compiler.dialects import util

    for v in constant_inputs:
        if not h.is_constant_like(v):
            raise ValueError(f"hoist_to_initializer: input is not constant-like: {v}")
    top = module.regions[0].blocks[0]
    first_func = next(op for op in top.operations if op.operation.name in h.FUNC_OPS)
    affinity = (module.attributes["stream.affinity.default"]
                if "stream.affinity.default" in module.attributes else None)
    symbol = unique_symbol(module, name_hint)
    loc = before.location
    with loc, ir.InsertionPoint(first_func):
        initializer = util.InitializerOp(ir.TypeAttr.get(ir.FunctionType.get([], [])))
        # Marks it for the driver's compile-time evaluation (consteval.fold_initializers).
        initializer.operation.attributes["iree_fusions.load_time"] = ir.UnitAttr.get()
        block = initializer.regions[0].blocks.append()
        with ir.InsertionPoint(block):
            cloned = []
            for v in constant_inputs:
                clone = h.defining_op(v).clone()
                cloned.append(clone.results[h.result_index(v)])
            result = build(cloned)
            util.GlobalStoreOp(result, symbol)
            util.ReturnOp([])
    with loc, ir.InsertionPoint(initializer):
        glob = util.GlobalOp(symbol, result.type, sym_visibility="private")
    if affinity is not None:
        glob.operation.attributes["stream.affinity.default"] = affinity
        initializer.operation.attributes["stream.affinity.default"] = affinity
    with loc, ir.InsertionPoint(before):
        load = util.GlobalLoadOp(result.type, symbol, is_immutable=True)
    return load.result


# ---------------------------------------------------------------- dynamic sizes

# A size of a new tensor: static (int) or an `index` value (a dynamic dim).
Size = int | ir.Value


def size_of(value: ir.Value, dim: int) -> Size:
    """Dim `dim` of a ranked tensor: its static size, or a `tensor.dim` (at the current
    insertion point and location) of a dynamic one."""
    size = ir.RankedTensorType(value.type).shape[dim]
    if not ir.ShapedType.is_dynamic_size(size):
        return size
    index = arith.ConstantOp(ir.IndexType.get(), dim).result
    return tensor.DimOp(value, index).result


def mixed_shape(value: ir.Value) -> list[Size]:
    """Every dim of a ranked tensor (size_of each)."""
    return [size_of(value, d) for d in range(ir.RankedTensorType(value.type).rank)]


def split_sizes(sizes: Sequence[Size]) -> tuple[list[int], list[ir.Value]]:
    """(static sizes with the dynamic sentinel for values, the values): the operand form of
    slices, expand_shape and friends."""
    static = [s if isinstance(s, int) else ir.ShapedType.get_dynamic_size() for s in sizes]
    return static, [s for s in sizes if not isinstance(s, int)]


def tensor_type_of(sizes: Sequence[Size], element_type: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(split_sizes(sizes)[0], element_type)


def extract_slice(source: ir.Value, offsets: Sequence[Size], sizes: Sequence[Size],
                  result_type: ir.Type | None = None) -> ir.Value:
    """A unit-stride tensor.extract_slice with static or dynamic offsets and sizes;
    `result_type` may drop unit dims (a rank-reducing slice)."""
    static_offsets, dyn_offsets = split_sizes(offsets)
    static_sizes, dyn_sizes = split_sizes(sizes)
    if result_type is None:
        result_type = tensor_type_of(sizes, ir.RankedTensorType(source.type).element_type)
    return tensor.ExtractSliceOp(result_type, source, dyn_offsets, dyn_sizes, [],
                                 static_offsets, static_sizes, [1] * len(sizes)).result


def insert_slice(source: ir.Value, dest: ir.Value, offsets: Sequence[Size],
                 sizes: Sequence[Size]) -> ir.Value:
    """A unit-stride tensor.insert_slice with static or dynamic offsets and sizes."""
    static_offsets, dyn_offsets = split_sizes(offsets)
    static_sizes, dyn_sizes = split_sizes(sizes)
    return tensor.InsertSliceOp(source, dest, dyn_offsets, dyn_sizes, [], static_offsets,
                                static_sizes, [1] * len(sizes)).result


def expand_mixed(value: ir.Value, groups: list[list[int]], sizes: Sequence[Size]) -> ir.Value:
    """tensor.expand_shape to `sizes` (static or dynamic: `output_shape` operands)."""
    static, dynamic = split_sizes(sizes)
    elt = ir.RankedTensorType(value.type).element_type
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(static, elt), value,
                                reassociation_attr(groups), dynamic, static).result


def size_from_key(key: h.DimKey) -> Size:
    """A size named by `ir_helpers.dim_key` as a static size or an index value: the value
    IREE holds, or a `tensor.dim` (at the current insertion point and location) for a
    (tensor, dim) key."""
    if isinstance(key, tuple):
        return size_of(*key)
    return key


# ---------------------------------------------------------------- scalars and slices
# At the current insertion point and location.


def index_const(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def cmpi(pred: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), lhs, rhs).result


def slice_out(value: ir.Value, offsets: Sequence[Size], sizes: Sequence[Size],
              result_shape: Sequence[Size]) -> ir.Value:
    """A unit-stride extract_slice (rank-reducing to `result_shape`), sizes and offsets
    static or dynamic."""
    result_t = tensor_type_of(result_shape, ir.RankedTensorType(value.type).element_type)
    return extract_slice(value, offsets, sizes, result_t)
