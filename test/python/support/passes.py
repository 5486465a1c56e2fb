"""Shared helpers of the per-pass tests: the lit file's cases, and running a pipeline."""

from __future__ import annotations

import os
import re

from iree.compiler import ir

from iree_fusions.compiler.pipeline import parse_pipeline, run_pipeline

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def lit_cases(pass_name: str) -> dict[str, str]:
    """function name -> IR of each `// -----` chunk of test/passes/<pass_name>.mlir (the
    name of a chunk's first public function names the case)."""
    with open(os.path.join(ROOT, "test", "passes", f"{pass_name}.mlir")) as f:
        chunks = f.read().split("// -----")
    return {re.search(r"util\.func public @(\w+)", c).group(1): c for c in chunks}


def run_pass(text: str, pipeline: str) -> tuple[str, list]:
    """Runs `pipeline` (plugin and MLIR passes) on `text`: (printed IR, pass reports)."""
    with ir.Context():
        module = ir.Module.parse(text)
        out, reports = run_pipeline(module.operation, parse_pipeline(pipeline))
        return str(out), reports


def skip_codes_and_changes(text: str, pipeline: str) -> tuple[list[str | None], list[str]]:
    """(the code of each skipped candidate, the text of each change) of one run of `pipeline`
    on `text`, which the verifier must admit."""
    with ir.Context():
        assert ir.Module.parse(text).operation.verify()
    _, reports = run_pass(text, pipeline)
    return ([s.code for r in reports for s in r.skipped],
            [c.what for r in reports for c in r.changes])


def function_texts(text: str) -> dict[str, str]:
    """Symbol name -> printed function, for each function of a module."""
    with ir.Context():
        module = ir.Module.parse(text)
        return {op.operation.attributes["sym_name"].value: str(op.operation)
                for op in module.body.operations
                if op.operation.name in ("util.func", "func.func")}


def merge_modules(*texts: str) -> str:
    """One module holding the top-level ops of every module text (symbols must differ)."""
    with ir.Context():
        first = ir.Module.parse(texts[0])
        for text in texts[1:]:
            other = ir.Module.parse(text)
            for op in list(other.body.operations):
                first.body.append(op.operation)
        return str(first)


def disguise(text: str) -> str:
    """The same structure written differently: SSA values and functions renamed, and an
    unrelated op first in each function body."""
    text = re.sub(r"%([A-Za-z_0-9]+)", r"%renamed_\1", text)
    text = re.sub(r"(util\.func public @)(\w+)", r"\1other_\2", text)
    return re.sub(r"(util\.func public @\w+\([^)]*\)[^{]*\{\n)",
                  r"\1    %unrelated = arith.constant 7 : i32\n", text)


def change_keys(text: str, pipeline: str) -> list[str]:
    """The keys of the changes a pass makes on a module, in order."""
    return [c.key for r in run_pass(text, pipeline)[1] for c in r.changes]


def check_skip_and_only(text: str, pass_name: str) -> list[str]:
    """On a module whose functions each hold one candidate of different structure:
    `skip=KEY` leaves exactly that candidate's function as it was (the others are rewritten
    as without the option), `only=KEY` rewrites exactly that one. Returns the keys."""
    out, reports = run_pass(text, pass_name)
    keys = [c.key for c in reports[0].changes]
    assert len(set(keys)) == len(keys) >= 2, reports[0].format()
    before, after = function_texts(text), function_texts(out)
    changed = {name for name in before if before[name] != after[name]}
    assert len(changed) == len(keys), (changed, keys)
    for key in keys:
        skip_out, skip_reports = run_pass(text, f"{pass_name}{{skip={key}}}")
        report = skip_reports[0]
        assert sorted(c.key for c in report.changes) == sorted(k for k in keys if k != key)
        assert any(s.key == key and s.reason == "skipped on request (skip=KEY)"
                   for s in report.skipped), report.format()
        funcs = function_texts(skip_out)
        untouched = [n for n in changed if funcs[n] == before[n]]
        assert len(untouched) == 1, report.format()
        assert all(funcs[n] == after[n] for n in funcs if n not in untouched)
        only_out, only_reports = run_pass(text, f"{pass_name}{{only={key}}}")
        assert [c.key for c in only_reports[0].changes] == [key]
        funcs = function_texts(only_out)
        assert [n for n in changed if funcs[n] != before[n]] == untouched
    return keys
