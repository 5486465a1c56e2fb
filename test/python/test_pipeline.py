"""Pipeline parsing and running: plugin passes mixed with MLIR passes, options, failures."""

import tempfile
from unittest import mock

import pytest
from iree.compiler import ir

from iree_fusions.compiler.pipeline import (
    PipelineError,
    Step,
    parse_pipeline,
    run_pipeline,
    split_top_level,
)
from support.extra_passes import InvalidIrPass, MarkFunctionsPass, RaisingPass

MODULE = """
util.func public @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %in, %in : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  util.return %r : tensor<4xf32>
}
"""


def test_split_top_level_respects_nesting():
    assert split_top_level("a,b{x=1 y=2},util.func(c,d),e") == [
        "a", "b{x=1 y=2}", "util.func(c,d)", "e"]
    with pytest.raises(PipelineError, match="unbalanced"):
        split_top_level("a,b(c")


def test_plugin_and_mlir_passes_are_grouped_in_order():
    with ir.Context():
        steps = parse_pipeline("canonicalize,cse,fusions-report,util.func(canonicalize)")
    assert [(s.text, s.plugin is not None) for s in steps] == [
        ("canonicalize,cse", False), ("fusions-report", True), ("util.func(canonicalize)", False)]


def test_builtin_module_wrapper_is_accepted():
    with ir.Context():
        steps = parse_pipeline("builtin.module(fusions-report,cse)")
    assert [s.text for s in steps] == ["fusions-report", "cse"]


@pytest.mark.parametrize("pipeline, message", [
    ("not-a-pass", "neither an iree-fusions pass"),
    ("fusions-report{nope=1}", "has no option 'nope'"),
    ("fusions-report{nope", "unbalanced"),
])
def test_bad_pipelines_are_clear_errors(pipeline, message):
    with ir.Context(), pytest.raises(PipelineError, match=message):
        parse_pipeline(pipeline)


def _module():
    return ir.Module.parse(MODULE)


def test_failing_plugin_pass_raises_without_keep_going():
    with ir.Context():
        m = _module()
        with pytest.raises(PipelineError, match="deliberate failure"):
            run_pipeline(m.operation, [Step("test-raise", RaisingPass())])


@pytest.mark.parametrize("broken, reason", [
    (RaisingPass(), "raised RuntimeError"),
    (InvalidIrPass(), "fails verification"),
])
def test_keep_going_reverts_to_ir_before_the_failing_pass(broken, reason, tmp_path,
                                                          monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the reproducer goes there
    warnings = []
    with ir.Context():
        m = _module()
        before = str(m.operation)
        steps = [Step(broken.name, broken), Step("test-mark", MarkFunctionsPass())]
        op, reports = run_pipeline(m.operation, steps, keep_going=True, warn=warnings.append)
        text = str(op)
    assert reason in reports[0].error
    assert "iree_fusions.test_marked" in text  # the pass after the failure still ran
    assert text.replace(" attributes {iree_fusions.test_marked}", "") == before
    assert len(warnings) == 1 and "reproduce with: iree-fusions-opt" in warnings[0]
    assert str(tmp_path) in warnings[0]


def test_report_counts_ops_before_and_after():
    with ir.Context():
        m = _module()
        _, reports = run_pipeline(m.operation, [Step("test-mark", MarkFunctionsPass())])
    assert [c.what for c in reports[0].changes] == ["marked f"]
    assert reports[0].ops_before["linalg.generic"] == 1
    assert "linalg.yield" not in reports[0].ops_before


def test_op_counts_carry_from_one_plugin_pass_to_the_next():
    """A pass's counts after it are the next plugin pass's counts before it (one walk per
    pass); an MLIR step in between counts again; each report times its parts."""
    import iree_fusions.compiler.pipeline as pipeline

    walks = []
    real = pipeline.count_compute_ops

    def counting(module):
        walks.append(module)
        return real(module)

    with ir.Context(), mock.patch.object(pipeline, "count_compute_ops", counting):
        m = _module()
        steps = [Step("a", MarkFunctionsPass()), Step("b", MarkFunctionsPass()), Step("cse"),
                 Step("c", MarkFunctionsPass())]
        _, reports = run_pipeline(m.operation, steps, keep_going=True)
    assert len(walks) == 5  # a: before + after, b: after, c: before + after
    assert reports[1].ops_before == reports[0].ops_after
    assert reports[1].ops_before is not reports[0].ops_after
    for report in reports:
        assert {"count", "total"} <= set(report.timing)
        assert report.timing["total"] >= report.timing["count"]
    # a and b share one copy from before them and one verification after them; c has its own
    assert {"snapshot"} <= set(reports[0].timing) and "verify" not in reports[0].timing
    assert {"verify"} <= set(reports[1].timing) and "snapshot" not in reports[1].timing
    assert {"snapshot", "verify"} <= set(reports[2].timing)


def test_a_failure_after_a_pass_that_changed_the_ir_names_its_pass(tmp_path, monkeypatch):
    """Consecutive plugin passes are verified once after them; when the second produced
    invalid IR they run again one at a time from the caller's copy (left unchanged): the
    first pass's change stays, the second is reported as the one that failed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    warnings = []
    with ir.Context():
        m = _module()
        before = m.operation.clone()
        original = str(before)
        steps = [Step("test-mark", MarkFunctionsPass()), Step("bad", InvalidIrPass())]
        op, reports = run_pipeline(m.operation, steps, keep_going=True, warn=warnings.append,
                                   before=before)
        text = str(op)
        assert str(before) == original
    assert reports[0].error is None and [c.what for c in reports[0].changes] == ["marked f"]
    assert "fails verification" in reports[1].error
    assert "iree_fusions.test_marked" in text
    assert len(warnings) == 1 and f"pass '{InvalidIrPass.name}' failed" in warnings[0]
