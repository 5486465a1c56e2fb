"""Compile time that stays flat as models grow (issue 21): the driver's rounds, finds and
matches grow with the model no faster than the model (counted, never timed), the round
driver changes the IR exactly as find-after-each-change does, whole-block analyses run once
per round, the weighing run happens only when no cheaper signal decides, and
--fusions-timing reports where a compile's time went."""

# ruff: noqa: E501  (IR lines)

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
from iree.compiler import ir

import iree_fusions
import iree_fusions.passes.interchange_permuted_consumers as interchange
from conftest import CPU_FLAGS, tool
from iree_fusions.compiler import protocol
from iree_fusions.compiler.driver import CompileRequest, _must_weigh
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, PassContext,
                                            PassReport, round_analysis, structural_key)
from iree_fusions.compiler.pipeline import parse_pipeline, run_pipeline
from iree_fusions.compiler.timing_report import CompileTiming
from support.passes import lit_cases

INTERCHANGE = "interchange-permuted-consumers"
LINALG_PASSES = ("rewrite-embedding-bags,batch-gathers,forward-factory-ops,batch-mlp-towers,"
                 "interchange-permuted-consumers")


def layered_model(layers: int, constant_weight: bool = False) -> str:
    """`layers` attention-projection-like layers in a chain: matmul -> expand_shape ->
    permuted elementwise reader (interchanged with the reshape moved above the matmul), whose
    reader in turn becomes a candidate only after that change (two rounds of changes). The
    weight is an argument, or a constant (then the reshape splits the weight: a sure gain)."""
    if constant_weight:
        lines = ["util.func public @main(%x0: tensor<128x256xf32>) -> tensor<128x256xf32> {",
                 "  %w = arith.constant dense<0.5> : tensor<256x256xf32>"]
    else:
        lines = ["util.func public @main(%x0: tensor<128x256xf32>, %w: tensor<256x256xf32>) -> tensor<128x256xf32> {"]
    lines.append("  %cst = arith.constant 0.0 : f32")
    for i in range(layers):
        lines += [
            f"  %e0_{i} = tensor.empty() : tensor<128x256xf32>",
            f"  %f_{i} = linalg.fill ins(%cst : f32) outs(%e0_{i} : tensor<128x256xf32>) -> tensor<128x256xf32>",
            f"  %m_{i} = linalg.matmul ins(%x{i}, %w : tensor<128x256xf32>, tensor<256x256xf32>) outs(%f_{i} : tensor<128x256xf32>) -> tensor<128x256xf32>",
            f"  %r_{i} = tensor.expand_shape %m_{i} [[0], [1, 2]] output_shape [128, 4, 64] : tensor<128x256xf32> into tensor<128x4x64xf32>",
            f"  %e1_{i} = tensor.empty() : tensor<4x128x64xf32>",
            f"  %t_{i} = linalg.generic {{indexing_maps = [affine_map<(h, s, d) -> (s, h, d)>, affine_map<(h, s, d) -> (h, s, d)>], iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} ins(%r_{i} : tensor<128x4x64xf32>) outs(%e1_{i} : tensor<4x128x64xf32>) {{",
            "  ^bb0(%a: f32, %o: f32):",
            "    %y = math.exp %a : f32",
            "    linalg.yield %y : f32",
            "  } -> tensor<4x128x64xf32>",
            f"  %e2_{i} = tensor.empty() : tensor<128x4x64xf32>",
            f"  %b_{i} = linalg.generic {{indexing_maps = [affine_map<(s, h, d) -> (h, s, d)>, affine_map<(s, h, d) -> (s, h, d)>], iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} ins(%t_{i} : tensor<4x128x64xf32>) outs(%e2_{i} : tensor<128x4x64xf32>) {{",
            "  ^bb0(%a: f32, %o: f32):",
            "    %y = arith.addf %a, %a : f32",
            "    linalg.yield %y : f32",
            "  } -> tensor<128x4x64xf32>",
            f"  %x{i + 1} = tensor.collapse_shape %b_{i} [[0], [1, 2]] : tensor<128x4x64xf32> into tensor<128x256xf32>",
        ]
    lines += [f"  util.return %x{layers} : tensor<128x256xf32>", "}"]
    return "\n".join(lines) + "\n"


@contextmanager
def find_after_each_change():
    """The reference driver: every pass finds again after each change (no footprints)."""
    with mock.patch.object(CandidatePass, "declares_footprints", property(lambda self: False)):
        yield


def _run(text: str, pipeline: str) -> tuple[str, list[PassReport]]:
    with ir.Context():
        module = ir.Module.parse(text)
        _, reports = run_pipeline(module.operation, parse_pipeline(pipeline))
        return str(module), reports


def _counted_matches(text: str) -> tuple[PassReport, int]:
    """The interchange pass's report and how many ops its finds matched."""
    calls = 0
    real = interchange.match_consumer

    def counting(op, options):
        nonlocal calls
        calls += 1
        return real(op, options)

    with mock.patch.object(interchange, "match_consumer", counting):
        _, (report,) = _run(text, INTERCHANGE)
    return report, calls


# ---------------------------------------------------------------- linear in the IR


def test_interchange_work_grows_linearly_with_layers():
    """N and 2N layers: the same number of rounds and finds (changes depend on each other
    two deep, whatever N), twice the changes, and twice the ops matched. The driver that
    finds again after each change would need N + 1 finds (quadratic)."""
    small, small_calls = _counted_matches(layered_model(6))
    big, big_calls = _counted_matches(layered_model(12))
    assert len(small.changes) == 12 and len(big.changes) == 24
    assert small.stats["rounds"] == big.stats["rounds"] == 3
    assert small.stats["finds"] == big.stats["finds"] == 3
    assert big_calls == 2 * small_calls
    with find_after_each_change():
        old, old_calls = _counted_matches(layered_model(6))
        _, old_big_calls = _counted_matches(layered_model(12))
    assert old.stats["finds"] == len(old.changes) + 1 == 13
    assert old_big_calls > 3 * old_calls  # quadratic


def test_every_linalg_pass_finds_a_fixed_number_of_times():
    """Every linalg pass (`--fusions=all`): finds per block do not depend on the depth."""
    _, small = _run(layered_model(4), LINALG_PASSES)
    _, big = _run(layered_model(8), LINALG_PASSES)
    for a, b in zip(small, big):
        assert a.pass_name == b.pass_name
        assert a.stats["finds"] == b.stats["finds"], a.pass_name
        assert b.stats["candidates"] <= 2 * a.stats["candidates"], a.pass_name


@pytest.mark.parametrize("layers", [1, 5])
def test_round_driver_changes_the_ir_as_find_after_each_change(layers):
    new, new_reports = _run(layered_model(layers), INTERCHANGE)
    with find_after_each_change():
        old, old_reports = _run(layered_model(layers), INTERCHANGE)
    assert new == old
    assert sorted(c.key for c in new_reports[0].changes) == \
        sorted(c.key for c in old_reports[0].changes)


def test_round_driver_on_every_interchange_lit_case():
    """Same IR and the same changes and skips (keys, reasons) on every lit case."""
    for name, text in lit_cases(INTERCHANGE).items():
        new, (a,) = _run(text, INTERCHANGE)
        with find_after_each_change():
            old, (b,) = _run(text, INTERCHANGE)
        assert new == old, name
        assert sorted((c.key, c.what) for c in a.changes) == \
            sorted((c.key, c.what) for c in b.changes), name
        assert sorted((s.key, s.reason) for s in a.skipped) == \
            sorted((s.key, s.reason) for s in b.skipped), name


# ---------------------------------------------------------------- the driver, on toy passes

TOY = """
util.func public @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.negf %a : tensor<4xf32>
  %1 = arith.negf %0 : tensor<4xf32>
  %2 = arith.negf %1 : tensor<4xf32>
  %3 = arith.negf %a : tensor<4xf32>
  %4 = arith.addf %2, %3 : tensor<4xf32>
  util.return %4 : tensor<4xf32>
}
"""


@dataclass(frozen=True)
class NegToAbs(CandidatePass[ir.Operation]):
    """arith.negf -> math.absf; the plan reads the negf and its operand's producer, writes
    the negf and its users. Each find asks for one whole-block analysis per candidate."""

    name = "test-neg-to-abs-footprints"
    phase = "linalg"
    description = "test only"

    def find(self, block, ctx):
        for op in list(block.operations):
            op = op.operation
            round_analysis(_count_analysis, block)  # asked for every op: computed once
            if op.name == "arith.negf":
                yield Candidate(structural_key("neg"), "here", "a negf", op)

    def footprint(self, candidate, ctx):
        op = candidate.plan
        producer = op.operands[0].owner
        reads = [op] + ([producer] if not isinstance(producer, ir.Block) else [])
        return Footprint.of(reads, [op] + [u.owner for u in op.results[0].uses])

    def apply(self, candidate, ctx):
        op = candidate.plan
        with ir.InsertionPoint(op), op.location:
            new = ir.Operation.create("math.absf", [op.results[0].type], [op.operands[0]])
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
        return "negf -> absf"


ANALYSES = []


def _count_analysis(block):
    ANALYSES.append(block)
    return len(list(block.operations))


def test_plans_that_read_what_a_change_wrote_wait_for_the_next_round():
    """%1 reads %0 (rewritten first), %2 reads %1: a chain of three waits one round per
    link; %3 is independent and goes with %0. The analysis runs once per round."""
    ANALYSES.clear()
    with ir.Context():
        module = ir.Module.parse(TOY)
        report = PassReport("toy")
        NegToAbs().run(module.operation, PassContext(module.operation, report))
        text = str(module)
    assert text.count("math.absf") == 4 and "arith.negf" not in text
    assert report.stats["rounds"] == 4 and report.stats["finds"] == 4
    assert report.stats["applied"] == 4 and report.stats["waited"] == 3
    assert len(ANALYSES) == report.stats["finds"]


@dataclass
class HeldPlan:
    """A plan that holds the negf and, nested, its operand (a value another change may
    replace)."""
    op: ir.Operation
    held: list


@dataclass(frozen=True)
class NegToAbsHolding(NegToAbs):
    """NegToAbs whose footprint names the negf alone (not its users, not its operand's
    producer), while its plan holds the operand: the driver must still see that the plan
    reads the operand's producer (`plan_owners`)."""

    name = "test-neg-to-abs-holding"

    def find(self, block, ctx):
        for cand in super().find(block, ctx):
            cand.plan = HeldPlan(cand.plan, [{"source": cand.plan.operands[0]}])
            yield cand

    def footprint(self, candidate, ctx):
        return Footprint.of([candidate.plan.op], [candidate.plan.op])

    def apply(self, candidate, ctx):
        return super().apply(dataclasses.replace(candidate, plan=candidate.plan.op), ctx)


def test_a_plan_waits_for_the_producer_of_a_value_it_holds():
    """The same chain as above, the producers named only by the values the plans hold: the
    same rounds and waits (without `plan_owners` the chain went in one round, each plan
    holding a value whose op an earlier change of the round erased)."""
    with ir.Context():
        module = ir.Module.parse(TOY)
        report = PassReport("toy")
        NegToAbsHolding().run(module.operation, PassContext(module.operation, report))
        text = str(module)
        func = module.body.operations[0]
        ops = [op.operation for op in func.regions[0].blocks[0].operations]
        owners = protocol.plan_owners(HeldPlan(ops[1], [{"x": ops[1].operands[0]},
                                                        (func.regions[0].blocks[0].arguments[0],)]))
        assert [protocol.op_id(o) for o in owners] == [
            protocol.op_id(ops[1]), protocol.op_id(ops[0]), protocol.op_id(func)]
    assert text.count("math.absf") == 4 and "arith.negf" not in text
    assert report.stats["rounds"] == 4 and report.stats["waited"] == 3


def test_round_analysis_outside_a_find_is_computed_afresh():
    with ir.Context():
        module = ir.Module.parse(TOY)
        block = module.body.operations[0].regions[0].blocks[0]
        ANALYSES.clear()
        round_analysis(_count_analysis, block)
        round_analysis(_count_analysis, block)
    assert len(ANALYSES) == 2


def test_op_ids_are_identities_not_contents():
    with ir.Context():
        module = ir.Module.parse(TOY)
        ops = [op.operation for op in module.body.operations[0].regions[0].blocks[0].operations]
        first = protocol.op_id(ops[0])
        ops[0].attributes["marked"] = ir.UnitAttr.get()  # hash() would change
        again = [op.operation for op in module.body.operations[0].regions[0].blocks[0].operations]
        assert protocol.op_id(again[0]) == first
        assert len({protocol.op_id(o) for o in again}) == len(again)


# ---------------------------------------------------------------- the no-gain check


def _reports(*changes: dict) -> list[PassReport]:
    report = PassReport("p")
    for c in changes:
        report.change("k", "w", "l", c.get("decided_by", "rule"), c.get("gain", "dispatches"),
                      c.get("sure"))
    return [report]


@pytest.mark.parametrize("changes, effect, keep, weigh", [
    ([{}], False, False, True),  # nothing else decides: the stock run
    ([{}, {"sure": "a reshape"}], False, False, False),  # one sure change decides
    ([{}, {"decided_by": "decisions.json"}], False, False, False),  # a measured decision
    ([{"gain": "work"}], False, False, False),  # saves work: kept anyway
    ([{"sure": "x"}], True, False, True),  # the report asks for the effect: one run
    ([{}], False, True, False),  # --fusions-keep-no-gain
])
def test_the_weighing_run_only_where_no_cheaper_signal_decides(changes, effect, keep, weigh):
    request = CompileRequest(b"", effect=effect, revert_if_no_gain=not keep)
    assert _must_weigh(_reports(*changes), request) is weigh


def _timing(tmp_path, model, *flags):
    """(the --fusions-timing-json record, stderr); the record also holds, as `measured`, the
    command's wall and CPU time as this process measured them from outside."""
    import resource

    path = tmp_path / "timing.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    res = subprocess.run([tool("iree-fusions-compile"), model, *CPU_FLAGS,
                          "--fusions=interchange-permuted-consumers", "--fusions-timing",
                          f"--fusions-timing-json={path}", "-o", str(tmp_path / "m.vmfb"),
                          *flags], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert res.returncode == 0, res.stderr
    (timing,) = json.loads(path.read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    timing["measured"] = {"wall_s": wall, "cpu_s": cpu}
    return timing, res.stderr


def test_timing_report_and_a_sure_change_without_weighing(tmp_path):
    """--fusions-timing prints every step like --mlir-timing (IREE phase ranges, the plugin
    passes with find/apply/verify); the interchange change through a reshape that splits a
    constant weight is sure to pay, so no stock dispatch-creation run weighs it, unless the
    report asks for the effect (--fusions-report: exactly one run, and op counts for its
    `ops:` lines); with the weight an argument it is not sure, and weighed once."""
    model = tmp_path / "m.mlir"
    model.write_text(layered_model(2, constant_weight=True))
    timing, stderr = _timing(tmp_path, str(model))
    names = [s["name"] for s in timing["steps"]]
    assert "iree start -> global-optimization" in names
    assert "iree dispatch-creation -> end" in names
    assert any(n.startswith("interchange-permuted-consumers (4 change(s), 3 round(s))")
               for n in names)
    assert {"find", "apply", "verify"} <= set(names)
    assert "count" not in names  # no report shows op counts: none taken
    assert not any("to weigh" in n for n in names)
    # Every step of the driver has the process's CPU time too (the pass parts only wall).
    cpu = [s.get("cpu_seconds") for s in timing["steps"] if s["depth"] == 0]
    assert None not in cpu and all(c >= 0 for c in cpu)
    # The totals (the steps' sums, by definition) are times of this compile: within the wall
    # and CPU time the command took as measured from outside it (rusage of the children).
    measured = timing["measured"]
    assert 0 < timing["total_s"] <= measured["wall_s"], (timing["total_s"], measured)
    assert 0 < timing["total_cpu_s"] <= measured["cpu_s"] + 0.01, (timing["total_cpu_s"],
                                                                  measured)
    # ... and the text report prints the same totals as the JSON.
    shown = re.search(r"Total Execution Time: ([0-9.]+) seconds \(CPU ([0-9.]+) s\)", stderr)
    assert shown, stderr
    assert abs(float(shown.group(1)) - timing["total_s"]) < 1e-4
    assert abs(float(shown.group(2)) - timing["total_cpu_s"]) < 1e-4
    assert "iree-fusions-compile timing report" in stderr
    assert "----CPU Time----  ----Wall Time----" in stderr
    timing, stderr = _timing(tmp_path, str(model), "--fusions-report")
    assert sum("to weigh" in s["name"] for s in timing["steps"]) == 1
    assert "count" in [s["name"] for s in timing["steps"]]
    assert "  ops: " in stderr
    model.write_text(layered_model(2))  # the weight an argument: no sure change, weighed
    timing, _ = _timing(tmp_path, str(model))
    assert sum("to weigh" in s["name"] for s in timing["steps"]) == 1


def test_api_returns_the_timing(tmp_path):
    model = tmp_path / "m.mlir"
    model.write_text(layered_model(1))
    out = iree_fusions.compile_file(str(model), fusions=INTERCHANGE, timing=True)
    assert out.timing["total_s"] > 0
    assert any(s["name"] == "find" and s["depth"] == 2 for s in out.timing["steps"])
    assert iree_fusions.compile_file(str(model), fusions=INTERCHANGE).timing is None


def test_timing_rows_nest_pass_parts_under_their_hook():
    timing = CompileTiming()
    timing.mark("iree start global-optimization")
    timing.mark("plugin global-optimization a-pass")
    timing.mark("emit")
    report = PassReport("a-pass")
    report.timing = {"find": 0.5, "apply": 0.25, "total": 1.0}
    report.stats["rounds"] = 2
    timing.finish([report])
    rows = [(r.depth, r.name) for r in timing.rows]
    assert rows == [(0, "iree start -> global-optimization"),
                    (0, "plugin global-optimization: a-pass"),
                    (1, "a-pass (0 change(s), 2 round(s))"), (2, "find"), (2, "apply"),
                    (2, "other"), (0, "emit")]
    assert "Total Execution Time" in timing.format()


def test_bench_rows_carry_compile_times(tmp_path):
    """iree-fusions-bench --json: each row has both builds' compile wall times and the
    plugin's own part (its passes)."""
    rows = tmp_path / "rows.json"
    res = subprocess.run([tool("iree-fusions-bench"), "attention_projection_transpose",
                          "--compile-only", f"--json={rows}"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(rows.read_text())
    assert row["stock_compile_s"] > 0 and row["plugin_compile_s"] > 0
    assert 0 < row["plugin_passes_s"] < row["plugin_compile_s"]


def test_a_sure_pass_does_not_spare_another_pass_the_weighing():
    """Each pass is weighed on its own: one pass's sure change keeps that pass without the
    run, but another pass with changes that are neither sure nor exempt is weighed."""
    sure, unsure = PassReport("a"), PassReport("b")
    sure.change("k", "w", "l", sure="IREE makes each of them a dispatch")
    unsure.change("k", "w", "l")
    request = CompileRequest(b"")
    assert _must_weigh([sure, unsure], request) is True
    assert _must_weigh([sure], request) is False
