"""interchange-permuted-consumers: numerics of every lit case on local-task (stock IREE vs the
plugin) with dispatch counts, hypothesis-generated permutations and shapes (numerics, dispatch
counts, idempotence, no change without a producer), the pass's helpers, and (under
`-m slow`) the real all-MiniLM-L6-v2 at batch 1 and 8, a small BERT and a Llama-style block
against PyTorch."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from iree_fusions.harness.numerics import compare_compilations
from support import passes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIT = os.path.join(ROOT, "test", "passes", "interchange-permuted-consumers.mlir")
PASS = "interchange-permuted-consumers"


def lit_cases() -> dict[str, str]:
    return passes.lit_cases(PASS)


def run_pass(text: str, pipeline: str = PASS) -> tuple[str, list]:
    return passes.run_pass(text, pipeline)


def changes(reports) -> list[str]:
    return [c for r in reports for c in r.changes]


# ---------------------------------------------------------------- the lit cases, compiled

# function -> (rewritten by the pass?, dispatches the plugin saves vs stock IREE)
LIT_EXPECTATIONS = {
    # Left to IREE: its transpose-generic-ops interchanges these the same way.
    "seed_matmul_transpose": (False, 0),
    "minilm_query": (True, 1),  # matmul + elementwise_transpose -> 1
    "minilm_key_b8": (True, 1),
    "attention_output_b8": (True, 1),
    "collapse_between": (True, 0),
    "multi_use": (True, 2),  # matmul + 2 readers -> 1
    "broadcast_permutation": (True, 0),
    "two_producers": (False, 0),
    "attention_producer": (True, 0),
    "index_in_body": (False, 0),
    "already_identity": (False, 0),
    "not_permutation": (False, 0),
    "no_producer": (False, 0),
    "gather_producer": (False, 0),  # IREE fuses the gather into its reader: nothing to gain
    "scatter_producer": (False, 0),  # IREE fuses no reader into a scatter: nothing to gain
    "multi_use_returned": (False, 0),
    "index_blocks_expand": (False, 0),
    "reduction_consumer": (False, 0),
    # Dynamic dims and parameters (the forms users compile).
    "query_dynamic_seq": (True, 1),
    "size_after_producer": (False, 0),
    "reshape_undetermined": (False, 0),
    "query_parameter_weight": (True, 1),
}


def _f32(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# Inputs of the cases whose arguments must agree (a sequence length and tensors of that many
# rows; i64 / index scalars as Python ints), at a sequence length `s`; others get
# random_inputs. Parameters: the external weights a case reads.
LIT_INPUTS = {
    "query_dynamic_seq": lambda rng, s: [_f32(rng, 2 * s, 128), _f32(rng, 128, 128),
                                         _f32(rng, 128), s],
    "size_after_producer": lambda rng, s: [_f32(rng, 2 * s, 128), _f32(rng, 128, 128)],
    "reshape_undetermined": lambda rng, s: [_f32(rng, 2 * s, 128), _f32(rng, 128, 128), 2, s],
    # distinct (row, column) targets inside the [16, 4] destination
    "scatter_producer": lambda rng, s: [
        _f32(rng, 8).astype(np.float16),
        np.stack(np.divmod(rng.permutation(64)[:8], 4), axis=1).astype(np.int64),
        _f32(rng, 16, 4).astype(np.float16)],
}
LIT_PARAMETERS = {
    "query_parameter_weight": lambda rng: {"model": {"q.weight": _f32(rng, 384, 384)}},
}


def test_expectations_cover_every_lit_case():
    assert set(LIT_EXPECTATIONS) == set(lit_cases())


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_numerics_and_dispatches(name):
    rewritten, saved = LIT_EXPECTATIONS[name]
    rng = np.random.default_rng(0)
    inputs = LIT_INPUTS[name](rng, 5) if name in LIT_INPUTS else None
    params = LIT_PARAMETERS[name](rng) if name in LIT_PARAMETERS else None
    # keep_no_gain: the rewrite's numbers and counts even where it saves nothing (the
    # default then reverts it: test_cli.py)
    check = compare_compilations(lit_cases()[name], inputs, fusions=PASS, function=name,
                                 keep_no_gain=True, parameters=params)
    assert check.agreement.within(1e-5, 1e-5), check.agreement
    assert bool(check.changes()) == rewritten, check.changes()
    assert check.plugin_dispatches == check.stock_dispatches - saved, (
        check.stock_counts.dispatch_names, check.plugin_counts.dispatch_names)
    if saved and check.stock_counts.total_bytes_between:  # dynamic tensors are not counted
        assert check.plugin_counts.total_bytes_between < check.stock_counts.total_bytes_between


@pytest.mark.parametrize("name", ["seed_matmul_transpose", "two_producers", "index_in_body"])
def test_cases_left_to_iree_match_it_when_rewritten(name):
    """The consumers the pass leaves to IREE (leave-to-stock): rewritten anyway, the same
    numbers and dispatch count as IREE's own interchange."""
    check = compare_compilations(lit_cases()[name], fusions=f"{PASS}{{leave-to-stock=0}}",
                                 function=name, keep_no_gain=True)
    assert check.changes() and check.agreement.within(0.0)
    assert check.plugin_dispatches == check.stock_dispatches


# ---------------------------------------------------------------- generated cases

MATMUL_T_B = ("affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
              "affine_map<(d0, d1, d2) -> (d0, d1)>")
ELEMENTWISE = {"add": "arith.addf %in, %b : f32", "mul": "arith.mulf %in, %b : f32",
               "max": "arith.maximumf %in, %b : f32"}


def projection_ir(m: int, heads: int, dim: int, k: int, perm: tuple[int, ...], op: str,
                  batch: int = 0, copy: bool = True) -> str:
    """`matmul [rows, k] x [heads*dim, k]^T -> expand_shape -> bias op -> (copy) reading the
    result through `perm`` (rows = batch*m, expanded to [batch, m, heads, dim] if batch)."""
    rows = batch * m if batch else m
    n = heads * dim
    shape = [batch, m, heads, dim] if batch else [m, heads, dim]
    rank = len(shape)
    groups = "[[0, 1], [2, 3]]" if batch else "[[0], [1, 2]]"
    out_shape = [shape[p] for p in perm]

    def t(s):
        return "tensor<" + "x".join(map(str, s)) + "xf32>"

    dims = ", ".join(f"d{i}" for i in range(rank))
    ident = f"affine_map<({dims}) -> ({dims})>"
    bias_map = f"affine_map<({dims}) -> (d{rank - 2}, d{rank - 1})>"
    # out[i] = x[perm-read]: output dim j is x dim perm[j]; loop j = output dim j.
    read = [0] * rank
    for j, p in enumerate(perm):
        read[p] = j
    perm_map = f"affine_map<({dims}) -> ({', '.join(f'd{r}' for r in read)})>"
    par = ", ".join(['"parallel"'] * rank)
    body = ELEMENTWISE[op]
    text = f"""
util.func public @main(%x: {t([rows, k])}, %w: {t([n, k])}, %bias: {t([heads, dim])})
    -> {t(out_shape)} {{
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : {t([rows, n])}
  %f = linalg.fill ins(%cst : f32) outs(%e : {t([rows, n])}) -> {t([rows, n])}
  %mm = linalg.matmul indexing_maps = [{MATMUL_T_B}]
      ins(%x, %w : {t([rows, k])}, {t([n, k])}) outs(%f : {t([rows, n])}) -> {t([rows, n])}
  %mx = tensor.expand_shape %mm {groups} output_shape {shape}
      : {t([rows, n])} into {t(shape)}
  %e1 = tensor.empty() : {t(shape)}
"""
    if copy:
        text += f"""  %y = linalg.generic {{indexing_maps = [{ident}, {bias_map}, {ident}],
                       iterator_types = [{par}]}}
      ins(%mx, %bias : {t(shape)}, {t([heads, dim])}) outs(%e1 : {t(shape)}) {{
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = {body}
    linalg.yield %r : f32
  }} -> {t(shape)}
  %e2 = tensor.empty() : {t(out_shape)}
  %z = linalg.generic {{indexing_maps = [{perm_map}, {ident}], iterator_types = [{par}]}}
      ins(%y : {t(shape)}) outs(%e2 : {t(out_shape)}) {{
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }} -> {t(out_shape)}
  util.return %z : {t(out_shape)}
}}
"""
    else:
        bias_read = [read[rank - 2], read[rank - 1]]
        bias_perm = f"affine_map<({dims}) -> (d{bias_read[0]}, d{bias_read[1]})>"
        text += f"""  %e2 = tensor.empty() : {t(out_shape)}
  %z = linalg.generic {{indexing_maps = [{perm_map}, {bias_perm}, {ident}],
                       iterator_types = [{par}]}}
      ins(%mx, %bias : {t(shape)}, {t([heads, dim])}) outs(%e2 : {t(out_shape)}) {{
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = {body}
    linalg.yield %r : f32
  }} -> {t(out_shape)}
  util.return %z : {t(out_shape)}
}}
"""
    return text


projections = st.builds(
    lambda batch, m, heads, dim, k, perm_seed, op, copy: (
        batch, m, heads, dim, k, op, copy,
        tuple(np.random.default_rng(perm_seed).permutation(4 if batch else 3).tolist())),
    batch=st.sampled_from([0, 2]), m=st.sampled_from([8, 16, 24]),
    heads=st.sampled_from([2, 3, 4]), dim=st.sampled_from([8, 16]),
    k=st.sampled_from([16, 32]), perm_seed=st.integers(0, 1000),
    op=st.sampled_from(sorted(ELEMENTWISE)), copy=st.booleans())


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projections)
def test_generated_projections_match_stock(case):
    batch, m, heads, dim, k, op, copy, perm = case
    text = projection_ir(m, heads, dim, k, perm, op, batch=batch, copy=copy)
    check = compare_compilations(text, fusions=PASS)
    assert check.agreement.within(1e-5, 1e-5), (perm, check.agreement)
    assert check.plugin_dispatches <= check.stock_dispatches
    identity = list(perm) == sorted(perm)
    if not identity:
        # Whatever the permutation, the projection and its epilogue end in one dispatch.
        assert check.plugin_dispatches == 1, (perm, check.plugin_counts.dispatch_names)


@settings(max_examples=25, deadline=None)
@given(projections)
def test_generated_projections_idempotent(case):
    batch, m, heads, dim, k, op, copy, perm = case
    text = projection_ir(m, heads, dim, k, perm, op, batch=batch, copy=copy)
    once, r1 = run_pass(text)
    twice, r2 = run_pass(once)
    assert once == twice
    assert not changes(r2)
    assert bool(changes(r1)) == (list(perm) != sorted(perm))


TWO_READS = """
util.func public @main(%x: tensor<16x32xf32>, %w: tensor<64x32xf32>) -> tensor<8x16x8xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %mm = linalg.matmul indexing_maps = [MATMUL_T_B]
      ins(%x, %w : tensor<16x32xf32>, tensor<64x32xf32>) outs(%f : tensor<16x64xf32>)
      -> tensor<16x64xf32>
  %mx = tensor.expand_shape %mm [[0], [1, 2]] output_shape [16, 8, 8]
      : tensor<16x64xf32> into tensor<16x8x8xf32>
  %e1 = tensor.empty() : tensor<16x8x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mx : tensor<16x8x8xf32>) outs(%e1 : tensor<16x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<16x8x8xf32>
  %e2 = tensor.empty() : tensor<8x16x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>,
                                        affine_map<(d0, d1, d2) -> (d1, d2, d0)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y, %y : tensor<16x8x8xf32>, tensor<16x8x8xf32>) outs(%e2 : tensor<8x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x16x8xf32>
  util.return %z : tensor<8x16x8xf32>
}
""".replace("MATMUL_T_B", MATMUL_T_B)


@pytest.mark.parametrize("layout", ["auto", "always", "never"])
def test_consumer_reading_the_chain_twice(layout):
    """C reads the chain value through two different permutations: every read follows the
    new layout (producer-layout=always) or the interchange (never)."""
    check = compare_compilations(TWO_READS, fusions=f"{PASS}{{producer-layout={layout}}}",
                                 keep_no_gain=True)
    assert check.changes()
    # Values reach ~1e3 (squares of K=32 dot products); differences are reassociation only.
    scale = max(float(np.abs(o).max()) for o in check.stock)
    assert check.agreement.max_abs <= 1e-6 * scale, (check.agreement, scale)
    assert check.plugin_dispatches <= check.stock_dispatches


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(0, 1000))
def test_no_change_without_producer(n_ops, seed):
    """Chains of elementwise ops reading each other through random permutations, starting
    from a function argument: no contraction/reduction to fuse with, nothing changes."""
    rng = np.random.default_rng(seed)
    t = "tensor<6x6x6xf32>"
    dims = "d0, d1, d2"
    lines = [f"util.func public @main(%a: {t}) -> {t} {{"]
    value = "%a"
    for i in range(n_ops):
        read = ", ".join(f"d{p}" for p in rng.permutation(3).tolist())
        lines.append(
            f"  %e{i} = tensor.empty() : {t}\n"
            f"  %g{i} = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({read})>, "
            f"affine_map<({dims}) -> ({dims})>], iterator_types = [\"parallel\", \"parallel\", "
            f"\"parallel\"]}} ins({value} : {t}) outs(%e{i} : {t}) {{\n"
            f"  ^bb0(%in: f32, %out: f32):\n    %r = arith.negf %in : f32\n"
            f"    linalg.yield %r : f32\n  }} -> {t}")
        value = f"%g{i}"
    lines.append(f"  util.return {value} : {t}\n}}")
    text = "\n".join(lines)
    with ir.Context():
        expected = str(ir.Module.parse(text))
    out, reports = run_pass(text)
    assert out == expected
    assert not changes(reports)


# ---------------------------------------------------------------- helpers


def test_loop_groups_and_contraction_order():
    from iree_fusions.compiler import ir_helpers as h
    from iree_fusions.passes.interchange_permuted_consumers.build import (
        _loop_groups,
        contraction_order_ok,
    )

    # (m, h, d) with a map that keeps h, d adjacent: they group; one that splits them: not.
    assert _loop_groups([0, 1, 2], [[0, 3], [1, 2, 3], [0, 1, 2]]) == [[0], [1, 2]]
    assert _loop_groups([0, 1, 2], [[0, 3], [1, 2, 3], [1, 0, 2]]) == [[0], [1], [2]]
    text = """
util.func public @f(%x: tensor<128x384xf32>, %w: tensor<12x32x384xf32>,
                    %o: tensor<128x12x32xf32>) -> tensor<128x12x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, h, d, k) -> (m, k)>,
                                        affine_map<(m, h, d, k) -> (h, d, k)>,
                                        affine_map<(m, h, d, k) -> (m, h, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<128x384xf32>, tensor<12x32x384xf32>) outs(%o : tensor<128x12x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<128x12x32xf32>
  util.return %r : tensor<128x12x32xf32>
}
"""
    with ir.Context():
        module = ir.Module.parse(text)
        op = h.walk_ops(module.operation, ("linalg.generic",))[0]
        # Stored (m, h, d): h, d collapse into one N group after m: fine.
        assert contraction_order_ok(op, [0, 1, 2, 3], [0, 1, 2]) is True
        # Stored (h, m, d) (MiniLM's query): innermost loops h, d are both N: not fine ...
        assert contraction_order_ok(op, [0, 1, 2, 3], [1, 0, 2]) is False
        # ... unless the loops run in (h, m, d) order: innermost m, d.
        assert contraction_order_ok(op, [1, 0, 2, 3], [1, 0, 2]) is True
        # Stored (h, d, m) with loops (h, d, m): N (h*d) before M: not fine.
        assert contraction_order_ok(op, [1, 2, 0, 3], [1, 2, 0]) is False


# ---------------------------------------------------------------- models (slow)


def _bench_row(name: str):
    from iree_fusions.harness import api
    from iree_fusions.models.catalog import all_models

    art = all_models()[name].build()
    check = compare_compilations(art.source, art.inputs, fusions=PASS, flags=art.flags)
    ref = api.compare_outputs(art.reference, check.plugin)
    return art, check, ref


def _transposes(counts) -> int:
    return sum("transpose" in n for names in counts.dispatch_names.values() for n in names)


@pytest.mark.slow
@pytest.mark.parametrize("name,saved", [("minilm-b1-s128", 12), ("minilm-b8-s128", 24)])
def test_minilm(name, saved):
    art, check, ref = _bench_row(name)
    assert ref.within(1e-5), ref
    assert check.agreement.within(1e-5), check.agreement
    assert check.plugin_dispatches <= check.stock_dispatches - saved, (
        check.stock_dispatches, check.plugin_dispatches)
    assert _transposes(check.plugin_counts) == 0


@pytest.mark.slow
def test_bert_tiny():
    art, check, ref = _bench_row("bert-tiny-b1-s64")
    assert ref.within(1e-5), ref
    assert check.plugin_dispatches <= check.stock_dispatches - 4
    assert _transposes(check.plugin_counts) == 0


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["start_pos", "const"])
def test_llama_block_has_no_transpose_dispatch(variant):
    from iree_fusions.harness import api
    from iree_fusions.models import llama

    art = llama.build_artifact(variant, 64)
    check = compare_compilations(art.source, art.inputs, fusions=PASS, flags=art.flags)
    assert api.compare_outputs(art.reference, check.plugin).within(1e-4)
    assert _transposes(check.stock_counts) > 0
    assert _transposes(check.plugin_counts) == 0
    assert check.plugin_dispatches < check.stock_dispatches


# ---------------------------------------------------------------- candidate keys


def test_skip_and_only_select_candidates_by_key():
    cases = lit_cases()
    text = passes.merge_modules(cases["minilm_query"], cases["multi_use"],
                                cases["attention_producer"])
    keys = passes.check_skip_and_only(text, PASS)
    assert all(k.startswith("interchange-permuted-consumers-") for k in keys)


def test_keys_depend_on_structure_only():
    cases = lit_cases()
    for name in ("minilm_query", "multi_use", "collapse_between"):
        keys = passes.change_keys(cases[name], PASS)
        assert keys and passes.change_keys(passes.disguise(cases[name]), PASS) == keys, name
    assert (passes.change_keys(cases["minilm_query"], PASS)
            != passes.change_keys(cases["minilm_key_b8"], PASS))


# ---------------------------------------------------------------- the forms users compile


def _projection(batch: int, seq: int):
    """A query projection on [B, S, 32] tokens: Linear, view(B, S, 4, 8), transpose(1, 2),
    scale (weights seeded: the same at every size)."""
    import torch

    torch.manual_seed(0)

    class Projection(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(32, 32)

        def forward(self, x):
            b, s, _ = x.shape
            return self.linear(x).view(b, s, 4, 8).transpose(1, 2) * 0.5

    x = torch.randn(batch, seq, 32, generator=torch.Generator().manual_seed(1))
    return Projection().eval(), (x,)


def _form_model(name: str):
    from iree_fusions.models import forms
    from iree_fusions.models.transformers import build_tiny_bert

    every = (*forms.FORMS, *forms.EXTRA_FORMS)
    if name == "projection":
        return forms.FormModel("projection", _projection, 2, 16, every, other_seq=11)
    return forms.FormModel("bert-tiny", build_tiny_bert, 2, 64, every)


_STATIC: dict = {}


def _check_form(name: str, form: str):
    """The model in `form` and in its static form: the form removes as many dispatches as the
    static one, agrees with stock IREE and PyTorch at the export's size and an unseen one."""
    pytest.importorskip("torch")
    model = _form_model(name)
    if name not in _STATIC:
        _STATIC[name] = model.check("static", PASS)
    static = _STATIC[name]
    check = static if form == "static" else model.check(form, PASS)
    assert static.removed >= 1
    assert check.removed == static.removed, (form, check.skipped)
    for stock_err, torch_err in check.errors:
        assert stock_err <= 1e-5 and torch_err <= 1e-5, check.errors
    return check


@pytest.mark.parametrize("form", ["static", "dynamic-batch", "dynamic-seq", "dynamic-seq-facts"])
def test_projection_forms(form):
    check = _check_form("projection", form)
    assert len(check.errors) == (2 if "dynamic" in form else 1)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["params", "params-dynamic-seq", "onnx", "onnx-params",
                                  "onnx-dynamic-seq"])
def test_projection_forms_slow(form):
    _check_form("projection", form)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["dynamic-batch", "dynamic-seq", "params", "onnx",
                                  "onnx-params", "onnx-dynamic-seq"])
def test_bert_tiny_forms(form):
    _check_form("bert-tiny", form)


@pytest.mark.parametrize("case, option, reason", [
    ("collapse_between", "propagate-reshapes=false",
     "operand 0 (linalg.batch_matmul): a reshape sits between producer and consumer "
     "(propagate-reshapes=false)"),
    ("multi_use", "merge-multi-use=false",
     "operand 0 (linalg.matmul): value has 2 users (merge-multi-use=false)"),
])
def test_an_option_that_turns_a_step_off_declines_with_its_name(case, option, reason):
    """The lit cases that change by default (a reshape between producer and consumer, a value
    with two permuted readers) are left with the option's reason when it is off."""
    text = passes.lit_cases(PASS)[case]
    _, (default,) = passes.run_pass(text, PASS)
    assert default.changes
    _, (report,) = passes.run_pass(text, f"{PASS}{{{option}}}")
    assert not report.changes and [s.reason for s in report.skipped] == [reason]


_SQ = """  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<64x80xf32>) outs(%e : tensor<64x80xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32"""


@pytest.mark.parametrize("old, new, reason", [
    (_SQ, """  %x = arith.constant dense<2.0> : tensor<64x80xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %x : tensor<64x80xf32>, tensor<64x80xf32>) outs(%e : tensor<64x80xf32>) {
  ^bb0(%in: f32, %xin: f32, %out: f32):
    %s = arith.mulf %in, %xin : f32""",
     "siblings depend on each other or on values defined between them"),
    (_SQ, """  %x = arith.constant dense<2.0> : tensor<1x80xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %x : tensor<64x80xf32>, tensor<1x80xf32>) outs(%e : tensor<64x80xf32>) {
  ^bb0(%in: f32, %xin: f32, %out: f32):
    %s = arith.mulf %in, %xin : f32""",
     "a sibling has a non-permutation map"),
    ("""  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32""", """  ^bb0(%in: f32, %out: f32):
    %c0 = arith.constant 0 : index
    %wv = tensor.extract %w[%c0, %c0] : tensor<96x80xf32>
    %s = arith.addf %in, %wv : f32""", "consumer reads a tensor inside its body"),
], ids=["input-defined-between", "constant-map", "reads-a-tensor"])
def test_readers_of_a_multi_use_value_that_cannot_merge(old, new, reason):
    """The multi_use lit case (two readers of one matmul result, one through a transpose),
    changed so that one check of merging the readers fails: left, with that check's reason."""
    text = passes.lit_cases(PASS)["multi_use"]
    assert old in text
    _, (report,) = passes.run_pass(text.replace(old, new), PASS)
    assert not report.changes
    assert any(reason in s.reason for s in report.skipped), [s.reason for s in report.skipped]
