"""Tensor types, static shapes, element and byte sizes."""

from __future__ import annotations

import math
from collections.abc import Sequence

from iree.compiler import ir


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
