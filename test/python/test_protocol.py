"""The candidate protocol: the registry, typed options, keys, the driver and the report."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import pathlib
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

import pytest
from iree.compiler import ir

from conftest import tool
from iree_fusions.compiler import registry
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, MAX_ROUNDS, NoMatch,
                                            PassContext, PassOptionError, PassReport, option,
                                            structural_key)
from iree_fusions.compiler.pipeline import PipelineError, parse_pipeline, run_pipeline

MODULE = """
util.func public @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = arith.negf %a : tensor<4xf32>
  %1 = arith.negf %b : tensor<4xf32>
  %2 = arith.addf %0, %1 : tensor<4xf32>
  util.return %1, %2 : tensor<4xf32>, tensor<4xf32>
}
"""


@pytest.mark.parametrize("entry", list(registry.REGISTRY.values()), ids=lambda e: e.name)
def test_registry_names_are_the_pass_names(entry):
    cls = entry.load()
    assert cls.name == entry.name
    assert cls.phase in ("linalg", "flow")
    assert cls.description and "\n" not in cls.description
    for info in cls.options():
        assert info.help, f"{entry.name}: option {info.name} has no help"


def test_every_rewrite_pass_takes_skip_and_only():
    for entry in registry.REGISTRY.values():
        cls = entry.load()
        if issubclass(cls, CandidatePass):
            names = {o.name for o in cls.options()}
            assert {"skip", "only"} <= names, entry.name


def test_all_runs_the_builtin_passes_in_their_declared_order():
    """The builtin passes are listed in `registry.BUILTIN`, in the order `--fusions=all` runs
    them: the report first (not in 'all'), then the rewrites."""
    assert registry.default_pass_names() == [
        "rewrite-embedding-bags", "batch-gathers", "forward-factory-ops", "forward-slices",
        "forward-factory-dispatches", "forward-slice-dispatches", "batch-mlp-towers",
        "merge-sibling-contractions", "merge-sibling-generics", "merge-cache-scatters",
        "interchange-permuted-consumers", "rewrite-attention", "share-layer-executables"]
    assert [name for name, e in registry.REGISTRY.items() if e.default] == \
        registry.default_pass_names()
    assert list(registry.REGISTRY)[0] == "fusions-report"
    assert not registry.REGISTRY["fusions-report"].default
    names = [e.name for e in registry.BUILTIN]
    assert len(set(names)) == len(names)


def test_finding_the_passes_imports_none_of_them():
    """The registry's table names each pass's module: importing it (what every tool does at
    start) imports no pass module; an entry's module is imported when it is loaded."""
    code = ("import sys; from iree_fusions.compiler import registry; registry.default_pass_names()"
            "; print(sorted(m for m in sys.modules if m.startswith('iree_fusions.passes.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_pass_class_in_the_passes_folder_is_in_the_table():
    """A pass class written in `mlir_passes/` but not listed in `registry.BUILTIN` would never
    run: every class there with a kebab-case `name` and a `phase` is in the table (read from
    the sources, nothing imported)."""
    root = pathlib.Path(__file__).resolve().parents[2] / "mlir_passes"
    declared = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            fields = {t.id: v.value for stmt in node.body if isinstance(stmt, ast.Assign)
                      for t in stmt.targets if isinstance(t, ast.Name)
                      and isinstance(v := stmt.value, ast.Constant)}
            if "name" in fields and "phase" in fields:
                declared.add(fields["name"])
    assert declared == {e.name for e in registry.BUILTIN}


EXTRA_PASS = """
from dataclasses import dataclass
from iree_fusions.compiler.protocol import FusionPass
from iree_fusions.compiler.registry import register


@register
@dataclass(frozen=True)
class LoadedPass(FusionPass):
    name = "loaded-pass"
    phase = "linalg"
    description = "a pass from a module named by --fusions-load"
"""


def test_a_fusions_load_module_registers_a_pass(tmp_path, monkeypatch):
    """`--fusions-load=MODULE` imports a module that registers its passes: they resolve by
    name, load, and are not part of 'all'."""
    (tmp_path / "loaded_pass_module.py").write_text(EXTRA_PASS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "loaded_pass_module", raising=False)
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    monkeypatch.setattr(registry, "LOADED", list(registry.LOADED))
    registry.load_plugin_modules(["loaded_pass_module"])
    entry = registry.lookup("loaded-pass")
    assert entry.target == "loaded_pass_module:LoadedPass" and not entry.default
    assert entry.load().name == "loaded-pass" and entry.phase == "linalg"
    assert "loaded-pass" not in registry.default_pass_names()
    assert registry.LOADED[-1] == "loaded_pass_module"


# The option values each pass hands its helper modules (`FusionPass.option_values`).
HELPER_OPTIONS = [
    ("interchange-permuted-consumers", "interchange_permuted_consumers.match", "MatchOptions"),
    ("batch-gathers", "batch_gathers.plan", "GroupOptions"),
    ("batch-gathers", "batch_gathers.writer", "WriterOptions"),
    ("batch-mlp-towers", "batch_mlp_towers.plan", "PlanOptions"),
    ("batch-mlp-towers", "batch_mlp_towers.build", "BuildOptions"),
    ("forward-factory-ops", "forward_factory_ops.roots", "ForwardCost"),
    ("forward-factory-dispatches", "forward_factory_ops.dispatches", "DispatchOptions"),
    ("rewrite-embedding-bags", "rewrite_embedding_bags.plan", "OffsetsOptions"),
]


@pytest.mark.parametrize("name, module, values", HELPER_OPTIONS, ids=lambda x: x)
def test_helpers_get_option_values_filled_from_the_pass(name, module, values):
    """Each helper's options dataclass names options of its pass, and `option_values` fills
    it with the values the pass was given (not the defaults)."""
    cls = registry.lookup(name).load()
    values_cls = getattr(importlib.import_module(f"iree_fusions.passes.{module}"), values)
    fields = [f.name for f in dataclasses.fields(values_cls)]
    options = {o.field_name: o for o in cls.options()}
    assert set(fields) <= set(options), set(fields) - set(options)
    pass_ = cls()
    assert pass_.option_values(values_cls) == values_cls(
        **{f: options[f].default for f in fields})
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(pass_.option_values(values_cls), fields[0], None)


def test_option_values_reads_the_given_options():
    cls = registry.lookup("batch-gathers").load()
    values = importlib.import_module("iree_fusions.passes.batch_gathers.plan").GroupOptions
    got = cls.from_options({"min-group-size": "5"}).option_values(values)
    assert got.min_group_size == 5 and got.cross_table is True


@pytest.mark.parametrize("text, message", [
    ("interchange-permuted-consumers{producer-layout=sometimes}",
     "option 'producer-layout' expects auto|always|never, got 'sometimes'"),
    ("interchange-permuted-consumers{merge-multi-use=maybe}", "expects bool"),
    ("interchange-permuted-consumers{merge_multi_use=0}", "has no option 'merge_multi_use'"),
])
def test_options_are_typed_and_validated(text, message):
    with ir.Context(), pytest.raises(PipelineError, match=message):
        parse_pipeline(text)


def test_option_values_parse_to_their_types():
    with ir.Context():
        (step,) = parse_pipeline(
            "interchange-permuted-consumers{producer-layout=never skip=a-1,b-2 "
            "merge-multi-use=false}")
    p = step.plugin
    assert p.producer_layout == "never" and p.skip == ("a-1", "b-2") and not p.merge_multi_use


def test_fusions_list_shows_options_with_help_and_defaults():
    out = subprocess.run([tool("iree-fusions-compile"), "--fusions-list"], capture_output=True,
                         text=True, check=True).stdout
    assert "interchange-permuted-consumers (linalg):" in out
    assert "producer-layout=auto|always|never (default auto): move the permutation" in out
    assert "skip=KEY,... (default (none)): candidate keys" in out
    assert "fusions-report (linalg):" in out and "[not in 'all']" in out
    assert "%a = linalg.matmul ins(%x, %W_i" not in out  # the sketches only with -v


def test_fusions_list_verbose_shows_each_pass_sketch():
    for flags in (["--fusions-list", "-v"], ["--fusions-list=verbose"]):
        out = subprocess.run([tool("iree-fusions-compile"), *flags], capture_output=True,
                             text=True, check=True).stdout
        towers = out[out.index("batch-mlp-towers (linalg):"):]
        assert "%a = linalg.matmul ins(%x, %W_i" in towers  # its module docstring's sketch


def test_structural_key_is_stable_and_short():
    a = structural_key("demo", ("linalg.matmul", "tensor<4x4xf32>"), 3)
    assert a == structural_key("demo", ("linalg.matmul", "tensor<4x4xf32>"), 3)
    assert a != structural_key("demo", ("linalg.matmul", "tensor<4x8xf32>"), 3)
    assert a.startswith("demo-") and len(a) == len("demo-") + 10


# ---------------------------------------------------------------- the driver, on a toy pass


@dataclass(frozen=True)
class NegToAbsPass(CandidatePass[ir.Operation]):
    """Rewrites arith.negf into math.absf; candidates keyed by the operand's producer kind."""

    name = "test-neg-to-abs"
    phase = "linalg"
    description = "arith.negf -> math.absf (test only)"

    mode: Literal["first", "all"] = option("first", "test option")
    refuse_in_apply: bool = option(False, "apply raises NoMatch before changing anything")
    loop_forever: bool = option(False, "apply keeps producing new candidates")

    def find(self, block: ir.Block, ctx: PassContext):
        for op in list(block.operations):
            op = op.operation
            if op.name == "arith.negf":
                source = op.operands[0].owner
                kind = "arg" if isinstance(source, ir.Block) else "op"
                yield Candidate.of(structural_key("neg", kind), op, "a negf",
                                   lambda op=op: self._plan(op))

    def _plan(self, op):
        if any(u.owner.name == "util.return" for u in op.results[0].uses):
            raise NoMatch("returned", "its result is returned")
        return op

    def apply(self, candidate, ctx):
        if self.refuse_in_apply:
            raise NoMatch("refused", "refused while applying")
        op = candidate.plan
        with ir.InsertionPoint(op), op.location:
            new = ir.Operation.create("math.absf", [op.results[0].type], [op.operands[0]])
        if not self.loop_forever:
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()
        return "negf -> absf"


def _run_toy(**options):
    with ir.Context():
        module = ir.Module.parse(MODULE)
        report = PassReport("test-neg-to-abs")
        NegToAbsPass(**options).run(module.operation, PassContext(module.operation, report))
        return str(module), report


def test_driver_applies_selected_candidates_and_reports_blocked_ones():
    out, report = _run_toy()
    assert out.count("math.absf") == 1 and out.count("arith.negf") == 1
    assert [c.what for c in report.changes] == ["negf -> absf"]
    assert [s.reason for s in report.skipped] == ["its result is returned"]
    assert report.skipped[0].location.startswith("arith.negf at ")
    assert report.changes[0].key == report.skipped[0].key == structural_key("neg", "arg")


def test_skip_and_only_options_deselect_by_key():
    key = structural_key("neg", "arg")
    out, report = _run_toy(skip=(key,))
    assert "math.absf" not in out and not report.changes
    assert "skipped on request (skip=KEY)" in [s.reason for s in report.skipped]
    out, report = _run_toy(only=("neg-*",))  # fnmatch patterns select families
    assert out.count("math.absf") == 1
    out, report = _run_toy(only=("other-key",))
    assert "math.absf" not in out
    assert any(s.reason.startswith("not selected (only=") for s in report.skipped)


def test_nomatch_raised_in_apply_is_a_skip():
    out, report = _run_toy(refuse_in_apply=True)
    assert "math.absf" not in out and not report.changes
    assert [("refused while applying", "refused")] == [
        (s.reason, s.code) for s in report.skipped if s.reason == "refused while applying"]


def test_driver_stops_at_its_bound_with_a_note():
    out, report = _run_toy(loop_forever=True)
    assert len(report.changes) == MAX_ROUNDS
    assert any("no fixpoint" in n for n in report.notes)


def test_report_json_objects_carry_key_pass_and_location():
    _, report = _run_toy()
    data = json.loads(json.dumps(report.to_json()))
    (change,) = data["changes"]
    assert set(change) == {"key", "pass", "what", "location", "decided_by", "gain"}
    assert change["pass"] == "test-neg-to-abs"
    (skip,) = data["skipped"]
    assert set(skip) == {"key", "pass", "reason", "location", "decided_by", "feasible",
                         "code"}
    assert skip["code"] == "returned"  # the check's code; the report prints it after the pass
    text = report.format()
    assert f"changed [{change['key']}] arith.negf at " in text
    assert f"skipped [{skip['key']}] arith.negf at " in text
    assert ": its result is returned [test-neg-to-abs/returned]" in text
    assert PassReport.from_json(data).skipped[0].code == "returned"


def test_the_report_the_api_reads_is_the_passes_report():
    """One report type from the passes to the API: the JSON a compile writes reads back as
    the same classes, with the API's field names, and writes the same JSON again."""
    from iree_fusions.compiler.protocol.report import Change, Skip
    from iree_fusions.harness.reports import pass_summaries

    _, report = _run_toy()
    data = json.loads(json.dumps(report.to_json()))
    (typed,) = pass_summaries([data])
    assert type(typed) is PassReport
    assert typed.to_json() == data
    assert typed.name == "test-neg-to-abs" and typed.changed
    (change,), (skip,) = typed.changes, typed.skipped
    assert isinstance(change, Change) and isinstance(skip, Skip)
    assert (change.key, change.what, change.location) == (
        report.changes[0].key, report.changes[0].what, report.changes[0].location)
    assert skip.reason == report.skipped[0].reason and skip.feasible == report.skipped[0].feasible


def test_pass_options_errors_name_the_pass():
    with pytest.raises(PassOptionError, match="pass 'test-neg-to-abs': option 'mode' expects"):
        NegToAbsPass.from_options({"mode": "some"})


def test_plugin_pass_runs_in_a_pipeline_with_mlir_passes():
    from iree_fusions.compiler.pipeline import Step

    with ir.Context():
        module = ir.Module.parse(MODULE)
        _, reports = run_pipeline(module.operation, [Step("x", NegToAbsPass()), Step("cse")])
    assert reports[0].pass_name == "test-neg-to-abs" and reports[0].changed
