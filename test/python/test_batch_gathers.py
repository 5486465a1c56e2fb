"""batch-gathers and rewrite-embedding-bags (which runs before it): numerics of every lit case
on local-task (with tables whose every element
differs, so a wrong row or a wrong table shows), dispatch counts, the out-of-range index
behaviour, hypothesis properties over random table sets / sharing / index lengths / batch
(against a NumPy reference; idempotence), and the DLRM-style PyTorch models (`-m slow`)."""

# ruff: noqa: E501  (IR lines in the test programs)

from __future__ import annotations

import os
import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from conftest import reassociation_bound
from iree_fusions.compiler.decisions import Decider, Decision, DecisionSet, DecisionsError
from iree_fusions.compiler.pipeline import PipelineError, parse_pipeline, run_pipeline
from iree_fusions.compiler.target import Target
from iree_fusions.harness import api
from iree_fusions.harness.numerics import compare_compilations, function_arg_specs
from support import passes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIT = os.path.join(ROOT, "test", "passes", "batch-gathers.mlir")
PASS = "batch-gathers"
BAGS = "rewrite-embedding-bags"
# The lit cases are small: below the default min-sliced-indices and min-pooled-indices.
LOW = "batch-gathers{min-sliced-indices=0 min-pooled-indices=0}"
# What --fusions=all runs of the two (F.embedding_bag generics are rewritten first).
GATHERS = f"{BAGS},{PASS}"
GATHERS_LOW = f"{BAGS},{LOW}"


def table_values(rows: int, dim: int, k: int) -> np.ndarray:
    """t_k[r, c] = 100 k + r + c / 1000: every element of every table differs."""
    r = np.arange(rows, dtype=np.float32)[:, None]
    c = np.arange(dim, dtype=np.float32)[None, :]
    return (100 * k + r + c / 1000).astype(np.float32)


def dense(values: np.ndarray) -> str:
    rows = ", ".join("[" + ", ".join(repr(float(x)) for x in row) + "]" for row in values)
    return f"dense<[{rows}]>"


def lit_cases() -> dict[str, str]:
    """function name -> IR of each `// -----` chunk of batch-gathers.mlir and
    rewrite-embedding-bags.mlir, splat tables made all-distinct."""

    def distinct(m: re.Match) -> str:
        k, rows, dim = int(float(m.group(1))), int(m.group(2)), int(m.group(3))
        return f"arith.constant {dense(table_values(rows, dim, k))} : tensor<{rows}x{dim}xf32>"

    return {name: re.sub(r"arith\.constant dense<(\d+)\.0> : tensor<(\d+)x(\d+)xf32>",
                         distinct, chunk)
            for p in (PASS, BAGS) for name, chunk in passes.lit_cases(p).items()}


def run_pass(text: str, pipeline: str = PASS) -> tuple[str, list]:
    return passes.run_pass(text, pipeline)


def inputs_for(text: str, function: str, high: int = 10, seed: int = 0,
               dynamic: int = 6) -> list[np.ndarray]:
    """Indices in [0, high) (the smallest table of the lit cases has 10 rows); floats ~ N(0,1);
    a dynamic dim gets size `dynamic`."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in function_arg_specs(text, function):
        shape = tuple(dynamic if d < 0 else d for d in spec.shape)
        if np.issubdtype(spec.dtype, np.integer):
            out.append(rng.integers(0, high, shape).astype(spec.dtype))
        else:
            out.append(rng.standard_normal(shape).astype(spec.dtype))
    return out


# ---------------------------------------------------------------- the lit cases, compiled

# function -> (rewritten?, dispatches saved at least)
LIT_EXPECTATIONS = {
    "cross_table_offsets": (True, 1),
    "shared_table_dedup": (True, 2),
    "same_table_basic": (True, 1),
    "same_table_2d_indices": (True, 1),
    "same_table_shared_index": (True, 1),
    "mixed_lengths": (True, 1),
    "below_threshold": (False, 0),
    "different_dims": (False, 0),
    "dependent_gathers": (False, 0),
    "non_constant_tables": (False, 0),
    "non_constant_same_table": (True, 1),
    "wrong_axis": (False, 0),
    "interleaved_consumers": (True, 0),
    "absorbed_by_consumer": (False, 0),
    "ext_gather": (True, 1),
    "pooled_bags": (True, 1),
    "mean_bags": (True, 1),
    "embedding_bag": (True, 0),
    "embedding_bag_unit_batch": (True, 0),
    "concat_writer": (True, 2),
    "concat_mixed_widths": (True, 2),
    "bags_into_concat": (True, 2),
    "offsets_bags": (True, 1),
    "offsets_bag_unit_batch": (False, 0),
    "offsets_bags_into_concat": (True, 0),
    "offsets_bag_off_by_one": (False, 0),
    "expert_weight_gather": (False, 0),
    "indexed_rows": (False, 0),
    # Dynamic batch (run with batch 6): without shape facts (checked at run time), with
    # them (util.assume.int), separate batches (flat layout), unrelated bags (left alone).
    "dynamic_bags_into_concat": (True, 5),
    "dynamic_lookups_flat": (True, 1),
    "dynamic_shared_batch": (True, 1),
    "dynamic_bags_unrelated": (False, 0),
    "dynamic_embedding_bag": (True, 0),
    "dynamic_embedding_bag_no_facts": (False, 0),
    # Tables held in globals (immutable: stacked at load; mutable: never) and read from
    # external parameters (given as arrays at run time, scope "model").
    "global_tables": (True, 3),
    "mutable_global_table": (False, 0),
    "parameter_tables": (True, 5),
    # The ONNX import's forms: wrapped indices, flattened bag ids, other loop orders.
    "onnx_bags_into_concat": (True, 5),
    "permuted_loop_order": (True, 1),
    "onnx_column_select": (False, 0),  # a normalization (a view), no candidate
    # The Criteo layout: raw dense features beside the embeddings (narrow-concat=run).
    "narrow_concat": (True, 2),
}
PARAMETERS = {"parameter_tables": {"model": {f"t{k}": table_values(r, 4, 7 + k)
                                             for k, r in enumerate((10, 20, 20))}}}


def test_lit_cases_are_all_covered():
    assert set(lit_cases()) == set(LIT_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_numerics_and_counts(name):
    """Integer inputs are random in [0, 10): for the offsets bags these are offsets in any
    order and past the ids' end, where the rewrite must still add exactly what stock adds."""
    text = lit_cases()[name]
    changed, saved = LIT_EXPECTATIONS[name]
    check = compare_compilations(text, inputs_for(text, name), fusions=GATHERS_LOW, function=name,
                                 parameters=PARAMETERS.get(name))
    assert check.agreement.shapes_match
    # Gathers copy table elements: bit-identical on any target. Bags sum them, and how the
    # generated code of stock's sum splits it across vector lanes is the target's (the plugin
    # sums each bag in order): the tables are positive, so two orders differ by at most
    # 2 gamma(n) of the sum, n <= 40 ids (the embedding_bag scan over 8x5 ids): 4.8e-6.
    bound = reassociation_bound(40) if '"reduction"' in text else 0.0
    assert check.agreement.max_rel <= bound, check.agreement
    assert bool(check.changes()) == changed, check.reports
    stock, plugin = check.stock_counts, check.plugin_counts
    assert plugin.dispatches[name] <= stock.dispatches[name] - saved


def test_distinct_tables_catch_a_wrong_row():
    """The harness itself: reading row i+1 instead of row i must show as an error."""
    text = lit_cases()["cross_table_offsets"]
    inputs = inputs_for(text, "cross_table_offsets", high=9)
    good = api.run(api.compile_str(text, stock=True).output, inputs, "cross_table_offsets")
    shifted = [x + 1 if x.dtype == np.int64 else x for x in inputs]
    bad = api.run(api.compile_str(text, stock=True).output, shifted, "cross_table_offsets")
    assert api.compare_outputs(good, bad).max_abs >= 1.0


# ------------------------------------------------------------ bounds checks (out of range)


def test_bounds_checks_keep_each_tables_rows():
    """After offsetting, each index is still compared with its own table's row count."""
    out, _ = run_pass(lit_cases()["cross_table_offsets"], LOW)
    assert "dense<[10, 20]> : tensor<2xi64>" in out  # rows of t0 and t1, not 30
    assert out.count('cf.assert') == 2
    assert re.search(r"arith\.cmpi slt, (%\w+), (%\w+) : index\n\s*cf\.assert", out)


def test_out_of_range_index_reported_like_stock():
    """Stock IREE drops cf.assert inside dispatches (iree-util-strip-debug-ops, also with
    --iree-opt-strip-assertions=false), so an out-of-range id raises nothing at run time and
    reads memory past the table. The plugin-compiled model behaves the same: no error, every
    in-range slot identical; the out-of-range element is undefined in both."""
    name = "concat_writer"
    text = lit_cases()[name]
    inputs = inputs_for(text, name)
    bad = [x.copy() for x in inputs]
    bad[0][3] = 10  # t0 has 10 rows
    flags_variants = [(), ("--iree-opt-strip-assertions=false",)]
    for flags in flags_variants:
        stock = api.compile_str(text, stock=True, flags=flags).output
        plugin = api.compile_str(text, fusions=GATHERS_LOW, flags=flags).output
        out_s = api.run(stock, bad, name)[0]  # no exception: not reported
        out_p = api.run(plugin, bad, name)[0]
        mask = np.ones(out_s.shape, bool)
        mask[3, 4:8] = False  # slot of lookup 0, batch row 3
        np.testing.assert_array_equal(out_s[mask], out_p[mask])


@pytest.mark.parametrize("mode,dispatches", [("run", 3), ("columns", 1)])
def test_narrow_concat_modes_bit_identical(mode, dispatches):
    """Raw dense features beside embeddings (slot widths 3 and 4): both ways of writing the
    concat copy the same elements (the run writer plus inserts, or one 1-column writer)."""
    name = "narrow_concat"
    text = lit_cases()[name]
    check = compare_compilations(text, inputs_for(text, name),
                                 fusions=f"batch-gathers{{narrow-concat={mode}}}", function=name)
    assert check.agreement.max_abs == 0.0, check.agreement
    assert check.changes()
    assert check.plugin_counts.dispatches[name] <= dispatches


def test_onnx_negative_indices_wrap_like_stock():
    """ONNX's Gather wraps a negative index by its table's rows (i < 0 ? i + rows : i): the
    batched gathers wrap each index by its own table's rows, as the generics they replace."""
    name = "onnx_bags_into_concat"
    text = lit_cases()[name]
    inputs = [x - 10 if x.dtype == np.int64 else x for x in inputs_for(text, name, high=20)]
    assert min(int(x.min()) for x in inputs if x.dtype == np.int64) < 0
    check = compare_compilations(text, inputs, fusions=GATHERS_LOW, function=name, count=False)
    # Bags of 5 positive table rows, summed in an order the target may choose (see above).
    assert check.agreement.max_rel <= reassociation_bound(5), check.agreement
    assert check.changes()


def test_unequal_dynamic_batches_stop_the_call():
    """A concat in a dynamic export without shape facts: its slots must have its rows
    (torch.cat), which the rewrite relies on and checks on the host; unequal batches stop
    the call with the reason (stock would leave rows of the concat undefined)."""
    name = "dynamic_bags_into_concat"
    text = lit_cases()[name]
    inputs = inputs_for(text, name)
    plugin = api.compile_str(text, fusions=GATHERS_LOW).output
    assert api.run(plugin, inputs, name)[0].shape == (6, 16)
    inputs[1] = inputs[1][:5]  # a bag of batch 5 beside batch 6
    with pytest.raises(Exception, match="batch sizes differ"):
        api.run(plugin, inputs, name)


def stream_submissions(stream_ir: bytes) -> int:
    """stream.cmd.execute ops in the module's functions (initializers apart)."""
    from iree_fusions.compiler import ir_helpers as h

    with ir.Context():
        module = ir.Module.parse(stream_ir)
        return sum(len(h.walk_ops(f, ("stream.cmd.execute",)))
                   for f in h.functions(module.operation))


def test_size_checks_keep_one_submission():
    """The host-side batch checks go before the first dispatch (host code between two
    dispatches cuts the call into several stream submissions: a host wait between them)."""
    name = "dynamic_bags_into_concat"
    text = lit_cases()[name]
    counts = [stream_submissions(api.compile_str(text, compile_to="stream", **kw).output)
              for kw in (dict(stock=True), dict(fusions=GATHERS_LOW))]
    assert counts[1] == counts[0], counts


# ---------------------------------------------------------------- properties (hypothesis)


def lookup_text(name: str, idx: str, idx_shape: tuple, table: str, rows: int, dim: int,
                kind: str, batch: str = "") -> tuple[str, str]:
    """A lookup as IREE has it at global-optimization (generic with bounds checks) or an
    iree_linalg_ext.gather; returns (text, result type). `batch`: the index value of a
    dynamic dim 0 (its shape entry is "?")."""
    shape = list(idx_shape)
    idx_t = "tensor<" + "x".join(map(str, shape)) + "xi64>"
    out_t = "tensor<" + "x".join(map(str, shape + [dim])) + "xf32>"
    if kind == "gather":
        return (f"  %{name}_e = tensor.empty({batch}) : {out_t}\n"
                f"  %{name} = iree_linalg_ext.gather dimension_map = [0] ins(%{table}, %{idx} : "
                f"tensor<{rows}x{dim}xf32>, {idx_t}) outs(%{name}_e : {out_t}) -> {out_t}"), out_t
    r = len(shape) + 1
    dims = ", ".join(f"d{i}" for i in range(r))
    ins = ", ".join(f"d{i}" for i in range(r - 1))
    its = ", ".join(['"parallel"'] * r)
    return (f"""  %{name}_e = tensor.empty({batch}) : {out_t}
  %{name} = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({ins})>, affine_map<({dims}) -> ({dims})>], iterator_types = [{its}]}} ins(%{idx} : {idx_t}) outs(%{name}_e : {out_t}) {{
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index {r - 1} : index
    %n = arith.constant {rows} : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %{table}[%a, %j] : tensor<{rows}x{dim}xf32>
    linalg.yield %x : f32
  }} -> {out_t}"""), out_t


def sum_text(name: str, src: str, batch: int | str, length: int, dim: int, dyn: str = "") -> str:
    return f"""  %{name}_z = arith.constant 0.0 : f32
  %{name}_e = tensor.empty({dyn}) : tensor<{batch}x{dim}xf32>
  %{name}_f = linalg.fill ins(%{name}_z : f32) outs(%{name}_e : tensor<{batch}x{dim}xf32>) -> tensor<{batch}x{dim}xf32>
  %{name} = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}} ins(%{src} : tensor<{batch}x{length}x{dim}xf32>) outs(%{name}_f : tensor<{batch}x{dim}xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }} -> tensor<{batch}x{dim}xf32>"""


def mean_text(name: str, src: str, batch: int | str, length: int, dim: int,
              dyn: str = "") -> str:
    t = f"tensor<{batch}x{dim}xf32>"
    return f"""  %{name}_c = arith.constant {float(length)!r} : f32
  %{name}_e = tensor.empty({dyn}) : {t}
  %{name} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%{src} : {t}) outs(%{name}_e : {t}) {{
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %{name}_c : f32
    linalg.yield %d : f32
  }} -> {t}"""


def build_model(tables, features, batch, concat, dynamic=None):
    """IR of a function of the features' ids, and a NumPy reference of its results.

    tables: [(rows, dim)]; features: [(table, bag length or 0 for one id, pooling (None,
    "sum", "mean"), kind ("generic" or "gather"))]. dynamic: None (static batch), "args"
    (a dynamic batch per argument, as a dynamic torch export without shape facts has it),
    "facts" (one dynamic batch tied to every argument by util.assume.int + tie_shape).
    """
    vals = [table_values(r, d, k) for k, (r, d) in enumerate(tables)]
    lines = [f"  %t{k} = arith.constant {dense(v)} : tensor<{v.shape[0]}x{v.shape[1]}xf32>"
             for k, v in enumerate(vals)]
    args, results, types = [], [], []

    def reference(ids_list):
        outs = []
        for (t, length, pooled, _), ids in zip(features, ids_list):
            g = vals[t][ids]
            if pooled:
                g = g.sum(1, dtype=np.float32)
                if pooled == "mean":
                    g = g / np.float32(length)
            outs.append(g)
        if concat:
            return [np.concatenate(outs, 1)]
        return outs

    size = "?" if dynamic else batch
    if dynamic:
        lines.append("  %zero = arith.constant 0 : index")
    for f, (t, length, pooled, kind) in enumerate(features):
        rows, dim = tables[t]
        shape = (size,) if length == 0 else (size, length)
        idx_t = f"tensor<{'x'.join(map(str, shape))}xi64>"
        args.append(f"%i{f}: {idx_t}")
        idx, b = f"i{f}", ""
        if dynamic == "args":
            b = f"%b{f}"
            lines.append(f"  {b} = tensor.dim %i{f}, %zero : {idx_t}")
        elif dynamic == "facts":
            if f == 0:
                lines.append(f"  %bdim = tensor.dim %i0, %zero : {idx_t}\n"
                             f"  %batch = util.assume.int %bdim<umin = 1, umax = 64> : index")
            b, idx = "%batch", f"j{f}"
            lines.append(f"  %j{f} = flow.tensor.tie_shape %i{f} : {idx_t}{{%batch}}")
        text, out_t = lookup_text(f"g{f}", idx, shape, f"t{t}", rows, dim, kind, b)
        lines.append(text)
        if pooled:
            lines.append(sum_text(f"p{f}", f"g{f}", size, length, dim, b))
            results.append(f"%p{f}")
            if pooled == "mean":
                lines.append(mean_text(f"m{f}", f"p{f}", size, length, dim, b))
                results[-1] = f"%m{f}"
            types.append(f"tensor<{size}x{dim}xf32>")
        else:
            results.append(f"%g{f}")
            types.append(out_t)
    if concat:
        width = sum(tables[t][1] for t, *_ in features)
        cat_t = f"tensor<{size}x{width}xf32>"
        rows_of_cat = "%b0" if dynamic == "args" else "%batch" if dynamic else ""
        lines.append(f"  %c_e = tensor.empty({rows_of_cat}) : {cat_t}")
        prev, col = "%c_e", 0
        for f, (res, ty) in enumerate(zip(results, types)):
            w = tables[features[f][0]][1]
            rows_of = f"%b{f}" if dynamic == "args" else "%batch" if dynamic else batch
            lines.append(f"  %c{f} = tensor.insert_slice {res} into {prev}[0, {col}] "
                         f"[{rows_of}, {w}] [1, 1] : {ty} into {cat_t}")
            prev, col = f"%c{f}", col + w
        results, types = [prev], [cat_t]
    text = (f"util.func public @main({', '.join(args)}) -> ({', '.join(types)}) {{\n"
            + "\n".join(lines)
            + f"\n  util.return {', '.join(results)} : {', '.join(types)}\n}}\n")
    return text, reference


@st.composite
def models(draw, dynamic=(None,), meant_to_fire: bool = False):
    """(tables, features, batch, concat, dynamic). meant_to_fire: feature 1 is a lookup like
    feature 0 (same length, pooling and kind) of a table of the same dim, a pair the pass
    merges (unpooled where the batch is dynamic per argument: bags of separately sized
    arguments are left alone)."""
    n_tables = draw(st.integers(1, 4))
    tables = [(draw(st.integers(3, 40)), draw(st.sampled_from([4, 8]))) for _ in range(n_tables)]
    batch = draw(st.sampled_from([1, 3, 8]))
    features = []
    for _ in range(draw(st.integers(2, 8))):
        t = draw(st.integers(0, n_tables - 1))  # tables are shared by chance
        length = draw(st.sampled_from([0, 0, 2, 5]))
        pooled = draw(st.sampled_from([None, "sum", "mean"])) if length > 0 else None
        kind = "generic" if pooled else draw(st.sampled_from(["generic", "generic", "gather"]))
        features.append((t, length, pooled, kind))
    dyn = draw(st.sampled_from(dynamic))
    if meant_to_fire:
        t0, length, pooled, kind = features[0]
        if dyn == "args" and length:
            length, pooled, kind = 0, None, "generic"
        same_dim = [k for k, (_, d) in enumerate(tables) if d == tables[t0][1]]
        features[0] = (t0, length, pooled, kind)
        features[1] = (draw(st.sampled_from(same_dim)), length, pooled, kind)
    concat = all(length == 0 or pooled for _, length, pooled, _ in features) and \
        draw(st.booleans())
    return tables, features, batch, concat, dyn


def _compile_fired(text: str, must_fire: bool = True):
    """The plugin's compile of a model meant to fire, with its changes kept (also those that
    gain nothing, so the outputs compared are the rewrite's); fails if the pass never
    fired."""
    out = api.compile_str(text, fusions=GATHERS_LOW, keep_no_gain=True)
    if must_fire:
        assert [c for r in out.reports for c in r.get("changes", [])], out.reports
    return out


# Shape facts (util.assume.int + tie_shape per argument): IREE 3.13 wraps each lookup in an
# iree_tensor_ext.compute_barrier, the first lookup's barrier.end comes before the second's
# tie_shape, and batch-gathers finds no single place for the merged gather ("no single place
# dominates their inputs and precedes their uses"); through iree-fusions-opt (no barriers) the
# same IR is merged. Reported (issue 36); the dynamic property test asserts the merge for the
# per-argument batches only, this test holds the facts case.
@pytest.mark.xfail(strict=True, reason="batch-gathers: lookups between IREE's compute "
                   "barriers are not merged (reported, issue 36)")
def test_facts_lookups_merge_across_iree_barriers():
    text, _ = build_model([(3, 4), (5, 4)], [(0, 0, None, "generic"), (1, 0, None, "generic")],
                          8, False, "facts")
    _, reports = run_pass(text, LOW)
    assert reports[0].changed  # the pass alone merges them
    _compile_fired(text)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(meant_to_fire=True), st.integers(0, 2**16))
def test_random_lookups_match_numpy(model, seed):
    tables, features, batch, concat, _ = model
    text, reference = build_model(tables, features, batch, concat)
    rng = np.random.default_rng(seed)
    ids = [rng.integers(0, tables[t][0], (batch,) if n == 0 else (batch, n)).astype(np.int64)
           for t, n, _, _ in features]
    out = api.run(_compile_fired(text).output, ids)
    expected = reference(ids)
    assert len(out) == len(expected)
    for o, e in zip(out, expected):
        np.testing.assert_allclose(o, e, rtol=1e-6, atol=1e-4)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(dynamic=("args", "facts"), meant_to_fire=True), st.integers(0, 2**16),
       st.sampled_from([2, 5, 11]))
def test_random_dynamic_lookups_match_stock(model, seed, run_batch):
    """A dynamic batch (one value per argument, or one tied to all by util.assume.int),
    run at a batch the IR never fixed: equal to stock (gathers copy elements; bag sums up to
    their order) and to NumPy."""
    tables, features, _, concat, dynamic = model
    text, reference = build_model(tables, features, 8, concat, dynamic)
    rng = np.random.default_rng(seed)
    ids = [rng.integers(0, tables[t][0], (run_batch,) if n == 0 else (run_batch, n))
           .astype(np.int64) for t, n, _, _ in features]
    stock = api.run(api.compile_str(text, stock=True).output, ids)
    plugin = api.run(_compile_fired(text, must_fire=dynamic == "args").output, ids)
    # Copies, and bags of <= 5 positive rows summed in an order the target may choose.
    assert api.compare_outputs(stock, plugin).max_rel <= reassociation_bound(5)
    for o, e in zip(plugin, reference(ids)):
        np.testing.assert_allclose(o, e, rtol=1e-6, atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(models(dynamic=(None, None, "args", "facts")), st.sampled_from([PASS, LOW]))
def test_rewrite_is_idempotent_and_verifies(model, pipeline):
    text, _ = build_model(*model)
    once, reports = run_pass(text, pipeline)
    twice, reports2 = run_pass(once, pipeline)
    assert not reports2[0].changed, reports2[0].changes
    assert twice == once
    # Every candidate is either merged or has a reason.
    n_lookups = len(model[1])
    assert reports[0].changed or len(reports[0].skipped) >= n_lookups


def test_small_groups_left_alone_by_default():
    """Measured (bench/results): merging 4 x 16 one-id lookups whose results are sliced back
    is slower (0.69x), so is merging the bags of the issue's model at B = 1 (120 ids); the
    concat writer applies at any size."""
    cases = lit_cases()
    for name, option in (("cross_table_offsets", "min-sliced-indices"),
                         ("pooled_bags", "min-pooled-indices")):
        _, reports = run_pass(cases[name])
        assert not reports[0].changed, name
        assert any(option in s.reason for s in reports[0].skipped), reports[0].skipped
    assert run_pass(cases["concat_writer"])[1][0].changed


# ------------------------------------------------- the split (issue 23): moved options, keys


@pytest.mark.parametrize("option", ["embedding-bag=0", "offsets-bags=false",
                                    "min-offsets-batch=1"])
def test_moved_options_say_where_they_went(option):
    """batch-gathers' F.embedding_bag options are rewrite-embedding-bags' now: given to
    batch-gathers, they are refused with the pipeline to write instead."""
    with pytest.raises(PipelineError, match=f"option '{option.partition('=')[0]}' moved to "
                       f"pass 'rewrite-embedding-bags' \\(write 'rewrite-embedding-bags"
                       f"\\{{{option}\\}}' before 'batch-gathers'"):
        parse_pipeline(f"batch-gathers{{min-group-size=2 {option}}}")
    (step,) = parse_pipeline(f"{BAGS}{{{option}}}")
    assert step.plugin.name == BAGS


def test_decisions_for_moved_keys_keep_working():
    """A decisions file written before the split names batch-gathers for the embedding_bag
    keys (`gathers-bag-*`, `gathers-offsets-*`): rewrite-embedding-bags follows it (the keys
    did not change); a key that did not move still must name its own pass."""
    target = Target("local", "llvm-cpu", "x")
    bag, offsets, group = "gathers-bag-0123456789", "gathers-offsets-0123456789", \
        "gathers-group-0123456789"
    file = DecisionSet(target, "d.json", entries={
        k: Decision(k, PASS, False, "d.json") for k in (bag, offsets, group)})
    decider = Decider(target, [file])
    assert not decider.lookup(bag, BAGS).apply
    assert not decider.lookup(offsets, BAGS).apply
    assert not decider.lookup(group, PASS).apply
    with pytest.raises(DecisionsError, match="names pass 'batch-gathers', but the key is one "
                                             "of 'rewrite-embedding-bags'"):
        decider.lookup(group, BAGS)


def test_a_bag_decision_reaches_rewrite_embedding_bags():
    """offsets_bag_unit_batch is declined by the cost rule; a decisions file recorded for
    batch-gathers before the split turns it on for rewrite-embedding-bags."""
    text = lit_cases()["offsets_bag_unit_batch"]
    _, reports = run_pass(text, BAGS)
    key = reports[0].skipped[0].key
    decider = Decider(None, [DecisionSet(Target("local", "llvm-cpu", "x"), "d.json", entries={
        key: Decision(key, PASS, True, "d.json")})])
    with ir.Context():
        module = ir.Module.parse(text)
        _, reports = run_pipeline(module.operation, parse_pipeline(BAGS), decider=decider)
    (change,) = reports[0].changes
    assert change.key == key and change.decided_by == "d.json"


def test_no_change_without_lookups():
    text = """util.func public @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %in, %in : f32
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %0 : tensor<8x4xf32>
}"""
    out, reports = run_pass(text)
    assert not reports[0].changed and not reports[0].skipped
    with ir.Context():
        assert out == str(ir.Module.parse(text))


# ------------------------------------------------- embedding_bag with run-time offsets


def offsets_bag_text(name: str, ids: str, offsets: str, table: str, bags: int, n: int,
                     rows: int, dim: int) -> str:
    """torch-mlir's F.embedding_bag(mode="sum") generic with offsets given at run time, as
    IREE 3.13 has it at global-optimization (B = 1: unit dims folded, 0-d offsets)."""
    if bags == 1:
        return f"""  %{name}_z = arith.constant 0.0 : f32
  %{name}_e = tensor.empty() : tensor<{dim}xf32>
  %{name}_f = linalg.fill ins(%{name}_z : f32) outs(%{name}_e : tensor<{dim}xf32>) -> tensor<{dim}xf32>
  %{name} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}} ins(%{ids}, %{offsets} : tensor<{n}xi64>, tensor<i64>) outs(%{name}_f : tensor<{dim}xf32>) {{
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %n = arith.constant {n} : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.cmpi slt, %in_0, %1 : i64
    %3 = arith.cmpi eq, %in_0, %1 : i64
    %4 = arith.ori %2, %3 : i1
    %5 = arith.cmpi slt, %1, %n : i64
    %6 = arith.andi %4, %5 : i1
    %7 = arith.index_cast %in : i64 to index
    %8 = linalg.index 1 : index
    %x = tensor.extract %{table}[%7, %8] : tensor<{rows}x{dim}xf32>
    %9 = arith.addf %x, %out : f32
    %10 = arith.select %6, %9, %out : f32
    linalg.yield %10 : f32
  }} -> tensor<{dim}xf32>"""
    return f"""  %{name}_z = arith.constant 0.0 : f32
  %{name}_e = tensor.empty() : tensor<{bags}x{dim}xf32>
  %{name}_f = linalg.fill ins(%{name}_z : f32) outs(%{name}_e : tensor<{bags}x{dim}xf32>) -> tensor<{bags}x{dim}xf32>
  %{name} = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}} ins(%{ids}, %{offsets} : tensor<{n}xi64>, tensor<{bags}xi64>) outs(%{name}_f : tensor<{bags}x{dim}xf32>) {{
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %c0 = arith.constant 0 : index
    %c1_i64 = arith.constant 1 : i64
    %cb = arith.constant {bags} : i64
    %n = arith.constant {n} : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %2, %cb : i64
    %5 = arith.select %4, %c0, %3 : index
    %next = tensor.extract %{offsets}[%5] : tensor<{bags}xi64>
    %6 = arith.select %4, %n, %next : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %x = tensor.extract %{table}[%14, %15] : tensor<{rows}x{dim}xf32>
    %16 = arith.addf %x, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  }} -> tensor<{bags}x{dim}xf32>"""


def offsets_model(tables: list[tuple[int, int]], bags: list[tuple[int, int]], batch: int
                  ) -> tuple[str, list[np.ndarray]]:
    """IR of a function of (ids, offsets) per bag feature (bags: [(table, ids count)]) and
    its tables' values."""
    vals = [table_values(r, d, k) for k, (r, d) in enumerate(tables)]
    lines = [f"  %t{k} = arith.constant {dense(v)} : tensor<{v.shape[0]}x{v.shape[1]}xf32>"
             for k, v in enumerate(vals)]
    args, results, types = [], [], []
    off_t = "tensor<i64>" if batch == 1 else f"tensor<{batch}xi64>"
    for f, (t, n) in enumerate(bags):
        rows, dim = tables[t]
        args += [f"%ids{f}: tensor<{n}xi64>", f"%offs{f}: {off_t}"]
        lines.append(offsets_bag_text(f"b{f}", f"ids{f}", f"offs{f}", f"t{t}", batch, n, rows,
                                      dim))
        results.append(f"%b{f}")
        types.append(f"tensor<{dim}xf32>" if batch == 1 else f"tensor<{batch}x{dim}xf32>")
    text = (f"util.func public @main({', '.join(args)}) -> ({', '.join(types)}) {{\n"
            + "\n".join(lines)
            + f"\n  util.return {', '.join(results)} : {', '.join(types)}\n}}\n")
    return text, vals


def bag_sums(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """torch's sum bags, in float32 and in order: bag b sums ids[offsets[b]:offsets[b+1]]
    (the last bag runs to the end), clamped to the ids as the generic does."""
    one_bag = np.ndim(offsets) == 0  # B = 1: a 0-d offsets tensor and a [D] result
    offsets = np.atleast_1d(offsets)
    n, out = len(ids), []
    for b, start in enumerate(offsets):
        end = offsets[b + 1] if b + 1 < len(offsets) else n
        acc = np.zeros(table.shape[1], np.float32)
        for j in range(max(start, 0), min(end, n)):
            acc = table[ids[j]] + acc
        out.append(acc)
    return out[0] if one_bag else np.stack(out)


def ragged_offsets(rng: np.random.Generator, batch: int, n: int) -> np.ndarray:
    """Variable-length bags over n ids (empty bags included), as a data loader makes them
    (torch requires offsets[0] = 0)."""
    offsets = np.sort(rng.integers(0, n + 1, batch)).astype(np.int64)
    offsets[0] = 0
    return offsets


def test_offsets_bags_ragged_match_stock():
    """Ragged bags (empty ones too) of the lit case: equal to stock and to the in-order
    float32 sums of NumPy, up to the order of the sums."""
    name = "offsets_bags"
    text = lit_cases()[name]
    rng = np.random.default_rng(3)
    ids0, ids1 = rng.integers(0, 10, 10), rng.integers(0, 10, 7)
    offs0, offs1 = np.array([0, 0, 4, 9]), np.array([0, 3, 3, 7])  # empty bags, last empty
    inputs = [x.astype(np.int64) for x in (ids0, offs0, ids1, offs1)]
    check = compare_compilations(text, inputs, fusions=GATHERS_LOW, function=name)
    # Stock's scan adds n = 10 terms (zeros outside the bag) in an order the target may
    # choose; the rows are positive: within 2 gamma(10) of the sum (1.2e-6), also of NumPy's.
    rtol = reassociation_bound(10)
    assert check.agreement.max_rel <= rtol, check.agreement
    t0, t1 = table_values(10, 4, 1), table_values(20, 4, 2)
    np.testing.assert_allclose(check.plugin[0], bag_sums(t0, ids0, offs0), rtol=rtol, atol=0)
    np.testing.assert_allclose(check.plugin[1], bag_sums(t1, ids1, offs1), rtol=rtol, atol=0)
    assert check.plugin_dispatches < check.stock_dispatches


def test_offsets_bag_unit_batch_rewritten_when_asked():
    """B = 1 is declined by the cost rule (a feasible candidate); applied anyway (as a
    decisions file would), it equals stock (up to the order of the sums)."""
    name = "offsets_bag_unit_batch"
    text = lit_cases()[name]
    _, reports = run_pass(text, GATHERS_LOW)
    skip, = reports[0].skipped
    assert reports[0].pass_name == BAGS and skip.feasible and "min-offsets-batch" in skip.reason
    inputs = [np.array([3, 0, 9, 9, 2], np.int64), np.array(1, np.int64)]
    check = compare_compilations(text, inputs, fusions=f"{BAGS}{{min-offsets-batch=1}},{PASS}",
                                 function=name)
    rtol = reassociation_bound(5)  # 5 positive rows summed in an order the target may choose
    assert check.changes() and check.agreement.max_rel <= rtol, check.agreement
    np.testing.assert_allclose(check.plugin[0],
                               bag_sums(table_values(10, 4, 1), inputs[0], inputs[1]),
                               rtol=rtol, atol=0)


@st.composite
def offsets_models(draw):
    n_tables = draw(st.integers(1, 3))
    tables = [(draw(st.integers(3, 20)), draw(st.sampled_from([4, 8]))) for _ in range(n_tables)]
    dim = tables[0][1]
    tables = [(r, dim) for r, _ in tables]  # one dim: the bags can merge
    batch = draw(st.sampled_from([1, 2, 5]))
    # At least 2 ids: with one, IREE folds the position loop away before the pass runs.
    bags = [(draw(st.integers(0, n_tables - 1)), draw(st.integers(2, 12)))
            for _ in range(draw(st.integers(1, 4)))]
    return tables, bags, batch, draw(st.booleans())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offsets_models(), st.integers(0, 2**16))
def test_random_offsets_bags_match_stock(model, seed):
    """Random tables (shared by chance), bag counts and id counts; offsets ragged (sorted,
    empty bags) or arbitrary (out of order, negative, past the end): the rewrite adds exactly
    what the stock scan adds, in the same order."""
    tables, bags, batch, ragged = model
    text, vals = offsets_model(tables, bags, batch)
    rng = np.random.default_rng(seed)
    inputs, expected = [], []
    for t, n in bags:
        ids = rng.integers(0, tables[t][0], n).astype(np.int64)
        offs = ragged_offsets(rng, batch, n) if ragged else \
            rng.integers(-2, n + 3, batch).astype(np.int64)
        offs = offs.reshape(()) if batch == 1 else offs
        inputs += [ids, offs]
        expected.append(bag_sums(vals[t], ids, offs))
    check = compare_compilations(text, inputs, fusions=f"{BAGS}{{min-offsets-batch=1}},{PASS}",
                                 count=False)
    assert check.changes(), check.reports
    # <= 12 positive rows a bag, summed in an order the target may choose.
    rtol = reassociation_bound(12)
    assert check.agreement.max_rel <= rtol, check.agreement
    for got, want in zip(check.plugin, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


def test_offsets_bags_out_of_range_id_like_stock():
    """Stock's bag generic has no bounds checks (torch-mlir emits none for embedding_bag),
    and the rewrite reads each member from its own table (no stacked table, no offsets
    added): an id past table 0 affects only its own bag, as in stock (the value read is
    undefined in both); every other element is identical."""
    name = "offsets_bags"
    text = lit_cases()[name]
    inputs = [np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 0]), np.array([0, 2, 5, 8]),
              np.array([1, 2, 3, 4, 5, 6, 7]), np.array([0, 2, 4, 6])]
    inputs = [x.astype(np.int64) for x in inputs]
    inputs[0][3] = 10  # t0 has 10 rows: in bag 1 (ids 2..4) of member 0
    stock = api.run(api.compile_str(text, stock=True).output, inputs, name)
    plugin = api.run(api.compile_str(text, fusions=GATHERS_LOW).output, inputs, name)
    rtol = reassociation_bound(10)  # scans of 10 positive rows, in an order the target picks
    np.testing.assert_allclose(stock[1], plugin[1], rtol=rtol, atol=0)
    mask = np.ones(stock[0].shape, bool)
    mask[1] = False
    np.testing.assert_allclose(stock[0][mask], plugin[0][mask], rtol=rtol, atol=0)


def test_expert_weight_gather_reason():
    """`W[ids]` of a static 3-d weight: the skip names what is unsupported (slices of a 3-d
    table), not "dynamic or unexpected shapes"."""
    _, reports = run_pass(lit_cases()["expert_weight_gather"])
    skip, = reports[0].skipped
    assert "whole [4x4] slices of a 3-d table" in skip.reason
    assert "dynamic" not in skip.reason


# ---------------------------------------------------------------- candidate keys


def keyed(reports) -> tuple[dict[str, str], dict[str, str]]:
    """(key -> what changed, key -> why skipped) of one pass report."""
    return ({c.key: c.what for c in reports[0].changes},
            {s.key: s.reason for s in reports[0].skipped})


def test_skip_and_only_select_candidates_by_key():
    """bags_into_concat has two candidates: the bags' cross-table group and the concat
    writer. Skipping one by its key leaves exactly that one unapplied; `only` the reverse.
    The writer's key is the same whether the bags were batched or not."""
    text = lit_cases()["bags_into_concat"]
    changes, _ = keyed(run_pass(text, LOW)[1])
    assert len(changes) == 2
    group, = [k for k, what in changes.items() if what.startswith("cross-table")]
    writer, = [k for k, what in changes.items() if what.startswith("concat")]
    low = "batch-gathers{min-sliced-indices=0 min-pooled-indices=0 %s}"

    out, reports = run_pass(text, low % f"skip={group}")
    changes, skipped = keyed(reports)
    assert list(changes) == [writer] and "0 from batched gathers" in changes[writer]
    assert skipped[group] == "skipped on request (skip=KEY)"
    assert "tensor<2x8x4xf32>" not in out

    out, reports = run_pass(text, low % f"only={group}")
    changes, skipped = keyed(reports)
    assert list(changes) == [group]
    assert skipped[writer] == f"not selected (only={group})"
    assert out.count("tensor.insert_slice") == 5 + 2  # the concat + the bags' two tables

    out, reports = run_pass(text, low % f"skip={writer}")
    changes, skipped = keyed(reports)
    assert list(changes) == [group]
    assert skipped[writer] == "skipped on request (skip=KEY)"


def renamed(text: str) -> str:
    """The same IR with other SSA and function names and an unrelated op first."""
    text = re.sub(r"%([A-Za-z_]\w*)", r"%renamed_\1", text)
    text = re.sub(r"@(\w+)\(", r"@other_\1(", text)
    return re.sub(r"(util\.func public @\w+\(.*\{\n)",
                  r"\1  %unrelated = arith.constant 7 : i32\n", text, count=1)


@pytest.mark.parametrize("name", ["bags_into_concat", "shared_table_dedup", "wrong_axis",
                                  "embedding_bag", "mixed_lengths", "absorbed_by_consumer",
                                  "offsets_bags", "offsets_bags_into_concat",
                                  "offsets_bag_unit_batch", "expert_weight_gather"])
@pytest.mark.parametrize("pipeline", [GATHERS_LOW, GATHERS])
def test_keys_describe_structure_only(name, pipeline):
    """The same structure in another file (other names, other lines) gets the same keys."""
    text = lit_cases()[name]
    other = renamed(text)
    assert other != text and "%unrelated" in other
    for a, b in zip(run_pass(text, pipeline)[1], run_pass(other, pipeline)[1], strict=True):
        assert [c.key for c in a.changes] == [c.key for c in b.changes]
        assert [s.key for s in a.skipped] == [s.key for s in b.skipped]
        assert [c.location for c in a.changes + a.skipped] != \
            [c.location for c in b.changes + b.skipped] or not a.changes + a.skipped


# ------------------------------------------------------------------ PyTorch models (slow)

def _dlrm(name: str):
    from iree_fusions.models import dlrm

    return {m.name: m for m in dlrm.MODELS}[name].build()


@pytest.mark.slow
@pytest.mark.parametrize("name,max_dispatches", [
    # B = 1: stock has 19 (its concat copies fold into the producers); the bags stay apart
    # there (below min-pooled-indices), the 10 one-id lookups are gathered by the writer.
    ("dlrm-b8", 8), ("dlrm-b1", 10), ("dlrm-b64", 8),
    ("dlrm-bag-b1", 10), ("dlrm-bag-b8", 8), ("dlrm-bag-b64", 8), ("dlrm-mean-b8", 8),
    ("dlrm-sparse-b8", 2), ("dlrm-lookups16-b8", 1),
    ("dlrm-criteo26-b32", 8), ("dlrm-mixed-dims-b8", 8), ("dlrm-packed-b16", 2),
    ("criteo-b8", 6),  # the Criteo layout (raw dense beside the embeddings): 20 -> 6
    # nn.EmbeddingBag with offsets (variable-length bags); B = 1: the bags are declined
    # (min-offsets-batch), the writer still gathers the one-id lookups.
    ("dlrm-offsets-b1", 10), ("dlrm-offsets-b8", 5), ("dlrm-offsets-b64", 5),
])
def test_dlrm_models(name, max_dispatches):
    art = _dlrm(name)
    check = compare_compilations(art.source, art.inputs, fusions=GATHERS, flags=art.flags)
    assert check.agreement.within(1e-5, 1e-5), check.agreement
    ref = api.compare_outputs(art.reference, check.plugin)
    assert ref.within(art.reference_atol), ref
    assert check.plugin_dispatches <= max_dispatches
    assert check.plugin_dispatches < check.stock_dispatches
    assert check.plugin_counts.initializer_dispatches == 0


# Dispatches the plugin removes from each model's static-inline form (stock minus plugin,
# bench/results/batch-gathers.md section 12); every other form must remove as many, at most
# one fewer, unless FORM_BLOCKED says what the form blocks.
STATIC_REMOVED = {"dlrm-b8": 31, "dlrm-sparse-b8": 30, "dlrm-bag-b64": 31, "criteo-b8": 14}
FORM_BLOCKED = {
    # Without shape facts the bag count and the ids' length are separate argument batches.
    ("dlrm-bag-b64", "dynamic-batch"): "come from separate dynamic sizes",
}
STOCK_FAILS = {  # torch.onnx exports F.embedding_bag as onnx.Loop, which IREE 3.13 rejects
    ("dlrm-bag-b64", "onnx"), ("dlrm-bag-b64", "onnx-params")}


@pytest.mark.slow
@pytest.mark.parametrize("form", ["static", "dynamic-batch", "dynamic-batch-facts", "params",
                                  "onnx", "onnx-params"])
@pytest.mark.parametrize("model", sorted(STATIC_REMOVED))
def test_every_form_like_static(model, form, tmp_path):
    """Each form users compile (models/dlrm.py FORMS) loses as many dispatches as the static
    form (at most one fewer) or says what blocks it; outputs bit-identical to stock at the
    export's batch and, for dynamic forms, at batch 5; equal to PyTorch."""
    from iree_fusions.compiler.counting import count_flow_ir
    from iree_fusions.models import dlrm

    cfg = {"dlrm-b8": dlrm.ISSUE, "dlrm-sparse-b8": dlrm.SPARSE, "criteo-b8": dlrm.CRITEO,
           "dlrm-bag-b64": replace(dlrm.ISSUE, batch=64, bag_op="embedding_bag")}[model]
    fa = dlrm.build_form(cfg, form, str(tmp_path))
    art = fa.artifact
    path = art.write(str(tmp_path))
    if (model, form) in STOCK_FAILS:  # checked, not assumed: stock still fails, and so does
        # the plugin, with stock's error (when stock compiles it, drop it from STOCK_FAILS)
        for kw in (dict(stock=True), dict(fusions=GATHERS)):
            with pytest.raises(api.CompilerToolError, match="onnx.Loop"):
                api.compile_file(path, flags=art.flags, **kw)
        return
    out = {k: api.compile_file(path, flags=art.flags, **kw) for k, kw in (
        ("stock", dict(stock=True)), ("plugin", dict(fusions=GATHERS)),
        ("stock_flow", dict(stock=True, compile_to="flow")),
        ("plugin_flow", dict(fusions=GATHERS, compile_to="flow")))}
    removed = count_flow_ir(out["stock_flow"].output).total_dispatches - \
        count_flow_ir(out["plugin_flow"].output).total_dispatches
    if (model, form) in FORM_BLOCKED:
        reasons = [s["reason"] for r in out["plugin_flow"].reports for s in r["skipped"]]
        assert any(FORM_BLOCKED[model, form] in r for r in reasons), reasons
        assert removed > 0
    else:
        assert removed >= STATIC_REMOVED[model] - 1, (removed, out["plugin_flow"].reports)
    runs = [(art.inputs, art.reference)]
    if fa.other_inputs is not None:
        runs.append((fa.other_inputs, fa.other_reference))
    for inputs, reference in runs:
        stock = api.run(out["stock"].output, inputs, art.function, parameters=fa.parameters)
        plugin = api.run(out["plugin"].output, inputs, art.function, parameters=fa.parameters)
        assert api.compare_outputs(stock, plugin).max_abs == 0.0
        assert api.compare_outputs(reference, plugin).within(art.reference_atol)


@pytest.mark.slow
@pytest.mark.parametrize("batch", [8, 64])
def test_torch_embedding_bag_modules_with_offsets(batch):
    """nn.EmbeddingBag(mode="sum") modules called with (flat ids, offsets), ragged bags (an
    empty one too), three tables of different sizes: one batched generic, outputs equal to
    stock (up to the order of the sums) and to PyTorch."""
    import torch
    from torch import nn

    from iree_fusions.models.dlrm import bag_lengths
    from iree_fusions.models.torch_export import (TORCH_INPUT_FLAGS, export_to_mlir,
                                                  torch_outputs)

    class Bags(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.bags = nn.ModuleList([nn.EmbeddingBag(r, 16, mode="sum")
                                       for r in (300, 50, 1000)])

        def forward(self, *args):
            return torch.cat([bag(args[2 * i], args[2 * i + 1])
                              for i, bag in enumerate(self.bags)], 1)

    gen = torch.Generator().manual_seed(1)
    args = []
    for i, bag in enumerate(Bags().bags):
        lengths = bag_lengths(batch, 5 + 5 * i, gen)
        lengths[1], lengths[2] = 0, lengths[1] + lengths[2]  # an empty bag
        args.append(torch.randint(0, bag.num_embeddings, (sum(lengths),), generator=gen))
        args.append(torch.tensor([0] + lengths[:-1]).cumsum(0))
    model = Bags()
    source = export_to_mlir(model, args)
    inputs = [a.numpy() for a in args]
    check = compare_compilations(source, inputs, fusions=GATHERS, flags=TORCH_INPUT_FLAGS)
    assert any("run-time offsets" in c for c in check.changes()), check.reports
    # Each bag sums <= n rows of a table (n ids scanned) in an order the target may choose:
    # within 2 gamma(n) n max|weight| (weights of both signs).
    n = max(len(a) for a in args[0::2])
    w = max(float(b.weight.abs().max()) for b in model.bags)
    assert check.agreement.max_abs <= reassociation_bound(n, scale=n * w), check.agreement
    assert api.compare_outputs(torch_outputs(model, args), check.plugin).within(1e-5)
    assert check.plugin_dispatches < check.stock_dispatches


@pytest.mark.slow
@pytest.mark.parametrize("weight", ["parameter", "argument"])
def test_torch_expert_weight_gather_reason(weight):
    """MoE-style `W[ids]` on a static [E, K, N] weight (top-2 ids [B, 2]): left alone, and
    the report says why (whole [K, N] slices of a 3-d table), at the shape check."""
    import torch
    from torch import nn

    from iree_fusions.models.torch_export import TORCH_INPUT_FLAGS, export_to_mlir

    class Experts(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.w = nn.Parameter(torch.randn(8, 16, 32))

        def forward(self, ids, *w):
            return (w[0] if w else self.w)[ids]

    ids = torch.randint(0, 8, (4, 2), generator=torch.Generator().manual_seed(1))
    args = [ids] + ([torch.randn(8, 16, 32)] if weight == "argument" else [])
    out = api.compile_str(export_to_mlir(Experts(), args), fusions=GATHERS,
                          flags=TORCH_INPUT_FLAGS, compile_to="flow")
    report, = [r for r in out.reports if r["pass"] == PASS]
    assert not report["changes"]
    reasons = [s["reason"] for s in report["skipped"]]
    assert reasons == ["gathers whole [16x32] slices of a 3-d table (tensor<8x16x32xf32>) by "
                       "index (`W[ids]`, index_select: e.g. MoE expert weights): batching "
                       "supports row gathers of 2-d tables"], reasons


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dlrm-b8", "dlrm-bag-b1"])
def test_dlrm_call_stays_one_submission(name):
    """The batched gathers go right before their first use: placed early, between two of the
    function's argument imports, they made IREE cut the call into two stream submissions
    (a host wait; dlrm-b8 measured 1.0x instead of 1.6x)."""
    art = _dlrm(name)

    def submissions(**kw) -> int:
        stream = api.compile_str(art.source, flags=art.flags, compile_to="stream", **kw).output
        main = stream.decode().split("util.func public @main")[1]
        return main.count("stream.cmd.execute")

    assert submissions(fusions=GATHERS) == submissions(stock=True) == 1


@pytest.mark.slow
def test_dlrm_out_of_range_id_reported_like_stock():
    art = _dlrm("dlrm-b8")
    stock = api.compile_str(art.source, stock=True, flags=art.flags).output
    plugin = api.compile_str(art.source, fusions=GATHERS, flags=art.flags).output
    bad = [x.copy() for x in art.inputs]
    bad[1][5] = 1000  # feature 0 reads table 0, which has 1000 rows
    out_s = api.run(stock, bad)[0]  # stock raises nothing (asserts stripped in dispatches)
    out_p = api.run(plugin, bad)[0]
    mask = np.ones(out_s.shape, bool)
    mask[5, 64:128] = False
    np.testing.assert_array_equal(out_s[mask], out_p[mask])
    np.testing.assert_allclose(out_p[mask], art.reference[0][mask], atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("device", ["hip", "cuda", "vulkan"])
def test_dlrm_compiles_for_gpu_targets(device):
    for name in ("dlrm-b8", "dlrm-bag-b8"):
        art = _dlrm(name)
        out = api.compile_str(art.source, fusions=GATHERS, device=device, flags=art.flags,
                              compile_to="flow")
        assert out.reports and any(r["changes"] for r in out.reports)
        vmfb = api.compile_str(art.source, fusions=GATHERS, device=device, flags=art.flags)
        assert len(vmfb.output) > 0
