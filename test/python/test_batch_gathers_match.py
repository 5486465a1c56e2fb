"""match_generic_lookup's checks, each on a generic that fails it alone (a lookup the IR
verifier admits but the pass does not model): the reason is the check's; the lookup as
built matches. These are the checks no lit case reached (test/decline_coverage.py)."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_EXT_GATHER, LINALG_GENERIC
from iree_fusions.passes.batch_gathers.match import match_generic_lookup
from support.matchers import last_op, matches_or_declines, parsed

# A row lookup: out[b, d] = table[ids[b], d], with the parts each case replaces.
LOOKUP = """util.func public @f(%ids: tensor<4xIDT>, %table: tensor<10xTROWxf32>)
    -> tensor<4xOROWxf32> {
  %e = tensor.empty() : tensor<4xOROWxf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "ITER"]} ins(%ids : tensor<4xIDT>) outs(%e : tensor<4xOROWxf32>) {
  ^bb0(%i: IDT, %o: f32):
    %row = arith.index_cast ROWSRC : IDT to index
    %col = linalg.index COLDIM : index
    %v = tensor.extract %table[%row, %col] : tensor<10xTROWxf32>
    YIELD
  } -> tensor<4xOROWxf32>
  util.return %r : tensor<4xOROWxf32>
}"""
BASE = {"IDT": "i64", "TROW": "8", "OROW": "8", "ITER": "parallel", "ROWSRC": "%i",
        "COLDIM": "1", "YIELD": "linalg.yield %v : f32"}


@pytest.mark.parametrize("change, reason", [
    ({}, None),
    ({"ITER": "reduction"}, "lookup generic has a reduction"),
    ({"%row = arith.index_cast ROWSRC : IDT to index":
      "%rowi = arith.fptosi %i : f32 to i64\n    %row = arith.index_cast %rowi : i64 to index",
      "IDT": "f32"}, "index tensor is not integer"),
    ({"YIELD": "%z = arith.addf %v, %o : f32\n    linalg.yield %z : f32"}, "body reads the output"),
    ({"ROWSRC": "%c0i",
      "^bb0(%i: IDT, %o: f32):": "^bb0(%i: IDT, %o: f32):\n    %c0i = arith.constant 0 : i64"},
     "row is not the index input"),
    ({"OROW": "6"}, "result rows do not match the table's rows"),
    ({"ins(%ids : tensor<4xIDT>)": "ins(%ids, %ids : tensor<4xIDT>, tensor<4xIDT>)",
      "indexing_maps = [": "indexing_maps = [affine_map<(d0, d1) -> (d0)>, ",
      "^bb0(%i: IDT, %o: f32):": "^bb0(%i: IDT, %j: IDT, %o: f32):"},
     "expects one index input and one output"),
    ({"    YIELD": "    %w = tensor.extract %table[%row, %col] : tensor<10xTROWxf32>\n    YIELD"},
     "body has no single tensor.extract"),
    ({"%v = tensor.extract %table[%row, %col] : tensor<10xTROWxf32>":
      "%v = tensor.extract %vec[%row] : tensor<10xf32>",
      "%table: tensor<10xTROWxf32>)": "%table: tensor<10xTROWxf32>, %vec: tensor<10xf32>)"},
     "extract is not from a captured 2-d table"),
    ({"YIELD": "linalg.yield %half : f32",
      "  %e = tensor.empty()": "  %half = arith.constant 0.5 : f32\n  %e = tensor.empty()"},
     "body does not yield the extracted element"),
], ids=["lookup", "reduction", "float-ids", "reads-output", "constant-row", "narrow-rows",
        "two-inputs", "two-extracts", "a-1-d-table", "yields-another-value"])
def test_each_check_of_a_generic_lookup(change, reason):
    text = LOOKUP
    for key, value in change.items():
        text = text.replace(key, value)
    for key, value in BASE.items():
        text = text.replace(key, value)
    with ir.Context():
        module = parsed(text)
        op = last_op(module, LINALG_GENERIC)
        matches_or_declines(lambda: match_generic_lookup(op), reason)


GATHER = """util.func public @g(%t: tensor<ROWSx4xf32>, %i: tensor<6xi64>) -> tensor<6x4xf32> {
  %e = tensor.empty() : tensor<6x4xf32>
  %g = iree_linalg_ext.gather dimension_map = [0] ins(%t, %i : tensor<ROWSx4xf32>, tensor<6xi64>) outs(%e : tensor<6x4xf32>) -> tensor<6x4xf32>
  util.return %g : tensor<6x4xf32>
}"""


@pytest.mark.parametrize("rows, reason", [
    ("10", None),
    ("?", "the source's shape tensor<?x4xf32> is dynamic (a table's rows and columns are "
          "stacked at load: they must be static)"),
])
def test_an_ext_gather_of_rows(rows, reason):
    """iree_linalg_ext.gather of a table's rows: matched; of a table whose rows are known only
    at run time: declined (the stack of tables is built at load)."""
    from iree_fusions.passes.batch_gathers.match import match_ext_gather

    with ir.Context():
        module = parsed(GATHER.replace("ROWS", rows))
        op = last_op(module, LINALG_EXT_GATHER)
        lookup = matches_or_declines(lambda: match_ext_gather(op), reason)
        if reason is None:
            assert (lookup.rows, lookup.dim) == (10, 4)
