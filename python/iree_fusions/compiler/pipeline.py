"""Parse and run a pipeline that mixes plugin (Python) passes with MLIR/IREE (C++) passes.

`"batch-mlp-towers,canonicalize,cse,util.func(iree-dispatch-creation-transpose-generic-ops)"`:
top-level elements are split on commas; a registered plugin name (optionally with
`{key=value ...}` options) runs in Python, every run of consecutive other elements runs as one
textual `builtin.module(...)` pipeline through `passmanager.PassManager`.
"""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass

from iree.compiler import ir, passmanager

from . import registry
from .files import UserError, write_file
from .decisions import Decider, DecisionsError
from .target import Target, module_targets
from .ir_helpers import format_location
from .protocol import FusionPass, PassContext, PassOptionError, PassReport, count_compute_ops


class PipelineError(UserError, RuntimeError):
    """A pipeline that does not parse, or a pass that failed (message carries the diagnostic)."""


class PipelineInputError(PipelineError):
    """A pass stopped by what the user gave it (a decisions file that contradicts itself):
    an error even where a failing pass is only a warning (keep_going)."""


@dataclass
class Step:
    text: str
    plugin: FusionPass | None = None  # None: a textual MLIR pipeline


def split_top_level(text: str) -> list[str]:
    """`a,b{x=1,2},c(d,e)` -> `["a", "b{x=1,2}", "c(d,e)"]`; an empty element (`a,,b`,
    `,,,`) is an error, and so is an empty text."""
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
    if not all(parts):
        raise PipelineError(f"empty pass name in '{text}' (passes are separated by single "
                            "commas)")
    return parts


def parse_options(text: str) -> dict[str, str]:
    """`key=value key2 = "a b" flag` -> {"key": "value", "key2": "a b", "flag": "true"}.

    Options are separated by spaces; spaces around `=` are allowed; a value in quotes or
    braces may hold spaces; a key alone means true. A key given twice, a key without a name
    and `key=` without a value are errors."""
    options: dict[str, str] = {}
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return options
        start = i
        while i < n and not text[i].isspace() and text[i] != "=":
            i += 1
        key = text[start:i]
        while i < n and text[i].isspace():
            i += 1
        value = "true"
        if i < n and text[i] == "=":
            i += 1
            while i < n and text[i].isspace():
                i += 1
            value, i = _option_value(text, i)
            if not value:
                raise PipelineError(f"option '{key}' has no value in '{{{text}}}'")
        if not key:
            raise PipelineError(f"an option without a name in '{{{text}}}'")
        if key in options:
            raise PipelineError(f"option '{key}' is given twice in '{{{text}}}'")
        options[key] = value


def _option_value(text: str, i: int) -> tuple[str, int]:
    """The value starting at `i` (quotes removed, braces kept) and the index after it."""
    n = len(text)
    if i < n and text[i] in "\"'":
        end = text.find(text[i], i + 1)
        if end < 0:
            raise PipelineError(f"unterminated quote in '{{{text}}}'")
        return text[i + 1:end], end + 1
    start, depth = i, 0
    while i < n and (depth or not text[i].isspace()):
        depth += {"{": 1, "[": 1, "(": 1, "}": -1, "]": -1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start:i], i


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
        text = text[len("builtin.module(") : -1].strip()
    for element in split_top_level(text) if text else []:
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
                    decider: Decider | None = None, ops_before: Counter | None = None,
                    count_ops: bool = True, verify: bool = True,
                    aggressive_fusion: bool = False,
                    selected: tuple[FusionPass, ...] | None = None) -> PassReport:
    """Runs one plugin pass in place; verifies its output. Raises PipelineError on failure.

    `target`: what the module is compiled for (default: read from the module's device
    targets when it has exactly one); `decider`: measured decisions to follow;
    `ops_before`: the module's op counts when the caller has them (the previous pass's);
    `count_ops=False`: no op counts (nobody will read the report's `ops:` line);
    `verify=False`: the caller verifies the module (`verify_plugin_output`) and then emits
    the report's remarks (`report.emit_remarks`); `aggressive_fusion`: IREE's dispatch
    creation runs with aggressive fusion (`PassContext.aggressive_fusion`); `selected`: every
    plugin pass of the compile (`PassContext.selected`; default: this one)."""
    report = PassReport(plugin.name)
    started = time.perf_counter()
    if count_ops:
        with report.timed("count"):
            report.ops_before = count_compute_ops(module) if ops_before is None else \
                Counter(ops_before)
    if target is None:
        targets = module_targets(module)
        target = targets[0] if len(targets) == 1 else None
    report.target = None if target is None else str(target)
    try:
        plugin.run(module, PassContext(module, report, target, decider,
                                       aggressive_fusion=aggressive_fusion,
                                       selected=(plugin,) if selected is None else selected))
    except DecisionsError as e:
        raise PipelineInputError(str(e)) from None
    except Exception as e:  # a pass bug: reported with its traceback tail
        tb = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{os.path.basename(tb.filename)}:{tb.lineno}"
        raise PipelineError(f"pass '{plugin.name}' raised {type(e).__name__}: {e} ({where})") from e
    if verify:
        verify_plugin_output(module, report)
        report.emit_remarks(module.context)
    if count_ops:
        with report.timed("count"):
            report.ops_after = count_compute_ops(module)
    report.timing["total"] = time.perf_counter() - started
    return report


def write_reproducer(module: ir.Operation, pass_text: str, label: str,
                     decider: Decider | None = None, reproducer_dir: str | None = None) -> str:
    """Saves the module as it was before a failing pass, for the reproducer command a
    warning prints, in `reproducer_dir` (a folder, None for the system's temporary folder, or
    "none" to save nothing: a caller whose warnings nobody may read, the API's compiles);
    returns what to print: the command that reproduces the failure."""
    flags = [f"--fusions-load={m}" for m in registry.LOADED]
    user = [f for f in (decider.files if decider else []) if not f.source.startswith("shipped")]
    flags += [f"--fusions-decisions={f.source}" for f in user[:1]]
    if reproducer_dir == "none":
        command = shlex.join(["iree-fusions-opt", "FILE", *flags, "-p", pass_text])
        return ("iree-fusions-compile with the same flags saves the IR from before the pass "
                f"as FILE and prints the command ({command})")
    # One file per distinct IR (named by its content's hash): the same failure in every
    # compile of one model leaves one file, not one per compile.
    buffer = io.BytesIO()
    module.write_bytecode(buffer)
    data = buffer.getvalue()
    folder = reproducer_dir or tempfile.gettempdir()
    path = os.path.join(folder, f"iree-fusions-{label}-{hashlib.sha256(data).hexdigest()[:16]}"
                                ".mlirbc")
    if not os.path.exists(path):
        write_file(path, data)  # written whole or not at all
    return shlex.join(["iree-fusions-opt", path, *flags, "-p", pass_text]) + (
        f"\n  (the IR from before the pass is kept in {path} for this, one file per distinct "
        "IR: remove it when done; --fusions-reproducer-dir=none saves none)")


def verify_plugin_output(module: ir.Operation, report: PassReport) -> None:
    """Verifies the module after the pass of `report` (timed as its `verify`)."""
    try:
        with report.timed("verify"):
            module.verify()
    except ir.MLIRError as e:
        raise PipelineError(f"pass '{report.pass_name}' produced IR that fails verification: "
                            f"{format_mlir_error(e)}") from None


def run_pipeline(
    module: ir.Operation,
    steps: list[Step],
    *,
    keep_going: bool = False,
    warn=None,
    target: Target | None = None,
    decider: Decider | None = None,
    count_ops: bool = True,
    before: ir.Operation | None = None,
    reproducer_dir: str | None = None,
    aggressive_fusion: bool = False,
    selected: tuple[FusionPass, ...] | None = None,
) -> tuple[ir.Operation, list[PassReport]]:
    """Runs the steps in order. Returns the (possibly replaced) module and one report per plugin.

    keep_going=False: the first failure raises PipelineError.
    keep_going=True: a failing plugin pass is reported through `warn(message)` with a
    reproducer command, and the pipeline continues with the IR from before that pass.
    Consecutive plugin passes then share one copy of the IR from before them and one
    verification after them; when one of them fails, they run again from that copy one at a
    time, each verified and with its own copy, which names the pass that failed.
    count_ops=False: the reports hold no op counts (a compile that shows no report).
    before: a copy of `module` as it is now, kept by the caller and left unchanged here; it
    serves as the copy from before the first plugin passes instead of another one.
    reproducer_dir: where keep_going saves the IR from before a failing pass
    (`write_reproducer`).
    """
    if selected is None:
        selected = tuple(step.plugin for step in steps if step.plugin is not None)
    reports: list[PassReport] = []
    counts: Counter | None = None  # the module's op counts, while no other step changed it
    i = 0
    while i < len(steps):
        if steps[i].plugin is None:
            run_mlir_pipeline(module, steps[i].text)
            counts, before = None, None
            i += 1
            continue
        j = i + 1
        while keep_going and j < len(steps) and steps[j].plugin is not None:
            j += 1
        started = time.perf_counter()
        snapshot = before if before is not None else module.clone() if keep_going else None
        cloned = time.perf_counter() - started
        group = steps[i:j]
        if len(group) > 1:
            try:
                done = _run_plugin_group(module, group, target, decider, counts, count_ops,
                                         aggressive_fusion, selected)
                done[0].timing["snapshot"] = cloned
                done[0].timing["total"] += cloned
                reports += done
                counts = done[-1].ops_after
                before, i = None, j
                continue
            except PipelineError:
                pass
            # One of them failed: again one at a time from the copy (the caller's stays).
            module = snapshot.clone() if snapshot is before else snapshot
            snapshot = module.clone()
        module, counts = _run_plugin_steps(module, group, snapshot, cloned, before, reports,
                                           keep_going, warn, target, decider, counts, count_ops,
                                           reproducer_dir, aggressive_fusion, selected)
        before, i = None, j
    return module, reports


def _run_plugin_group(module: ir.Operation, group: list[Step], target: Target | None,
                      decider: Decider | None, counts: Counter | None, count_ops: bool,
                      aggressive_fusion: bool, selected: tuple[FusionPass, ...]
                      ) -> list[PassReport]:
    """Runs consecutive plugin passes with one verification after the last one; emits their
    remarks once it passed."""
    done: list[PassReport] = []
    for step in group:
        done.append(run_plugin_pass(module, step.plugin, target, decider, counts, count_ops,
                                    verify=False, aggressive_fusion=aggressive_fusion,
                                    selected=selected))
        counts = done[-1].ops_after
    verify_plugin_output(module, done[-1])
    done[-1].timing["total"] += done[-1].timing["verify"]
    for report in done:
        report.emit_remarks(module.context)
    return done


def _run_plugin_steps(module: ir.Operation, group: list[Step], snapshot: ir.Operation | None,
                      cloned: float, before: ir.Operation | None, reports: list[PassReport],
                      keep_going: bool, warn,
                      target: Target | None, decider: Decider | None, counts: Counter | None,
                      count_ops: bool, reproducer_dir: str | None = None,
                      aggressive_fusion: bool = False,
                      selected: tuple[FusionPass, ...] | None = None
                      ) -> tuple[ir.Operation, Counter | None]:
    """Runs plugin passes one at a time, each verified, with a copy of the IR from before
    each one when `keep_going` (`snapshot`: the first one's, taken in `cloned` seconds; when
    it is the caller's `before`, a failure goes on with a copy of it)."""
    for n, step in enumerate(group):
        if n > 0 and keep_going:
            started = time.perf_counter()
            snapshot = module.clone()
            cloned = time.perf_counter() - started
        try:
            reports.append(run_plugin_pass(module, step.plugin, target, decider, counts,
                                           count_ops, aggressive_fusion=aggressive_fusion,
                                           selected=selected))
            counts = reports[-1].ops_after
            if keep_going:  # the copy kept in case the pass fails
                reports[-1].timing["snapshot"] = cloned
                reports[-1].timing["total"] += cloned
        except PipelineError as e:
            if not keep_going or isinstance(e, PipelineInputError):
                raise
            repro = write_reproducer(snapshot, step.text, step.plugin.name, decider,
                                     reproducer_dir)
            failed = PassReport(step.plugin.name, error=str(e))
            reports.append(failed)
            if warn:
                warn(
                    f"iree-fusions: pass '{step.plugin.name}' failed and was skipped "
                    f"(IR from before it is used): {e}\n  reproduce with: {repro}"
                )
            module = snapshot.clone() if snapshot is before else snapshot
            counts = None
    return module, counts
