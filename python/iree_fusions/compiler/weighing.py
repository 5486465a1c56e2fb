"""Weighing the linalg passes' changes against stock IREE: after dispatch creation, each pass
is judged per function by the dispatches holding its changes' ops, and reverted where it did
not pay (the compile driver runs the passes again without it there)."""

from __future__ import annotations

from collections.abc import Callable

from iree.compiler import ir

from .counting import FlowCounts, count_flow_module, dispatch_sites, touching
from .protocol import PassReport, Skip


def is_unsure(report: PassReport) -> bool:
    """A pass whose changes the driver weighs: it changed the IR, and none of its changes is
    exempt (chosen by a measured decision, or saving work or time rather than dispatches) or
    sure to pay (its pass names the limitation of stock IREE's dispatch creation it works
    around: `Candidate.sure`)."""
    return report.changed and not any(c.decided_by != "rule" or c.gain != "dispatches" or c.sure
                                      for c in report.changes)


Rerun = Callable[[dict[str, "tuple[str, ...] | None"]], tuple[ir.Operation, list[PassReport]]]


def effect_text(stock: FlowCounts, plugin: FlowCounts) -> str:
    """Dispatches and bytes between them, stock -> plugin, in all and per function (a gain in
    one function cannot hide a loss in another)."""
    per_function = ", ".join(
        f"{name} {stock.dispatches.get(name, 0)} -> {plugin.dispatches.get(name, 0)}"
        for name in sorted(set(stock.dispatches) | set(plugin.dispatches))
        if stock.dispatches.get(name, 0) or plugin.dispatches.get(name, 0))
    return (f"dispatches {stock.total_dispatches} -> {plugin.total_dispatches}"
            + (f" ({per_function})" if len(stock.dispatches) > 1 and per_function else "")
            + f", bytes between dispatches {stock.total_bytes_between} -> "
            f"{plugin.total_bytes_between} (vs stock IREE)")


def judge(stock_sites: list, plugin_sites: list, where: frozenset[str], gained: bool
           ) -> dict[str | None, str]:
    """Where a pass's changes did not pay: function -> why (None: everywhere). Judged in each
    function by the dispatches holding its changes' ops there: more of them, or as many
    passing more bytes to other dispatches, or as many passing as many bytes (another pass's
    gain does not carry it); where no dispatch holds them (positions unknown), by the totals
    (`gained`: they dropped)."""
    functions = sorted({s.function for s in stock_sites} | {s.function for s in plugin_sites})
    judged: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    for f in functions:
        before, after = touching(stock_sites, where, f), touching(plugin_sites, where, f)
        if before != (0, 0) or after != (0, 0):
            judged[f] = (before, after)
    if not judged:
        return {} if gained else {None: "no dispatch holds its changes' ops (positions "
                                        "unknown), and the totals did not drop"}
    lost: dict[str | None, str] = {}
    for f, ((n0, m0), (n1, m1)) in judged.items():
        at = f"in {f}, " if len(functions) > 1 else ""
        if (n1, m1) > (n0, m0):
            lost[f] = (f"{at}the dispatches holding its changes' ops: {n0} -> {n1}, the "
                       f"bytes they pass to other dispatches {m0} -> {m1}")
        elif (n1, m1) == (n0, m0):
            lost[f] = (f"{at}the {n0} dispatch(es) holding its changes' ops and the {m0} "
                       "bytes they pass on are unchanged, whatever the other passes gained")
    if set(lost) == set(judged):
        return {None: "; ".join(lost.values())}
    return lost


def keep_what_pays(plugin: ir.Operation, stock: ir.Operation, reports: list[PassReport],
                   rerun: Rerun, *, effect: bool, revert: bool) -> ir.Operation:
    """The module to go on with after dispatch-creation: the plugin's, less the changes of
    each pass in each function where they did not make its own dispatches better (`judge`:
    per function, so a gain in decode cannot hide a loss in prefill, nor another pass's gain
    carry it), unless a measured decision chose them.

    `stock`: IREE's dispatch creation run on the IR before the linalg passes (stock IREE's
    dispatches); each pass is judged by the dispatches holding an op from the
    source positions its changes touched (IREE keeps every op's location in the ops it
    makes from it). When some pass does not pay somewhere, the passes run again from the IR
    before them, that pass left out, or kept out of the functions where it did not pay
    (`skip-functions`; their reports replace the first ones); when no pass pays anywhere,
    stock IREE's module is used. The report notes the effect, per function, when asked
    (`effect`) and always when it reverts (`revert`: weigh at all)."""
    s, p = count_flow_module(stock), count_flow_module(plugin)
    gained = p.total_dispatches < s.total_dispatches or \
        p.total_bytes_between < s.total_bytes_between
    text = effect_text(s, p)
    changed = [r for r in reports if r.changed]
    unsure = [r for r in changed if is_unsure(r)] if revert else []
    losers: dict[str, dict[str | None, str]] = {}
    if unsure:  # (a run only for the report's effect walks no dispatch)
        stock_sites, plugin_sites = dispatch_sites(stock), dispatch_sites(plugin)
        for r in unsure:
            where = frozenset().union(*(c.touched for c in r.changes))
            lost = judge(stock_sites, plugin_sites, where, gained)
            if lost:
                losers[r.pass_name] = lost
    if effect:
        for r in changed:
            gains = {c.gain for c in r.changes} - {"dispatches"}
            if gains and all(c.gain != "dispatches" for c in r.changes):
                r.note(f"{text}; its changes save {'/'.join(sorted(gains))}, not dispatches: "
                       "not weighed by these counts")
            else:
                r.note(text if gained else
                       f"the changes reduced neither dispatches nor bytes: {text}")
    if not losers:
        return plugin
    everywhere = {name for name, lost in losers.items() if None in lost}
    for r in changed:
        if r.pass_name in everywhere:
            reason = (f"reverted: this pass's changes reduced neither dispatches nor bytes "
                      f"between dispatches ({losers[r.pass_name][None]}; all passes: {text})")
            r.note(reason)
            r.skipped = [Skip(c.key, reason, c.location, c.decided_by, feasible=True, at=c.at)
                         for c in r.changes] + r.skipped
            r.changes = []
    if not any(r.changed for r in reports):
        return stock
    module, again = rerun({name: None if name in everywhere else tuple(sorted(lost))
                           for name, lost in losers.items()})
    by_name = {r.pass_name: r for r in again}
    for name, lost in losers.items():
        if name not in everywhere and name in by_name:
            for why in lost.values():
                by_name[name].note(f"reverted in one function, kept in the others: {why} "
                                   f"(all passes: {text})")
    reports[:] = [r if r.pass_name in everywhere else by_name.get(r.pass_name, r)
                  for r in reports]
    return module


