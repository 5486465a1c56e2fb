"""What each plugin pass did to a compile, typed, for API callers (no MLIR imports).

`iree_fusions.compile(...)` returns the passes' reports as the JSON the compile wrote
(`CompileOutput.reports`, one dict per pass); `CompileOutput.passes` gives the same as these
classes, so that callers read `change.what` and `skip.reason` rather than dict keys:

    out = iree_fusions.compile("model.mlir")
    for p in out.passes:
        for c in p.changes:
            print(p.name, c.key, c.location, c.what)
        for s in p.skipped:
            print(p.name, s.key, s.location, s.reason)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChangeRecord:
    """A rewrite a pass applied: its structural key, the op it is anchored at
    (`linalg.generic at file.mlir:12:5`), what it changed, and who decided it ("rule": the
    pass's own; else the decisions file that chose it)."""

    key: str
    location: str
    what: str
    decided_by: str = "rule"
    gain: str = "dispatches"  # what it saves: "dispatches" (or bytes between them) or "work"


@dataclass(frozen=True)
class SkipRecord:
    """A candidate a pass left alone, with the reason given at the check that failed;
    `feasible`: the plan existed (a decisions file could apply it)."""

    key: str
    location: str
    reason: str
    decided_by: str = "rule"
    feasible: bool = False


@dataclass(frozen=True)
class PassSummary:
    """One pass's report for one compiled module."""

    name: str
    changes: tuple[ChangeRecord, ...] = ()
    skipped: tuple[SkipRecord, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None  # the pass failed; the IR from before it was kept
    target: str | None = None  # `backend:chip` the module was compiled for, when known
    ops_before: dict[str, int] = field(default_factory=dict)
    ops_after: dict[str, int] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @staticmethod
    def from_json(entry: dict[str, Any]) -> PassSummary:
        """From one entry of `--fusions-report-json` (`PassReport.to_json`)."""
        return PassSummary(
            name=entry["pass"],
            changes=tuple(ChangeRecord(c["key"], c["location"], c["what"],
                                       c.get("decided_by", "rule"), c.get("gain", "dispatches"))
                          for c in entry.get("changes", [])),
            skipped=tuple(SkipRecord(s["key"], s["location"], s["reason"],
                                     s.get("decided_by", "rule"), bool(s.get("feasible")))
                          for s in entry.get("skipped", [])),
            notes=tuple(entry.get("notes", [])),
            error=entry.get("error"),
            target=entry.get("target"),
            ops_before=dict(entry.get("ops_before", {})),
            ops_after=dict(entry.get("ops_after", {})),
            stats=dict(entry.get("stats", {})),
            timing=dict(entry.get("timing", {})),
        )


def pass_summaries(reports: list[dict[str, Any]]) -> list[PassSummary]:
    """A compile's JSON reports (`--fusions-report-json`, `CompileOutput.reports`), typed."""
    return [PassSummary.from_json(r) for r in reports]
