"""batch-gathers: merge independent embedding lookups (work in progress: no rewrite yet)."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.pass_base import FusionPass, PassReport


@dataclass(frozen=True)
class BatchGathers(FusionPass):
    name = "batch-gathers"
    phase = "linalg"
    description = "embedding lookups -> a few batched gathers, concat written in place"

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        report.note("batch-gathers: not implemented yet")
