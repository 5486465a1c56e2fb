"""What each plugin pass did to a compile, typed, for API callers.

`iree_fusions.compile(...)` returns the passes' reports as the JSON the compile wrote
(`CompileOutput.reports`, one dict per pass); `CompileOutput.passes` gives the same as the
passes' own report classes (`iree_fusions.compiler.protocol.report`: one type from the passes
to the API, JSON only at the edge), so that callers read `change.what` and `skip.reason`
rather than dict keys:

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

# The API's names of the report classes (the same classes, not copies), imported on first
# use: the bundle path (`iree-fusions-bench --from`) imports the harness without the compiler.
_NAMES = {"PassSummary": "PassReport", "ChangeRecord": "Change", "SkipRecord": "Skip"}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        from ..compiler.protocol import report
        return getattr(report, _NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pass_summaries(reports: list[dict[str, Any]]) -> list[PassReport]:
    """A compile's JSON reports (`--fusions-report-json`, `CompileOutput.reports`), typed."""
    from ..compiler.protocol.report import PassReport
    return [PassReport.from_json(r) for r in reports]
