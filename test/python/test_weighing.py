"""compiler/weighing.py, branch by branch: how a pass's changes are judged per function by the
dispatches holding their ops (more of them, as many passing more bytes, as many passing as
many, fewer), when the totals decide, and what keep_what_pays returns and notes in each case
(the flow IR is stood in for by its counts and dispatch sites)."""

from __future__ import annotations

import pytest

from iree_fusions.compiler import weighing
from iree_fusions.compiler.counting import DispatchSite, FlowCounts
from iree_fusions.compiler.protocol import PassReport
from iree_fusions.compiler.weighing import effect_text, is_unsure, judge, keep_what_pays

MINE = frozenset({"m.mlir:3:5"})
OTHER = frozenset({"m.mlir:9:5"})


def site(positions: frozenset[str], result_bytes: int, function: str = "main") -> DispatchSite:
    return DispatchSite(positions, result_bytes, function)


@pytest.mark.parametrize("before, after, lost", [
    ([(MINE, 64)], [(MINE, 64), (MINE, 0)], "the dispatches holding its changes' ops: 1 -> 2, "
                                             "the bytes they pass to other dispatches 64 -> 64"),
    ([(MINE, 64)], [(MINE, 128)], "the dispatches holding its changes' ops: 1 -> 1, the bytes "
                                  "they pass to other dispatches 64 -> 128"),
    ([(MINE, 64), (MINE, 0)], [(MINE, 64), (MINE, 0)],
     "the 2 dispatch(es) holding its changes' ops and the 64 bytes they pass on are unchanged, "
     "whatever the other passes gained"),
    ([(MINE, 64), (MINE, 64)], [(MINE, 512)], None),  # fewer dispatches, more bytes: pays
    ([(MINE, 64)], [(MINE, 32)], None),  # as many dispatches, fewer bytes: pays
    ([(MINE, 64)], [], None),  # none left
])
def test_judge_in_one_function(before, after, lost):
    others = [site(OTHER, 4096), site(OTHER, 4096)]  # never the pass's: not counted
    got = judge([site(*s) for s in before] + others, [site(*s) for s in after], MINE, False)
    assert got == ({None: lost} if lost else {})


def test_judge_per_function_a_gain_in_one_does_not_hide_a_loss_in_another():
    stock = [site(MINE, 64, "decode"), site(MINE, 64, "decode"), site(MINE, 64, "prefill")]
    plugin = [site(MINE, 64, "decode"), site(MINE, 64, "prefill"), site(MINE, 64, "prefill")]
    assert judge(stock, plugin, MINE, True) == {
        "prefill": "in prefill, the dispatches holding its changes' ops: 1 -> 2, the bytes "
                   "they pass to other dispatches 64 -> 128"}
    # Lost in every function it touches: everywhere (None), the reasons joined.
    plugin = [site(MINE, 64, "decode"), site(MINE, 64, "decode"), site(MINE, 64, "decode"),
              site(MINE, 64, "prefill"), site(MINE, 64, "prefill")]
    got = judge(stock, plugin, MINE, True)
    assert list(got) == [None]
    assert got[None] == ("in decode, the dispatches holding its changes' ops: 2 -> 3, the "
                         "bytes they pass to other dispatches 128 -> 192; in prefill, the "
                         "dispatches holding its changes' ops: 1 -> 2, the bytes they pass "
                         "to other dispatches 64 -> 128")


def test_judge_by_the_totals_where_no_dispatch_holds_the_changes():
    sites = [site(OTHER, 64)]
    assert judge(sites, sites, MINE, gained=True) == {}
    assert judge(sites, sites, MINE, gained=False) == {
        None: "no dispatch holds its changes' ops (positions unknown), and the totals did "
              "not drop"}


def report(name: str, gain: str = "dispatches", decided_by: str = "rule", sure=None,
           touched=MINE) -> PassReport:
    r = PassReport(name)
    r.change(f"{name}/k", "changed", "m.mlir:3:5", decided_by, gain, sure, touched=touched)
    return r


def test_is_unsure():
    assert is_unsure(report("a"))
    assert not is_unsure(PassReport("a"))  # changed nothing
    assert not is_unsure(report("a", decided_by="tuned.json"))
    assert not is_unsure(report("a", gain="work"))
    assert not is_unsure(report("a", sure="stock never fuses it"))
    both = report("a")
    both.change("a/k2", "changed", "m.mlir:4:5", "rule", "work", touched=MINE)
    assert not is_unsure(both)  # one exempt change exempts the pass


def test_effect_text_names_functions_only_when_there_are_several():
    one = effect_text(FlowCounts({"main": 5}, bytes_between={"main": 100}),
                      FlowCounts({"main": 3}, bytes_between={"main": 60}))
    assert one == "dispatches 5 -> 3, bytes between dispatches 100 -> 60 (vs stock IREE)"
    two = effect_text(FlowCounts({"a": 2, "b": 3, "c": 0}, bytes_between={"a": 1}),
                      FlowCounts({"a": 1, "b": 3, "c": 0}, bytes_between={"a": 1}))
    assert two == ("dispatches 5 -> 4 (a 2 -> 1, b 3 -> 3), bytes between dispatches 1 -> 1 "
                   "(vs stock IREE)")
    # A function on one side only is named (0 on the other); one with none on both is not.
    three = effect_text(FlowCounts({"a": 2, "b": 1, "d": 0}), FlowCounts({"a": 1, "c": 2, "e": 0}))
    assert three == ("dispatches 3 -> 3 (a 2 -> 1, b 1 -> 0, c 0 -> 2), bytes between "
                     "dispatches 0 -> 0 (vs stock IREE)")


@pytest.fixture
def flow(monkeypatch):
    """The stock and plugin modules stood in for by their counts and sites."""
    def install(stock: tuple, plugin: tuple):
        counts = {"stock": stock[0], "plugin": plugin[0]}
        sites = {"stock": stock[1], "plugin": plugin[1]}
        monkeypatch.setattr(weighing, "count_flow_module", lambda m: counts[m])
        monkeypatch.setattr(weighing, "dispatch_sites", lambda m: sites[m])
    return install


def no_rerun(skip):
    raise AssertionError(f"no rerun expected, got {skip}")


def test_keep_what_pays_keeps_a_pass_that_pays(flow):
    flow((FlowCounts({"main": 2}), [site(MINE, 64), site(MINE, 64)]),
         (FlowCounts({"main": 1}), [site(MINE, 64)]))
    reports = [report("a")]
    assert keep_what_pays("plugin", "stock", reports, no_rerun, effect=True,
                          revert=True) == "plugin"
    assert reports[0].changes and reports[0].notes == [
        "dispatches 2 -> 1, bytes between dispatches 0 -> 0 (vs stock IREE)"]


def test_keep_what_pays_reverts_to_stock_when_nothing_pays(flow):
    flow((FlowCounts({"main": 1}), [site(MINE, 64)]),
         (FlowCounts({"main": 2}), [site(MINE, 64), site(MINE, 64)]))
    reports = [report("a")]
    assert keep_what_pays("plugin", "stock", reports, no_rerun, effect=False,
                          revert=True) == "stock"
    (r,) = reports
    assert not r.changes and [(s.key, s.feasible) for s in r.skipped] == [("a/k", True)]
    assert r.notes[0].startswith("reverted: this pass's changes reduced neither dispatches "
                                 "nor bytes between dispatches (the dispatches holding")
    # revert=False: weighed by nobody, kept.
    reports = [report("a")]
    assert keep_what_pays("plugin", "stock", reports, no_rerun, effect=False,
                          revert=False) == "plugin"
    assert reports[0].changes


def test_keep_what_pays_reruns_without_the_loser_where_it_lost(flow):
    """`a` loses in prefill only, `b` pays: the passes run again with `a` kept out of
    prefill; the rerun's report for `a` replaces the first, with the reason noted."""
    flow((FlowCounts({"decode": 2, "prefill": 1}),
          [site(MINE, 64, "decode"), site(MINE, 64, "decode"), site(MINE, 64, "prefill")]),
         (FlowCounts({"decode": 1, "prefill": 2}),
          [site(MINE, 64, "decode"), site(MINE, 64, "prefill"), site(MINE, 64, "prefill")]))
    asked = []
    again = report("a")

    def rerun(skip):
        asked.append(skip)
        return "rerun", [again]

    reports = [report("a"), report("b", gain="work")]
    assert keep_what_pays("plugin", "stock", reports, rerun, effect=False,
                          revert=True) == "rerun"
    assert asked == [{"a": ("prefill",)}]
    assert reports[0] is again and reports[1].pass_name == "b"
    assert again.notes == [
        "reverted in one function, kept in the others: in prefill, the dispatches holding its "
        "changes' ops: 1 -> 2, the bytes they pass to other dispatches 64 -> 128 (all passes: "
        "dispatches 3 -> 3 (decode 2 -> 1, prefill 1 -> 2), bytes between dispatches 0 -> 0 "
        "(vs stock IREE))"]


def test_keep_what_pays_notes_what_a_work_saving_pass_saves(flow):
    flow((FlowCounts({"main": 1}), []), (FlowCounts({"main": 1}), []))
    reports = [report("a", gain="work"), report("b")]
    keep_what_pays("plugin", "stock", reports, no_rerun, effect=True, revert=False)
    assert reports[0].notes == ["dispatches 1 -> 1, bytes between dispatches 0 -> 0 (vs stock "
                                "IREE); its changes save work, not dispatches: not weighed by "
                                "these counts"]
    assert reports[1].notes == ["the changes reduced neither dispatches nor bytes: dispatches "
                                "1 -> 1, bytes between dispatches 0 -> 0 (vs stock IREE)"]


def test_keep_what_pays_leaves_out_a_loser_everywhere_and_keeps_an_exempt_pass(flow):
    """`a` loses everywhere, `c` in prefill only, `b` saves work (exempt): the passes run
    again with `a` left out and `c` kept out of prefill; `b` still changed, so the result is
    the rerun's module, not stock's; only `c`'s new report is noted as partly reverted."""
    third = frozenset({"m.mlir:20:5"})
    flow((FlowCounts({"decode": 3, "prefill": 1}),
          [site(MINE, 64, "decode"), site(third, 64, "decode"), site(third, 64, "decode"),
           site(OTHER, 64, "prefill")]),
         (FlowCounts({"decode": 3, "prefill": 2}),
          [site(MINE, 64, "decode"), site(MINE, 64, "decode"), site(third, 64, "decode"),
           site(OTHER, 64, "prefill"), site(OTHER, 64, "prefill")]))
    asked = []
    a_again, c_again = report("a"), report("c", touched=OTHER | third)

    def rerun(skip):
        asked.append(skip)
        return "rerun", [a_again, c_again]

    reports = [report("a"), report("b", gain="work"), report("c", touched=OTHER | third)]
    assert keep_what_pays("plugin", "stock", reports, rerun, effect=False,
                          revert=True) == "rerun"
    assert asked == [{"a": None, "c": ("prefill",)}]
    assert not reports[0].changes and reports[0].notes[0].startswith("reverted: ")
    assert reports[1].changes and reports[2] is c_again
    assert a_again.notes == [] and c_again.notes[0].startswith(
        "reverted in one function, kept in the others: in prefill, ")


def test_a_pass_with_a_change_saving_dispatches_is_noted_by_the_counts(flow):
    flow((FlowCounts({"main": 2}), []), (FlowCounts({"main": 1}), []))
    mixed = report("a", gain="work")
    mixed.change("a/k2", "changed", "m.mlir:4:5", touched=MINE)
    keep_what_pays("plugin", "stock", [mixed], no_rerun, effect=True, revert=False)
    assert mixed.notes == ["dispatches 2 -> 1, bytes between dispatches 0 -> 0 (vs stock IREE)"]
