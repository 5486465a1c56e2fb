"""batch-gathers and rewrite-embedding-bags: hypothesis properties over random table sets,
sharing, index lengths and batches (against NumPy and stock), idempotence."""

# ruff: noqa: E501  (IR lines in the test programs)

from __future__ import annotations

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
from support.batch_gathers import (BAGS, GATHERS_LOW, LOW, PASS, dense, lit_cases, run_pass,
                                   table_values)


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


# ------------------------------------------------- the split (issue 23): options, keys


@pytest.mark.parametrize("option", ["embedding-bag=0", "offsets-bags=false",
                                    "min-offsets-batch=1"])
def test_the_bag_options_are_rewrite_embedding_bags(option):
    """batch-gathers' F.embedding_bag options are rewrite-embedding-bags' now: batch-gathers
    has them no more."""
    with pytest.raises(PipelineError, match=f"pass 'batch-gathers' has no option "
                       f"'{option.partition('=')[0]}'"):
        parse_pipeline(f"batch-gathers{{min-group-size=2 {option}}}")
    (step,) = parse_pipeline(f"{BAGS}{{{option}}}")
    assert step.plugin.name == BAGS


def test_decisions_for_bag_keys_name_rewrite_embedding_bags():
    """The embedding_bag keys (`rewrite-embedding-bags-*`, `rewrite-embedding-bags-offsets-*`) are rewrite-embedding-bags'
    (the keys did not change in the split): a decision that names batch-gathers for one is
    refused, as for any key of another pass."""
    target = Target("local", "llvm-cpu", "x")
    bag, offsets, group = "rewrite-embedding-bags-0123456789", "rewrite-embedding-bags-offsets-0123456789", \
        "batch-gathers-group-0123456789"
    file = DecisionSet(target, "d.json", entries={
        k: Decision(k, p, False, "d.json") for k, p in ((bag, BAGS), (offsets, PASS),
                                                        (group, PASS))})
    decider = Decider(target, [file])
    assert not decider.lookup(bag, BAGS).apply
    assert not decider.lookup(group, PASS).apply
    for key in (offsets, group):
        with pytest.raises(DecisionsError, match=f"decision '{key}' names pass 'batch-gathers', "
                                                 "but the key is one of 'rewrite-embedding-bags'"):
            decider.lookup(key, BAGS)


def test_a_bag_decision_reaches_rewrite_embedding_bags():
    """offsets_bag_unit_batch is declined by the cost rule; a decisions file turns it on."""
    text = lit_cases()["offsets_bag_unit_batch"]
    _, reports = run_pass(text, BAGS)
    key = reports[0].skipped[0].key
    decider = Decider(None, [DecisionSet(Target("local", "llvm-cpu", "x"), "d.json", entries={
        key: Decision(key, BAGS, True, "d.json")})])
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
