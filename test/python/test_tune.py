"""Decisions files and iree-fusions-tune: the file a tuning run writes changes the compiled
dispatches as recorded; files for another target and corrupt files are clear errors."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from conftest import CPU_FLAGS, tool
from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.compiler.decisions import FORMAT, DecisionsError, load
from iree_fusions.models import bundled_mlir_models

MODEL = "attention_projection_transpose"  # 2 dispatches stock, 1 with the interchange
PASS = "interchange-permuted-consumers"


def _dispatches(path, **kw) -> tuple[int, list[dict]]:
    out = api.compile_file(path, compile_to="flow", fusions=PASS, **kw)
    return count_flow_ir(out.output).total_dispatches, out.reports


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    out = tmp_path_factory.mktemp("tune") / "decisions.json"
    res = subprocess.run([tool("iree-fusions-tune"), MODEL, f"--fusions={PASS}", "-o", str(out),
                          "--device", "local-sync", "--rounds", "1", "--max-rounds", "1",
                          "--repetitions", "2"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out, res.stderr


def test_tuning_records_target_keys_and_times(tuned):
    path, log = tuned
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["device"] == "local-sync"
    assert data["target"]["backend"] == "llvm-cpu" and data["target"]["chip"]
    assert data["tools"]["iree-base-compiler"].startswith("3.13")
    (key, entry), = data["decisions"].items()
    assert key.startswith("interchange-permuted-consumers-") and entry["pass"] == PASS
    assert entry["ms_with"] > 0 and entry["ms_without"] > 0 and entry["default"] is True
    assert data["checks"][MODEL][0]["ms_stock"] > 0
    assert "1/1 keys" in log  # progress


@pytest.mark.parametrize("apply", [True, False])
def test_decisions_file_changes_the_dispatches_as_recorded(tuned, tmp_path, apply):
    path, _ = tuned
    data = json.loads(path.read_text())
    for entry in data["decisions"].values():
        entry["apply"] = apply
    forced = tmp_path / "forced.json"
    forced.write_text(json.dumps(data))
    source = bundled_mlir_models()[MODEL]
    n, reports = _dispatches(source, decisions=str(forced))
    assert n == (1 if apply else 2)
    (key,) = data["decisions"]
    records = reports[0]["changes"] if apply else reports[0]["skipped"]
    assert [(r["key"], r["decided_by"]) for r in records] == [(key, str(forced))]
    if not apply:  # the reason gives the times the file recorded
        entry = data["decisions"][key]
        assert records[0]["reason"].startswith(
            f"a measured decision turns it off ({entry['ms_with']} ms with it, "
            f"{entry['ms_without']} ms without")


def test_an_untimed_decision_says_so(tuned, tmp_path):
    # A key the tuner did not time (its two builds were the same program) is not reported as
    # measured slower.
    path, _ = tuned
    data = json.loads(path.read_text())
    (key,) = data["decisions"]
    entry = data["decisions"][key]
    entry.update(apply=False, identical=True)
    for field in ("ms_with", "ms_without", "ratio", "round_ratios"):
        entry.pop(field, None)
    untimed = tmp_path / "untimed.json"
    untimed.write_text(json.dumps(data))
    n, reports = _dispatches(bundled_mlir_models()[MODEL], decisions=str(untimed))
    (skip,) = reports[0]["skipped"]
    assert n == 2 and skip["decided_by"] == str(untimed)
    assert "measured" not in skip["reason"]
    assert skip["reason"].endswith("the decisions file keeps it off (untimed: with and without "
                                   "it the tuned model compiled to the same program)")


def test_decisions_for_another_target_are_refused(tuned, tmp_path):
    path, _ = tuned
    data = json.loads(path.read_text())
    data["target"] = {"device": "cuda", "backend": "cuda", "chip": "sm_80"}
    other = tmp_path / "cuda.json"
    other.write_text(json.dumps(data))
    res = subprocess.run([tool("iree-fusions-compile"), bundled_mlir_models()[MODEL], *CPU_FLAGS,
                          f"--fusions={PASS}", f"--fusions-decisions={other}", "-o",
                          str(tmp_path / "x.vmfb")], capture_output=True, text=True)
    assert res.returncode == 1
    assert "was measured for cuda:sm_80" in res.stderr and "this compile targets llvm-cpu:" \
        in res.stderr


@pytest.mark.parametrize("content, message", [
    ("{", "is not valid JSON"),
    ('{"format": "something-else"}', "is not an iree-fusions decisions file"),
    (json.dumps({"format": FORMAT, "target": {"device": "local"}, "decisions": {}}),
     "'target' must hold device, backend and chip"),
    (json.dumps({"format": FORMAT, "target": {"device": "local", "backend": "llvm-cpu",
                                              "chip": "x"}, "decisions": {"k": {"apply": 1}}}),
     "decision 'k' needs"),
    # Issue 33 item 4: json keeps the last of repeated keys and reads NaN / Infinity; the file
    # is refused instead, at the line.
    ('{"format": "%s",\n "format": "%s"}' % (FORMAT, FORMAT),
     "key 'format' appears twice in one object: line 2"),
    ('{"format": "%s", "target": {"device": "local", "backend": "llvm-cpu", "chip": "x"},\n'
     ' "decisions": {"k": {"pass": "p", "apply": true},\n\n'
     '               "k": {"pass": "p", "apply": false}}}' % FORMAT,
     "key 'k' appears twice in one object: line 4"),
    ('{"format": "%s",\n "decisions": {"k": {"ms_with":\n NaN}}}' % FORMAT,
     "NaN is not a JSON number: line 3"),
    ('{"format": "%s", "x": [1,\n -Infinity]}' % FORMAT,
     "-Infinity is not a JSON number: line 2"),
])
def test_corrupt_decisions_files_are_clear_errors(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(DecisionsError, match=message):
        load(str(bad))
    res = subprocess.run([tool("iree-fusions-compile"), bundled_mlir_models()[MODEL], *CPU_FLAGS,
                          f"--fusions={PASS}", f"--fusions-decisions={bad}", "-o",
                          str(tmp_path / "x.vmfb")], capture_output=True, text=True)
    assert res.returncode == 2 and message in res.stderr


def _target_error(decisions, tmp_path) -> str:
    res = subprocess.run([tool("iree-fusions-compile"), bundled_mlir_models()[MODEL], *CPU_FLAGS,
                          f"--fusions-decisions={decisions}", "-o", str(tmp_path / "x.vmfb")],
                         capture_output=True, text=True)
    assert res.returncode == 1
    return res.stderr


def test_a_target_mismatch_names_each_field_that_differs(tmp_path):
    """Issue 33 item 4: a file for the compile's backend and chip but another device kind
    was refused with `measured for llvm-cpu:C ... but this compile targets llvm-cpu:C`, the
    same text both sides."""
    data = {"format": FORMAT, "device": "local-task", "decisions": {},
            "target": {"device": "local", "backend": "llvm-cpu", "chip": "no-such-cpu"}}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    err = _target_error(path, tmp_path)
    assert "the file's chip is 'no-such-cpu', this compile's '" in err and "device" not in \
        err.split("targets")[1]
    chip = err.split("this compile's '")[1].split("'")[0]  # the host's, as IREE resolved it
    data["target"].update(device="vulkan", chip=chip)
    path.write_text(json.dumps(data))
    err = _target_error(path, tmp_path)
    assert f"was measured for llvm-cpu:{chip} (on local-task) but this compile targets " \
        f"llvm-cpu:{chip} (the file's device is 'vulkan', this compile's 'local')" in err


def test_missing_decisions_file_is_a_clear_error(tmp_path):
    res = subprocess.run([tool("iree-fusions-compile"), bundled_mlir_models()[MODEL], *CPU_FLAGS,
                          f"--fusions-decisions={tmp_path / 'nope.json'}", "-o",
                          str(tmp_path / "x.vmfb")], capture_output=True, text=True)
    assert res.returncode == 2 and "cannot read decisions file" in res.stderr


def test_shipped_decisions_follow_the_target():
    """The package ships H100 facts: on CUDA the bundled projection's interchange measured
    0.82-0.90x (../shared/GPU.md), so it is skipped there, and applied on the CPU."""
    source = bundled_mlir_models()[MODEL]
    n, reports = _dispatches(source, device="cuda")
    assert n == 2
    (skip,) = reports[0]["skipped"]
    assert skip["decided_by"] == "shipped cuda-sm_80.json" and skip["feasible"]
    n, _ = _dispatches(source, device="cuda", decisions="none")
    assert n == 1
    n, reports = _dispatches(source)  # llvm-cpu: no shipped decision for this key
    assert n == 1 and reports[0]["changes"][0]["decided_by"] == "rule"


def test_a_default_changes_only_on_consistent_rounds():
    # One-sided sign test at 5%: the rounds that must agree before a default is changed
    # (the statistics are `runtime.statistics`', shared with the bench and bundles).
    from iree_fusions.runtime.statistics import clearly_better, rounds_needed

    assert [rounds_needed(n) for n in (3, 5, 7, 9, 11, 21)] == [4, 5, 7, 8, 9, 15]
    assert clearly_better([1.1, 1.2, 1.05, 1.1, 1.3], 1.1, 0.02)
    # One round the other way (a noisy machine): the default stays.
    assert not clearly_better([1.1, 1.2, 0.69, 1.1, 1.3], 1.1, 0.02)
    # Every round agrees but within the margin: the default stays.
    assert not clearly_better([1.01, 1.01, 1.015, 1.01, 1.01], 1.01, 0.02)
    # Three rounds can never overturn a default.
    assert not clearly_better([2.0, 2.0, 2.0], 2.0, 0.02)


def fake_benchmark(monkeypatch, plugin_rounds: list[float]) -> list[str]:
    """iree-benchmark-module replaced: stock takes 1.0 ms, plugin the next of `plugin_rounds`
    (a round each); returns the sides in the order they ran."""
    from iree_fusions.harness import timing

    plugin = iter(plugin_rounds)
    order: list[str] = []

    def repetition_times_ms(path, input_flags, **kwargs):
        side = os.path.basename(path).split(".")[0]
        order.append(side)
        return [1.0] if side == "stock" else [next(plugin)]

    monkeypatch.setattr(timing, "repetition_times_ms", repetition_times_ms)
    return order


def test_a_split_verdict_gets_more_rounds(monkeypatch):
    # Medians 10% apart but one round in five the other way: the tuner takes five more
    # rounds (up to --max-rounds) instead of deciding on a noisy split; agreeing rounds or
    # medians within the margin are decided at once.
    import argparse

    from iree_fusions.tools import tune
    from iree_fusions.runtime.statistics import clearly_better, split_verdict

    def run(plugin_rounds: list[list[float]], max_rounds: int) -> tuple[int, list[float]]:
        order = fake_benchmark(monkeypatch, [t for r in plugin_rounds for t in r])
        args = argparse.Namespace(device="local-sync", rounds=5, max_rounds=max_rounds,
                                  repetitions=2, runtime_flag=[])
        tuner = tune.Tuner("m.mlir", [], "main", [], args, "/nonexistent")
        ms_without, ms_with, ratios = tuner.time_pair(
            b"stock", b"plugin", lambda rs, r: split_verdict(rs, r, 0.02))
        assert ms_without == 1.0 and len(order) == 2 * len(ratios)
        # Alternating: stock first on even rounds, plugin first on odd ones.
        assert order[:4] == ["stock", "plugin", "plugin", "stock"]
        return len(ratios), ratios

    split = [0.9, 0.9, 1.1, 0.9, 0.9]  # 4 of 5 rounds faster: not enough for the sign test
    agree = [0.9] * 5
    assert run([split, agree], max_rounds=21)[0] == 10  # settled by the next five
    assert run([agree], max_rounds=21)[0] == 5  # clear at once
    assert run([[1.0, 0.99, 1.01, 1.0, 1.0]], max_rounds=21)[0] == 5  # within the margin
    even = [0.9, 1.1, 0.9, 1.1, 0.9]  # 3 of 5: stays split
    assert run([even] * 5, max_rounds=21)[0] == 21  # 21 is the ceiling (the last step: 1)
    assert run([split], max_rounds=5)[0] == 5  # --max-rounds = --rounds: never extended
    # With the extra rounds the verdict is the sign test's over all of them.
    n, ratios = run([split, agree], max_rounds=21)
    assert clearly_better(ratios, 1 / 0.9, 0.02)


def _fake_tuning(monkeypatch, tmp_path, program, times, sizes=None, budget=0.0,
                 outputs=lambda vmfb: (True, "|d| <= 1e-05 or relative <= 0.0001")):
    """tune() over a fake model: `program(config)` is the bytes a build compiles to (config:
    key -> applied), `times(without, with_)` (or, with `sizes`, `times(without, with_,
    size)`) the (ms without, ms with) a timing reads. Keys k1 (applied by its rule) and k2
    (declined). `sizes`: the batch sizes of a dynamic program; `outputs(vmfb)`: the stock
    check's judgement of a build's outputs. Returns the decisions and the timed pairs (with
    the size, for a dynamic program)."""
    import argparse

    from iree_fusions.tools import tune
    from iree_fusions.compiler.target import Target

    rules = {"k1": True, "k2": False}
    timed = []

    def build(self, config):
        applied = {k: config.get(k, ("p", rule))[1] for k, rule in rules.items()}
        keys = {k: tune.KeyInfo(k, "p", a) for k, a in applied.items()}
        return tune.Build(program(applied), keys, Target("local", "llvm-cpu", "fake"))

    def time_pair(self, without, with_, undecided=None, inputs=None):
        if sizes is None:
            timed.append((without, with_))
            a, b = times(without, with_)
        else:
            (size,) = inputs if inputs is not None else self.inputs
            timed.append((without, with_, size))
            a, b = times(without, with_, size)
        return a, b, [a / b] * self.args.rounds

    points = [(f"batch={s}", [s]) for s in sizes] if sizes else [("", [])]
    model = tune.Model("m.mlir", "main", [], "fake", {}, points,
                       {"batch": list(sizes)} if sizes else {})
    monkeypatch.setattr(tune, "load_model", lambda args: model)
    monkeypatch.setattr(tune.Tuner, "build", build)
    monkeypatch.setattr(tune.Tuner, "stock", lambda self: program({"k1": False, "k2": False}))
    monkeypatch.setattr(tune.Tuner, "time_pair", time_pair)
    monkeypatch.setattr(tune.Tuner, "outputs_ok", lambda self, stock, build:
                        outputs(build.vmfb))
    args = argparse.Namespace(model="fake", device="local-sync", target=None, resume=False,
                              budget=budget, fusions="all", rounds=7, max_rounds=7, margin=0.02,
                              repetitions=2, runtime_flag=[], output=str(tmp_path / "d.json"))
    return tune.tune(args, []), timed


def test_identical_builds_are_not_timed(monkeypatch, tmp_path):
    # k2 leaves the compiled program as it was: its builds are byte-identical, so it keeps
    # its rule without a timing; k1 is measured, and the tuned build is checked against stock.
    def program(applied):
        return b"with k1" if applied["k1"] else b"stock"

    decided, timed = _fake_tuning(monkeypatch, tmp_path, program, lambda a, b: (1.0, 0.8))
    k1, k2 = decided.entries["k1"], decided.entries["k2"]
    assert k1.apply and k1.evidence["ratio"] == 1.25 and "identical" not in k1.evidence
    assert not k2.apply and k2.evidence["identical"] and "ms_with" not in k2.evidence
    assert timed == [(b"stock", b"with k1"), (b"stock", b"with k1")]  # k1, then the stock check
    assert decided.meta["checks"]["fake"] == [
        {"config": "tuned", "ms_stock": 1.0, "ms_plugin": 0.8, "ratio": 1.25}]


def test_a_stock_check_that_reaches_stock_bytes_is_not_timed(monkeypatch, tmp_path):
    # The tuned build reads slower than stock (and k1 showed no clear gain): the check turns k1
    # off; that build is stock's program, byte for byte, so it is accepted without a timing.
    def program(applied):
        return b"with k1" if applied["k1"] else b"stock"

    readings = iter([(1.0, 1.0), (1.0, 1.1)])  # k1 alone: no difference; tuned vs stock: 0.91
    decided, timed = _fake_tuning(monkeypatch, tmp_path, program, lambda a, b: next(readings))
    k1 = decided.entries["k1"]
    assert not k1.apply and k1.evidence["note"] == "turned off: without unclear gains against stock"
    assert len(timed) == 2  # k1's own timing and the tuned build's; not the last step
    assert decided.meta["checks"]["fake"][-1] == {"config": "without unclear gains",
                                                 "identical_to_stock": True}


def test_a_tuned_build_whose_outputs_differ_is_not_kept(monkeypatch, tmp_path):
    """k1 is faster, but the tuned build's outputs leave the bound: the check goes on to the
    next step (every key off: stock's program) and says why in the decisions."""
    def program(applied):
        return b"with k1" if applied["k1"] else b"stock"

    def outputs(vmfb):
        return (vmfb != b"with k1", "|d| <= 1e-05 or relative <= 0.0001")

    decided, timed = _fake_tuning(monkeypatch, tmp_path, program, lambda a, b: (1.0, 0.8),
                                  outputs=outputs)
    k1 = decided.entries["k1"]
    assert not k1.apply and k1.evidence["note"] == "turned off: all off against stock"
    assert decided.meta["checks"]["fake"] == [
        {"config": "tuned", "outputs": "differ", "bound": "|d| <= 1e-05 or relative <= 0.0001"},
        {"config": "all off", "identical_to_stock": True}]
    assert timed == [(b"stock", b"with k1")]  # k1's own timing only: no build that differs


def test_outputs_are_judged_against_stock_at_every_size(tmp_path):
    """Tuner.outputs_ok runs stock's module and the build's on the model's inputs at each
    size: the same program is ok by atol / rtol; another computation is not, at the size
    where it differs."""
    import argparse

    from iree_fusions.harness import api
    from iree_fusions.tools import tune

    source = tmp_path / "m.mlir"
    body = """func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {{
      %0 = arith.{op} %x, %x : tensor<?xf32>
      return %0 : tensor<?xf32>
    }}"""
    source.write_text(body.format(op="addf"))
    args = argparse.Namespace(device="local-sync")
    points = [(f"n={n}", [np.full(n, 2.0, np.float32)]) for n in (1, 4)]
    tuner = tune.Tuner(str(source), points[0][1], "main", [], args, str(tmp_path),
                       points=points)
    stock = api.compile_str(body.format(op="addf"), stock=True).output
    same = tune.Build(stock, {}, None)
    assert tuner.outputs_ok(stock, same) == (True, "|d| <= 1e-05 or relative <= 0.0001")
    other = tune.Build(api.compile_str(body.format(op="mulf"), stock=True).output,
                       {"k": tune.KeyInfo("k", "p", True)}, None)
    # 2 + 2 == 2 * 2: the same outputs by chance; 3 + 3 != 3 * 3 at every size.
    assert tuner.outputs_ok(stock, other)[0]
    tuner.points = [(f"n={n}", [np.full(n, 3.0, np.float32)]) for n in (1, 4)]
    assert tuner.outputs_ok(stock, other) == (
        False, "|d| <= 1e-05 or relative <= 0.0001, at n=1")


def _two_keys(applied):
    """k1 and k2 each change the program."""
    return b"k1" * applied["k1"] + b"k2" * applied["k2"] or b"stock"


def test_a_key_slower_at_one_size_is_not_applied(monkeypatch, tmp_path):
    """Issue 34: each key is timed at every size (the same two builds: measured once per
    size); k1 (applied by its rule) is 25% faster at batch 2 but 25% slower at batch 8: off.
    k2 (declined by its rule) is faster at one size and slower at none: on. The decisions
    record every size; the stock check runs at each."""
    def times(without, with_, size):
        if b"k1" in with_ and b"k1" not in without:  # k1's own timing
            return (1.0, 0.8) if size == 2 else (1.0, 1.25)
        if b"k2" in with_ and b"k2" not in without:
            return (1.0, 0.8) if size == 8 else (1.0, 1.0)
        return 1.0, 0.9  # the stock check: faster

    decided, timed = _fake_tuning(monkeypatch, tmp_path, _two_keys, times, sizes=(2, 8))
    k1, k2 = decided.entries["k1"], decided.entries["k2"]
    assert not k1.apply and k1.evidence["size"] == "batch=8" and k1.evidence["ratio"] == 0.8
    assert set(k1.evidence["sizes"]) == {"batch=2", "batch=8"}
    assert k2.apply and k2.evidence["sizes"]["batch=8"]["ratio"] == 1.25
    assert decided.meta["sizes"]["fake"] == {"batch": [2, 8]}
    # k1 at both sizes, k2 at both, the tuned build against stock at both: once per size.
    assert [t[2] for t in timed] == [2, 8, 2, 8, 2, 8]
    assert [c["size"] for c in decided.meta["checks"]["fake"]] == ["batch=2", "batch=8"]


def test_a_key_slower_at_the_first_size_is_not_timed_at_the_others(monkeypatch, tmp_path):
    def times(without, with_, size):
        if with_ == b"k1" and without == b"stock":
            return 1.0, 1.25
        return 1.0, 1.0

    decided, timed = _fake_tuning(monkeypatch, tmp_path, lambda a: b"k1" if a["k1"] else
                                  b"stock", times, sizes=(2, 8, 32))
    assert not decided.entries["k1"].apply
    assert timed[0] == (b"stock", b"k1", 2) and (b"stock", b"k1", 8) not in timed


def test_the_budget_stops_between_sizes(monkeypatch, tmp_path):
    """--budget is checked before each key and each size: a key not measured at every size
    keeps its rule and is not written as decided; the stock check still runs."""
    import time

    def times(without, with_, size):
        time.sleep(0.3)  # the budget (0.1 s) is spent after the first timing
        return 1.0, 1.0

    decided, timed = _fake_tuning(monkeypatch, tmp_path, lambda a: b"k1" if a["k1"] else
                                  b"stock", times, sizes=(4, 2), budget=0.1)
    assert "k1" not in decided.entries  # undecided: the pass's rule stands
    # k1 at batch 4 only, then the tuned build (k1 by its rule) against stock at both sizes.
    assert timed == [(b"stock", b"k1", 4), (b"stock", b"k1", 4), (b"stock", b"k1", 2)]


def test_no_extra_rounds_once_the_budget_is_spent(monkeypatch):
    """Issue 34 item 3: a split verdict gets more rounds only while --budget lasts (the
    check against stock of a large model at several sizes stays bounded)."""
    import argparse

    from iree_fusions.tools import tune
    from iree_fusions.runtime.statistics import split_verdict

    split = [0.9, 0.9, 1.1, 0.9, 0.9]
    for budget, started, rounds in ((0.0, 0.0, 10), (5.0, 0.0, 5)):
        fake_benchmark(monkeypatch, split + [0.9] * 5)  # split, then settled by 5 more
        args = argparse.Namespace(device="local-sync", rounds=5, max_rounds=21, repetitions=2,
                                  runtime_flag=[], budget=budget)
        tuner = tune.Tuner("m.mlir", [], "main", [], args, "/nonexistent", started=started)
        *_, ratios = tuner.time_pair(b"stock", b"plugin",
                                     lambda rs, r: split_verdict(rs, r, 0.02))
        assert len(ratios) == rounds


def test_a_decision_under_a_renamed_key_family_is_followed_with_a_warning():
    """Key families name their pass (issue 44: `siblings-` became `sibling-contractions-`;
    issue 59: `merge-sibling-contractions-`, the digest unchanged). A decision stored under any
    old key is still followed, for one release, with a warning naming both keys; the new key
    wins where both are stored."""
    import pathlib
    import re

    from iree_fusions.compiler.decisions import RENAMED_FAMILIES, Decider, Decision, DecisionSet
    from iree_fusions.compiler.target import Target

    target = Target("local", "llvm-cpu", "x")
    old = Decision("siblings-0123456789", "merge-sibling-contractions", True, "d.json")
    decider = Decider(target, [DecisionSet(target, "d.json", entries={old.key: old})])
    with pytest.warns(FutureWarning, match="'siblings-0123456789' is the old name of "
                                           "'merge-sibling-contractions-0123456789'"):
        assert decider.lookup("merge-sibling-contractions-0123456789",
                              "merge-sibling-contractions") is old
    assert decider.lookup("merge-sibling-contractions-ffffffffff") is None
    new = Decision("merge-sibling-contractions-0123456789", "merge-sibling-contractions", False,
                   "d.json")
    both = Decider(target, [DecisionSet(target, "d.json",
                                        entries={old.key: old, new.key: new})])
    assert both.lookup(new.key) is new
    # The new families are the ones the passes make keys of; the old ones none makes.
    sources = "".join(p.read_text() for p in
                      (pathlib.Path(__file__).parents[2] / "mlir_passes").rglob("*.py"))
    families = set(re.findall(r'structural_key\(\s*"([a-z-]+)"', sources))
    families |= set(re.findall(r'KEY_FAMILY = "([a-z-]+)"', sources))
    # and each family is its pass's name, or that name and a kind after it
    from iree_fusions.compiler.registry import REGISTRY
    assert all(any(f == name or f.startswith(name + "-") for name in REGISTRY)
               for f in families), families
    assert set(RENAMED_FAMILIES) <= families
    assert not {old for olds in RENAMED_FAMILIES.values() for old in olds} & families


def test_a_gpu_decision_applies_a_plan_the_gpu_rule_declines(tmp_path):
    """share-layer-executables declines on GPU targets (not measured there): declined, not
    blocked, so a decisions file measured on the GPU (the tuner's) applies the plan, as the
    protocol's target rules do (docs/protocol.md: `declined`)."""
    import re

    from iree_fusions.compiler.target import Target
    from support.passes import lit_cases

    source = tmp_path / "layers.mlir"
    source.write_text(lit_cases("share-layer-executables")["kv_cache_layers"])
    base = [tool("iree-fusions-opt"), str(source), "-p", "share-layer-executables",
            "--fusions-target=cuda:sm_80", "--fusions-report"]
    declined = subprocess.run(base + ["-o", str(tmp_path / "a.mlir")],
                              capture_output=True, text=True, check=True)
    assert "0 change(s), 1 skipped" in declined.stderr, declined.stderr
    key = re.search(r"skipped \[(share-layer-executables-[0-9a-f]+)\]", declined.stderr).group(1)
    decisions = tmp_path / "cuda.json"
    decisions.write_text(json.dumps({
        "format": FORMAT, "target": Target.parse("cuda:sm_80").to_json(),
        "decisions": {key: {"pass": "share-layer-executables", "apply": True}}}))
    applied = subprocess.run(base + [f"--fusions-decisions={decisions}",
                                     "-o", str(tmp_path / "b.mlir")],
                             capture_output=True, text=True, check=True)
    assert "1 change(s)" in applied.stderr, applied.stderr
    assert "util.optimization_barrier" in (tmp_path / "b.mlir").read_text()
