"""Passes that leave a candidate to another pass do so only when that pass is selected for the
compile (`PassContext.selected`): `-p PASS` alone never defers to a pass that is not there.

The deferrals: forward-slices leaves an attention's first value columns to rewrite-attention
(llvm-cpu, read-columns) and a contraction's slices to forward-slice-dispatches;
merge-sibling-generics leaves a stacked K/V scatter pair's index chains to
merge-cache-scatters (aggressive fusion). Each is tested both ways here and in lit
(forward-slices-with-rewrite-attention.mlir, forward-slices-after-contractions.mlir,
merge-cache-scatters.mlir PIPELINE); a reason that names another pass is only written by a pass that asks whether that
pass is selected (checked over the sources)."""

from __future__ import annotations

import ast
import pathlib
import re

from iree.compiler import ir

from iree_fusions.compiler.pipeline import Step, parse_pipeline, run_pipeline
from iree_fusions.compiler.registry import REGISTRY

from support import passes as sp

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _skips(text: str, pipeline: str, aggressive: bool = False) -> dict[str, list[str]]:
    """Pass name -> the reasons of its skipped candidates, running `pipeline` on `text`."""
    with ir.Context():
        module = ir.Module.parse(text)
        _, reports = run_pipeline(module.operation, parse_pipeline(pipeline),
                                  aggressive_fusion=aggressive)
        return {r.pass_name: [s.reason for s in r.skipped] for r in reports}


def _stacked_pair_case() -> str:
    return sp.lit_cases("merge-cache-scatters")["decode_kv_write_rope"]


def test_merge_sibling_generics_defers_only_to_a_selected_merge_cache_scatters():
    text = _stacked_pair_case()
    both = _skips(text, "merge-sibling-generics,merge-cache-scatters", aggressive=True)
    assert any("merge-cache-scatters" in r for r in both["merge-sibling-generics"])
    alone = _skips(text, "merge-sibling-generics", aggressive=True)
    assert not any("merge-cache-scatters" in r for r in alone["merge-sibling-generics"])
    out, reports = sp.run_pass(text, "merge-sibling-generics")  # (not aggressive: no defer)
    assert reports[0].changed


def test_forward_slices_defers_columns_only_to_rewrite_attention_reading_them():
    """Selected with read-columns off (or on a GPU target), rewrite-attention computes every
    column: the slice is forwarded."""
    text = sp.lit_cases("forward-slices")["attention_value_columns"]
    reason = "rewrite-attention computes only those"
    assert any(reason in r for r in _skips(text, "forward-slices,rewrite-attention")
               ["forward-slices"])
    for pipeline in ("forward-slices", "forward-slices,rewrite-attention{read-columns=false}"):
        assert not any(reason in r for r in _skips(text, pipeline)["forward-slices"]), pipeline


def test_the_selection_defaults_to_the_pipelines_passes():
    """run_pipeline without `selected`: its own plugin passes (so iree-fusions-opt -p A,B
    defers between A and B)."""
    seen = []

    class Probe:
        name = "probe"

        def run(self, module, ctx):
            seen.append(tuple(p.name for p in ctx.selected))

    steps = parse_pipeline("forward-slices,merge-cache-scatters")
    steps.append(Step("probe", Probe()))
    with ir.Context():
        module = ir.Module.parse("module {}")
        run_pipeline(module.operation, steps, count_ops=False)
    assert seen == [("forward-slices", "merge-cache-scatters", "probe")]


def _reason_strings(path: pathlib.Path) -> list[str]:
    """The module's string constants but its docstrings."""
    tree = ast.parse(path.read_text())
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, kinds) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_a_reason_naming_another_pass_is_written_by_a_pass_that_asks_for_it():
    owner = {}  # source file -> the pass (package) it belongs to
    for path in (ROOT / "mlir_passes").rglob("*.py"):
        package = path.parent if path.parent.name != "mlir_passes" else path
        owner[path] = package.stem.replace("_", "-")
    sources = {}  # pass -> the text of all its files
    for path, name in owner.items():
        sources[name] = sources.get(name, "") + path.read_text()
    asked = {}
    for path, name in owner.items():
        for string in _reason_strings(path):
            for other in REGISTRY:
                if other not in (name, string) and \
                        re.search(rf"(?<![\w-]){re.escape(other)}(?![\w-])", string):
                    asked[(name, other)] = f'selected_pass("{other}")' in sources[name]
    assert asked, "no pass names another in a reason: the check would prove nothing"
    assert all(asked.values()), {k: v for k, v in asked.items() if not v}
