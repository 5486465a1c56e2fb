"""No-op stand-ins for the plugin passes, for test/check_lit_noop.py (never part of a user's
pipeline): `lit-noop-<pass>` for every registered pass `<pass>`, loaded with
`--fusions-load=iree_fusions_lit_noop` (this folder on PYTHONPATH).

A stand-in changes nothing (it does not even walk the module) and fills in the report as the
real pass would when it finds nothing: `[<pass>] 0 change(s), 0 skipped`, no remark. So a check
that passes with it in place of the real pass does not check what the real pass changes:
a report header's count, a rewritten op, an expected remark."""

from __future__ import annotations

from dataclasses import dataclass

from iree_fusions.compiler import registry
from iree_fusions.compiler.protocol import FusionPass

PREFIX = "lit-noop-"


def _stand_in(real: str, phase: str) -> type[FusionPass]:
    def run(self, module, ctx) -> None:
        ctx.report.pass_name = real  # reported as the pass it stands in for

    cls = type(f"LitNoop_{real.replace('-', '_')}", (FusionPass,), {
        "__module__": __name__,
        "name": PREFIX + real,
        "phase": phase,
        "description": f"changes nothing (stands in for {real} in check_lit_noop.py)",
        "run": run,
    })
    cls = dataclass(frozen=True)(cls)
    globals()[cls.__name__] = cls  # registry entries name module:class
    return cls


for _name, _entry in list(registry.REGISTRY.items()):
    if not _name.startswith(PREFIX):
        registry.register(_stand_in(_name, _entry.phase))
