"""Out-of-tree passes used by the driver tests, loaded with `--fusions-load=support.extra_passes`.

They exercise the driver's failure handling: a pass that raises, a pass that leaves IR that
fails verification, and a pass that makes a harmless, visible change.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import op_location
from iree_fusions.compiler.protocol import FusionPass, PassContext
from iree_fusions.compiler.registry import register


@register
@dataclass(frozen=True)
class RaisingPass(FusionPass):
    name = "test-raise"
    phase = "linalg"
    description = "raises"

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        raise RuntimeError("deliberate failure")


@register
@dataclass(frozen=True)
class InvalidIrPass(FusionPass):
    name = "test-invalid-ir"
    phase = "linalg"
    description = "breaks the iterator_types of every linalg.generic"

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        for op in h.walk_ops(module, ("linalg.generic",)):
            op.attributes["iterator_types"] = ir.ArrayAttr.get([])
            ctx.report.change("test-invalid-ir", "broke a generic", op_location(op))


@register
@dataclass(frozen=True)
class MarkFunctionsPass(FusionPass):
    name = "test-mark"
    phase = "linalg"
    description = "adds a unit attribute to every function"

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        for func in h.functions(module):
            func.attributes["iree_fusions.test_marked"] = ir.UnitAttr.get()
            ctx.report.change("test-mark", f"marked {func.attributes['sym_name'].value}",
                              op_location(func))


@register
@dataclass(frozen=True)
class MarkFlowPass(MarkFunctionsPass):
    name = "test-mark-flow"
    phase = "flow"


@register
@dataclass(frozen=True)
class SegfaultPass(FusionPass):
    name = "test-segfault"
    phase = "linalg"
    description = "kills the process with SIGSEGV (as a crash in native code would)"

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
