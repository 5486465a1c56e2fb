"""compiler/analyses/attention_columns.py: which value columns of an attention's result its
one reader reads. Only a slice of the first columns, at offset 0 with unit strides, whole in every other
dim, directly or through one expand whose last group is the value dim alone, is found; every
other reader (all the columns, an offset, a stride, a partial or unknown other dim, a dynamic
width, two readers, an expand splitting the value dim) is not."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.analyses.attention_columns import is_attention_column_slice, read_columns

MAPS = ("affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
        "affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, "
        "affine_map<(d0, d1, d2, d3) -> (d0, d1)>")
DECODE = """util.func public @f(%q: tensor<16x192xf16>, %k: tensor<16x?x192xf16>,
                        %v: tensor<16x192x?xf16>, %w: index) -> ({result}) {{
  %scale = arith.constant 0.0625 : f32
  %e = tensor.empty() : tensor<16x192xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [{maps}]> ins(%q, %k, %v, %scale : tensor<16x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32) outs(%e : tensor<16x192xf16>) {{
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  }} -> tensor<16x192xf16>
  {reader}
}}"""
PREFILL_MAPS = ("affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, "
                "affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, "
                "affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, "
                "affine_map<(d0, d1, d2, d3, d4) -> ()>, "
                "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>")
PREFILL = """util.func public @f(%q: tensor<16x?x192xf16>, %k: tensor<16x?x192xf16>,
                        %v: tensor<16x192x?xf16>, %other: tensor<?xf16>) -> tensor<4x4x?x128xf16> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<16x?x192xf16>
  %n = tensor.dim %other, %c0 : tensor<?xf16>
  %scale = arith.constant 0.0625 : f32
  %e = tensor.empty(%m) : tensor<16x?x192xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [{maps}]> ins(%q, %k, %v, %scale : tensor<16x?x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32) outs(%e : tensor<16x?x192xf16>) {{
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  }} -> tensor<16x?x192xf16>
  %x = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [4, 4, %m, 192] : tensor<16x?x192xf16> into tensor<4x4x?x192xf16>
  %cols = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, {rows}, 128] [1, 1, 1, 1] : tensor<4x4x?x192xf16> to tensor<4x4x?x128xf16>
  util.return %cols : tensor<4x4x?x128xf16>
}}"""

EXPANDED = """%x = tensor.expand_shape %o [[0, 1, 2], [3]] output_shape [4, 4, 1, 192] : tensor<16x192xf16> into tensor<4x4x1x192xf16>
  %cols = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, 1, 128] [1, 1, 1, 1] : tensor<4x4x1x192xf16> to tensor<4x4x128xf16>
  util.return %cols : tensor<4x4x128xf16>"""


def _slice(offsets: str, sizes: str, strides: str, out: str) -> str:
    return (f"%cols = tensor.extract_slice %o[{offsets}] [{sizes}] [{strides}] : "
            f"tensor<16x192xf16> to {out}\n  util.return %cols : {out}")


def _found(text: str):
    """(width, whether through an expand, is_attention_column_slice of each slice)."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        ops = [op for op in module.body.operations[0].regions[0].blocks[0].operations]
        attention = next(op for op in ops if op.operation.name == "iree_linalg_ext.attention")
        slices = [op.operation for op in ops if op.operation.name == "tensor.extract_slice"]
        found = read_columns(attention.results[0])
        marks = [is_attention_column_slice(s) for s in slices]
        if found is None:
            return None, marks
        assert found.slice == slices[-1]
        return (found.width, found.expand is not None), marks


@pytest.mark.parametrize("reader, want", [
    (EXPANDED, (128, True)),
    (_slice("0, 0", "16, 128", "1, 1", "tensor<16x128xf16>"), (128, False)),
    (_slice("0, 0", "16, 1", "1, 1", "tensor<16x1xf16>"), (1, False)),
    # every column: the slice ends exactly at the extent (nothing to leave out)
    (_slice("0, 0", "16, 192", "1, 1", "tensor<16x192xf16>"), None),
    (_slice("0, 64", "16, 128", "1, 1", "tensor<16x128xf16>"), None),  # not the first
    (_slice("0, 0", "16, 64", "1, 2", "tensor<16x64xf16>"), None),  # strided columns
    (_slice("0, 0", "8, 128", "2, 1", "tensor<8x128xf16>"), None),  # strided rows
    (_slice("0, 0", "8, 128", "1, 1", "tensor<8x128xf16>"), None),  # part of the rows
    (_slice("8, 0", "8, 128", "1, 1", "tensor<8x128xf16>"), None),  # rows at an offset
    (_slice("0, 0", "16, %w", "1, 1", "tensor<16x?xf16>"), None),  # a dynamic width
    # two readers
    (_slice("0, 0", "16, 128", "1, 1", "tensor<16x128xf16>").replace(
        "util.return %cols : tensor<16x128xf16>",
        "%two = tensor.extract_slice %o[0, 0] [16, 64] [1, 1] : tensor<16x192xf16> to "
        "tensor<16x64xf16>\n  util.return %cols : tensor<16x128xf16>"), None),
    # an expand that splits the value dim
    ("""%x = tensor.expand_shape %o [[0], [1, 2]] output_shape [16, 2, 96] : tensor<16x192xf16> into tensor<16x2x96xf16>
  %cols = tensor.extract_slice %x[0, 0, 0] [16, 2, 64] [1, 1, 1] : tensor<16x2x96xf16> to tensor<16x2x64xf16>
  util.return %cols : tensor<16x2x64xf16>""", None),
])
def test_read_columns_of_a_decode(reader, want):
    result = reader.split("util.return %cols : ")[1]
    found, marks = _found(DECODE.format(maps=MAPS, reader=reader, result=result))
    assert found == want
    assert marks[-1] == (want is not None)


@pytest.mark.parametrize("rows, want", [("%m", (128, True)), ("%n", None)])
def test_a_dynamic_dim_is_whole_only_as_the_results_own(rows, want):
    """The slice's dynamic size is the attention's own query length (tensor.dim of q, the
    size the expand gives): whole; another value of the same type: not known whole."""
    found, marks = _found(PREFILL.format(maps=PREFILL_MAPS, rows=rows))
    assert found == want and marks == [want is not None]
