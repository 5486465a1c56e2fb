"""Out-of-tree passes used by the driver tests, loaded with `--fusions-load=support.extra_passes`.

They exercise the driver's failure handling: a pass that raises, a pass that leaves IR that
fails verification, and a pass that makes a harmless, visible change.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import FusionPass, PassReport
from iree_fusions.registry import PassEntry, register


@dataclass(frozen=True)
class RaisingPass(FusionPass):
    name = "test-raise"
    phase = "linalg"
    description = "raises"

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        raise RuntimeError("deliberate failure")


@dataclass(frozen=True)
class InvalidIrPass(FusionPass):
    name = "test-invalid-ir"
    phase = "linalg"
    description = "breaks the iterator_types of every linalg.generic"

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        for op in h.walk_ops(module, ("linalg.generic",)):
            op.attributes["iterator_types"] = ir.ArrayAttr.get([])
            report.change("broke a generic")


@dataclass(frozen=True)
class MarkFunctionsPass(FusionPass):
    name = "test-mark"
    phase = "linalg"
    description = "adds a unit attribute to every function"

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        for func in h.functions(module):
            func.attributes["iree_fusions.test_marked"] = ir.UnitAttr.get()
            report.change(f"marked {func.attributes['sym_name'].value}")


@dataclass(frozen=True)
class MarkFlowPass(MarkFunctionsPass):
    name = "test-mark-flow"
    phase = "flow"


for cls in (RaisingPass, InvalidIrPass, MarkFunctionsPass, MarkFlowPass):
    register(PassEntry(cls.name, __name__, cls.__name__, cls.phase, cls.description))
