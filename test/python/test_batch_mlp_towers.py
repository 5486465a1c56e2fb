"""batch-mlp-towers: numerics of every lit case on local-task (splat weights replaced by random
ones, so a wrong tower, row or column shows), dispatch counts, helpers, idempotence, a
hypothesis property over random tower counts / depths / widths / activations / batch (stock
vs plugin), and the PyTorch models and GPU-target compiles (`-m slow`)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from conftest import reassociation_bound
from iree_fusions.harness.numerics import compare_compilations
from support import passes
from support.batch_mlp_towers import PAD, PASS, TOL, dense, towers_ir


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIT = os.path.join(ROOT, "test", "passes", "batch-mlp-towers.mlir")


def randomize_splats(text: str, seed: int = 0) -> str:
    """Every `arith.constant dense<c> : tensor<...xf32>` splat becomes random values."""
    rng = np.random.default_rng(seed)

    def sub(m: re.Match) -> str:
        shape = [int(d) for d in m.group(1).split("x")]
        values = (rng.standard_normal(shape) * 0.3).astype(np.float32)
        return f"arith.constant {dense(values)} : tensor<{m.group(1)}xf32>"

    return re.sub(r"arith\.constant dense<[-0-9.e+]+> : tensor<([0-9x]+)xf32>", sub, text)


def lit_cases() -> dict[str, str]:
    return {name: randomize_splats(c, i)
            for i, (name, c) in enumerate(passes.lit_cases(PASS).items())}


def run_pass(text: str, pipeline: str = PASS) -> tuple[str, list]:
    return passes.run_pass(text, pipeline)


# ---------------------------------------------------------------- a tower IR builder

ACTS = ("none", "relu", "silu", "sigmoid", "gelu", "tanh")


# ---------------------------------------------------------------- the lit cases, compiled

# function -> rewritten by the default pass (fewer dispatches) or left alone (same count).
LIT_EXPECTATIONS = {
    "basic_two_towers": True,
    "bias_absorbed": True,
    "silu_absorbed": True,
    "bias_silu": True,
    "partial_split_silu_relu": True,
    "different_k": False,
    "different_m_batch": False,
    "single_tower": False,
    "dependent_towers": False,
    "runtime_weights": False,
    "prefix_depths": True,
    "single_layer_towers": False,
    "batch1_collapsed": True,
    "concat_consumer": True,
    "separate_inputs": True,
    "intermediate_also_used": False,  # declined: net -2 (4 result copies); applied below
    "one_layer_experts_stack": True,
    "padded_heads": False,  # padding is off by default; applied below
    "padding_waste": False,
    "bf16_towers_f32_accumulator": True,
    "towers_of_two_precisions": False,
    "dynamic_rows": False,  # dynamic rows on llvm-cpu: declined by the rule; applied below
    "dynamic_k": False,
    "mutable_global_weights": False,
    "token_experts": True,
    "separate_dynamic_rows": False,  # as dynamic_rows
    "separate_unrelated_rows": False,
}
_RNG = np.random.default_rng(7)
# How a lit case runs, where its signature or external weights need saying: dynamic dims at
# a size of 5, parameters served from random arrays (as an .irpa would).
LIT_RUN_OPTIONS = {
    "dynamic_rows": {"dynamic_size": 5},
    "dynamic_k": {"dynamic_size": 5},
    "separate_dynamic_rows": {"dynamic_size": 5},
    "separate_unrelated_rows": {"dynamic_size": 5},
}
PARAMETER_WEIGHTS = {"parameters": {"model": {
    name: _RNG.standard_normal((8, 16)).astype(np.float32) for name in ("w0", "w1")}}}


def test_expectations_cover_every_lit_case():
    assert set(lit_cases()) == set(LIT_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_numerics(name):
    text = lit_cases()[name]
    check = compare_compilations(text, fusions=PASS, function=name,
                                 **LIT_RUN_OPTIONS.get(name, {}))
    assert check.agreement.within(TOL), check.agreement
    if LIT_EXPECTATIONS[name]:
        assert check.changes(), "the pass left the case alone"
        assert check.plugin_dispatches < check.stock_dispatches
    else:
        assert not check.changes()
        assert check.plugin_dispatches == check.stock_dispatches


@pytest.mark.parametrize("stack", [False, True])
def test_parameter_weights_stacked_only_when_asked(stack):
    """Weights read from an .irpa: by default the towers are left to IREE (stacked at load,
    the weights would be a second resident copy beside the mapped file: the reason says which
    option stacks them); with stack-parameters=true they are stacked and match stock."""
    text = passes.lit_cases("batch-mlp-towers-parameters")["parameter_weights"]
    fusions = PASS + ("{stack-parameters=true}" if stack else "")
    check = compare_compilations(text, fusions=fusions, function="parameter_weights",
                                 **PARAMETER_WEIGHTS)
    assert check.agreement.within(TOL), check.agreement
    skipped = [s["reason"] for r in check.reports for s in r.get("skipped", [])]
    if stack:
        assert check.changes() and check.plugin_dispatches < check.stock_dispatches
    else:
        assert not check.changes() and check.plugin_dispatches == check.stock_dispatches
        assert any("model::w0, model::w1" in why and "stack-parameters=true" in why
                   for why in skipped), skipped


@pytest.mark.parametrize("name, options", [
    ("runtime_weights", "{runtime-stack-bytes-per-dispatch=1000000}"),
    ("single_layer_towers", "{min-net-dispatches=-10}"),
    ("intermediate_also_used", "{min-net-dispatches=-10}"),
    ("padded_heads", "{max-padding-waste=0.5}"),
    ("silu_absorbed", "{named-batch-matmul=0 weight-layout=keep}"),
    ("batch1_collapsed", "{drop-unit-rows=0}"),
    ("batch1_collapsed", "{named-batch-matmul=0}"),
    ("dynamic_rows", "{cpu-dynamic-rows=true}"),
    ("separate_dynamic_rows", "{cpu-dynamic-rows=true}"),
])
def test_lit_case_numerics_with_options(name, options):
    check = compare_compilations(lit_cases()[name], fusions=PASS + options, function=name,
                                 **LIT_RUN_OPTIONS.get(name, {}))
    assert check.changes()
    assert check.agreement.within(TOL), check.agreement
    assert check.plugin_dispatches < check.stock_dispatches


@pytest.mark.parametrize("name", ["dynamic_rows", "separate_dynamic_rows"])
def test_dynamic_rows_declined_on_cpu_and_kept_without_a_target(name):
    """The rule for dynamic rows: compiled for llvm-cpu the group is declined with its reason
    (IREE runs a partial 64-row tile of the batched contraction with masked vectors); run
    with no target (iree-fusions-opt, the lit tests) the pass still batches them."""
    check = compare_compilations(lit_cases()[name], fusions=PASS, function=name,
                                 **LIT_RUN_OPTIONS[name])
    skipped = [s["reason"] for r in check.reports for s in r.get("skipped", [])]
    assert any("dynamic on llvm-cpu" in why for why in skipped), skipped
    _, reports = passes.run_pass(lit_cases()[name], PASS)
    assert reports[0].changes, reports


@pytest.mark.parametrize("batch", [2, 4])
@pytest.mark.parametrize("act", ["relu", "silu", "gelu"])
def test_padded_heads_match_stock(batch, act):
    """Heads of different widths padded to the widest: the real columns equal stock's up to
    the order of the K sums (the padded K changes how generated code splits them across
    vector lanes, which depends on the target: identical with 64-byte vectors, 7.5e-9 apart
    with 32-byte ones); a wrong or leaking padded column would differ by ~0.1."""
    text = towers_ir(batch, [[16, 4, 1], [16, 8, 3], [16, 12, 2]], [act] * 3, seed=1)
    check = compare_compilations(text, fusions=PAD, keep_no_gain=True)
    assert any("padded to 12x3" in c for c in check.changes()), check.changes()
    # Layer 1 sums K = 16 terms, sum |x w| < 8 (3.9 here), passed on through the activation
    # (slope <= 1.13) and layer 2's weights (sum |w| < 4; 2.8 here); layer 2 sums K = 12
    # terms, sum |a w| < 4 (1.5 here): 7.5e-5 for f32.
    bound = reassociation_bound(16, scale=8 * 1.13 * 4) + reassociation_bound(12, scale=4)
    assert check.agreement.max_abs <= bound, (check.agreement, bound)
    assert check.plugin_dispatches < check.stock_dispatches


def test_padded_heads_batch1_within_tolerance():
    text = towers_ir(1, [[16, 4, 1], [16, 8, 1], [16, 12, 1]], ["gelu"] * 3, seed=1)
    check = compare_compilations(text, fusions=PAD, keep_no_gain=True)
    assert any("padded" in c for c in check.changes()), check.changes()
    assert check.agreement.within(TOL), check.agreement


@pytest.mark.parametrize("batch", [1, 8])
def test_six_by_four_towers_compile_to_four_dispatches(batch):
    text = towers_ir(batch, [[32, 32, 16, 8, 4]] * 6, ["silu"] * 6, seed=3)
    check = compare_compilations(text, fusions=PASS)
    assert check.agreement.within(TOL), check.agreement
    assert check.stock_dispatches == 24
    assert check.plugin_dispatches == 4
    # The stacked weights are evaluated at compile time (IREE's const-eval on the plugin's
    # initializers): nothing runs at load, the weights are held once.
    assert check.plugin_counts.initializer_dispatches == 0
    notes = [n for r in check.reports for n in r.get("notes", [])]
    assert any("8 stacked constant(s)" in n and "compile time" in n for n in notes), notes
    # With IREE's const-eval off, the stacks are built once, at load: transposed to [T, K, N]
    # with rows (batch 8); at batch 1 the towers' own [N, K] layout is kept on llvm-cpu
    # (weight-layout=auto), so a stack is a concatenation of constants, which IREE folds.
    load_time = compare_compilations(text, fusions=PASS, flags=["--iree-opt-const-eval=false"])
    assert load_time.agreement.within(TOL), load_time.agreement
    assert load_time.plugin_dispatches == 4
    if batch > 1:
        assert load_time.plugin_counts.initializer_dispatches >= 1
    else:
        assert load_time.plugin_counts.initializer_dispatches == 0


# ---------------------------------------------------------------- IR-level properties


def test_idempotent_and_nothing_left_to_batch():
    text = lit_cases()["partial_split_silu_relu"]
    once, reports = run_pass(text)
    assert len(reports[0].changes) == 2
    twice, reports = run_pass(once)
    assert not reports[0].changes
    assert twice == once


@pytest.mark.parametrize("name", ["single_tower", "different_k", "dependent_towers"])
def test_no_match_leaves_ir_unchanged(name):
    text = lit_cases()[name]
    with ir.Context():
        before = str(ir.Module.parse(text))
    after, reports = run_pass(text)
    assert after == before
    assert reports[0].skipped and not reports[0].changes


def test_silu_and_relu_towers_never_share_a_group():
    text = towers_ir(2, [[8, 8, 8]] * 4, ["silu", "relu", "relu", "silu"])
    _, reports = run_pass(text)
    changes = reports[0].changes
    assert len(changes) == 2
    assert any("(silu)" in c.what for c in changes) and any("(relu)" in c.what for c in changes)


def test_merge_groups_for_reshapes():
    from iree_fusions.compiler.ir_build import merge_groups

    assert merge_groups([4, 2, 8], [4, 16]) == [[0], [1, 2]]
    assert merge_groups([2, 4, 8], [8, 8]) == [[0, 1], [2]]
    assert merge_groups([1, 2, 8], [16]) == [[0, 1, 2]]
    assert merge_groups([4, 16], [4, 2, 8]) is None
    assert merge_groups([4, 3], [3, 4]) is None


# ---------------------------------------------------------------- candidate keys, skip / only


def _silu_and_relu_groups() -> tuple[str, str, str]:
    """A module with a SiLU and a ReLU group of 2 towers each; their keys."""
    text = towers_ir(2, [[8, 8, 8]] * 4, ["silu", "relu", "relu", "silu"])
    _, reports = run_pass(text)
    keys = {("silu" if "(silu)" in c.what else "relu"): c.key for c in reports[0].changes}
    assert len(reports[0].changes) == 2 and len(keys) == 2 and keys["silu"] != keys["relu"]
    return text, keys["silu"], keys["relu"]


@pytest.mark.parametrize("option", ["skip", "only"])
def test_skip_and_only_select_groups_by_key(option):
    text, silu, relu = _silu_and_relu_groups()
    out, reports = run_pass(text, f"{PASS}{{{option}={silu}}}")
    report = reports[0]
    left, batched = (silu, relu) if option == "skip" else (relu, silu)
    reason = ("skipped on request (skip=KEY)" if option == "skip"
              else f"not selected (only={silu})")
    assert [c.key for c in report.changes] == [batched]
    assert [(s.key, s.reason) for s in report.skipped] == [(left, reason)]
    # The group left alone keeps its 2 towers x 2 matmuls; the other is 2 batched layers.
    assert out.count("linalg.matmul ") == 4
    assert out.count("linalg.batch_matmul ") == 2


def _renamed(text: str, function: str) -> str:
    """The same IR in another file: SSA values and the function renamed, an unrelated op
    first in the body (every location moves)."""
    text = re.sub(r"%([A-Za-z_0-9]+)", r"%renamed_\1", text)
    text = text.replace(f"@{function}(", "@another_name(")
    head, brace, body = text.partition("{\n")
    return head + brace + "  %unrelated = arith.constant 7.0 : f32\n" + body


@pytest.mark.parametrize("name", ["partial_split_silu_relu", "runtime_weights",
                                  "different_k", "concat_consumer"])
def test_keys_depend_on_structure_only(name):
    text = lit_cases()[name]
    _, before = run_pass(text)
    _, after = run_pass(_renamed(text, name))
    keys = [(c.key, c.what) for c in before[0].changes] + [
        (s.key, s.reason) for s in before[0].skipped]
    assert keys
    assert keys == [(c.key, c.what) for c in after[0].changes] + [
        (s.key, s.reason) for s in after[0].skipped]
    assert [c.location for c in before[0].changes + before[0].skipped] != [
        c.location for c in after[0].changes + after[0].skipped]


# ---------------------------------------------------------------- hypothesis: random towers


@st.composite
def tower_sets(draw, meant_to_fire: bool = False):
    """Random tower sets. meant_to_fire: sets the pass must batch (and the driver keep):
    towers 0 and 1 of equal structure (same activation, full depth >= 2, widths >= 2) on a
    shared input."""
    count = draw(st.integers(2, 8))
    depth = draw(st.integers(2 if meant_to_fire else 1, 5))
    # (width-1 layers: IREE fuses two such towers into 2 dispatches itself, nothing to gain)
    widths = [draw(st.integers(2 if meant_to_fire else 1, 24)) for _ in range(depth + 1)]
    batch = draw(st.sampled_from([1, 2, 3, 8]))
    # Towers may differ in activation and in depth (equal on a prefix of layers).
    pair = draw(st.lists(st.sampled_from(ACTS), min_size=1, max_size=2))  # no filter: drawn
    acts = [draw(st.sampled_from(pair)) for _ in range(count)]
    depths = [draw(st.integers(1, depth)) if draw(st.booleans()) else depth
              for _ in range(count)]
    shared = draw(st.booleans())
    if meant_to_fire:
        acts[1], depths[0], depths[1], shared = acts[0], depth, depth, True
    bias = draw(st.booleans())
    seed = draw(st.integers(0, 1000))
    return dict(batch=batch, widths=[widths[: d + 1] for d in depths], acts=acts,
                shared=shared, bias=bias, seed=seed)


def _check_random_towers(case, options: str = "", fires: bool = False) -> None:
    text = towers_ir(case["batch"], case["widths"], case["acts"], shared=case["shared"],
                     bias=case["bias"], seed=case["seed"])
    check = compare_compilations(text, fusions=PASS + options)
    assert check.agreement.within(TOL, TOL), (case, check.agreement)
    assert check.plugin_dispatches <= check.stock_dispatches, case
    if fires:  # a pass that never fired would pass the two checks above
        assert check.changes(), (case, check.reports)
        assert check.plugin_dispatches < check.stock_dispatches, case


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tower_sets(meant_to_fire=True))
def test_random_towers_match_stock(case):
    _check_random_towers(case, fires=True)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(tower_sets(), st.sampled_from([
    "", "{min-layers=1}", "{runtime-stack-bytes-per-dispatch=0 min-layers=1}",
    "{named-batch-matmul=0 weight-layout=keep}", "{weight-layout=nk}", "{drop-unit-rows=0}"]))
def test_random_towers_match_stock_many(case, options):
    _check_random_towers(case, options)
