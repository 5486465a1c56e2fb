"""Load-time globals: a constant expression computed once, in a `util.initializer`, and read
through an immutable `util.global`."""

from __future__ import annotations

from collections.abc import Callable

from iree.compiler import ir

from .. import ir_helpers as h

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
