"""What each plugin pass did to a compile, typed, for API callers.

`iree_fusions.compile(...)` returns the passes' reports as the JSON the compile wrote
(`CompileOutput.reports`, one dict per pass); `CompileOutput.passes` gives the same as the
passes' own report classes (`PassReport`, `Change`, `Skip` of
`iree_fusions.compiler.protocol.report`: one type from the passes to the API, JSON only at the
edge), so that callers read `change.what` and `skip.reason` rather than dict keys:

    out = iree_fusions.compile("model.mlir")
    for p in out.passes:
        for c in p.changes:
            print(p.name, c.key, c.location, c.what)
        for s in p.skipped:
            print(p.name, s.key, s.location, s.reason)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..compiler.protocol.report import PassReport


def pass_summaries(reports: list[dict[str, Any]]) -> list[PassReport]:
    """A compile's JSON reports (`--fusions-report-json`, `CompileOutput.reports`), typed.
    The report classes are imported on first use: the bundle path (`iree-fusions-bench
    --from`) imports the harness without the compiler."""
    from ..compiler.protocol.report import PassReport
    return [PassReport.from_json(r) for r in reports]
