"""Shared IR queries (matchers) used by every pass: one place, one meaning per name.

All functions take `ir.Operation` or `ir.OpView` and work on the IR IREE has at the end of
global-optimization (linalg on tensors inside `util.func`) or after dispatch-creation. The
builders that go with them (new generics, body cloning, reshapes, dead-op erasure) are in
`ir_build`.
"""

from __future__ import annotations

import contextvars
import ctypes
import math
import re
from collections.abc import Iterator, Sequence

from iree.compiler import ir
from iree.compiler.dialects import _arith_ops_gen as arith
from iree.compiler.dialects import _cf_ops_gen as cf
from iree.compiler.dialects import _tensor_ops_gen as tensor

# linalg's ODS op classes; not `iree.compiler.dialects.linalg`, which builds the OpDSL library
# of named ops on import (see `dialect_views`).
from iree.compiler.dialects import _linalg_ops_gen as linalg

# Op names taken from the op classes, for the name compares the matchers do: comparing
# `op.name` with a string is ~0.1 us, making an op view (`op.opview`, for `isinstance`)
# 2.6-24 us. Dialects without a light Python op class (flow, hal, util, iree_tensor_ext,
# iree_linalg_ext) are matched by literal names.
ARITH_ADDF = arith.AddFOp.OPERATION_NAME
ARITH_ADDI = arith.AddIOp.OPERATION_NAME
ARITH_ANDI = arith.AndIOp.OPERATION_NAME
ARITH_CEILDIVSI = arith.CeilDivSIOp.OPERATION_NAME
ARITH_CEILDIVUI = arith.CeilDivUIOp.OPERATION_NAME
ARITH_CMPF = arith.CmpFOp.OPERATION_NAME
ARITH_CMPI = arith.CmpIOp.OPERATION_NAME
ARITH_CONSTANT = arith.ConstantOp.OPERATION_NAME
ARITH_DIVF = arith.DivFOp.OPERATION_NAME
ARITH_DIVSI = arith.DivSIOp.OPERATION_NAME
ARITH_DIVUI = arith.DivUIOp.OPERATION_NAME
ARITH_EXTF = arith.ExtFOp.OPERATION_NAME
ARITH_EXTSI = arith.ExtSIOp.OPERATION_NAME
ARITH_EXTUI = arith.ExtUIOp.OPERATION_NAME
ARITH_INDEX_CAST = arith.IndexCastOp.OPERATION_NAME
ARITH_INDEX_CASTUI = arith.IndexCastUIOp.OPERATION_NAME
ARITH_MAXIMUMF = arith.MaximumFOp.OPERATION_NAME
ARITH_MULF = arith.MulFOp.OPERATION_NAME
ARITH_MULI = arith.MulIOp.OPERATION_NAME
ARITH_ORI = arith.OrIOp.OPERATION_NAME
ARITH_SELECT = arith.SelectOp.OPERATION_NAME
ARITH_SUBI = arith.SubIOp.OPERATION_NAME
ARITH_TRUNCF = arith.TruncFOp.OPERATION_NAME
ARITH_XORI = arith.XOrIOp.OPERATION_NAME
CF_ASSERT = cf.AssertOp.OPERATION_NAME
LINALG_BATCH_MATMUL = linalg.BatchMatmulOp.OPERATION_NAME
LINALG_BROADCAST = linalg.BroadcastOp.OPERATION_NAME
LINALG_COPY = linalg.CopyOp.OPERATION_NAME
LINALG_ELEMENTWISE = linalg.ElementwiseOp.OPERATION_NAME
LINALG_FILL = linalg.FillOp.OPERATION_NAME
LINALG_GENERIC = linalg.GenericOp.OPERATION_NAME
LINALG_INDEX = linalg.IndexOp.OPERATION_NAME
LINALG_MAP = linalg.MapOp.OPERATION_NAME
LINALG_MATMUL = linalg.MatmulOp.OPERATION_NAME
LINALG_PACK = linalg.PackOp.OPERATION_NAME
LINALG_TRANSPOSE = linalg.TransposeOp.OPERATION_NAME
LINALG_UNPACK = linalg.UnPackOp.OPERATION_NAME
LINALG_YIELD = linalg.YieldOp.OPERATION_NAME
TENSOR_CAST = tensor.CastOp.OPERATION_NAME
TENSOR_COLLAPSE_SHAPE = tensor.CollapseShapeOp.OPERATION_NAME
TENSOR_DIM = tensor.DimOp.OPERATION_NAME
TENSOR_EMPTY = tensor.EmptyOp.OPERATION_NAME
TENSOR_EXPAND_SHAPE = tensor.ExpandShapeOp.OPERATION_NAME
TENSOR_EXTRACT = tensor.ExtractOp.OPERATION_NAME
TENSOR_EXTRACT_SLICE = tensor.ExtractSliceOp.OPERATION_NAME
TENSOR_FROM_ELEMENTS = tensor.FromElementsOp.OPERATION_NAME
TENSOR_INSERT_SLICE = tensor.InsertSliceOp.OPERATION_NAME
TENSOR_RESHAPE = tensor.ReshapeOp.OPERATION_NAME


FUNC_OPS = ("util.func", "func.func")
LINALG_EXT_PREFIX = "iree_linalg_ext."
RESHAPES = (TENSOR_EXPAND_SHAPE, TENSOR_COLLAPSE_SHAPE)


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def capsule_address(capsule) -> int:
    """The address behind a binding object's `_CAPIPtr` capsule (an op, attribute or
    location): its identity while it lives."""
    return _capsule_pointer(capsule, _capsule_name(capsule))


def uniqued_cached(cache: contextvars.ContextVar[dict | None], obj, compute):
    """`compute(obj)` for a uniqued binding object (an attribute or a location: one object
    per address in a context), remembered in `cache` by address while the cache is open
    (a dict in the context variable, e.g. for one pass run); computed afresh otherwise."""
    found = cache.get()
    if found is None:
        return compute(obj)
    key = capsule_address(obj._CAPIPtr)
    value = found.get(key)
    if value is None:
        value = found[key] = compute(obj)
    return value


def attribute_fact(attr: ir.Attribute | ir.Type, compute):
    """`compute(attr)` for a uniqued attribute or type (maps, iterator types, tensor types:
    the same few in every layer), remembered while `ATTRIBUTE_TEXTS` is open (one pass run
    on one module), keyed by the function and the attribute (attributes and types hash and
    compare by their uniqued storage: no ctypes call); computed afresh otherwise. `compute`
    must be a module-level function."""
    found = ATTRIBUTE_TEXTS.get()
    if found is None:
        return compute(attr)
    key = (compute, attr)
    value = found.get(key)
    if value is None:
        value = found[key] = compute(attr)
    return value


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


# ---------------------------------------------------------------- values and ops


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


def has_dynamic_offsets(op: ir.Operation) -> bool:
    """A slice op (extract_slice / insert_slice) with an offset or stride given at run time."""
    return any(ir.ShapedType.is_dynamic_size(v) for name in ("static_offsets", "static_strides")
               for v in i64_array(op, name))


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
    if op.name in (ARITH_CONSTANT, "flow.tensor.constant"):
        return True
    return op.name == "util.global.load" and "is_immutable" in op.attributes


def mutable_global_read(value: ir.Value) -> str | None:
    """The symbol of the mutable `util.global` the value is loaded from, through reshapes
    and casts (None: not such a load)."""
    op = defining_op(value)
    while op is not None and op.name in RESHAPES + (TENSOR_CAST,):
        op = defining_op(op.operands[0])
    if op is None or op.name != "util.global.load" or "is_immutable" in op.attributes:
        return None
    return ir.FlatSymbolRefAttr(op.attributes["global"]).value


def is_parameter(value: ir.Value) -> bool:
    """A tensor read from an external parameter (an .irpa / .gguf / .safetensors entry)."""
    op = defining_op(value)
    return (op is not None and op.name == "flow.tensor.constant"
            and "parameter" in str(op.attributes["value"]))


def same_constant(a: ir.Value, b: ir.Value) -> bool:
    """Two `arith.constant`s of one type and value."""
    da, db = defining_op(a), defining_op(b)
    return (da is not None and db is not None and da.name == db.name == ARITH_CONSTANT
            and a.type == b.type and str(da.attributes["value"]) == str(db.attributes["value"]))


# ---------------------------------------------------------------- types and sizes


def tensor_type(value: ir.Value) -> ir.RankedTensorType | None:
    t = value.type
    return t if isinstance(t, ir.RankedTensorType) else None


def static_type(value: ir.Value) -> ir.RankedTensorType | None:
    """The value's ranked tensor type when its shape is static, else None."""
    t = value.type
    return t if isinstance(t, ir.RankedTensorType) and t.has_static_shape else None


def static_shape(value: ir.Value) -> list[int] | None:
    """The shape of a statically shaped ranked tensor value, else None."""
    t = static_type(value)
    return None if t is None else list(t.shape)


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


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
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    return numel(t.shape) * element_bytes(t.element_type)


def value_bytes(values: Sequence[ir.Value]) -> int:
    """Total bytes of statically shaped tensor values (others count 0)."""
    return sum(static_tensor_bytes(v.type) or 0 for v in values)


_LOCATION_KEY = re.compile(r'"([^"]*)":(\d+):(\d+)')


def location_keys(location: ir.Location | None) -> frozenset[str]:
    """The `file:line:col` positions a location names (a fused location names several;
    an unknown one none): what survives of an op in the ops IREE makes from it."""
    if location is None:
        return frozenset()
    return frozenset(f"{f}:{line}:{col}" for f, line, col in _LOCATION_KEY.findall(str(location)))


# ---------------------------------------------------------------- positions in a block


def block_positions(block: ir.Block) -> dict[ir.Operation, int]:
    """op -> its index in the block (a snapshot: recompute after edits)."""
    return {op.operation: i for i, op in enumerate(block.operations)}


def block_ancestor(op: ir.Operation | None, positions: dict) -> ir.Operation | None:
    """The op itself, or its ancestor that is one of `positions` (the block's ops)."""
    while op is not None and op not in positions:
        parent = op.parent
        op = parent.operation if parent is not None and hasattr(parent, "operation") else parent
    return op


def defined_in(value: ir.Value, block: ir.Block) -> bool:
    """The value is a result of an op of `block`, or one of its arguments."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return owner == block
    return owner.operation.block == block


def defined_inside(value: ir.Value, op: ir.Operation | ir.OpView) -> bool:
    """The value is a result of `op` or of an op nested in it, or an argument of one of its
    regions' blocks (e.g. a table a linalg body computes itself, not one it captures)."""
    owner = value.owner
    node = owner.owner if isinstance(owner, ir.Block) else owner.operation
    target = op.operation
    while node is not None:
        node = node.operation if hasattr(node, "operation") else node
        if node == target:
            return True
        node = node.parent
    return False


# ---------------------------------------------------------------- linalg structure


def is_linalg(op: ir.Operation | ir.OpView) -> bool:
    name = op_name(op)
    return name.startswith("linalg.") and name not in (LINALG_YIELD, LINALG_INDEX)


def is_linalg_ext(op: ir.Operation | ir.OpView) -> bool:
    return op_name(op).startswith(LINALG_EXT_PREFIX) and op_name(op) != "iree_linalg_ext.yield"


# linalg ops whose operands are not just ins(...) then outs(...).
_NOT_INS_OUTS = (LINALG_PACK, LINALG_UNPACK)


def _ins_outs(operation: ir.Operation) -> tuple[int, int]:
    """(number of ins, number of outs) of a destination-passing-style op. A linalg op on
    tensors has one init per result after its inputs, so the counts come from the operand
    and result counts (reading `operandSegmentSizes`, a property, costs ~14 us an op)."""
    n_out, n_operands = len(operation.results), len(operation.operands)
    if 0 < n_out <= n_operands and operation.name.startswith("linalg.") and \
            operation.name not in _NOT_INS_OUTS:
        return n_operands - n_out, n_out
    n_in, n_out = segment_sizes(operation)[:2]
    return n_in, n_out


def num_dps_inputs(op: ir.Operation | ir.OpView) -> int:
    """How many `ins(...)` operands a destination-passing-style op has."""
    return _ins_outs(op.operation)[0]


def dps_inputs(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """`ins(...)` operands of a destination-passing-style linalg / linalg_ext op."""
    operation = op.operation
    n_in = _ins_outs(operation)[0]
    return list(operation.operands[:n_in])


def dps_inits(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """`outs(...)` operands of a destination-passing-style op."""
    operation = op.operation
    n_in, n_out = _ins_outs(operation)
    return list(operation.operands[n_in : n_in + n_out])


def indexing_maps(op: ir.Operation | ir.OpView) -> list[ir.AffineMap]:
    """Indexing maps of a linalg op that carries them (generic, matmul, ...), as AffineMaps."""
    return list(attribute_fact(op.operation.attributes["indexing_maps"], _affine_maps))


def _affine_maps(attr: ir.Attribute) -> tuple[ir.AffineMap, ...]:
    return tuple(a.value for a in attr)


def indexing_map_dims(op: ir.Operation | ir.OpView) -> tuple[tuple[int, ...] | None, ...]:
    """`map_dim_positions` of each indexing map (a tuple), read once per distinct maps
    attribute while a pass runs."""
    return attribute_fact(op.operation.attributes["indexing_maps"], _maps_dim_positions)


def indexing_map_texts(op: ir.Operation | ir.OpView) -> tuple[str, ...]:
    """Each indexing map printed (`str(AffineMap)`), once per distinct maps attribute while a
    pass runs."""
    return attribute_fact(op.operation.attributes["indexing_maps"], _map_texts)


def _map_texts(attr: ir.Attribute) -> tuple[str, ...]:
    return tuple(str(m) for m in _affine_maps(attr))


def _maps_dim_positions(attr: ir.Attribute) -> tuple[tuple[int, ...] | None, ...]:
    dims = (map_dim_positions(a.value) for a in attr)
    return tuple(None if d is None else tuple(d) for d in dims)


def has_indexing_maps(op: ir.Operation | ir.OpView) -> bool:
    return "indexing_maps" in op.operation.attributes


_ITERATOR = re.compile(r"<(\w+)>")
# What was computed from uniqued attributes and types while a pass runs on one module (one
# context), keyed by (function, attribute) (`attribute_fact`); pass_base.run_candidates opens
# it. The same few maps, iterator arrays and types recur in every layer.
ATTRIBUTE_TEXTS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "iree_fusions_attribute_texts", default=None)


def iterator_types(op: ir.Operation | ir.OpView) -> list[str]:
    """['parallel', 'reduction', ...]: stored on a generic; for a named op with indexing
    maps, derived (a loop absent from every output map reduces)."""
    operation = op.operation
    if "iterator_types" in operation.attributes:
        # '[#linalg.iterator_type<parallel>, ...]' printed once: reading the array's
        # elements one by one through the bindings costs ~100 us per op.
        return list(attribute_fact(operation.attributes["iterator_types"], _iterator_names))
    maps = indexing_maps(operation)
    n_out = len(dps_inits(operation))
    in_output = {d for m in maps[len(maps) - n_out:] for d in (map_dim_positions(m) or [])}
    return ["parallel" if d in in_output else "reduction" for d in range(maps[0].n_dims)]


def body_block(op: ir.Operation | ir.OpView) -> ir.Block:
    return op.operation.regions[0].blocks[0]


def body_op_names(op: ir.Operation | ir.OpView) -> list[str]:
    return [o.operation.name for o in body_block(op).operations]


def index_dims(op: ir.Operation | ir.OpView) -> set[int]:
    """Loop dims read by `linalg.index` in the body."""
    return {ir.IntegerAttr(b.operation.attributes["dim"]).value
            for b in body_block(op).operations if b.operation.name == LINALG_INDEX}


def body_reads_tensor(op: ir.Operation | ir.OpView) -> bool:
    """The body uses a tensor value (e.g. `tensor.extract` from a table defined outside)."""
    return any(isinstance(v.type, ir.RankedTensorType)
               for b in body_block(op).operations for v in b.operation.operands)


def is_structured(op: ir.Operation | ir.OpView) -> bool:
    """A linalg op with indexing maps, one body block and DPS operands: it can be rebuilt
    as a linalg.generic."""
    operation = op.operation
    return (is_linalg(operation) and has_indexing_maps(operation)
            and "operandSegmentSizes" in operation.attributes
            and len(operation.regions) == 1 and len(operation.regions[0].blocks) == 1)


def loop_ranges(op: ir.Operation | ir.OpView) -> list[int] | None:
    """Static loop ranges of a linalg op with indexing maps, from the static dims of its
    tensor operands; None when a loop's range is not known statically."""
    maps = indexing_maps(op)
    ranges: list[int | None] = [None] * maps[0].n_dims
    for value, m in zip(op.operation.operands, maps):
        t = tensor_type(value)
        if t is None:
            continue
        for e, size in zip(m.results, t.shape):
            if isinstance(e, ir.AffineDimExpr) and not ir.ShapedType.is_dynamic_size(size):
                ranges[e.position] = size
    return None if any(r is None for r in ranges) else ranges  # type: ignore[return-value]


def is_elementwise_generic(op: ir.Operation | ir.OpView) -> bool:
    """A linalg.generic with only parallel loops (maps may permute or broadcast)."""
    operation = op.operation
    return operation.name == LINALG_GENERIC and attribute_fact(
        operation.attributes["iterator_types"], _all_parallel)


def _iterator_names(attr: ir.Attribute) -> tuple[str, ...]:
    return tuple(_ITERATOR.findall(str(attr)))


def _all_parallel(attr: ir.Attribute) -> bool:
    return all(it == "parallel" for it in _iterator_names(attr))


def reads_table_in_body(op: ir.Operation | ir.OpView) -> bool:
    """A generic whose body does `tensor.extract` from a captured tensor: an embedding lookup."""
    return op_name(op) == LINALG_GENERIC and TENSOR_EXTRACT in body_op_names(op)


def is_elementwise(op: ir.Operation | ir.OpView) -> bool:
    """An elementwise generic that computes on its operands (not an embedding lookup)."""
    return is_elementwise_generic(op) and not reads_table_in_body(op)


def is_pure_copy(op: ir.Operation | ir.OpView) -> bool:
    """A generic that only moves its single input to its single output (e.g. a transpose)."""
    if op_name(op) != LINALG_GENERIC or len(dps_inputs(op)) != 1 or len(dps_inits(op)) != 1:
        return False
    block = body_block(op)
    ops = list(block.operations)
    return (len(ops) == 1 and ops[0].operation.name == LINALG_YIELD
            and ops[0].operation.operands[0] == block.arguments[0])


def is_reduction_or_contraction(op: ir.Operation | ir.OpView) -> bool:
    """Non-elementwise linalg / linalg_ext ops: matmul, conv, reduce, generic with reductions."""
    name = op_name(op)
    if is_linalg_ext(op):
        return True
    if not is_linalg(op) or name in (LINALG_FILL, LINALG_COPY, LINALG_BROADCAST,
                                     LINALG_TRANSPOSE, LINALG_MAP, LINALG_ELEMENTWISE):
        return False
    if name == LINALG_GENERIC:
        return "reduction" in iterator_types(op)
    return True  # named structured ops: matmul, batch_matmul, conv_*, pooling_*, reduce, ...


# ---------------------------------------------------------------- affine maps and reshapes


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


def is_permutation(dims: Sequence[int] | None, n: int) -> bool:
    return dims is not None and len(dims) == n and sorted(dims) == list(range(n))


def is_projected_permutation(dims: Sequence[int] | None, n: int) -> bool:
    return dims is not None and len(set(dims)) == len(dims) and all(0 <= d < n for d in dims)


def reassociation(op: ir.Operation) -> list[list[int]]:
    """The reassociation groups of a tensor.expand_shape / collapse_shape."""
    return [[ir.IntegerAttr(i).value for i in group]
            for group in ir.ArrayAttr(op.attributes["reassociation"])]


# ---------------------------------------------------------------- structure for keys


def type_text(value_or_type: ir.Value | ir.Type) -> str:
    """The printed type (each distinct type printed once while a pass runs)."""
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return attribute_fact(t, str)


def op_signature(op: ir.Operation | ir.OpView) -> tuple:
    """What an op is, structurally, for candidate keys: name, operand and result types,
    indexing maps, iterator types and the names of its body ops (no SSA names, no
    locations, no constant values)."""
    operation = op.operation
    maps = indexing_map_texts(operation) if has_indexing_maps(operation) else ()
    body = ()
    if len(operation.regions) and len(operation.regions[0].blocks):
        body = tuple(b.operation.name for b in operation.regions[0].blocks[0].operations)
    iters = (tuple(iterator_types(operation))
             if "iterator_types" in operation.attributes or is_structured(operation) else ())
    return (operation.name, tuple(type_text(v) for v in operation.operands),
            tuple(type_text(r) for r in operation.results), maps, iters, body)


# ---------------------------------------------------------------- devices


# Dialects whose ops never carry a device affinity (IREE places affinities on flow, stream,
# hal and util ops: its AffinityOpInterface): their attributes are not read.
_NO_AFFINITY = ("linalg.", "tensor.", "arith.", "math.", "iree_linalg_ext.")


def _own_affinities(op: ir.Operation) -> set[str]:
    out: set[str] = set()
    if op.name.startswith(_NO_AFFINITY):
        return out
    for name in attr_names(op):
        attr = op.attributes[name]
        if type(attr) is not ir.Attribute:
            continue  # a builtin attribute (the bindings give its own class): never a device
        text = str(attr)
        if text.startswith(("#hal.device.affinity", "#hal.device.promise")):
            out.add(text)
    return out


def block_placements(block: ir.Block) -> dict[ir.Operation, frozenset[str]]:
    """Op -> the device affinities its inputs come from, for multi-device programs.

    A `flow.tensor.transfer` (or any op with a `#hal.device.affinity` attribute, e.g. an
    import on a device) places its result on that device; other ops inherit the placements
    of the values they read (operands, and values their bodies capture). Passes group only
    ops with equal placements, so nothing placed on different devices is merged. Empty sets
    everywhere in single-device programs."""
    ops = [op.operation for op in block.operations]
    owns = [_own_affinities(op) for op in ops]
    if not any(owns):  # no op names a device: nothing to propagate
        return dict.fromkeys(ops, frozenset())
    out: dict[ir.Operation, frozenset[str]] = {}
    for op, own in zip(ops, owns):
        if op.name == "flow.tensor.transfer":
            out[op] = frozenset(own)
            continue
        found = set(own)
        for v in _read_values(op):
            d = defining_op(v)
            if d is not None and d in out:
                found |= out[d]
        out[op] = frozenset(found)
    return out


def _read_values(op: ir.Operation) -> list[ir.Value]:
    """The op's operands and the values its regions use from outside."""
    values = list(op.operands)
    for nested in walk_ops(op):
        values += [v for v in nested.operands if not defined_inside(v, op)]
    return values


# ---------------------------------------------------------------- dynamic dims (read only)

# Ops whose one tensor result carries its dynamic dims as (trailing) `index` operands.
SHAPE_CARRIERS = (TENSOR_EMPTY, "flow.tensor.tie_shape", "iree_tensor_ext.compute_barrier.start",
                  "hal.tensor.import", "flow.tensor.constant", "flow.tensor.reshape",
                  TENSOR_EXPAND_SHAPE)
# A size IREE holds somewhere: static, the index value of a dynamic dim, or (tensor, dim) when
# no op in reach carries it (a `tensor.dim` would give it).
DimKey = int | ir.Value | tuple[ir.Value, int]


def dim_key(value: ir.Value, dim: int) -> DimKey:
    """A hashable name of a ranked tensor's dim, read without building anything: equal keys
    are equal sizes. Its static size; or the index value IREE holds for a dynamic one (an
    operand of the op that made the tensor: `tensor.empty`, `flow.tensor.tie_shape`,
    compute barriers, `hal.tensor.import`; a destination-passing op's init's dim); or
    (tensor, dim) when no op in reach carries it (a `tensor.dim` of it has the same key)."""
    t = tensor_type(value)
    if not ir.ShapedType.is_dynamic_size(t.shape[dim]):
        return t.shape[dim]
    op = defining_op(value)
    if op is None:
        return (value, dim)
    if op.name in SHAPE_CARRIERS and len(op.results) == 1:
        dyn = [i for i, x in enumerate(t.shape) if ir.ShapedType.is_dynamic_size(x)]
        # The result's dims come last (flow.tensor.reshape lists the source's first).
        sizes = [v for v in op.operands if isinstance(v.type, ir.IndexType)]
        if len(sizes) >= len(dyn):
            return size_key(sizes[len(sizes) - len(dyn) + dyn.index(dim)])
    elif op.name == TENSOR_CAST and tensor_type(op.operands[0]).rank == t.rank:
        return dim_key(op.operands[0], dim)
    elif op.name == TENSOR_EXTRACT_SLICE:
        size = _slice_size_value(op, dim)
        if size is not None:
            return size_key(size)
    elif op.name == TENSOR_COLLAPSE_SHAPE:
        # A dynamic dim that only absorbed unit dims is its one non-unit source dim.
        group = reassociation(op)[dim]
        src = tensor_type(op.operands[0]).shape
        big = [d for d in group if src[d] != 1]
        if len(big) == 1:
            return dim_key(op.operands[0], big[0])
    elif "operandSegmentSizes" in op.attributes and \
            op.name.startswith(("linalg.", LINALG_EXT_PREFIX)):
        inits = dps_inits(op)
        i = result_index(value)
        if i < len(inits):
            return dim_key(inits[i], dim)
    return (value, dim)


def _slice_size_value(op: ir.Operation, dim: int) -> ir.Value | None:
    """The index value giving dim `dim` of an extract_slice's (maybe rank-reduced) result:
    its dynamic size operand for the source dim that result dim keeps."""
    sizes = i64_array(op, "static_sizes")
    shape = tensor_type(op.results[0]).shape
    kept, r = [], 0
    for d, size in enumerate(sizes):  # dims of size 1 the result drops, left to right
        if r < len(shape) and (len(sizes) - d > len(shape) - r - 1 or size != 1) and \
                (size == shape[r] or ir.ShapedType.is_dynamic_size(size)):
            kept.append(d)
            r += 1
    if len(kept) != len(shape) or not ir.ShapedType.is_dynamic_size(sizes[kept[dim]]):
        return None
    n_offsets = segment_sizes(op)[1]
    k = sum(ir.ShapedType.is_dynamic_size(x) for x in sizes[:kept[dim]])
    return list(op.operands)[1 + n_offsets + k]


def size_text(key: DimKey) -> str:
    """A size for a reason: the number, or what it is read from (`dim 0 of argument 3`,
    `dim 0 of %ids`), else the value that holds it (`%3`)."""
    if isinstance(key, int):
        return str(key)
    if isinstance(key, tuple):
        return f"dim {key[1]} of {_value_text(key[0])}"
    op = defining_op(key)
    if op is not None and op.name == "util.assume.int":
        return size_text(size_key(op.operands[0]))
    if op is not None and op.name == "hal.buffer_view.dim":
        dim = op.attributes["index"].value if "index" in op.attributes else "?"
        return f"dim {dim} of {_value_text(op.operands[0])}"
    return key.get_name()


def _value_text(value: ir.Value) -> str:
    """`argument N` for a function argument, else the value's name."""
    if isinstance(value.owner, ir.Block):
        return f"argument {ir.BlockArgument(value).arg_number}"
    return value.get_name()


def dim_value(value: ir.Value, dim: int) -> int | ir.Value | None:
    """Dim `dim` of a ranked tensor as a static size or the index value IREE already holds
    for it (see dim_key); None when only a new `tensor.dim` would give it."""
    key = dim_key(value, dim)
    return None if isinstance(key, tuple) else key


def size_key(value: ir.Value) -> DimKey:
    """The key (see dim_key) of an index value used as a size: a `tensor.dim` of a tensor
    names that tensor's dim, so that two reads of one size compare equal."""
    op = defining_op(value)
    if op is not None and op.name == TENSOR_DIM:
        at = const_int(op.operands[1])
        if at is not None:
            return dim_key(op.operands[0], at)
    return value


def shape_keys(value: ir.Value) -> tuple[DimKey, ...]:
    return tuple(dim_key(value, d) for d in range(tensor_type(value).rank))


def assumed_max(size: DimKey) -> int | None:
    """The upper bound IREE carries for a size (`util.assume.int` umax, the largest over
    its assumption rows), or the size itself when static; None when unknown."""
    if isinstance(size, int):
        return size
    if not isinstance(size, ir.Value):
        return None
    op = defining_op(size)
    if op is None or op.name != "util.assume.int":
        return None
    import re

    bounds = [int(m) for m in re.findall(r"umax\s*=\s*(\d+)", str(op.attributes["assumptions"]))]
    rows = str(op.attributes["assumptions"]).count("#util.int.assumption")
    return max(bounds) if bounds and len(bounds) == rows else None


def estimated_size(size: DimKey, default: int) -> int:
    """A size for cost models: static, else the `util.assume.int` umax IREE carries for it,
    else `default`."""
    bound = assumed_max(size)
    return default if bound is None else bound


def estimated_numel(value: ir.Value, default: int) -> int:
    """Elements of a ranked tensor, dynamic dims counted as estimated_size."""
    return numel([estimated_size(k, default) for k in shape_keys(value)])


def estimated_bytes(value: ir.Value, default: int) -> int:
    """Bytes of a ranked tensor, dynamic dims counted as estimated_size."""
    return estimated_numel(value, default) * element_bytes(tensor_type(value).element_type)


def loop_keys(op: ir.Operation | ir.OpView) -> list[DimKey] | None:
    """Per loop of a linalg op with indexing maps, the key (see dim_key) of a tensor dim it
    ranges over (a static one when an operand has it); None when a loop reads no tensor dim."""
    maps = indexing_maps(op)
    keys: list[DimKey | None] = [None] * maps[0].n_dims
    for value, m in zip(op.operation.operands, maps):
        if tensor_type(value) is None:
            continue
        for pos, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr) and not isinstance(keys[e.position], int):
                key = dim_key(value, pos)
                if keys[e.position] is None or isinstance(key, int):
                    keys[e.position] = key
    return None if any(k is None for k in keys) else keys  # type: ignore[return-value]


def dominates(value: ir.Value, op: ir.Operation | ir.OpView) -> bool:
    """`value` is available at `op`: a block argument or result of an op in a block enclosing
    `op`, defined before it (before its ancestor in that block)."""
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    node = op.operation
    while node is not None and node.block != block:
        parent = node.parent
        node = parent.operation if parent is not None and hasattr(parent, "operation") else None
    if node is None:
        return False
    if isinstance(owner, ir.Block):
        return True
    defining = owner.operation
    for other in block.operations:
        other = other.operation
        if other == defining:
            return other != node
        if other == node:
            return False
    return False
