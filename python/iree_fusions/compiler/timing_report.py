"""`--fusions-timing`: where a compile's wall time goes, like `--mlir-timing`.

The compile driver announces each step before it starts (`stage(text)`: parse, an IREE phase
range, the plugin passes of a hook, the stock run that weighs the linalg changes, output); a
step lasts until the next one starts. Each plugin pass reports its own parts (find, apply,
verify, count, snapshot: `PassReport.timing`), shown under the step that ran it.

    ===-------------------------------------------------------------------------===
                         iree-fusions-compile timing report
    ===-------------------------------------------------------------------------===
      Total Execution Time: <wall> seconds (CPU <cpu> s)

      ----CPU Time----  ----Wall Time----  ----Name----
        1.1702            1.1400 ( 16.0%)  iree start -> global-optimization
        0.0509            0.0512 (  0.7%)  plugin global-optimization: batch-gathers,...
                          0.0301 (  0.4%)    interchange-permuted-consumers (72 change(s), ...)
                          0.0208 (  0.3%)      find
        ...
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .protocol import PassReport

# The parts of a plugin pass, in the order they are shown (PassReport.timing keys).
PASS_PARTS = ("normalize", "find", "apply", "verify", "count", "snapshot")
# Stage texts that only mark a point (crash reports use them), never a step of their own.
_MARKERS = ("changed",)


@dataclass
class TimingRow:
    name: str
    seconds: float
    depth: int = 0
    passes: tuple[str, ...] = ()  # the plugin passes the step ran
    cpu_seconds: float | None = None  # the process's CPU time (steps of the driver only)


@dataclass
class CompileTiming:
    """Wall time per step of one compile; `stage` is the driver's step callback."""

    rows: list[TimingRow] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    _open: tuple[str, float, float] | None = None

    def wrap(self, stage: Callable[[str], None]) -> Callable[[str], None]:
        """A stage callback that times each step and then calls `stage`."""
        def timed_stage(text: str) -> None:
            self.mark(text)
            stage(text)
        return timed_stage

    def mark(self, text: str) -> None:
        """The step `text` starts now (the one before it ends)."""
        now, cpu = time.perf_counter(), time.process_time()
        self._close(now, cpu)
        if text not in _MARKERS:
            self._open = (text, now, cpu)

    def finish(self, reports: list[PassReport] = ()) -> None:
        """Ends the last step; puts each pass's parts under the step that ran its hook."""
        self._close(time.perf_counter(), time.process_time())
        rows: list[TimingRow] = []
        pending = list(reports)
        for row in self.rows:
            rows.append(row)
            mine = [r for r in pending if r.pass_name in row.passes]
            pending = [r for r in pending if r not in mine]
            for report in mine:
                rows += pass_rows(report, row.depth + 1)
        self.rows = rows

    @property
    def total(self) -> float:
        return sum(r.seconds for r in self.rows if r.depth == 0)

    @property
    def total_cpu(self) -> float:
        return sum(r.cpu_seconds or 0.0 for r in self.rows if r.depth == 0)

    def _close(self, now: float, cpu: float) -> None:
        if self._open is not None:
            text, start, cpu_start = self._open
            words = text.split(" ")
            passes = tuple(words[2].split(",")) if words[0] == "plugin" and len(words) > 2 \
                else ()
            self.rows.append(TimingRow(_display(text), now - start, passes=passes,
                                       cpu_seconds=cpu - cpu_start))
            self._open = None

    def format(self) -> str:
        total = self.total or 1e-12
        rule = "===" + "-" * 73 + "==="
        lines = [rule, "iree-fusions-compile timing report".center(79).rstrip(), rule,
                 f"  Total Execution Time: {self.total:.4f} seconds "
                 f"(CPU {self.total_cpu:.4f} s)", "",
                 "  ----CPU Time----  ----Wall Time----  ----Name----"]
        for r in self.rows:
            cpu = f"{r.cpu_seconds:8.4f}" if r.cpu_seconds is not None else " " * 8
            lines.append(f"  {cpu}          {r.seconds:8.4f} ({100 * r.seconds / total:5.1f}%)"
                         f"  {'  ' * r.depth}{r.name}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        steps = []
        for r in self.rows:
            step = {"name": r.name, "seconds": round(r.seconds, 6), "depth": r.depth}
            if r.cpu_seconds is not None:
                step["cpu_seconds"] = round(r.cpu_seconds, 6)
            steps.append(step)
        return {"total_s": round(self.total, 6), "total_cpu_s": round(self.total_cpu, 6),
                "steps": steps}


def pass_rows(report: PassReport, depth: int) -> list[TimingRow]:
    """One row for the pass (its total) and one per part it spent time in."""
    t = report.timing
    parts = [(p, t[p]) for p in PASS_PARTS if t.get(p)]
    total = t.get("total", sum(s for _, s in parts))
    what = f"{len(report.changes)} change(s)"
    if report.stats.get("rounds"):
        what += f", {report.stats['rounds']} round(s)"
    rows = [TimingRow(f"{report.pass_name} ({what})", total, depth)]
    rows += [TimingRow(p, s, depth + 1) for p, s in parts]
    other = total - sum(s for _, s in parts)
    if parts and other > 0.0005:
        rows.append(TimingRow("other", other, depth + 1))
    return rows


def _display(stage: str) -> str:
    """`iree start global-optimization` -> `iree start -> global-optimization`;
    `plugin dispatch-creation a,b` -> `plugin dispatch-creation: a,b`."""
    words = stage.split(" ")
    if words[0] == "plugin" and len(words) >= 3:
        return f"plugin {words[1]}: {' '.join(words[2:])}"
    if words[0] == "iree" and len(words) >= 3 and words[2] in PHASES:
        rest = " ".join(words[3:])
        return f"iree {words[1]} -> {words[2]}" + (f" {rest}" if rest else "")
    return stage


# IREE's phases (driver.PHASES; the driver imports this module).
PHASES = ("start", "input", "abi", "preprocessing", "global-optimization", "dispatch-creation",
          "flow", "stream", "executable-sources", "executable-configurations",
          "executable-targets", "hal", "vm", "end")
