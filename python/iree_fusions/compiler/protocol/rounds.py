"""The round driver: runs a candidate pass on every block of every function body to a
fixpoint (one round: find once, apply what the scheduling allows; see the package's doc)."""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import os
import typing
from collections.abc import Callable, Iterator
from typing import TypeVar

from iree.compiler import ir

from ..ir_helpers import ATTRIBUTE_TEXTS, LOCATION_TEXTS, functions
from .candidates import Candidate, NoMatch, plan_owners
from .report import PassReport, Skip

if typing.TYPE_CHECKING:
    from .passes import CandidatePass, PassContext

# Rounds per block before the driver gives up on reaching a fixpoint (each round applies at
# least one candidate, so this bounds the rewrites of one block).
MAX_ROUNDS = 1000


def run_candidates(pass_: CandidatePass, module: ir.Operation, ctx: PassContext) -> None:
    """The one driver: every block of every function body, to a fixpoint."""
    tokens = LOCATION_TEXTS.set({}), ATTRIBUTE_TEXTS.set({})
    try:
        for func in functions(module):
            name = func.attributes["sym_name"].value
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in pass_.skip_functions):
                continue
            for block in func.regions[0].blocks:
                _run_block(pass_, block, ctx)
    finally:
        LOCATION_TEXTS.reset(tokens[0])
        ATTRIBUTE_TEXTS.reset(tokens[1])


_ROUND_ANALYSES: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "iree_fusions_round_analyses", default=None)
T = TypeVar("T")


def round_analysis(compute: Callable[[ir.Block], T], block: ir.Block) -> T:
    """`compute(block)`, once per round of the driver. While a round finds its candidates the
    IR does not change, so a whole-block analysis (op positions, device placements, use-def
    facts) is shared by every candidate instead of being recomputed for each one. Outside a
    find (while applying, or called directly) it is computed afresh."""
    cache = _ROUND_ANALYSES.get()
    if cache is None:
        return compute(block)
    key = (compute, hash(block))  # a block hashes by its address
    if key not in cache:
        cache[key] = compute(block)
    return cache[key]


def block_ops(block: ir.Block) -> list[ir.Operation]:
    """The block's ops in order (with `round_analysis`: listed once per round, so that a
    scan from a known position does not walk the block from its start)."""
    return [op.operation for op in block.operations]


@contextlib.contextmanager
def _finding(report: PassReport, cache: dict | None = None) -> Iterator[None]:
    """(A step of) the find of a round: timed, with the round's analysis cache."""
    token = _ROUND_ANALYSES.set({} if cache is None else cache)
    try:
        with report.timed("find"):
            yield
    finally:
        _ROUND_ANALYSES.reset(token)


def _decision(pass_: CandidatePass, cand: Candidate, ctx: PassContext
              ) -> tuple[str | None, str]:
    return (cand.reason, "rule") if cand.blocked else pass_.decide(cand, ctx)


# $IREE_FUSIONS_DRIVER=each-change: every pass finds again after each change, as before
# footprints (the reference the round driver is checked against: same IR).
DRIVER_ENV = "IREE_FUSIONS_DRIVER"


def _run_block(pass_: CandidatePass, block: ir.Block, ctx: PassContext) -> None:
    if pass_.declares_footprints and not pass_.independent_candidates and \
            os.environ.get(DRIVER_ENV) != "each-change":
        run = _run_round
    else:
        run = _run_round_all if pass_.independent_candidates else _run_round_first
    for _ in range(MAX_ROUNDS):
        ctx.report.stats["rounds"] += 1
        with ctx.report.timed("normalize"):
            pass_.normalize(block, ctx)
        if not run(pass_, block, ctx):
            return
        with ctx.report.timed("apply"):
            pass_.end_round(block, ctx)
    ctx.report.note(f"stopped after {MAX_ROUNDS} rounds in one block (no fixpoint)")


def _run_round(pass_: CandidatePass, block: ir.Block, ctx: PassContext) -> bool:
    """One round of a pass that declares footprints: find once, then apply every selected
    candidate in order whose footprint does not read what an earlier change of the round
    wrote, nor touch a candidate that waits (so that candidates that overlap are applied in
    the order a find-after-each-change driver would apply them). Returns whether anything
    changed; the skips of a round that changed nothing go into the report."""
    report = ctx.report
    with _finding(report):
        found = list(pass_.find(block, ctx))
        selected = []
        for cand in found:
            reason, decided_by = _decision(pass_, cand, ctx)
            fp = None if reason is not None else pass_.footprint(cand, ctx)
            if fp is not None:  # (every op whose value the plan holds is read too)
                fp = fp.reading(plan_owners(cand.plan))
            selected.append((cand, reason, decided_by, fp))
    report.stats["finds"] += 1
    report.stats["candidates"] += len(found)
    skipped: list[Skip] = []
    written: set[int] = set()  # ops written by the changes of this round
    waiting_reads: set[int] = set()  # what the candidates left for the next round read
    waiting_writes: set[int] = set()  # ... and write
    changed = unknown = False
    for cand, reason, decided_by, fp in selected:
        if reason is not None:
            skipped.append(Skip.of(cand, reason, decided_by))
            continue
        if unknown or (fp is None and changed) or (
                fp is not None and fp.waits_for(written, waiting_reads, waiting_writes)):
            report.stats["waited"] += 1
            if fp is not None:
                waiting_reads |= fp.reads
                waiting_writes |= fp.writes
            continue
        with report.timed("apply"):
            try:
                what = pass_.apply(cand, ctx)
            except NoMatch as e:  # found unworkable before anything changed
                skipped.append(Skip.refused(cand, e))
                continue
        report.applied(cand, what, decided_by, fp)
        report.stats["applied"] += 1
        changed = True
        if fp is None:
            unknown = True  # it may have written anything: the rest waits
        else:
            written |= fp.writes
    if not changed:
        report.skipped += skipped
    return changed


def _run_round_first(pass_: CandidatePass, block: ir.Block, ctx: PassContext) -> bool:
    """One round of a pass without footprints: the first selected candidate is applied and
    the block found again (the find is resumed only while nothing changed)."""
    report = ctx.report
    skipped: list[Skip] = []
    found, analyses = pass_.find(block, ctx), {}
    report.stats["finds"] += 1
    while True:
        with _finding(report, analyses):
            cand = next(found, None)
            if cand is not None:
                reason, decided_by = _decision(pass_, cand, ctx)
        if cand is None:
            report.skipped += skipped
            return False
        report.stats["candidates"] += 1
        if reason is not None:
            skipped.append(Skip.of(cand, reason, decided_by))
            continue
        with report.timed("apply"):
            try:
                what = pass_.apply(cand, ctx)
            except NoMatch as e:
                skipped.append(Skip.refused(cand, e))
                continue
        report.applied(cand, what, decided_by)
        report.stats["applied"] += 1
        return True


def _run_round_all(pass_: CandidatePass, block: ir.Block, ctx: PassContext) -> bool:
    """One round of a pass whose candidates are independent: all selected ones at once."""
    report = ctx.report
    skipped: list[Skip] = []
    chosen: list[tuple[Candidate, str]] = []
    with _finding(report):
        found = list(pass_.find(block, ctx))
        for cand in found:
            reason, decided_by = _decision(pass_, cand, ctx)
            if reason is None:
                chosen.append((cand, decided_by))
            else:
                skipped.append(Skip.of(cand, reason, decided_by))
    report.stats["finds"] += 1
    report.stats["candidates"] += len(found)
    if not chosen:
        report.skipped += skipped
        return False
    with report.timed("apply"):
        whats = pass_.apply_all([c for c, _ in chosen], ctx)
    for (cand, decided_by), what in zip(chosen, whats):
        report.applied(cand, what, decided_by)
    report.stats["applied"] += len(chosen)
    return True
