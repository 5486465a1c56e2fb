"""Generics and their bodies: new generics, body blocks, bodies cloned (several into one for a
multi-result generic), inputs dropped, ops replaced; `BodyBuilder` for scalar index math in a
body."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from iree.compiler import ir
from iree.compiler.dialects import affine, arith

# The linalg op classes (GenericOp, FillOp, IndexOp, YieldOp). Not the package
# `iree.compiler.dialects.linalg`: importing it builds the OpDSL library of named ops (~60 ms,
# a fifth of a small compile); `linalg_builders()` gives it to the few rewrites that need it.
from iree.compiler.dialects import _linalg_ops_gen as linalg

from .. import ir_helpers as h
from ..ir_helpers import LINALG_INDEX, LINALG_YIELD
from .attributes import iterator_types_attr

# ---------------------------------------------------------------- generics and bodies


Body = Callable[[list[ir.Value]], "ir.Value | Sequence[ir.Value]"]


def generic(inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
            maps: Sequence[ir.AffineMapAttr], iterators: Sequence[str],
            body: Body) -> ir.Operation:
    """A linalg.generic at the current insertion point and location. `body(args)` builds its
    body inside the block (`args`: one scalar per input, then per init) and returns what it
    yields, a value or a list:

        b.generic([x], [init], [m, m], ["parallel"], lambda a: arith.NegFOp(a[0]).result)
    """
    gen, block = _new_generic(inputs, inits, maps, iterators)
    with ir.InsertionPoint(block):
        yielded = body(list(block.arguments))
        linalg.YieldOp([yielded] if isinstance(yielded, ir.Value) else list(yielded))
    return gen


def cloned_generic(src: ir.Operation, inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
                   maps: Sequence[ir.AffineMapAttr], iterators: Sequence[str],
                   index_map: dict[int, int] | None = None) -> ir.Operation:
    """A linalg.generic (as `generic`) whose body is `src`'s cloned, its block arguments by
    position, its `linalg.index` dims renumbered by `index_map` (`clone_body`'s)."""
    gen, block = _new_generic(inputs, inits, maps, iterators)
    clone_body(src, block, list(range(len(inputs) + len(inits))), index_map)
    return gen


def _new_generic(inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
                 maps: Sequence[ir.AffineMapAttr], iterators: Sequence[str]
                 ) -> tuple[ir.Operation, ir.Block]:
    """A linalg.generic at the current insertion point and location, and its empty body
    block: one argument per operand, of its element type."""
    op = linalg.GenericOp([v.type for v in inits], list(inputs), list(inits),
                          ir.ArrayAttr.get(list(maps)), iterator_types_attr(iterators))
    types = [ir.RankedTensorType(v.type).element_type if isinstance(v.type, ir.RankedTensorType)
             else v.type for v in [*inputs, *inits]]
    return op.operation, op.operation.regions[0].blocks.append(*types)


def fill(scalar: ir.Value, init: ir.Value) -> ir.Value:
    """`linalg.fill ins(scalar) outs(init)`, the scalar of the init's element type (as OpDSL's
    builder in IREE 3.13 requires too), built from the op class: no OpDSL import."""
    element = ir.RankedTensorType(init.type).element_type
    if scalar.type != element:
        raise ValueError(f"a fill of {scalar.type} into {init.type}: the types must match")
    op = linalg.FillOp([init.type], [scalar], [init])
    block = op.regions[0].blocks.append(element, element)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return op.results[0]


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


def clone_ops(ops: Sequence[ir.Operation], mapping: dict) -> dict:
    """Clones `ops` (in order) at the current insertion point, each operand in `mapping` (old
    value -> new) read as its new value; `mapping` gains each old result -> its clone's."""
    for op in ops:
        clone = op.clone()
        for i, operand in enumerate(clone.operands):
            if operand in mapping:
                clone.operands[i] = mapping[operand]
        mapping.update(zip(op.results, clone.results))
    return mapping


ArgMap = Sequence[int | ir.Value | None]  # clone_body's: per source block argument


class InputSlots:
    """The inputs of a generic being built: each (value, indexing map) pair once, in the order
    first seen; `slot` gives a pair's block argument."""

    def __init__(self) -> None:
        self.pairs: list[tuple[ir.Value, ir.AffineMap]] = []
        self._at: dict[tuple[ir.Value, str], int] = {}

    def slot(self, value: ir.Value, amap: ir.AffineMap) -> int:
        key = (value, str(amap))
        if key not in self._at:
            self._at[key] = len(self.pairs)
            self.pairs.append((value, amap))
        return self._at[key]


def multi_result_generic(
        ins: Sequence[tuple[ir.Value, ir.AffineMap]],
        inits: Sequence[tuple[ir.Value, ir.AffineMap]],
        iterators: Sequence[str],
        bodies: Sequence[tuple[ir.Operation, ArgMap | Callable[[list[list[ir.Value]]], ArgMap]]],
        results: Callable[[list[list[ir.Value]]], list[ir.Value]] | None = None,
) -> ir.Operation:
    """One generic (at the current insertion point and location) over `ins` and `inits` (each
    with its indexing map) whose body is each of `bodies` cloned in turn: a source op and its
    arg map (`clone_body`'s; or a function of the values the earlier bodies yield, for a body
    that reads another's result). It yields what every body yields, in order, or
    `results(yields per body)`. Several generics or contractions become one this way."""
    gen, block = _new_generic([value for value, _ in ins], [value for value, _ in inits],
                              [ir.AffineMapAttr.get(amap) for _, amap in [*ins, *inits]],
                              iterators)
    yields: list[list[ir.Value]] = []
    for src, arg_map in bodies:
        yielded: list[ir.Value] = []
        clone_body(src, block, arg_map(yields) if callable(arg_map) else arg_map,
                    yield_into=yielded)
        yields.append(yielded)
    with ir.InsertionPoint(block):
        linalg.YieldOp(results(yields) if results is not None else
                       [value for yielded in yields for value in yielded])
    return gen


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
