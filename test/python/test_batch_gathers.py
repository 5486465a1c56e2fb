"""batch-gathers and rewrite-embedding-bags (which runs before it): numerics of every lit case
on local-task (with tables whose every element
differs, so a wrong row or a wrong table shows), dispatch counts, the out-of-range index
behaviour, hypothesis properties over random table sets / sharing / index lengths / batch
(against a NumPy reference; idempotence), and the DLRM-style PyTorch models (`-m slow`)."""

# ruff: noqa: E501  (IR lines in the test programs)

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from iree.compiler import ir

from conftest import reassociation_bound
from iree_fusions.harness import api
from iree_fusions.harness.numerics import compare_compilations, function_arg_specs
from support.batch_gathers import GATHERS_LOW, LOW, lit_cases, run_pass, table_values


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIT = os.path.join(ROOT, "test", "passes", "batch-gathers.mlir")


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
    "overlapping_stacks": (True, 2),  # the second group extends the first's stack
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
    # Tables held in globals (immutable: stacked at load; mutable: never); read from external
    # parameters: test_parameter_tables_stacked_only_when_asked.
    "global_tables": (True, 3),
    "mutable_global_table": (False, 0),
    # The ONNX import's forms: wrapped indices, flattened bag ids, other loop orders.
    "onnx_bags_into_concat": (True, 5),
    "permuted_loop_order": (True, 1),
    "onnx_column_select": (False, 0),  # a normalization (a view), no candidate
    # The Criteo layout: raw dense features beside the embeddings (narrow-concat=run).
    "narrow_concat": (True, 2),
}
PARAMETERS = {"model": {f"t{k}": table_values(r, 4, 7 + k) for k, r in enumerate((10, 20, 20))}}


def test_lit_cases_are_all_covered():
    assert set(lit_cases()) == set(LIT_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_numerics_and_counts(name):
    """Integer inputs are random in [0, 10): for the offsets bags these are offsets in any
    order and past the ids' end, where the rewrite must still add exactly what stock adds."""
    text = lit_cases()[name]
    changed, saved = LIT_EXPECTATIONS[name]
    check = compare_compilations(text, inputs_for(text, name), fusions=GATHERS_LOW, function=name)
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


@pytest.mark.parametrize("stack", [False, True])
def test_parameter_tables_stacked_only_when_asked(stack):
    """Tables read from an .irpa (given as arrays at run time, scope "model"): by default not
    stacked (a second resident copy beside the mapped file; the reason names the tables and
    the option), with stack-parameters=true stacked at load: 5 dispatches fewer. Bit-identical
    either way (gathers copy elements)."""
    from support import passes

    text = passes.lit_cases("batch-gathers-parameters")["parameter_tables"]
    pipeline = GATHERS_LOW[:-1] + (" stack-parameters=true}" if stack else "}")
    check = compare_compilations(text, inputs_for(text, "parameter_tables"), fusions=pipeline,
                                 function="parameter_tables", parameters=PARAMETERS)
    assert check.agreement.max_abs == 0.0, check.agreement
    skipped = [s["reason"] for r in check.reports for s in r.get("skipped", [])]
    stock, plugin = check.stock_counts.dispatches, check.plugin_counts.dispatches
    if stack:
        assert plugin["parameter_tables"] <= stock["parameter_tables"] - 5
        assert not any("external parameters" in why for why in skipped), skipped
    else:
        # Nor does the concat writer apply: it would gather none of the lookups, only copy
        # values (dlrm-b64 --form params: 0.91x of stock).
        assert not check.changes() and plugin == stock, (check.changes(), plugin, stock)
        assert any("writer would gather none" in why for why in skipped), skipped
        assert any("model::t0, model::t1, model::t2" in why and "stack-parameters=true" in why
                   for why in skipped), skipped


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
