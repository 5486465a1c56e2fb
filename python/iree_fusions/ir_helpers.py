"""Shared IR matchers and builders used by every pass (one place, not copied per pass).

All functions take `ir.Operation` or `ir.OpView` and work on the IR IREE has at the end of
global-optimization (linalg on tensors inside `util.func`) or after dispatch-creation.
"""

from __future__ import annotations

from collections.abc import Iterator

from iree.compiler import ir

FUNC_OPS = ("util.func", "func.func")
LINALG_EXT_PREFIX = "iree_linalg_ext."


def as_operation(op: ir.Operation | ir.OpView) -> ir.Operation:
    return op.operation


def op_name(op: ir.Operation | ir.OpView) -> str:
    """The op's registered name (`OpView.name` can be shadowed, e.g. by func.FuncOp)."""
    return op.operation.name


def functions(module: ir.Operation) -> Iterator[ir.Operation]:
    """Top-level functions (`util.func` / `func.func`) with a body."""
    for region in module.regions:
        for block in region.blocks:
            for op in block.operations:
                operation = op.operation
                if operation.name in FUNC_OPS and len(operation.regions[0].blocks) > 0:
                    yield operation


def function_blocks(module: ir.Operation) -> Iterator[ir.Block]:
    for func in functions(module):
        yield from func.regions[0].blocks


def walk_ops(root: ir.Operation, names: tuple[str, ...] | None = None) -> list[ir.Operation]:
    """All ops under root (pre-order), optionally only those whose name is in `names`."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if names is None or op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [op for op in found if op != root]


# ---------------------------------------------------------------- linalg structure


def is_linalg(op: ir.Operation | ir.OpView) -> bool:
    name = op_name(op)
    return name.startswith("linalg.") and name not in ("linalg.yield", "linalg.index")


def is_linalg_ext(op: ir.Operation | ir.OpView) -> bool:
    return op_name(op).startswith(LINALG_EXT_PREFIX) and op_name(op) != "iree_linalg_ext.yield"


def segment_sizes(op: ir.Operation) -> list[int]:
    return list(op.attributes["operandSegmentSizes"])


def dps_inputs(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """`ins(...)` operands of a destination-passing-style linalg / linalg_ext op."""
    operation = op.operation
    n_in = segment_sizes(operation)[0]
    return list(operation.operands)[:n_in]


def dps_inits(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """`outs(...)` operands of a destination-passing-style op."""
    operation = op.operation
    n_in, n_out = segment_sizes(operation)[:2]
    return list(operation.operands)[n_in : n_in + n_out]


def indexing_maps(op: ir.Operation | ir.OpView) -> list[ir.AffineMap]:
    """Indexing maps of a linalg op that carries them (generic, matmul, ...), as AffineMaps."""
    return [a.value for a in op.operation.attributes["indexing_maps"]]


def has_indexing_maps(op: ir.Operation | ir.OpView) -> bool:
    return "indexing_maps" in op.operation.attributes


def iterator_types(op: ir.Operation | ir.OpView) -> list[str]:
    """['parallel', 'reduction', ...] of a linalg.generic."""
    out = []
    for a in op.operation.attributes["iterator_types"]:
        text = str(a)  # '#linalg.iterator_type<parallel>'
        out.append(text[text.index("<") + 1 : text.rindex(">")])
    return out


def body_block(op: ir.Operation | ir.OpView) -> ir.Block:
    return op.operation.regions[0].blocks[0]


def body_op_names(op: ir.Operation | ir.OpView) -> list[str]:
    return [o.operation.name for o in body_block(op).operations]


def is_elementwise_generic(op: ir.Operation | ir.OpView) -> bool:
    """A linalg.generic with only parallel loops (maps may permute or broadcast)."""
    return op_name(op) == "linalg.generic" and all(
        it == "parallel" for it in iterator_types(op)
    )


def is_reduction_or_contraction(op: ir.Operation | ir.OpView) -> bool:
    """Non-elementwise linalg / linalg_ext ops: matmul, conv, reduce, generic with reductions."""
    name = op_name(op)
    if is_linalg_ext(op):
        return True
    if not is_linalg(op) or name in ("linalg.fill", "linalg.copy", "linalg.broadcast",
                                     "linalg.transpose", "linalg.map", "linalg.elementwise"):
        return False
    if name == "linalg.generic":
        return "reduction" in iterator_types(op)
    return True  # named structured ops: matmul, batch_matmul, conv_*, pooling_*, reduce, ...


def uses_linalg_index(op: ir.Operation | ir.OpView) -> bool:
    return "linalg.index" in body_op_names(op)


def reads_table_in_body(op: ir.Operation | ir.OpView) -> bool:
    """A generic whose body does `tensor.extract` from a captured tensor: an embedding lookup."""
    return op_name(op) == "linalg.generic" and "tensor.extract" in body_op_names(op)


def defining_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner.operation if hasattr(use.owner, "operation") else use.owner
            for use in value.uses]


def tensor_type(value: ir.Value) -> ir.RankedTensorType | None:
    t = value.type
    return t if isinstance(t, ir.RankedTensorType) else None


def element_bytes(element_type: ir.Type) -> int:
    if isinstance(element_type, ir.IntegerType):
        return max(1, (element_type.width + 7) // 8)
    if isinstance(element_type, ir.IndexType):
        return 8
    if isinstance(element_type, ir.ComplexType):
        return 2 * element_bytes(element_type.element_type)
    width = getattr(element_type, "width", None)  # FloatType subclasses
    return max(1, (width + 7) // 8) if width else 1


def static_tensor_bytes(t: ir.Type) -> int | None:
    """Bytes of a statically shaped tensor type, None if dynamic or not a tensor."""
    if not isinstance(t, ir.RankedTensorType):
        return None
    rt = t
    if not rt.has_static_shape:
        return None
    n = 1
    for d in rt.shape:
        n *= d
    return n * element_bytes(rt.element_type)


def is_identity_map(m: ir.AffineMap) -> bool:
    return m.n_dims == len(m.results) and all(
        isinstance(r, ir.AffineDimExpr) and r.position == i
        for i, r in enumerate(m.results)
    )


def map_dim_positions(m: ir.AffineMap) -> list[int] | None:
    """[d_i for each result] when every result is a plain dim, else None."""
    out = []
    for r in m.results:
        if not isinstance(r, ir.AffineDimExpr):
            return None
        out.append(r.position)
    return out


# ---------------------------------------------------------------- constants and globals


def is_constant_like(value: ir.Value) -> bool:
    """An `arith.constant` tensor or a load of an immutable global: known at load time."""
    op = defining_op(value)
    if op is None:
        return False
    if op.name == "arith.constant":
        return True
    return op.name == "util.global.load" and "is_immutable" in op.attributes


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
    build,
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
        if not is_constant_like(v):
            raise ValueError(f"hoist_to_initializer: input is not constant-like: {v}")
    top = module.regions[0].blocks[0]
    first_func = next(op for op in top.operations if op.operation.name in FUNC_OPS)
    affinity = (module.attributes["stream.affinity.default"]
                if "stream.affinity.default" in module.attributes else None)
    symbol = unique_symbol(module, name_hint)
    loc = before.location
    with loc, ir.InsertionPoint(first_func):
        initializer = util.InitializerOp(ir.TypeAttr.get(ir.FunctionType.get([], [])))
        block = initializer.regions[0].blocks.append()
        with ir.InsertionPoint(block):
            cloned = []
            for v in constant_inputs:
                clone = defining_op(v).clone()
                cloned.append(clone.results[list(defining_op(v).results).index(v)]
                              if len(clone.results) > 1 else clone.results[0])
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
