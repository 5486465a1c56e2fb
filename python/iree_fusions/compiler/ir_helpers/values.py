"""Values, ops and their users: defining ops, users, constants, parameters, attributes,
the functions of a module and walks."""

from __future__ import annotations

import re
from collections.abc import Iterator

from iree.compiler import ir

from .caching import attribute_fact
from .names import (ARITH_CONSTANT, FLOW_TENSOR_CONSTANT, FUNC_OPS, INT_CASTS, LINALG_FILL,
                    UTIL_GLOBAL_LOAD, UTIL_GLOBAL_STORE, VIEWS)


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


def walk_ops(root: ir.Operation, names: tuple[str, ...] | None = None) -> list[ir.Operation]:
    """All ops under root (pre-order), optionally only those whose name is in `names`."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if names is None or op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [op for op in found if op != root]


def defining_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def use_owner(use: ir.OpOperand) -> ir.Operation:
    owner = use.owner
    return owner.operation if hasattr(owner, "operation") else owner


def users(value: ir.Value) -> list[ir.Operation]:
    """The ops using `value`, once per use (an op reading it twice is listed twice)."""
    return [use_owner(use) for use in value.uses]


def single_user(value: ir.Value) -> ir.Operation | None:
    found = users(value)
    return found[0] if len(found) == 1 else None


def result_index(value: ir.Value) -> int:
    """Which result of its defining op `value` is."""
    return ir.OpResult(value).result_number


def attr_names(op: ir.Operation) -> list[str]:
    return [a if isinstance(a, str) else a.name for a in op.attributes]


def attribute_texts(op: ir.Operation | ir.OpView, skip: tuple[str, ...] = ()
                    ) -> list[tuple[str, str]]:
    """(name, printed attribute) of each attribute of the op not in `skip`, in the op's
    order; each distinct attribute is printed once while a pass runs (`attribute_fact`)."""
    attributes = op.operation.attributes
    return [(name, attribute_fact(attributes[name], str)) for name in attr_names(op.operation)
            if name not in skip]


def i64_array(op: ir.Operation, name: str) -> list[int]:
    """A DenseI64ArrayAttr attribute (static_offsets, permutation, dimensions, ...)."""
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def segment_sizes(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def const_int(value: ir.Value) -> int | None:
    """The integer of an `arith.constant` scalar (int, index or bool), else None."""
    op = defining_op(value)
    if op is None or op.name != ARITH_CONSTANT:
        return None
    attr = op.attributes["value"]
    return attr.value if isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)) else None


def splat_value(op: ir.Operation) -> ir.Attribute | None:
    """The element of a splat `arith.constant` tensor, else None."""
    value = op.attributes["value"]
    if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
        return value.get_splat_value()
    return None


def is_constant(value: ir.Value) -> bool:
    """Defined by `arith.constant` (a scalar or a tensor literal)."""
    op = defining_op(value)
    return op is not None and op.name == ARITH_CONSTANT


def is_constant_like(value: ir.Value) -> bool:
    """Known at load time, the same on every call: an `arith.constant` tensor, a
    `flow.tensor.constant` (an external parameter, `#flow.parameter.named<"scope"::"name">`,
    as IREE inlines immutable parameter globals by global-optimization) or a load of an
    immutable `util.global`. A mutable global is not: it can change between calls."""
    op = defining_op(value)
    if op is None:
        return False
    if op.name in (ARITH_CONSTANT, FLOW_TENSOR_CONSTANT):
        return True
    return op.name == UTIL_GLOBAL_LOAD and "is_immutable" in op.attributes


def producer_through_views(value: ir.Value) -> ir.Operation | None:
    """The op that makes the value, looking through reshapes and casts (None: an argument)."""
    op = defining_op(value)
    while op is not None and op.name in VIEWS:
        op = defining_op(op.operands[0])
    return op


def global_symbol(access: ir.Operation) -> str:
    """The symbol of the `util.global` a `util.global.load` / `.store` names."""
    return ir.FlatSymbolRefAttr(access.attributes["global"]).value


def stored_globals(root: ir.Operation) -> list[str]:
    """The globals the `util.global.store`s under `root` (an initializer) write, in order."""
    return [global_symbol(store) for store in walk_ops(root, (UTIL_GLOBAL_STORE,))]


def loaded_globals(root: ir.Operation) -> list[str]:
    """The globals the `util.global.load`s under `root` read, in order."""
    return [global_symbol(load) for load in walk_ops(root, (UTIL_GLOBAL_LOAD,))]


def mutable_global_read(value: ir.Value) -> str | None:
    """The symbol of the mutable `util.global` the value is loaded from, through reshapes
    and casts (None: not such a load)."""
    op = producer_through_views(value)
    if op is None or op.name != UTIL_GLOBAL_LOAD or "is_immutable" in op.attributes:
        return None
    return global_symbol(op)


def is_parameter(value: ir.Value) -> bool:
    """A tensor read from an external parameter (an .irpa / .gguf / .safetensors entry)."""
    op = defining_op(value)
    return (op is not None and op.name == FLOW_TENSOR_CONSTANT
            and "parameter" in str(op.attributes["value"]))


def parameter_name(value: ir.Value) -> str | None:
    """`scope::name` of the external parameter `value` is read from, through reshapes and
    casts (None: not a parameter)."""
    op = producer_through_views(value)
    if op is None or op.name != FLOW_TENSOR_CONSTANT or not is_parameter(op.results[0]):
        return None
    # #flow.parameter.named<"scope"::"name"> : type, or <"name"> without a scope
    return "::".join(re.findall(r'"((?:[^"\\]|\\.)*)"', str(op.attributes["value"])))


def same_constant(a: ir.Value, b: ir.Value) -> bool:
    """Two `arith.constant`s of one type and value."""
    da, db = defining_op(a), defining_op(b)
    return (da is not None and db is not None and da.name == db.name == ARITH_CONSTANT
            and a.type == b.type and str(da.attributes["value"]) == str(db.attributes["value"]))


def traces_to(value: ir.Value, target: ir.Value) -> bool:
    """value is target, possibly through integer/index casts."""
    while True:
        if value == target:
            return True
        op = defining_op(value)
        if op is None or op.name not in INT_CASTS:
            return False
        value = op.operands[0]


def is_zero_fill(value: ir.Value) -> bool:
    """`linalg.fill` of the float constant 0.0."""
    op = defining_op(value)
    if op is None or op.name != LINALG_FILL:
        return False
    cst = defining_op(op.operands[0])
    return cst is not None and cst.name == ARITH_CONSTANT and \
        isinstance(cst.attributes["value"], ir.FloatAttr) and \
        cst.attributes["value"].value == 0.0


def value_origin(value: ir.Value) -> str:
    """`argument` or the name of the op that defines the value (for keys)."""
    op = defining_op(value)
    return "argument" if op is None else op.name
