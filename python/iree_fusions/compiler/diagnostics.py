"""Diagnostics of iree-fusions-opt: the passes' remarks at their ops, and `-verify-diagnostics`.

Every plugin pass reports its changes and the candidates it skipped (with the reason given at
the check that failed) as MLIR optimization remarks at the op each one is anchored at
(`PassReport.emit_remarks`), when the context has remarks enabled. `--fusions-remarks` prints
them as mlir-opt prints diagnostics:

    model.mlir:12:10: remark: [Missed] skipped | Category:batch-gathers | Remark="<reason>",
        RemarkId=3, key=gather-lookup-1a2b3c4d5e

`-verify-diagnostics` checks them against the `expected-*` annotations in the input, as
`mlir-opt -verify-diagnostics` does (MLIR's SourceMgrDiagnosticVerifierHandler), so a lit test
states each reason at the op it belongs to:

    // expected-remark @below {{Remark="column is not the innermost loop index"}}
    %g = linalg.generic ...

An annotation `expected-(error|warning|note|remark)[@+N|@-N|@above|@below|@unknown] {{text}}`
expects one diagnostic of that severity on that line (its own line without a designator;
`@above`/`@below`: the nearest line above/below that is not an annotation on its own) whose
message contains `text`. Every diagnostic must be expected and every expectation produced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from iree.compiler import ir

from .ir_helpers import file_line_col

SEVERITIES = {ir.DiagnosticSeverity.ERROR: "error", ir.DiagnosticSeverity.WARNING: "warning",
              ir.DiagnosticSeverity.NOTE: "note", ir.DiagnosticSeverity.REMARK: "remark"}
_EXPECTED = re.compile(
    r"expected-(error|warning|note|remark)(?:@([+-]\d+|above|below|unknown))?\s*\{\{(.*?)\}\}")
_DESIGNATOR_ONLY = re.compile(r"^\s*//.*expected-(error|warning|note|remark)")


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic the context reported: severity, where (file line and column, None for
    an unknown location) and message."""

    severity: str
    line: int | None
    column: int | None
    message: str

    @staticmethod
    def of(severity: str, location: ir.Location, message: str) -> Diagnostic:
        where = file_line_col(location)
        if where is None:
            return Diagnostic(severity, None, None, message)
        return Diagnostic(severity, where[1], where[2], message)

    def where(self, source_name: str) -> str:
        return source_name if self.line is None else f"{source_name}:{self.line}:{self.column}"

    def format(self, source_name: str) -> str:
        return f"{self.where(source_name)}: {self.severity}: {self.message}"


@dataclass
class Expectation:
    severity: str
    line: int | None  # None: @unknown
    text: str
    annotated_at: int  # the line of the annotation itself
    produced: bool = False


class DiagnosticCollector:
    """Takes every diagnostic of a context while it is installed (`with collector:`): kept in
    `diagnostics` to verify, or printed at once (`echo_to`: a file, and the input's name)."""

    def __init__(self, context: ir.Context, echo_to=None, source_name: str = "-") -> None:
        self.context = context
        self.echo_to = echo_to
        self.source_name = source_name
        self.diagnostics: list[Diagnostic] = []
        self._handler = None

    def _handle(self, diag: ir.Diagnostic) -> bool:
        found = Diagnostic.of(SEVERITIES.get(diag.severity, "error"), diag.location,
                              diag.message)
        notes = [Diagnostic.of("note", n.location, n.message) for n in diag.notes]
        if self.echo_to is not None:
            for d in (found, *notes):
                print(d.format(self.source_name), file=self.echo_to)
        else:
            self.diagnostics += [found, *notes]
        return True  # handled: MLIR does not print it again

    def __enter__(self) -> DiagnosticCollector:
        self._handler = self.context.attach_diagnostic_handler(self._handle)
        return self

    def __exit__(self, *exc) -> None:
        self._handler.detach()

    def take(self) -> list[Diagnostic]:
        taken, self.diagnostics = self.diagnostics, []
        return taken


def from_mlir_error(error: ir.MLIRError) -> list[Diagnostic]:
    """The diagnostics an exception carries (a parse or verification failure)."""
    out = []
    for d in error.error_diagnostics:
        out.append(Diagnostic.of("error", d.location, d.message))
        out += [Diagnostic.of("note", n.location, n.message) for n in d.notes]
    return out


def expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """The `expected-*` annotations of `text`, whose first line is `first_line` of its file."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        for found in _EXPECTED.finditer(line):
            severity, where, expected = found.groups()
            out.append(Expectation(severity, _target_line(lines, i, where, first_line),
                                   expected, first_line + i))
    return out


def _target_line(lines: list[str], i: int, where: str | None, first_line: int) -> int | None:
    if where is None:
        return first_line + i
    if where == "unknown":
        return None
    if where in ("above", "below"):
        step = -1 if where == "above" else 1
        j = i + step
        while 0 <= j < len(lines) and _DESIGNATOR_ONLY.match(lines[j]):
            j += step
        return first_line + j
    return first_line + i + int(where)


def verify(diagnostics: list[Diagnostic], expected: list[Expectation],
           source_name: str) -> list[str]:
    """What does not match, as mlir-opt -verify-diagnostics words it (empty: all matched)."""
    problems = []
    for d in diagnostics:
        match = next((e for e in expected if not e.produced and e.severity == d.severity
                      and e.line == d.line and e.text in d.message), None)
        if match is None:
            problems.append(f"{d.where(source_name)}: error: unexpected {d.severity}: "
                            f"{d.message}")
        else:
            match.produced = True
    for e in expected:
        if not e.produced:
            problems.append(f"{source_name}:{e.annotated_at}: error: expected {e.severity} "
                            f"\"{e.text}\" was not produced")
    return problems
