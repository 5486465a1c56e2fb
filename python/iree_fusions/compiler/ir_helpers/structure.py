"""Linalg structure: DPS operands, indexing maps, iterator types, bodies, elementwise /
reduction / copy kinds, and the structural signature candidate keys are made of."""

from __future__ import annotations

import re

from iree.compiler import ir

from .caching import attribute_fact
from .maps import map_dim_positions
from .names import (
    LINALG_BROADCAST, LINALG_COPY, LINALG_ELEMENTWISE, LINALG_EXT_PREFIX, LINALG_EXT_YIELD,
    LINALG_FILL,
    LINALG_GENERIC, LINALG_INDEX, LINALG_MAP, LINALG_PACK, LINALG_TRANSPOSE, LINALG_UNPACK,
    LINALG_YIELD, TENSOR_EXTRACT,
)
from .types import tensor_type
from .values import op_name, segment_sizes


def is_linalg(op: ir.Operation | ir.OpView) -> bool:
    name = op_name(op)
    return name.startswith("linalg.") and name not in (LINALG_YIELD, LINALG_INDEX)


def is_linalg_ext(op: ir.Operation | ir.OpView) -> bool:
    return op_name(op).startswith(LINALG_EXT_PREFIX) and op_name(op) != LINALG_EXT_YIELD


# linalg ops whose operands are not just ins(...) then outs(...).
_NOT_INS_OUTS = (LINALG_PACK, LINALG_UNPACK)


def _ins_outs(operation: ir.Operation) -> tuple[int, int]:
    """(number of ins, number of outs) of a destination-passing-style op. A linalg op on
    tensors has one init per result after its inputs, so the counts come from the operand
    and result counts (reading `operandSegmentSizes`, a property, costs far more:
    bench/results/code-costs.md); so do IREE 3.13's linalg_ext ops, which carry no segment
    sizes (attention, gather, scatter: their inits last, one per result)."""
    name = operation.name
    n_out, n_operands = len(operation.results), len(operation.operands)
    if 0 < n_out <= n_operands and (
            name.startswith("linalg.") and name not in _NOT_INS_OUTS or
            name.startswith(LINALG_EXT_PREFIX) and
            "operandSegmentSizes" not in operation.attributes):
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
    """A linalg op that reduces: matmul, conv, pooling, reduce, a generic with a reduction
    loop (not a linalg_ext op: `is_dispatch_root`)."""
    name = op_name(op)
    if not is_linalg(op) or name in (LINALG_FILL, LINALG_COPY, LINALG_BROADCAST,
                                     LINALG_TRANSPOSE, LINALG_MAP, LINALG_ELEMENTWISE):
        return False
    if name == LINALG_GENERIC:
        return "reduction" in iterator_types(op)
    return True  # named structured ops: matmul, batch_matmul, conv_*, pooling_*, reduce, ...


def is_dispatch_root(op: ir.Operation | ir.OpView) -> bool:
    """An op IREE makes the root of a dispatch: a linalg reduction or contraction, or any
    linalg_ext op (attention, scatter, gather, sort, ...)."""
    return is_linalg_ext(op) or is_reduction_or_contraction(op)


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
