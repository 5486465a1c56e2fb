"""forward-factory-ops / forward-factory-dispatches: numerics of every lit case on local-task,
dispatch and byte counts, properties (idempotence, no change without factory values, random
factory chains compile to the same numbers), and the Llama-style decoder (small by default,
S=512 variants and GPU-target compiles under `-m slow`)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from iree_fusions.harness.numerics import compare_compilations
from support import passes
from support.forward_factory_ops import ROOT


LIT = os.path.join(ROOT, "test", "passes", "forward-factory-ops.mlir")
PASS = "forward-factory-ops"


def lit_cases() -> dict[str, str]:
    """function name -> IR of each `// -----` chunk of the lit test."""
    return passes.lit_cases(PASS)


def run_pass(text: str, pipeline: str = PASS) -> tuple[str, list]:
    return passes.run_pass(text, pipeline)


def inputs_for(text: str, function: str, seed: int = 0) -> list[np.ndarray]:
    from iree_fusions.harness.numerics import random_inputs

    return random_inputs(text, function, seed=seed, int_high=5)


# ---------------------------------------------------------------- the lit cases, compiled

# (function, forwarded?, dispatches saved at least, bytes between dispatches removed at least)
LIT_EXPECTATIONS = {
    "mask_used_by_two_dispatches": (True, 1, 8 * 8 * 4),
    "unary_chain": (True, 0, 0),
    "chain_ending_at_binary_op": (True, 0, 0),
    "rope_concat": (True, 0, 0),
    "function_result": (False, 0, 0),
    "rng_like": (False, 0, 0),
    "rope_tables_kept": (True, 0, 0),  # compacted into one generic; IREE fuses this chain too
    "nothing_to_forward": (False, 0, 0),
    # Dynamic dims (bytes between dynamic tensors are not counted) and ONNX's folded arange.
    "dynamic_mask_two_reductions": (True, 1, 0),
    "dynamic_rope_compacted": (True, 0, 0),
    "dynamic_batch_unbounded": (True, 0, 0),  # compacted, not forwarded (cost at 1024 rows)
    "dynamic_batch_bounded": (True, 1, 0),
    "onnx_folded_positions": (True, 1, 64 * 64 * 4),
    "onnx_parameter_positions": (True, 1, 64 * 64 * 4),
    # A mask broadcast over the heads: not compacted (the broadcast value would be 8x).
    "mask_broadcast_over_heads": (False, 0, 0),
    # An index-only chain through a reshape: read by one elementwise generic, stock IREE fuses
    # it there too (declined); read by two dispatches, forwarded into both (one fewer).
    "index_chain_through_collapse_one_reader": (False, 0, 0),
    "index_chain_through_collapse_two_readers": (True, 1, 0),
}
# External parameters a case reads (scope -> {name: array}).
LIT_PARAMETERS = {
    "onnx_parameter_positions": {"model": {"positions": np.arange(64, dtype=np.int64)}},
}


def _f32(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _start(rng) -> np.ndarray:
    return np.array(rng.integers(0, 5), dtype=np.int64)


# Inputs of the cases whose arguments must agree (a dynamic size and the tensors it sizes;
# index scalars as Python ints), at a dynamic size `s`; the others get inputs_for.
LIT_INPUTS = {
    "dynamic_mask_two_reductions": lambda rng, s: [_start(rng), _f32(rng, 4, s, s),
                                                   _f32(rng, 4, s, s), s],
    "dynamic_rope_compacted": lambda rng, s: [_start(rng), _f32(rng, 16), _f32(rng, 8, s, 32),
                                              _f32(rng, 8, s, 32), s],
    "dynamic_batch_unbounded": lambda rng, s: [_start(rng), _f32(rng, s, 64, 64),
                                               _f32(rng, s, 64, 64), s],
    "mask_broadcast_over_heads": lambda rng, s: [rng.integers(0, s, 4).astype(np.int64),
                                                 _f32(rng, 32, s, s)],
    # util.assume.int umax = 4: at most 4 rows
    "dynamic_batch_bounded": lambda rng, s: [_start(rng), _f32(rng, 3, 64, 64),
                                             _f32(rng, 3, 64, 64), 3],
    # the chain is [8, n] collapsed: the input's length a multiple of 8
    "index_chain_through_collapse_one_reader": lambda rng, s: [_f32(rng, 8 * s)],
    "index_chain_through_collapse_two_readers": lambda rng, s: [_f32(rng, 8 * s)],
}


def test_lit_cases_are_all_covered():
    assert set(lit_cases()) == set(LIT_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(LIT_EXPECTATIONS))
def test_lit_case_numerics_and_counts(name):
    text = lit_cases()[name]
    changed, saved, bytes_removed = LIT_EXPECTATIONS[name]
    inputs = (LIT_INPUTS[name](np.random.default_rng(0), 7) if name in LIT_INPUTS
              else inputs_for(text, name))
    check = compare_compilations(text, inputs, fusions=PASS, function=name,
                                 keep_no_gain=True,  # the mechanics, even where nothing is saved
                                 parameters=LIT_PARAMETERS.get(name))
    assert check.agreement.shapes_match
    assert check.agreement.within(1e-5), check.agreement
    assert bool(check.changes()) == changed, check.reports
    stock, plugin = check.stock_counts, check.plugin_counts
    assert plugin.dispatches[name] <= stock.dispatches[name] - saved
    assert plugin.bytes_between[name] <= stock.bytes_between[name] - bytes_removed
    if not changed:
        assert plugin.dispatches == stock.dispatches
        assert plugin.bytes_between == stock.bytes_between


def test_mask_two_consumers_each_get_a_copy():
    """nvFuser's ForwardFull: the factory value used by two dispatches is computed in both and
    is the result of none."""
    name = "mask_used_by_two_dispatches"
    text = lit_cases()[name]
    out, reports = run_pass(text)
    assert "tensor<8x8xf32>" not in out  # the mask is no longer a value anywhere
    bodies = out.split("linalg.generic")[1:]
    assert len(bodies) == 2 and all("arith.cmpi sle" in b for b in bodies)
    check = compare_compilations(text, inputs_for(text, name), fusions=PASS, function=name)
    assert check.stock_counts.dispatches[name] == 3  # mask + two reductions
    assert check.plugin_counts.dispatches[name] == 2
    assert check.plugin_counts.bytes_between[name] == 0


# ---------------------------------------------------------------- candidate keys


def functions_text(text: str) -> dict[str, str]:
    """function name -> the function printed on its own (affine maps inline)."""
    with ir.Context():
        module = ir.Module.parse(text)
        return {op.attributes["sym_name"].value: str(op)
                for op in module.body.operations if "sym_name" in op.attributes}


def keys(report) -> tuple[list[str], list[str]]:
    return [c.key for c in report.changes], [s.key for s in report.skipped]


def test_skip_and_only_select_one_of_two_candidates():
    """skip=KEY leaves exactly that candidate alone (reported as skipped on request), only=KEY
    applies only that one; the other candidate is unaffected."""
    cases = lit_cases()
    text = cases["mask_used_by_two_dispatches"] + cases["unary_chain"]
    before = functions_text(text)
    out, reports = run_pass(text)
    after = functions_text(out)
    (mask_key, chain_key), _ = keys(reports[0])
    assert mask_key != chain_key
    assert [c.what.split(" from ")[0] for c in reports[0].changes] == [
        "forwarded tensor<8x8xf32>", "forwarded tensor<32xf32>"]

    out, reports = run_pass(text, f"{PASS}{{skip={mask_key}}}")
    got = functions_text(out)
    assert got["mask_used_by_two_dispatches"] == before["mask_used_by_two_dispatches"]
    assert got["unary_chain"] == after["unary_chain"]
    assert keys(reports[0])[0] == [chain_key]
    assert [s.reason for s in reports[0].skipped if s.key == mask_key] == [
        "skipped on request (skip=KEY)"]

    out, reports = run_pass(text, f"{PASS}{{only={mask_key}}}")
    got = functions_text(out)
    assert got["mask_used_by_two_dispatches"] == after["mask_used_by_two_dispatches"]
    assert got["unary_chain"] == before["unary_chain"]
    assert keys(reports[0])[0] == [mask_key]
    assert [s.reason for s in reports[0].skipped if s.key == chain_key] == [
        f"not selected (only={mask_key})"]


def test_skip_holds_when_a_shared_consumer_is_rebuilt():
    """cos and sin tables read by the same two generics: skipping cos keeps its key (and the
    skip) in the next round, after the consumers were rebuilt for sin."""
    text = lit_cases()["rope_tables_kept"]
    forced = f"{PASS}{{ignore-cost=true}}"
    _, reports = run_pass(text, forced)
    (cos_key, sin_key), _ = keys(reports[0])
    out, reports = run_pass(text, forced.replace("}", f" skip={cos_key}}}"))
    assert keys(reports[0]) == ([sin_key], [cos_key])
    assert out.count("math.cos") == 1 and out.count("math.sin") == 2


def test_skip_a_compaction_candidate():
    text = lit_cases()["rope_tables_kept"]
    _, reports = run_pass(text)
    (key,), _ = keys(reports[0])
    assert key.startswith("forward-factory-ops-compact-")
    out, reports = run_pass(text, f"{PASS}{{skip={key}}}")
    assert functions_text(out) == functions_text(text)
    assert not reports[0].changes
    assert ("skipped on request (skip=KEY)" in
            [s.reason for s in reports[0].skipped if s.key == key])


def _two_mask_producers() -> str:
    """The dispatch lit case with a second, different mask dispatch for the second attention."""
    text = passes.lit_cases("forward-factory-dispatches")["mask_into_two_attentions"]
    start = text.index("  %m = flow.dispatch.workgroups")
    end = text.index("  %mask = flow.tensor.reshape")
    producer = text[start:end].replace("%m =", "%m2 =").replace(
        "%qp = arith.addi %q64, %in : i64",
        "%qp0 = arith.addi %q64, %in : i64\n      %qp = arith.subi %qp0, %q64 : i64")
    reshape = "  %mask2 = flow.tensor.reshape %m2 : tensor<32xf32> -> tensor<2x4x4xf32>\n"
    o2 = text.index("  %o2 = flow.dispatch.workgroups")
    second = text[o2:].replace("%o2 = flow.dispatch.workgroups(%o1, %k, %v, %mask)",
                               "%o2 = flow.dispatch.workgroups(%o1, %k, %v, %mask2)")
    return text[:o2] + producer + reshape + second


def test_dispatch_skip_and_only_select_one_of_two_candidates():
    pipeline = "forward-factory-dispatches"
    text = _two_mask_producers()
    _, reports = run_pass(text, pipeline)
    changed, _ = keys(reports[0])
    assert len(changed) == 2 and len(set(changed)) == 2
    for chosen, other in (changed, changed[::-1]):
        out, reports = run_pass(text, f"{pipeline}{{skip={chosen}}}")
        assert keys(reports[0])[0] == [other]
        assert [s.reason for s in reports[0].skipped if s.key == chosen] == [
            "skipped on request (skip=KEY)"]
        assert out.count("flow.dispatch.workgroups(") == 3  # one mask dispatch stays
        out, reports = run_pass(text, f"{pipeline}{{only={chosen}}}")
        assert keys(reports[0])[0] == [chosen]
        assert out.count("flow.dispatch.workgroups(") == 3


def _disguised(text: str, function: str) -> str:
    """The same structure in another file: SSA values and the function renamed, and an
    unrelated op first."""
    text = re.sub(r"%([A-Za-z_][A-Za-z0-9_]*)", r"%v_\1", text)
    text = text.replace(f"@{function}(", f"@other_{function}(")
    head, brace, rest = text.partition("{\n")
    return head + brace + "  %unrelated = arith.constant dense<1.0> : tensor<3xf32>\n" + rest


@pytest.mark.parametrize("name", ["mask_used_by_two_dispatches", "rope_concat",
                                  "rope_tables_kept", "rng_like", "nothing_to_forward"])
def test_keys_are_structural(name):
    text = lit_cases()[name]
    _, reports = run_pass(text)
    _, reports2 = run_pass(_disguised(text, name))
    assert keys(reports[0]) == keys(reports2[0]) and any(keys(reports[0]))


@pytest.mark.parametrize("name", ["mask_into_two_attentions", "not_an_attention_consumer"])
def test_dispatch_keys_are_structural(name):
    text = passes.lit_cases("forward-factory-dispatches")[name]
    _, reports = run_pass(text, "forward-factory-dispatches")
    _, reports2 = run_pass(_disguised(text, name), "forward-factory-dispatches")
    assert keys(reports[0]) == keys(reports2[0]) and any(keys(reports[0]))


def two_blocks() -> str:
    """mask_used_by_two_dispatches with its second reduction in another block."""
    text = lit_cases()["mask_used_by_two_dispatches"]
    text = text.replace("%b: tensor<4x8x8xf32>)", "%b: tensor<4x8x8xf32>, %c: i1)")
    text = text.replace("  %rb = linalg.generic", "  cf.cond_br %c, ^bb1, ^bb2\n^bb1:\n"
                        "  %rb = linalg.generic")
    ret = "  util.return %ra, %rb : tensor<4x8xf32>, tensor<4x8xf32>\n"
    assert ret in text
    return text.replace(ret, ret + "^bb2:\n" + ret.replace("%rb", "%ra"))


def test_rewrites_stay_inside_their_block():
    """A reader in another block keeps the value materialized; the reader in the value's own
    block recomputes it. Running the pass again changes nothing."""
    out, reports = run_pass(two_blocks())
    (change,) = reports[0].changes
    assert change.what.endswith("kept materialized for: used by linalg.generic")
    entry, rest = out.split("cf.cond_br")
    assert "ins(%arg1, %arg0 : tensor<4x8x8xf32>, tensor<i64>)" in entry
    assert "ins(%arg2, %3 : tensor<4x8x8xf32>, tensor<8x8xf32>)" in rest
    again, reports = run_pass(out)
    assert again == out and not reports[0].changes


# ---------------------------------------------------------------- properties


def _generic(ins: list[tuple[str, str, str, str]], out_type: str, out_elt: str, rank: int,
             body: str, empty: str) -> str:
    """A parallel linalg.generic; ins are (value, tensor type, element type, map results)."""
    dims = ", ".join(f"d{i}" for i in range(rank))
    maps = [f"affine_map<({dims}) -> ({m})>" for _, _, _, m in ins]
    maps.append(f"affine_map<({dims}) -> ({dims})>")
    its = ", ".join('"parallel"' for _ in range(rank))
    ins_text = (f"ins({', '.join(v for v, _, _, _ in ins)} : "
                f"{', '.join(t for _, t, _, _ in ins)}) " if ins else "")
    args = "".join(f"%a{i}: {e}, " for i, (_, _, e, _) in enumerate(ins))
    return (f"linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
            f"{ins_text}outs({empty} : {out_type}) {{\n  ^bb0({args}%o: {out_elt}):\n"
            f"{body}  }} -> {out_type}")


UNARY = {
    "neg": "%r = arith.negf %a0 : f32",
    "half": "%c = arith.constant 0.5 : f32\n    %r = arith.mulf %a0, %c : f32",
    "cos": "%r = math.cos %a0 : f32",
    "abs": "%r = math.absf %a0 : f32",
    "tanh": "%r = math.tanh %a0 : f32",
}


def _unary_chain(lines: list[str], start: str, unary: list[str], s: int, empty: str) -> str:
    cur = start
    for n, u in enumerate(unary):
        body = f"    {UNARY[u]}\n    linalg.yield %r : f32\n"
        ty = f"tensor<{s}x{s}xf32>"
        lines.append(f"  %v{n + 1} = " + _generic([(cur, ty, "f32", "d0, d1")], ty, "f32", 2,
                                                   body, empty))
        cur = f"%v{n + 1}"
    return cur


def factory_program(s: int, heads: int, with_start: bool, unary: list[str], consumers: int,
                    reduction: bool) -> str:
    """positions (index [+ start]) -> dist = pos(i) - j -> unary ops -> consumers reading it
    broadcast over `heads` (elementwise, or a reduction over the key dim)."""
    big = f"tensor<{heads}x{s}x{s}xf32>"
    args = [f"%x{c}: {big}" for c in range(consumers)] + (["%start: tensor<i64>"]
                                                          if with_start else [])
    res = f"tensor<{heads}x{s}xf32>" if reduction else big
    lines = [f"util.func public @main({', '.join(args)}) -> ({', '.join([res] * consumers)}) {{",
             f"  %ep = tensor.empty() : tensor<{s}xi64>",
             f"  %ef = tensor.empty() : tensor<{s}x{s}xf32>"]
    pos_body = ("    %i = linalg.index 0 : index\n    %ii = arith.index_cast %i : index to i64\n"
                + ("    %p = arith.addi %ii, %a0 : i64\n    linalg.yield %p : i64\n"
                   if with_start else "    linalg.yield %ii : i64\n"))
    lines.append("  %pos = " + _generic([("%start", "tensor<i64>", "i64", "")] if with_start
                                        else [], f"tensor<{s}xi64>", "i64", 1, pos_body, "%ep"))
    dist_body = ("    %j = linalg.index 1 : index\n    %jj = arith.index_cast %j : index to i64\n"
                 "    %d = arith.subi %a0, %jj : i64\n    %f = arith.sitofp %d : i64 to f32\n"
                 "    linalg.yield %f : f32\n")
    lines.append("  %v0 = " + _generic([("%pos", f"tensor<{s}xi64>", "i64", "d0")],
                                       f"tensor<{s}x{s}xf32>", "f32", 2, dist_body, "%ef"))
    cur = _unary_chain(lines, "%v0", unary, s, "%ef")
    maps3 = "affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>"
    for c in range(consumers):
        if reduction:
            lines += [f"  %z{c} = arith.constant 0.0 : f32",
                      f"  %er{c} = tensor.empty() : {res}",
                      f"  %init{c} = linalg.fill ins(%z{c} : f32) outs(%er{c} : {res}) -> {res}",
                      f"  %out{c} = linalg.generic {{indexing_maps = [{maps3}, affine_map<(d0, "
                      f"d1, d2) -> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\", "
                      f"\"reduction\"]}} ins(%x{c}, {cur} : {big}, tensor<{s}x{s}xf32>) "
                      f"outs(%init{c} : {res}) {{\n  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
                      f"    %m = arith.mulf %a, %b : f32\n    %y = arith.addf %m, %acc : f32\n"
                      f"    linalg.yield %y : f32\n  }} -> {res}"]
        else:
            lines += [f"  %ee{c} = tensor.empty() : {res}",
                      f"  %out{c} = linalg.generic {{indexing_maps = [{maps3}, affine_map<(d0, "
                      f"d1, d2) -> (d0, d1, d2)>], iterator_types = [\"parallel\", "
                      f"\"parallel\", \"parallel\"]}} ins(%x{c}, {cur} : {big}, "
                      f"tensor<{s}x{s}xf32>) outs(%ee{c} : {res}) {{\n"
                      f"  ^bb0(%a: f32, %b: f32, %o: f32):\n    %y = arith.addf %a, %b : f32\n"
                      f"    linalg.yield %y : f32\n  }} -> {res}"]
    outs = ", ".join(f"%out{c}" for c in range(consumers))
    lines += [f"  util.return {outs} : {', '.join([res] * consumers)}", "}"]
    return "\n".join(lines)


program_params = st.fixed_dictionaries(dict(
    s=st.sampled_from([4, 8, 16]),
    heads=st.sampled_from([1, 2, 3]),
    with_start=st.booleans(),
    unary=st.lists(st.sampled_from(sorted(UNARY)), max_size=3),
    consumers=st.sampled_from([1, 2]),
    reduction=st.booleans(),
))


def producers_of(text: str, type_text: str) -> int:
    """How many ops of the function (besides tensor.empty) produce a value of this type."""
    with ir.Context():
        module = ir.Module.parse(text)
        func = module.body.operations[0]
        return sum(1 for op in func.regions[0].blocks[0].operations
                   if op.operation.name != "tensor.empty"
                   for r in op.results if str(r.type) == type_text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          database=None)
@given(program_params)
def test_property_forwarded_or_kept_and_idempotent(params):
    text = factory_program(**params)
    s = params["s"]
    generated = f"tensor<{s}x{s}xf32>"
    chain = producers_of(text, generated)
    assert chain == 1 + len(params["unary"])
    once, reports = run_pass(text)
    if not params["with_start"] and not params["reduction"]:
        # Index-only generics read by elementwise ops: IREE fuses them itself; left alone.
        with ir.Context():
            assert once == str(ir.Module.parse(text))
        assert any("IREE fuses it" in s.reason for s in reports[0].skipped)
        return
    kept = producers_of(once, generated)
    # Either every consumer recomputes it, or the cost model kept it: computed by one generic
    # from indices and the input (compacted), or, without an input, by its chain untouched.
    expensive = any("expensive generator" in s.reason for s in reports[0].skipped)
    if kept and not expensive:
        assert any("recomputing costs more" in s.reason for s in reports[0].skipped), once
        assert kept == (1 if params["with_start"] else chain)
    elif not kept:
        assert reports[0].changed
    forced, _ = run_pass(text, f"{PASS}{{ignore-cost=true max-element-ops=1000}}")
    assert producers_of(forced, generated) == 0
    twice, reports2 = run_pass(once)
    assert not reports2[0].changed and twice == once


@settings(max_examples=15, deadline=None, database=None)
@given(st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=4),
       st.sampled_from([4, 8]))
def test_property_no_factory_no_change(unary, s):
    """The same ops on an input are computation, not generation: left alone."""
    lines = [f"util.func public @main(%v0: tensor<{s}x{s}xf32>) -> tensor<{s}x{s}xf32> {{",
             f"  %e = tensor.empty() : tensor<{s}x{s}xf32>"]
    cur = _unary_chain(lines, "%v0", unary, s, "%e")
    lines += [f"  util.return {cur} : tensor<{s}x{s}xf32>", "}"]
    text = "\n".join(lines)
    with ir.Context():
        before = str(ir.Module.parse(text))
    after, reports = run_pass(text)
    assert not reports[0].changed and after == before


@settings(max_examples=4, deadline=None, phases=[Phase.generate], database=None)
@given(st.builds(factory_program, s=st.sampled_from([4, 8, 16]), heads=st.sampled_from([1, 3]),
                 with_start=st.just(True),
                 unary=st.lists(st.sampled_from(sorted(UNARY)), max_size=3),
                 consumers=st.sampled_from([1, 2]), reduction=st.booleans()))
def test_property_numerics_match_stock(text):
    # With positions from an input (index-only chains are const-evaluated by IREE before the
    # pass runs).
    check = compare_compilations(text, inputs_for(text, "main"), fusions=PASS, keep_no_gain=True)
    assert check.changes()
    assert check.agreement.within(1e-5), (check.agreement, text)
    assert check.plugin_dispatches <= check.stock_dispatches
    assert check.plugin_counts.total_bytes_between <= check.stock_counts.total_bytes_between
