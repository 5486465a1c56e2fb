"""Dynamic dims read as keys, without building anything: equal keys are equal sizes; the
sizes IREE assumes at most, and estimates of sizes and bytes."""

from __future__ import annotations

from iree.compiler import ir

from .names import (
    LINALG_EXT_PREFIX, TENSOR_CAST, TENSOR_COLLAPSE_SHAPE, TENSOR_DIM,
    TENSOR_EMPTY, TENSOR_EXPAND_SHAPE, TENSOR_EXTRACT_SLICE, FLOW_TENSOR_CONSTANT
)
from .locations import describe_value
from .maps import reassociation
from .structure import dps_inits, indexing_maps
from .types import element_bytes, numel, tensor_type
from .values import const_int, defining_op, i64_array, result_index, segment_sizes
from .names import (
    COMPUTE_BARRIER_START, FLOW_TENSOR_RESHAPE, FLOW_TENSOR_TIE_SHAPE, HAL_BUFFER_VIEW_DIM,
    HAL_TENSOR_IMPORT, UTIL_ASSUME_INT,
)

# Ops whose one tensor result carries its dynamic dims as (trailing) `index` operands.
SHAPE_CARRIERS = (TENSOR_EMPTY, FLOW_TENSOR_TIE_SHAPE, COMPUTE_BARRIER_START,
                  HAL_TENSOR_IMPORT, FLOW_TENSOR_CONSTANT, FLOW_TENSOR_RESHAPE,
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
    elif op.name.startswith(("linalg.", LINALG_EXT_PREFIX)) and \
            ("operandSegmentSizes" in op.attributes or op.name.startswith(LINALG_EXT_PREFIX)):
        inits = dps_inits(op)  # (linalg_ext: no segment sizes, the inits last)
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
    if op is not None and op.name == UTIL_ASSUME_INT:
        return size_text(size_key(op.operands[0]))
    if op is not None and op.name == HAL_BUFFER_VIEW_DIM:
        dim = op.attributes["index"].value if "index" in op.attributes else "?"
        return f"dim {dim} of {_value_text(op.operands[0])}"
    return _value_text(key)


def _value_text(value: ir.Value) -> str:
    """`argument N` for a function argument, else what makes the value and where (cheap:
    Value.get_name() numbers every value of the function: bench/results/code-costs.md)."""
    if isinstance(value.owner, ir.Block):
        return f"argument {ir.BlockArgument(value).arg_number}"
    return describe_value(value)


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
    if op is None or op.name != UTIL_ASSUME_INT:
        return None
    import re

    bounds = [int(m) for m in re.findall(r"umax\s*=\s*(\d+)", str(op.attributes["assumptions"]))]
    rows = str(op.attributes["assumptions"]).count("#util.int.assumption")
    return max(bounds) if bounds and len(bounds) == rows else None


# What a dynamic dim without a `util.assume.int` umax counts as in the passes' estimates, in
# one place. A threshold or a ranking (gathers' minimum index counts, towers' stack bytes,
# the interchange's producer ranking) counts a typical size; a cost model that must pay at
# the largest size (forward-factory-ops: recomputing scales like the bytes it saves, the
# per-dispatch term does not) counts a long sequence. Each pass's option of its own overrides.
TYPICAL_DYNAMIC_DIM = 64
LONG_DYNAMIC_DIM = 1024


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
