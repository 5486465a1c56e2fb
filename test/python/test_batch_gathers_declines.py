"""batch-gathers' checks no lit case reached, each on IR the verifier admits that fails it
alone: the lookup matcher's (a two-result or scalar-index generic, an unknown bounds check, a
buffer or index-depth-only `iree_linalg_ext.gather`: declined by `match_lookup` and reported
by the pass), the same-table bags whose dynamic batches are not known equal, and the concat
writer's (a narrow run of lookup slots, narrow widths at B = 1, a slot whose rows are not
known to be the batch); and the shared cache-scatter plan's update types and, under
aggressive fusion, row counts (merge-cache-scatters). Each case's unchanged form is matched,
merged or written, so every test can fail; the decline is asserted by its code."""

# ruff: noqa: E501  (IR lines in the test programs)

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_EXT_GATHER, LINALG_GENERIC
from iree_fusions.compiler.pipeline import parse_pipeline, run_pipeline
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.passes.batch_gathers.match import is_lookup_like, match_lookup
from support import passes
from support.batch_gathers import LOW, PASS
from support.matchers import last_op, parsed


def _skip_codes(text: str, pipeline: str) -> list[str | None]:
    _, (report,) = passes.run_pass(text, pipeline)
    return [skip.code for skip in report.skipped]


# ---------------------------------------------------------------- lookups (match.py)

# A bounds-checked row lookup: out[b, d] = table[ids[b], d].
LOOKUP = """util.func public @f(%ids: tensor<4xi64>, %table: tensor<10x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = arith.index_cast %i : i64 to index
    %col = linalg.index 1 : index
    %n = arith.constant BOUND : i64
    %lt = arith.cmpi slt, %i, %n : i64
    cf.assert %lt, "index must be smaller than dim size"
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  util.return %r : tensor<4x8xf32>
}"""
UPPER = '    cf.assert %lt, "index must be smaller than dim size"\n'
TWO_RESULTS = {
    "-> tensor<4x8xf32> {": "-> (tensor<4x8xf32>, tensor<4x8xf32>) {",
    "(d0, d1)>], iterator": "(d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator",
    "outs(%e : tensor<4x8xf32>)": "outs(%e, %e : tensor<4x8xf32>, tensor<4x8xf32>)",
    "^bb0(%i: i64, %o: f32):": "^bb0(%i: i64, %o: f32, %o2: f32):",
    "linalg.yield %v : f32": "linalg.yield %v, %v : f32, f32",
    "} -> tensor<4x8xf32>": "} -> (tensor<4x8xf32>, tensor<4x8xf32>)",
    "%r = linalg.generic": "%r:2 = linalg.generic",
    "util.return %r : tensor<4x8xf32>":
        "util.return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>"}
SCALAR_INDEX = {  # one id, a scalar operand of the generic: out[d] = table[id, d]
    "%ids: tensor<4xi64>": "%ids: i64", "tensor<4x8xf32>": "tensor<8xf32>",
    "affine_map<(d0, d1) -> (d0)>": "affine_map<(d0) -> ()>",
    "affine_map<(d0, d1) -> (d0, d1)>": "affine_map<(d0) -> (d0)>",
    '["parallel", "parallel"]': '["parallel"]', "ins(%ids : tensor<4xi64>)": "ins(%ids : i64)",
    "linalg.index 1": "linalg.index 0"}

# A row gather of `iree_linalg_ext` (no bounds checks).
GATHER = """util.func public @g(%t: tensor<10x4xf32>, %i: tensor<6xi64>) -> tensor<6x4xf32> {
  %e = tensor.empty() : tensor<6x4xf32>
  %g = iree_linalg_ext.gather dimension_map = [0] ins(%t, %i : tensor<10x4xf32>, tensor<6xi64>) outs(%e : tensor<6x4xf32>) -> tensor<6x4xf32>
  util.return %g : tensor<6x4xf32>
}"""
ON_BUFFERS = {  # the same gather with buffer semantics: it writes its init, no result
    "%i: tensor<6xi64>) -> tensor<6x4xf32> {": "%i: memref<6xi64>, %o: memref<6x4xf32>) {",
    "%t: tensor<10x4xf32>": "%t: memref<10x4xf32>",
    "  %e = tensor.empty() : tensor<6x4xf32>\n": "",
    "%g = iree_linalg_ext.gather": "iree_linalg_ext.gather",
    "tensor<10x4xf32>, tensor<6xi64>) outs(%e : tensor<6x4xf32>) -> tensor<6x4xf32>":
        "memref<10x4xf32>, memref<6xi64>) outs(%o : memref<6x4xf32>)",
    "util.return %g : tensor<6x4xf32>": "util.return"}
ONE_ID_OF_DEPTH_1 = {  # indices [1] read as one index of depth 1: a result of one row, no batch
    "tensor<6xi64>": "tensor<1xi64>", "tensor<6x4xf32>": "tensor<4xf32>"}


def _changed(text: str, change: dict[str, str]) -> str:
    for old, new in change.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("base, change, code", [
    (LOOKUP, {"BOUND": "10"}, None),
    (LOOKUP, {"BOUND": "10", **TWO_RESULTS}, "not-one-result-generic"),
    (LOOKUP, {"BOUND": "10", **SCALAR_INDEX}, "lookup-unranked"),
    (LOOKUP, {"BOUND": "5"}, "bounds-check-unknown"),  # i < 5 of a 10-row table
    (LOOKUP, {"BOUND": "10", UPPER: UPPER * 2}, "bounds-check-unknown"),  # i < 10 twice
    (GATHER, {}, None),
    (GATHER, ON_BUFFERS, "gather-operands"),
    (GATHER, ONE_ID_OF_DEPTH_1, "gather-result-shape"),
], ids=["lookup", "two-results", "scalar-index", "bound-not-rows", "upper-bound-twice",
        "gather", "gather-on-buffers", "gather-of-one-id-of-depth-1"])
def test_each_check_of_a_lookup(base, change, code):
    """The op is lookup-like (the pass matches it), and `match_lookup` declines it at the
    check; the pass reports the lookup-like op skipped with that code."""
    text = _changed(base, change)
    with ir.Context():
        module = parsed(text)
        op = last_op(module, LINALG_EXT_GATHER if base is GATHER else LINALG_GENERIC)
        assert is_lookup_like(op)
        if code is None:
            lookup = match_lookup(op, True)
            assert lookup.op == op and lookup.rows == 10
        else:
            with pytest.raises(NoMatch) as failed:
                match_lookup(op, True)
            assert failed.value.code == code, failed.value
    codes = _skip_codes(text, LOW)
    if code is None:
        assert not set(codes) & {"not-one-result-generic", "lookup-unranked",
                                 "bounds-check-unknown", "gather-operands",
                                 "gather-result-shape"}, codes
    else:
        assert code in codes, codes


# ---------------------------------------------------------------- bags (plan.py)


def _bag(k: int, batch: str) -> str:
    """Bag k of table %t0: a lookup of [B, 5] ids summed over the 5 (B static or dynamic)."""
    dyn = f"(%b{k})" if batch == "?" else "()"
    dim = f"  %b{k} = tensor.dim %i{k}, %c0 : tensor<?x5xi64>\n" if batch == "?" else ""
    return f"""{dim}  %g{k}_e = tensor.empty{dyn} : tensor<{batch}x5x4xf32>
  %g{k} = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%i{k} : tensor<{batch}x5xi64>) outs(%g{k}_e : tensor<{batch}x5x4xf32>) {{
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  }} -> tensor<{batch}x5x4xf32>
  %p{k}_e = tensor.empty{dyn} : tensor<{batch}x4xf32>
  %p{k}_f = linalg.fill ins(%z : f32) outs(%p{k}_e : tensor<{batch}x4xf32>) -> tensor<{batch}x4xf32>
  %p{k} = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}} ins(%g{k} : tensor<{batch}x5x4xf32>) outs(%p{k}_f : tensor<{batch}x4xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }} -> tensor<{batch}x4xf32>
"""


def _bags_of_one_table(batch: str) -> str:
    return (f"util.func public @bags(%i0: tensor<{batch}x5xi64>, %i1: tensor<{batch}x5xi64>) "
            f"-> (tensor<{batch}x4xf32>, tensor<{batch}x4xf32>) {{\n"
            "  %c0 = arith.constant 0 : index\n  %z = arith.constant 0.0 : f32\n"
            "  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>\n"
            + _bag(0, batch) + _bag(1, batch) +
            f"  util.return %p0, %p1 : tensor<{batch}x4xf32>, tensor<{batch}x4xf32>\n}}")


@pytest.mark.parametrize("batch, code", [("8", None), ("?", "bag-shapes-same-table")],
                         ids=["static-batch", "unrelated-dynamic-batches"])
def test_bags_of_one_table(batch, code):
    """Two bags of one table: merged when their batches are one size; with dynamic batches
    nothing relates (returned apart, no concat), declined: bags are batched only stacked."""
    text = _bags_of_one_table(batch)
    with ir.Context():
        parsed(text)
    _, (report,) = passes.run_pass(text, LOW)
    codes = [skip.code for skip in report.skipped]
    if code is None:
        assert len(report.changes) == 1 and not codes, report.format()
    else:
        assert not report.changes and codes == [code, code], report.format()
        assert "bags are batched only stacked" in report.skipped[0].reason


# ---------------------------------------------------------------- concat writers (writer.py)


def _lookup(k: int, rows: int, batch: int) -> str:
    return f"""  %t{k} = arith.constant dense<{k + 1}.0> : tensor<{rows}x4xf32>
  %l{k}_e = tensor.empty() : tensor<{batch}x4xf32>
  %l{k} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%i{k} : tensor<{batch}xi64>) outs(%l{k}_e : tensor<{batch}x4xf32>) {{
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t{k}[%a, %j] : tensor<{rows}x4xf32>
    linalg.yield %x : f32
  }} -> tensor<{batch}x4xf32>
"""


def _concat(slots: list[str], batch: int, dense: int) -> str:
    """A concat of [batch, w] slots in the order given: "d" a dense argument of `dense`
    columns, "l0".."l2" one-id lookups (4 columns) of their own constant tables."""
    lookups = [slot for slot in slots if slot != "d"]
    width = sum(dense if slot == "d" else 4 for slot in slots)
    args = [f"%d: tensor<{batch}x{dense}xf32>"] + [f"%i{slot[1]}: tensor<{batch}xi64>"
                                                  for slot in lookups]
    text = (f"util.func public @concat({', '.join(args)}) -> tensor<{batch}x{width}xf32> {{\n"
            + "".join(_lookup(int(slot[1]), 10 * (int(slot[1]) + 1), batch) for slot in lookups)
            + f"  %c = tensor.empty() : tensor<{batch}x{width}xf32>\n")
    prev, col = "%c", 0
    for n, slot in enumerate(slots):
        cols = dense if slot == "d" else 4
        text += (f"  %c{n} = tensor.insert_slice %{slot} into {prev}[0, {col}] [{batch}, {cols}]"
                 f" [1, 1] : tensor<{batch}x{cols}xf32> into tensor<{batch}x{width}xf32>\n")
        prev, col = f"%c{n}", col + cols
    return text + f"  util.return {prev} : tensor<{batch}x{width}xf32>\n}}"


@pytest.mark.parametrize("slots, batch, dense, code", [
    (["d", "l0", "l1", "l2"], 8, 3, None),  # the lookups' run is 4-wide: written
    (["l0", "d", "l1", "l2"], 8, 3, "concat-narrow-run"),
    (["d", "l0", "l1", "l2"], 1, 4, None),
    (["d", "l0", "l1", "l2"], 1, 3, "concat-widths"),
], ids=["dense-first", "dense-between-lookups", "unit-batch", "unit-batch-narrow"])
def test_narrow_concats(slots, batch, dense, code):
    """narrow-concat=run (the default) writes the run of slots from the first to the last
    lookup: declined when a 3-wide dense slot lies inside it; at B = 1 (where the writer
    writes that run only) slot widths that share no 4-column chunk are declined."""
    text = _concat(slots, batch, dense)
    with ir.Context():
        parsed(text)
    _, (report,) = passes.run_pass(text, PASS)
    concat_skips = [skip for skip in report.skipped if "concat" in skip.key]
    if code is None:
        assert any(c.what.startswith("concat of 4 slots") for c in report.changes), \
            report.format()
        assert not concat_skips, report.format()
    else:
        assert not any(c.what.startswith("concat") for c in report.changes), report.format()
        assert [skip.code for skip in concat_skips] == [code], report.format()


# Two slots of a batched gather's result G [2, ?, 4] (as batch-gathers leaves a group's slots)
# beside a value, in a concat of the value's batch: the slices read ROWS rows of G.
STACKED_SLOTS = """util.func public @stacked(%g: tensor<2x?x4xf32>, %v: tensor<?x4xf32>) -> tensor<?x12xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %v, %c0 : tensor<?x4xf32>
  %n = tensor.dim %g, %c1 : tensor<2x?x4xf32>
  %s0 = tensor.extract_slice %g[0, 0, 0] [1, ROWS, 4] [1, 1, 1] : tensor<2x?x4xf32> to tensor<?x4xf32>
  %s1 = tensor.extract_slice %g[1, 0, 0] [1, ROWS, 4] [1, 1, 1] : tensor<2x?x4xf32> to tensor<?x4xf32>
  %ce = tensor.empty(%b) : tensor<?x12xf32>
  %c0s = tensor.insert_slice %v into %ce[0, 0] [%b, 4] [1, 1] : tensor<?x4xf32> into tensor<?x12xf32>
  %c1s = tensor.insert_slice %s0 into %c0s[0, 4] [ROWS, 4] [1, 1] : tensor<?x4xf32> into tensor<?x12xf32>
  %c2s = tensor.insert_slice %s1 into %c1s[0, 8] [ROWS, 4] [1, 1] : tensor<?x4xf32> into tensor<?x12xf32>
  util.return %c2s : tensor<?x12xf32>
}"""


@pytest.mark.parametrize("rows, code", [("%n", None), ("%b", "concat-rows")],
                         ids=["g-rows", "value-rows"])
def test_a_slot_whose_rows_are_not_the_batch(rows, code):
    """Slices of all of G's rows (%n): the concat makes them the batch (checked at run time)
    and it is written; slices of %b rows (the value's batch) leave G's own rows, which the
    writer reads at row b < batch, unrelated to the batch: declined."""
    text = STACKED_SLOTS.replace("ROWS", rows)
    with ir.Context():
        parsed(text)
    _, (report,) = passes.run_pass(text, PASS)
    codes = [skip.code for skip in report.skipped]
    if code is None:
        assert len(report.changes) == 1 and not codes, report.format()
        assert "2 from batched gathers" in report.changes[0].what
    else:
        assert not report.changes and codes == [code], report.format()


# ---------------------------------------------------------------- cache scatters (shared)

CACHE = "merge-cache-scatters"
V_UPDATE = """  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<16x32xf16>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f16, %o: f16):
    %t = arith.negf %x : f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>"""
V_INDEX_INS = ("ins(%page, %start : tensor<4xi64>, tensor<4xi64>) "
               "outs(%e2 : tensor<4x4xi64>) {")
V_SCATTER_INS = "ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk"
SIGNATURE = "util.func public @decode_kv_write_rope("


def _rope_pair(change: str | None) -> str:
    """decode_kv_write_rope of merge-cache-scatters.mlir (K's update RoPE's elementwise
    generic): as written, or V's indices i32 ("index-type"), or V 8 rows ("v-rows")."""
    text = passes.lit_cases(CACHE)["decode_kv_write_rope"]
    for part in (V_UPDATE, V_INDEX_INS, V_SCATTER_INS, SIGNATURE):
        assert part in text, part
    if change == "index-type":
        text = text.replace(V_SCATTER_INS, "ins(%v, %vi32 : tensor<16x32xf16>, tensor<16xi32>) "
                            "outs(%sk")
        text = text.replace("  %sk = iree_linalg_ext.scatter",
                            "  %vi32 = arith.trunci %vi : tensor<16xi64> to tensor<16xi32>\n"
                            "  %sk = iree_linalg_ext.scatter")
    elif change == "v-rows":  # V's update [8, 32] and its indices 2 pages x 4 heads
        text = text.replace(SIGNATURE, SIGNATURE + "%vf8: tensor<8x32xf16>, "
                            "%page2: tensor<2xi64>, %start2: tensor<2xi64>, ")
        text = text.replace(V_UPDATE, "  %e8 = tensor.empty() : tensor<8x32xf16>\n" +
                            V_UPDATE.replace("ins(%vf : tensor<16x32xf16>) outs(%e",
                                             "ins(%vf8 : tensor<8x32xf16>) outs(%e8")
                            .replace("tensor<16x32xf16>", "tensor<8x32xf16>"))
        text = text.replace("  %e2 = tensor.empty() : tensor<4x4xi64>\n",
                            "  %e2 = tensor.empty() : tensor<4x4xi64>\n"
                            "  %e3 = tensor.empty() : tensor<2x4xi64>\n")
        head, tail = text.split("  %vidx = ")
        tail = tail.replace(V_INDEX_INS, "ins(%page2, %start2 : tensor<2xi64>, tensor<2xi64>) "
                            "outs(%e3 : tensor<2x4xi64>) {", 1)
        tail = tail.replace("} -> tensor<4x4xi64>", "} -> tensor<2x4xi64>", 1)
        tail = tail.replace("%vi = tensor.collapse_shape %vidx [[0, 1]] : tensor<4x4xi64> into "
                            "tensor<16xi64>", "%vi = tensor.collapse_shape %vidx [[0, 1]] : "
                            "tensor<2x4xi64> into tensor<8xi64>")
        tail = tail.replace(V_SCATTER_INS,
                            "ins(%v, %vi : tensor<8x32xf16>, tensor<8xi64>) outs(%sk")
        text = head + "  %vidx = " + tail
    return text


def _cache_report(text: str, aggressive: bool):
    with ir.Context():
        module = parsed(text)
        _, (report,) = run_pipeline(module.operation, parse_pipeline(CACHE),
                                    aggressive_fusion=aggressive)
        return report


@pytest.mark.parametrize("change, aggressive, code", [
    (None, False, None),
    (None, True, None),
    ("index-type", False, "update-types"),
    ("v-rows", True, "aggressive-rows"),
], ids=["pair", "pair-stacked", "indices-i64-and-i32", "stacked-8-and-16-rows"])
def test_each_shared_check_of_a_scatter_pair(change, aggressive, code):
    """K's and V's scatters merge (stacked by a selecting generic under aggressive fusion);
    index tensors of i64 and i32 do not; stacked, pieces of 16 and 8 rows do not (plan_pair,
    compiler/analyses/cache_scatters.py)."""
    report = _cache_report(_rope_pair(change), aggressive)
    if code is None:
        assert len(report.changes) == 1 and not report.skipped, report.format()
        assert ("stacked" in report.changes[0].what) == aggressive
    else:
        assert not report.changes and [s.code for s in report.skipped] == [code], \
            report.format()
