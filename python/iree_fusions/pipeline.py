"""Parse and run a pipeline that mixes plugin (Python) passes with MLIR/IREE (C++) passes.

`"batch-mlp-towers,canonicalize,cse,util.func(iree-dispatch-creation-transpose-generic-ops)"`:
top-level elements are split on commas; a registered plugin name (optionally with
`{key=value ...}` options) runs in Python, every run of consecutive other elements runs as one
textual `builtin.module(...)` pipeline through `passmanager.PassManager`.
"""

from __future__ import annotations

import os
import tempfile
import traceback
from dataclasses import dataclass

from iree.compiler import ir, passmanager

from . import registry
from .decisions import Decider
from .target import Target, module_targets
from .pass_base import (FusionPass, PassContext, PassOptionError, PassReport, count_compute_ops,
                        format_location)


class PipelineError(RuntimeError):
    """A pipeline that does not parse, or a pass that failed (message carries the diagnostic)."""


@dataclass
class Step:
    text: str
    plugin: FusionPass | None = None  # None: a textual MLIR pipeline


def split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced brackets in pipeline '{text}'")
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pipeline '{text}'")
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def parse_options(text: str) -> dict[str, str]:
    options = {}
    for item in text.split():
        if "=" not in item:
            options[item] = "true"
            continue
        key, value = item.split("=", 1)
        options[key.strip()] = value.strip()
    return options


def parse_plugin_element(element: str) -> FusionPass | None:
    """Returns the configured plugin pass for `name{opts}`, or None if not a plugin name."""
    name, _, rest = element.partition("{")
    name = name.strip()
    if not registry.is_registered(name):
        return None
    options = {}
    if rest:
        if not rest.endswith("}"):
            raise PipelineError(f"bad options for pass '{name}': '{element}'")
        options = parse_options(rest[:-1])
    try:
        return registry.lookup(name).load().from_options(options)
    except PassOptionError as e:
        raise PipelineError(str(e)) from None


def parse_pipeline(text: str) -> list[Step]:
    """Splits a pipeline into plugin steps and merged textual MLIR steps."""
    steps: list[Step] = []
    pending: list[str] = []
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    for element in split_top_level(text):
        plugin = parse_plugin_element(element)
        if plugin is None:
            pending.append(element)
            continue
        if pending:
            steps.append(Step(",".join(pending)))
            pending = []
        steps.append(Step(element, plugin))
    if pending:
        steps.append(Step(",".join(pending)))
    for step in steps:
        if step.plugin is None:
            _check_mlir_pipeline(step.text)
    return steps


def _check_mlir_pipeline(text: str) -> None:
    try:
        passmanager.PassManager.parse(f"builtin.module({text})")
    except ValueError as e:
        names = ", ".join(registry.REGISTRY)
        raise PipelineError(
            f"'{text}' is neither an iree-fusions pass ({names}) nor a valid MLIR pipeline: {e}"
        ) from None


def run_mlir_pipeline(module: ir.Operation, text: str) -> None:
    pm = passmanager.PassManager.parse(f"builtin.module({text})")
    try:
        pm.run(module)
    except ir.MLIRError as e:
        raise PipelineError(f"pass pipeline '{text}' failed: {format_mlir_error(e)}") from None


def format_mlir_error(e: ir.MLIRError, source_name: str | None = None) -> str:
    """mlir-opt style: the summary, then `file:line:col: error: message` per diagnostic."""
    lines = [e.message]
    for diag in e.error_diagnostics:
        lines.append(f"{_where(diag.location, source_name)}: error: {diag.message.strip()}")
        for note in diag.notes:
            lines.append(f"{_where(note.location, source_name)}: note: {note.message.strip()}")
    return "\n".join(lines)


def _where(location: ir.Location, source_name: str | None) -> str:
    text = format_location(location)
    if source_name and text.startswith("-:"):
        text = source_name + text[1:]
    return text


def run_plugin_pass(module: ir.Operation, plugin: FusionPass, target: Target | None = None,
                    decider: Decider | None = None) -> PassReport:
    """Runs one plugin pass in place; verifies its output. Raises PipelineError on failure.

    `target`: what the module is compiled for (default: read from the module's device
    targets when it has exactly one); `decider`: measured decisions to follow."""
    report = PassReport(plugin.name)
    report.ops_before = count_compute_ops(module)
    if target is None:
        targets = module_targets(module)
        target = targets[0] if len(targets) == 1 else None
    report.target = None if target is None else str(target)
    try:
        plugin.run(module, PassContext(module, report, target, decider))
    except Exception as e:  # a pass bug: reported with its traceback tail
        tb = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{os.path.basename(tb.filename)}:{tb.lineno}"
        raise PipelineError(f"pass '{plugin.name}' raised {type(e).__name__}: {e} ({where})") from e
    try:
        module.verify()
    except ir.MLIRError as e:
        raise PipelineError(
            f"pass '{plugin.name}' produced IR that fails verification: {format_mlir_error(e)}"
        ) from None
    report.ops_after = count_compute_ops(module)
    return report


def write_reproducer(module: ir.Operation, pass_text: str, label: str) -> str:
    """Saves the module as it was before a failing pass; returns the command to reproduce."""
    fd, path = tempfile.mkstemp(prefix=f"iree-fusions-{label}-", suffix=".mlirbc")
    with os.fdopen(fd, "wb") as f:
        module.write_bytecode(f)
    return f"iree-fusions-opt {path} -p '{pass_text}'"


def run_pipeline(
    module: ir.Operation,
    steps: list[Step],
    *,
    keep_going: bool = False,
    warn=None,
    target: Target | None = None,
    decider: Decider | None = None,
) -> tuple[ir.Operation, list[PassReport]]:
    """Runs the steps in order. Returns the (possibly replaced) module and one report per plugin.

    keep_going=False: the first failure raises PipelineError.
    keep_going=True: a failing plugin pass is reported through `warn(message)` with a
    reproducer command, and the pipeline continues with the IR from before that pass.
    """
    reports: list[PassReport] = []
    for step in steps:
        if step.plugin is None:
            run_mlir_pipeline(module, step.text)
            continue
        snapshot = module.clone() if keep_going else None
        try:
            reports.append(run_plugin_pass(module, step.plugin, target, decider))
        except PipelineError as e:
            if not keep_going:
                raise
            repro = write_reproducer(snapshot, step.text, step.plugin.name)
            failed = PassReport(step.plugin.name, error=str(e))
            reports.append(failed)
            if warn:
                warn(
                    f"iree-fusions: pass '{step.plugin.name}' failed and was skipped "
                    f"(IR from before it is used): {e}\n  reproduce with: {repro}"
                )
            module = snapshot
    return module, reports
