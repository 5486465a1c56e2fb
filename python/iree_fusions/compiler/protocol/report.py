"""What one pass did to one module: changes, skipped candidates (with reasons), form choices,
notes, op counts, driver stats and timing. One set of dataclasses from the passes to the API: the
driver fills them, `to_json` / `from_json` are the edge (`--fusions-report-json`,
`CompileOutput.reports`), and `emit_remarks` turns them into MLIR optimization remarks."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from iree.compiler import ir

from ..ir_helpers import location_keys
from .candidates import Candidate, Footprint, NoMatch
from iree_fusions.compiler.ir_helpers.names import FLOW_DISPATCH, LINALG_INDEX, LINALG_YIELD


@dataclass(frozen=True)
class Change:
    """A rewrite a pass applied: its structural key, what it changed, the op it is anchored at
    (`linalg.generic at file.mlir:12:5`), and who decided it ("rule": the pass's own; else
    the decisions file that chose it). `at`, `sure` and `touched` are the driver's (remarks,
    weighing): not in the JSON."""

    key: str
    what: str
    location: str
    decided_by: str = "rule"  # "rule" (the pass's own) or the decisions file that chose it
    gain: str = "dispatches"  # what the change saves (Candidate.gain)
    sure: str | None = None  # why it pays whatever stock IREE does (Candidate.sure)
    at: ir.Location | None = field(default=None, compare=False, repr=False)  # for remarks
    # The source locations (`location_keys`) of the ops the change read or wrote: where its
    # effect shows in the dispatches (the driver weighs each pass by them).
    touched: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @staticmethod
    def from_json(entry: dict[str, Any]) -> Change:
        return Change(entry["key"], entry["what"], entry["location"],
                      entry.get("decided_by", "rule"), entry.get("gain", "dispatches"))


@dataclass(frozen=True)
class Skip:
    """A candidate a pass left alone, with the reason given at the check that failed;
    `feasible`: the plan existed (a decisions file could apply it)."""

    key: str
    reason: str
    location: str
    decided_by: str = "rule"
    feasible: bool = False  # the plan exists: a decision could apply it
    code: str | None = None  # the failed check's or the rule's code; None: an option, a decision
    at: ir.Location | None = field(default=None, compare=False, repr=False)  # for remarks

    @staticmethod
    def of(cand: Candidate, reason: str, decided_by: str = "rule",
           feasible: bool | None = None, code: str | None = None) -> Skip:
        """A candidate left alone (`feasible`: default, whether it has a plan; `code`:
        default, the code of the pass's own check or rule that gave the reason: the blocked
        candidate's, else its rule's; none where an option or a decision decided)."""
        if code is None and decided_by == "rule":
            code = cand.code if cand.blocked else cand.declined_code
        return Skip(cand.key, reason, cand.location, decided_by,
                    not cand.blocked if feasible is None else feasible, code, cand.at)

    @staticmethod
    def refused(cand: Candidate, e: NoMatch) -> Skip:
        """A candidate whose apply raised `e` before it changed anything."""
        return Skip.of(cand, e.reason, feasible=False, code=e.code)

    @staticmethod
    def from_json(entry: dict[str, Any]) -> Skip:
        return Skip(entry["key"], entry["reason"], entry["location"],
                    entry.get("decided_by", "rule"), bool(entry.get("feasible")),
                    entry.get("code"))


@dataclass(frozen=True)
class Choice:
    """Which of two forms a change took, where a decisions file can pick the other one: its
    own key (a second decision under the change's), whether the form its key names was
    `chosen`, what was chosen and why, and who decided ("rule", or the decisions file).
    `iree-fusions-tune` measures such a key as a change's (the other form against this
    one)."""

    key: str
    what: str
    location: str
    chosen: bool
    decided_by: str = "rule"

    @staticmethod
    def from_json(entry: dict[str, Any]) -> Choice:
        return Choice(entry["key"], entry["what"], entry["location"], bool(entry["chosen"]),
                      entry.get("decided_by", "rule"))


@dataclass
class PassReport:
    """What one pass did to one module: changes made, candidates skipped (with reasons).

    The one report type from the passes to the API: the driver fills it in, the compile
    writes it as JSON (`to_json`: `--fusions-report-json`, `CompileOutput.reports`) and API
    callers read it back typed (`from_json`: `CompileOutput.passes`)."""

    pass_name: str
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ops_before: Counter = field(default_factory=Counter)
    ops_after: Counter = field(default_factory=Counter)
    error: str | None = None
    target: str | None = None  # `backend:chip` the module was compiled for, when known
    # What the driver did (rounds, finds, candidates found, applied, waited) and the wall
    # seconds of each part of the pass (find, apply, verify, count): --fusions-timing.
    stats: Counter = field(default_factory=Counter)
    timing: dict[str, float] = field(default_factory=dict)

    def change(self, key: str, what: str, location: str, decided_by: str = "rule",
               gain: str = "dispatches", sure: str | None = None,
               at: ir.Location | None = None, touched: frozenset[str] = frozenset()) -> None:
        self.changes.append(Change(key, what, location, decided_by, gain, sure, at,
                                   touched | location_keys(at) if touched else touched))

    def applied(self, cand: Candidate, what: str, decided_by: str,
                footprint: Footprint | None = None) -> None:
        """Records the change a candidate made (`footprint`: the ops it touched; a pass that
        declares none is weighed by the totals, as its changes' positions are unknown)."""
        self.change(cand.key, what, cand.location, decided_by, cand.gain, cand.sure, cand.at,
                    footprint.locations if footprint is not None else frozenset())

    def skip(self, key: str, reason: str, location: str, decided_by: str = "rule",
             feasible: bool = False) -> None:
        self.skipped.append(Skip(key, reason, location, decided_by, feasible))

    def note(self, message: str) -> None:
        """Information that is neither a change nor a skipped candidate (analysis results)."""
        self.notes.append(message)

    @property
    def name(self) -> str:
        """The pass's name (what API callers read)."""
        return self.pass_name

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @staticmethod
    def from_json(entry: dict[str, Any]) -> PassReport:
        """From one entry of `to_json` (`--fusions-report-json`, `CompileOutput.reports`): a
        record of what was done, its changes, skips and notes as tuples (as the API has
        always given them), not a report to fill in."""
        return PassReport(
            pass_name=entry["pass"],
            changes=tuple(Change.from_json(c) for c in entry.get("changes", [])),
            skipped=tuple(Skip.from_json(s) for s in entry.get("skipped", [])),
            choices=tuple(Choice.from_json(c) for c in entry.get("choices", [])),
            notes=tuple(entry.get("notes", [])),
            ops_before=Counter(entry.get("ops_before", {})),
            ops_after=Counter(entry.get("ops_after", {})),
            error=entry.get("error"),
            target=entry.get("target"),
            stats=Counter(entry.get("stats", {})),
            timing=dict(entry.get("timing", {})),
        )

    def format(self, verbose: bool = True) -> str:
        lines = [f"[{self.pass_name}] {len(self.changes)} change(s), {len(self.skipped)} skipped"]
        if self.error:
            lines.append(f"  FAILED (IR from before this pass kept): {self.error}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  changed [{c.key}] {c.location}: {c.what}{_by(c.decided_by)}"
                  for c in self.changes]
        if verbose:
            lines += [f"  skipped [{s.key}] {s.location}: {s.reason}"
                      f"{self._code(s)}{_by(s.decided_by)}" for s in self.skipped]
            lines += [f"  {'chose' if c.chosen else 'did not choose'} [{c.key}] {c.location}: "
                      f"{c.what}{_by(c.decided_by)}" for c in self.choices]
        delta = _format_op_delta(self.ops_before, self.ops_after)
        if delta:
            lines.append(f"  ops: {delta}")
        return "\n".join(lines)

    def _code(self, skip: Skip) -> str:
        """` [pass/code]` after a skip's reason (what lit checks); empty where no check or
        rule of the pass gave the reason (an option, a decisions file, the driver)."""
        return f" [{self.pass_name}/{skip.code}]" if skip.code else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "pass": self.pass_name,
            "changes": [{"pass": self.pass_name, **_json_fields(c, "sure", "touched")}
                        for c in self.changes],
            "skipped": [{"pass": self.pass_name, **_json_fields(s)} for s in self.skipped],
            "choices": [{"pass": self.pass_name, **_json_fields(c)} for c in self.choices],
            "notes": list(self.notes),
            "ops_before": dict(self.ops_before),
            "ops_after": dict(self.ops_after),
            "error": self.error,
            "target": self.target,
            "stats": dict(self.stats),
            "timing": {k: round(v, 6) for k, v in self.timing.items()},
        }

    @contextlib.contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Adds the wall time of the block to `timing[part]`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing[part] = self.timing.get(part, 0.0) + time.perf_counter() - start


    def emit_remarks(self, context: ir.Context) -> None:
        """Each change (a passed remark) and each skipped candidate (a missed one) as an
        MLIR optimization remark at its op, category the pass name, when the context has
        remarks enabled (`Context.enable_remarks`: iree-fusions-opt --fusions-remarks or
        -verify-diagnostics). Printed as a diagnostic:
        `file.mlir:12:5: remark: [Missed] skipped | Category:batch-gathers |
        Remark="<reason>", key=<key>`."""
        if not context.remarks_enabled:
            return
        for c in self.changes:
            if c.at is not None:
                c.at.emit_remark(ir.RemarkKind.PASSED, "changed", category=self.pass_name,
                                 message=c.what + _by(c.decided_by), args=[("key", c.key)])
        for s in self.skipped:
            if s.at is not None:
                s.at.emit_remark(ir.RemarkKind.MISSED, "skipped", category=self.pass_name,
                                 message=s.reason + self._code(s) + _by(s.decided_by),
                                 args=[("key", s.key)])


def _json_fields(record: Change | Skip | Choice, *leave_out: str) -> dict[str, Any]:
    """A change or skip as the JSON report has it: its fields but the MLIR location (`at`)
    and those in `leave_out` (a change's `sure` and `touched` are the driver's, to weigh)."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)
            if f.name != "at" and f.name not in leave_out}


def _by(decided_by: str) -> str:
    return "" if decided_by == "rule" else f" (decided by {decided_by})"


def _format_op_delta(before: Counter, after: Counter) -> str:
    parts = []
    for name in sorted(set(before) | set(after)):
        if before[name] != after[name]:
            parts.append(f"{name} {before[name]}->{after[name]}")
    return ", ".join(parts)


def count_compute_ops(module: ir.Operation) -> Counter:
    """Counts the ops a report compares before/after: linalg, linalg_ext, tensor, flow ops."""
    counts: Counter = Counter()
    prefixes = ("linalg.", "iree_linalg_ext.", "tensor.", FLOW_DISPATCH)

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name.startswith(prefixes) and name not in (LINALG_YIELD, LINALG_INDEX):
            counts[name] += 1
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return counts
