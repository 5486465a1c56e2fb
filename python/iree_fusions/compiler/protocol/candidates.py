"""What a pass finds: keyed candidates with their typed plan or the reason they are blocked,
and the footprint (ops read and written) the round driver schedules plans by."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from iree.compiler import ir

from ..ir_helpers import capsule_address, location_keys, op_location


class NoMatch(Exception):
    """Raised at the check that failed: the candidate is left alone, for this reason.

    `code` names the check (lowercase words joined by `-`, one check per code in a pass);
    reports print it as `pass/code` after the reason, lit tests check it, and
    `test/decline_coverage.py` counts the codes no test reaches. `reason` is the prose a
    user reads (`str(e)`). A check that passes on another's decline keeps its code
    (`NoMatch(e.code, f"...: {e}")`).

    With `$IREE_FUSIONS_DECLINE_LOG` set to a file, each process appends the place of every
    check that raised (`file:line` of the call and the code, once per place)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = _checked_code(code)
        self.reason = reason


DECLINE_CODE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_DECLINE_LOG = os.environ.get("IREE_FUSIONS_DECLINE_LOG")
_LOGGED: set[str] = set()


def _checked_code(code: str) -> str:
    """`code`, once it is a decline code; logged with the place of the check that gave it
    (the first caller outside `__init__`s and this module) when a decline log is set."""
    if not DECLINE_CODE.fullmatch(code):
        raise ValueError(f"decline code {code!r} is not lowercase words joined by '-'")
    if _DECLINE_LOG:
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_name == "__init__" or
                                     frame.f_code.co_filename == __file__):
            frame = frame.f_back
        if frame is not None:
            _log_decline(f"{frame.f_code.co_filename}:{frame.f_lineno} {code}")
    return code


def _log_decline(place: str) -> None:
    if place not in _LOGGED:
        _LOGGED.add(place)
        with open(_DECLINE_LOG, "a") as f:  # at once: compiles end with os._exit
            f.write(place + "\n")


P = TypeVar("P")


def structural_key(family: str, *parts: Any) -> str:
    """`family-<10 hex digits>`: a key for the structure described by `parts`.

    `parts` must describe structure only (op names, printed types, maps, sizes, counts) and
    never SSA names, locations or value identities, so that the same structure found in two
    models gets the same key (a decision learned on one applies to the other)."""
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:10]
    return f"{family}-{digest}"


@dataclass
class Candidate(Generic[P]):
    """One rewrite a pass can make: its key, where, what it is, and its plan or reason."""

    key: str
    # The op the candidate is anchored at; kept as its text (`linalg.generic at
    # file.mlir:12:5`, what reports print) and its MLIR location (`at`, where remarks go).
    location: str | ir.Operation | ir.OpView
    summary: str  # what the candidate is, in words (used in the report)
    plan: P | None = None
    reason: str | None = None  # why it is blocked (set at the check that failed)
    code: str | None = None  # the failed check's `NoMatch.code`
    # Why the pass's own cost rule would not apply a feasible plan; a measured decision
    # (a decisions file) may still apply it.
    declined: str | None = None
    declined_code: str | None = None  # the rule's code (`decline`)
    # What the rewrite saves: "dispatches" (fewer dispatches or bytes between them: the
    # driver reverts linalg changes that reduce neither), "work" (less computation, e.g. a
    # quadratic scan made linear: kept even at equal dispatch counts) or "time" (measured
    # faster on the target though it may add dispatches, e.g. attention decomposed on CPUs:
    # not weighed by dispatch counts) or "compile-time" (fewer executables to compile, the
    # same dispatches).
    gain: Literal["dispatches", "work", "time", "compile-time"] = "dispatches"
    # Why the change saves dispatches or bytes between them whatever stock IREE does: the
    # limitation of IREE's dispatch creation the rewrite works around, stated by the pass
    # (before or while applying it). The driver weighs a compile's linalg changes against
    # stock IREE (one extra dispatch-creation run) only when one of them has no such reason.
    sure: str | None = None
    at: ir.Location | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.location, str):
            self.at = self.location.operation.location
            self.location = op_location(self.location)

    def decline(self, code: str, reason: str | None) -> None:
        """The pass's own rule declines this feasible candidate, for `reason` under `code`
        (as `NoMatch`'s); `reason` None: the rule does not decline it."""
        if reason is not None:
            self.declined_code = _checked_code(code)
            self.declined = reason

    @property
    def blocked(self) -> bool:
        return self.plan is None

    @staticmethod
    def of(key: str, where: ir.Operation | ir.OpView | str, summary: str,
           make_plan: Callable[[], P],
           gain: Literal["dispatches", "work", "time", "compile-time"] = "dispatches"
           ) -> Candidate[P]:
        """A candidate whose plan is `make_plan()`, or blocked with the NoMatch it raised."""
        try:
            return Candidate(key, where, summary, make_plan(), gain=gain)
        except NoMatch as e:
            return Candidate.refused(key, where, summary, e, gain=gain)

    @staticmethod
    def refused(key: str, where: ir.Operation | ir.OpView | str, summary: str, e: NoMatch,
                gain: Literal["dispatches", "work", "time", "compile-time"] = "dispatches"
                ) -> Candidate[P]:
        """A candidate blocked at the check that raised `e`."""
        return Candidate(key, where, summary, None, e.reason, code=e.code, gain=gain)


def op_id(op: ir.Operation | ir.OpView) -> int:
    """The identity of a live operation (its address). Stable while the op lives, unlike
    `hash()`, which follows the op's contents; never ask it of an erased op."""
    return capsule_address(op.operation._CAPIPtr)


@dataclass(frozen=True)
class Footprint:
    """What a plan reads and what it writes, as op identities (`op_id`) taken when the
    candidate was found, before any change of the round.

    `reads`: the ops whose state the plan was computed from (their operands, users, maps,
    kinds); `writes`: the ops the change erases, replaces or edits, and those whose operands
    or users it changes. A change invalidates exactly the plans that read what it writes."""

    reads: frozenset[int] = frozenset()
    writes: frozenset[int] = frozenset()
    # The source locations of those ops (`location_keys`): where the change shows.
    locations: frozenset[str] = field(default=frozenset(), compare=False)

    def reading(self, ops: Iterable[ir.Operation | ir.OpView]) -> Footprint:
        """This footprint, with `ops` read too."""
        return Footprint(self.reads | {op_id(o) for o in ops}, self.writes, self.locations)

    def waits_for(self, written: set[int], waiting_reads: set[int],
                  waiting_writes: set[int]) -> bool:
        """Whether the plan must wait for the next round: it reads what a change of this
        round wrote, or it overlaps a candidate that waits (applying it first could change
        that candidate's plan, or the other way round: the order would matter)."""
        return not (self.reads.isdisjoint(written) and self.reads.isdisjoint(waiting_writes)
                    and self.writes.isdisjoint(waiting_reads))

    @staticmethod
    def of(reads: Iterable[ir.Operation | ir.OpView] = (),
           writes: Iterable[ir.Operation | ir.OpView] = ()) -> Footprint:
        """List in `reads` every op the plan depends on, those it rewrites included."""
        reads, writes = list(reads), list(writes)
        return Footprint(frozenset(op_id(o) for o in reads),
                         frozenset(op_id(o) for o in writes),
                         frozenset().union(*(location_keys(o.operation.location)
                                             for o in {*reads, *writes})))


def plan_owners(plan: object) -> list[ir.Operation]:
    """The ops behind every IR handle a plan holds: each op, and the op that defines each
    value (the op that owns the block of a block argument), found through dataclass fields,
    lists, tuples, sets and dicts. The round driver adds them to the plan's reads, so that a
    plan waits for the next round, and is found again, when an earlier change of the round
    wrote an op whose value it holds (e.g. an attention reading the attention before it,
    which another plan erased: its handle would dangle)."""
    owners: list[ir.Operation] = []
    seen: set[int] = set()

    def visit(item: object) -> None:
        if isinstance(item, (ir.Operation, ir.OpView)):
            owners.append(item.operation)
        elif isinstance(item, ir.Value):
            owner = item.owner
            owners.append(owner.owner if isinstance(owner, ir.Block) else owner.operation)
        elif isinstance(item, (str, bytes, int, float, bool, ir.Type, ir.Attribute)) or \
                item is None or id(item) in seen:
            return
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            seen.add(id(item))
            for f in dataclasses.fields(item):
                visit(getattr(item, f.name))
        elif isinstance(item, dict):
            seen.add(id(item))
            for k, v in item.items():
                visit(k)
                visit(v)
        elif isinstance(item, (list, tuple, set, frozenset)):
            seen.add(id(item))
            for v in item:
                visit(v)

    visit(plan)
    return owners
