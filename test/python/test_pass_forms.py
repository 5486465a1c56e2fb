"""Every pass on every form users compile, at least once: CI's subset of the slow cases
(`-m ci_slow`, also part of `-m slow`).

Each case exports a small PyTorch model in one form (models/forms.py FORMS: static,
dynamic-batch, dynamic-seq, params, onnx, onnx-params), compiles it with stock IREE and with
`--fusions=all` (bench/reach.py `measure`, the reach suite's row; a pass's llvm-cpu rule
that declines the rewrite in a form is turned off there, reach.CPU_RULES_OFF), and asserts
that the passes the model is there for fired and their changes were kept, outputs equal to
stock (1e-5) and to PyTorch, also at a dynamic size the export never saw. COVERAGE says
which case covers each (pass, form); NOT_COVERED says why the others are not
(test_coverage_is_complete keeps the two complete as passes and forms are added)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEC = importlib.util.spec_from_file_location("bench_reach", os.path.join(ROOT, "bench",
                                                                          "reach.py"))
reach = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = reach  # dataclasses look their module up
SPEC.loader.exec_module(reach)

FORMS = ("static", "dynamic-batch", "dynamic-seq", "params", "onnx", "onnx-params")
BATCH = ("static", "dynamic-batch", "params", "onnx", "onnx-params")

TOWERS, GATHERS, BAGS = "batch-mlp-towers", "batch-gathers", "rewrite-embedding-bags"
IPC, FFO = "interchange-permuted-consumers", "forward-factory-ops"
FFD, SLICES = "forward-factory-dispatches", "forward-slice-dispatches"
FS = "forward-slices"
MERGE = "merge-sibling-contractions"
MERGE_GENERICS = "merge-sibling-generics"
SCATTERS = "merge-cache-scatters"
ATTENTION = "rewrite-attention"
SHARE = "share-layer-executables"

# model -> (forms, passes that must fire in every one of them, {form: more passes})
CASES = {
    "moe-tokens-flat-b4": (FORMS, {TOWERS, FS}, {}),
    "bert-tiny-b2-s64": (FORMS, {IPC}, {"dynamic-seq": {FFO}}),
    "llm-decode-b4": (BATCH, {FFO}, {}),
    "dlrm-sparse-b8": (BATCH, {GATHERS}, {}),
    # dynamic-batch-facts: the dynamic batch with torch.export's shape facts (EXTRA_FORMS)
    "dlrm-bag-b8": (("static", "dynamic-batch-facts", "params"), {BAGS}, {}),
    "llama-sdpa-s64": (("static", "dynamic-seq", "params"), {ATTENTION}, {}),
}
NOT_COVERED = {
    (ATTENTION, "dynamic-batch"): "the Llama models take one batch row (dynamic-seq covers "
                                  "dynamic dims; sharktank's export, test_production_llm, a "
                                  "dynamic sequence and page count)",
    (ATTENTION, "onnx"): "torch.onnx exports SDPA as MatMul/Softmax ops: no attention op to "
                         "rewrite (IREE imports none)",
    (ATTENTION, "onnx-params"): "as onnx",
    (GATHERS, "dynamic-seq"): "the recommender models that have lookups have no sequence dim",
    (BAGS, "dynamic-seq"): "the recommender models that have bags have no sequence dim",
    (BAGS, "dynamic-batch"): "without shape facts the bag count and the ids' length are "
                             "separate dynamic sizes: nothing says the bags have one length "
                             "(the pass says so); covered with them, dynamic-batch-facts",
    (BAGS, "onnx"): "torch.onnx exports F.embedding_bag as onnx.Loop, which stock IREE 3.13 "
                    "rejects (test_batch_gathers.test_every_form_like_static checks it still "
                    "does, for the plugin too)",
    (BAGS, "onnx-params"): "as onnx",
    **{(FFD, form): "no model of the project leaves it a mask between two dispatches: "
                    "forward-factory-ops forwards them first, and alone it declines (consumers "
                    "are generics); its lit cases and their numerics cover it"
       for form in FORMS},
    **{(SLICES, form): "no model of the project gets a copy dispatch from stock IREE (it "
                       "clones their RoPE slices into the reading dispatch); "
                       "test_production_llm covers it on sharktank's toy Llama export (an IR "
                       "file: dynamic sequence, parameters), its lit cases cover the IR"
       for form in FORMS},
    **{(SHARE, form): "no catalog model reads a per-layer tensor one layer at a time (a paged "
                      "KV cache); test_production_llm covers it on sharktank's toy Llama "
                      "export, its lit cases cover the IR"
       for form in FORMS},
    **{(MERGE, form): "no model of the project has contractions it merges (test_production_llm "
                      "covers it on sharktank's toy Llama export, an IR file); its lit cases "
                      "and their numerics cover it"
       for form in FORMS},
    **{(MERGE_GENERICS, form): "no model of the project has elementwise siblings read only by "
                               "scatters or returns (test_production_llm covers the paged "
                               "cache's K/V indices on sharktank's toy Llama export, an IR "
                               "file); its lit cases and their numerics cover it"
       for form in FORMS},
    **{(SCATTERS, form): "no model of the project writes a cache with two scatters "
                         "(test_production_llm covers decode's K/V write on sharktank's toy "
                         "Llama export, an IR file); its lit cases and their numerics cover it"
       for form in FORMS},
}


def _models() -> dict[str, reach.ReachModel]:
    models = {m.name: m for m in reach.MODELS if m.name in CASES}
    models["dlrm-bag-b8"] = reach.ReachModel(
        "dlrm-bag-b8", "recommender", reach._dlrm("ISSUE", batch=8, bag_op="embedding_bag"),
        CASES["dlrm-bag-b8"][0], {"batch": 5})
    return models


def coverage() -> dict[tuple[str, str], str]:
    """(pass, form) -> the case (model) that covers it."""
    covered = {}
    for model, (forms, passes, more) in CASES.items():
        for form in forms:
            for p in passes | more.get(form, set()):
                covered.setdefault((p, form), model)
    return covered


def test_coverage_is_complete():
    """Every pass of --fusions=all on every form: a case, or a reason why none."""
    from iree_fusions.compiler.registry import default_pass_names
    from iree_fusions.models.forms import FORMS as USER_FORMS

    assert set(FORMS) == set(USER_FORMS)
    covered = coverage()
    for p in default_pass_names():
        for form in FORMS:
            assert ((p, form) in covered) != ((p, form) in NOT_COVERED), (p, form)


CELLS = [(model, form) for model, (forms, _, _) in CASES.items() for form in forms]


@pytest.mark.slow
@pytest.mark.ci_slow
@pytest.mark.parametrize("model, form", CELLS)
def test_pass_fires_on_form(model, form, tmp_path):
    pytest.importorskip("torch")
    forms, passes, more = CASES[model]
    args = argparse.Namespace(fusions=reach.fusions_without_cpu_rules(form),
                              device="local-task", time=False, time_models=())
    row = reach.measure(_models()[model], form, str(tmp_path), args)
    expected = passes | more.get(form, set())
    assert expected <= set(row["passes"]), (expected, row["passes"], row["skips"])
    if ATTENTION not in expected:  # (its decomposition saves time and adds dispatches)
        assert row["removed"] > 0, row
    assert row["max_abs"] <= 1e-5 and row["ok"], row
    if form.startswith("dynamic"):
        assert row["unseen_max_abs"] <= 1e-5, row
