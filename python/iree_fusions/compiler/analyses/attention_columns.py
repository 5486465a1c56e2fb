"""Which value columns of an `iree_linalg_ext.attention`'s result are read, shared by
rewrite-attention (which then computes only those) and forward-slices (which leaves such a
slice to it): sharktank's MLA export (DeepSeek) pads v's head dim 128 to q's 192 and slices
the output back.

    %o = iree_linalg_ext.attention ... outs(%e : tensor<16x?x192xf16>)
    %x = tensor.expand_shape %o [[0, 1], [2], [3]] : ... into tensor<4x4x?x192xf16>
    %s = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, %n, 128] [1, 1, 1, 1]   (the one reader)
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (LINALG_EXT_ATTENTION, TENSOR_EXPAND_SHAPE,
                                              TENSOR_EXTRACT_SLICE)


@dataclass(frozen=True)
class ReadColumns:
    """The attention's result is read only as its first `width` columns of its last dim: by
    one `slice` at offset 0 with unit strides, whole in every other dim (it may drop unit
    dims), directly or through one `expand` whose last group is that dim alone."""

    width: int
    expand: ir.Operation | None
    slice: ir.Operation


def read_columns(result: ir.Value) -> ReadColumns | None:
    """The first columns of `result`'s last dim that its one reader reads, or None."""
    full = h.tensor_type(result).shape[-1]
    if ir.ShapedType.is_dynamic_size(full):
        return None
    value, readers = result, h.users(result)
    expand = readers[0] if len(readers) == 1 and readers[0].name == TENSOR_EXPAND_SHAPE else None
    if expand is not None:
        if h.reassociation(expand)[-1] != [h.tensor_type(expand.results[0]).rank - 1]:
            return None
        value = expand.results[0]
        readers = h.users(value)
    if len(readers) != 1 or readers[0].name != TENSOR_EXTRACT_SLICE:
        return None
    cut = readers[0]
    offsets, _, strides = h.static_parts(cut)
    sizes = h.slice_sizes(cut)
    if any(o != 0 for o in offsets) or any(s != 1 for s in strides):
        return None
    width = sizes[-1]
    if not isinstance(width, int) or not 0 < width < full or any(
            not _whole(size, value, d) for d, size in enumerate(sizes[:-1])):
        return None
    return ReadColumns(width, expand, cut)


def _whole(size: int | ir.Value, value: ir.Value, dim: int) -> bool:
    """A slice size that is the whole of `value`'s dim `dim`: its `dim_key` (the static size
    of a static dim; a dynamic dim's key never equals an int)."""
    return (size if isinstance(size, int) else h.size_key(size)) == h.dim_key(value, dim)


def is_attention_column_slice(op: ir.Operation) -> bool:
    """`op` is the slice `read_columns` finds for an attention's result."""
    source = h.defining_op(op.operands[0])
    if source is not None and source.name == TENSOR_EXPAND_SHAPE:
        source = h.defining_op(source.operands[0])
    if source is None or source.name != LINALG_EXT_ATTENTION:
        return False
    found = read_columns(source.results[0])
    return found is not None and found.slice == op
