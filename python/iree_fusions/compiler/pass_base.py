"""The protocol every iree-fusions pass follows: keyed candidates, typed plans, reasons.

A pass is a small frozen dataclass (as in xDSL): a kebab-case ``name``, the ``phase`` it runs
at ("linalg": after IREE's global-optimization; "flow": after dispatch-creation), a one-line
``description``, and its options as dataclass fields declared with :func:`option` (typed,
documented, validated when parsed: ``batch-gathers{min-group-size=3}``).

A rewriting pass is a :class:`CandidatePass`. Per block of every function body it

* ``find(block, ctx)`` yields :class:`Candidate` s in the order they should be applied. Each
  has a stable ``key`` derived from the structure it matches (:func:`structural_key`: op
  kinds, shapes, element types, maps, group size; never SSA names or locations, so the same
  structure in two models has the same key), a typed ``plan`` (a dataclass) and, when it is
  blocked, the ``reason`` given at the check that failed (raise :class:`NoMatch` there, as
  MLIR's ``notifyMatchFailure``; ``Candidate.of`` turns it into a blocked candidate);
* ``apply(candidate, ctx)`` performs one plan and returns what it changed, in words.

``find`` never changes the IR. A pass whose matching needs the block in a canonical form
(views next to their operands, an importer's idiom rewritten) does that in ``normalize``,
which the driver calls before each round's find: rewrites that change no value, idempotent.

The driver (:func:`run_candidates`) runs a pass to a fixpoint with one bound and one
convention for multi-block functions: every block of every function body, one at a time. A
round finds the candidates of the block in one walk and applies the selected ones:

* a pass whose plans declare what they read and write (``footprint``) gets every selected
  candidate of the round whose footprint no earlier change of the round wrote (nor an earlier
  candidate that had to wait touches); the others wait for the next round, which finds them
  again on the changed IR. Rounds are then bounded by how deep changes depend on each other,
  not by how many there are: a pass costs a few walks of the block, not one per change;
* a pass whose candidates are independent (``independent_candidates``) gets them all at once
  through ``apply_all``;
* any other pass gets the first selected candidate, then the block is found again.

Whole-block analyses a round's find needs (positions, placements) are computed once per round
(:func:`round_analysis`). A candidate is selected unless its key is in the pass's ``skip``
option, not in its ``only`` option, or decided against by a decisions file. The skips of the
last round (the one that changed nothing) go into the report with their keys.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import fnmatch
import hashlib
import os
import re
import time
import typing
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

from iree.compiler import ir

from .files import UserError
from .ir_helpers import ATTRIBUTE_TEXTS, capsule_address, location_keys, uniqued_cached

if typing.TYPE_CHECKING:
    from .decisions import Decider
    from .target import Target

PHASES = ("linalg", "flow")
# Rounds per block before the driver gives up on reaching a fixpoint (each round applies at
# least one candidate, so this bounds the rewrites of one block).
MAX_ROUNDS = 1000


class PassOptionError(UserError, ValueError):
    """A pass option that does not exist or does not parse."""


class NoMatch(Exception):
    """Raised at the check that failed: the candidate is left alone, for this reason."""


# ---------------------------------------------------------------- options


def option(default: Any, help: str, metavar: str | None = None, *,
           min: float | None = None, max: float | None = None) -> Any:
    """A pass option: a dataclass field with its default and a one-line help text.

    The field's annotation is its type: int, float, bool, str, a `Literal[...]` of allowed
    strings, or `tuple[str, ...]` (a comma-separated list; `metavar` names its items in the
    help, e.g. "KEY,..."). Numbers are checked against `min` / `max` when parsed; a float
    must be finite. Without a declared `min`, a number whose default is positive (a count,
    size, threshold or cost) must not be negative; a default of zero or below leaves the sign
    free (a signed quantity such as a net saving)."""
    return field(default=default, metadata={"help": help, "metavar": metavar,
                                            "min": min, "max": max})


@dataclass(frozen=True)
class OptionInfo:
    name: str  # kebab-case, as written in `pass{name=value}`
    field_name: str
    type: Any
    default: Any
    help: str
    metavar: str | None = None
    min: float | None = None  # the range of a number (both ends included)
    max: float | None = None

    def type_text(self) -> str:
        if self.metavar:
            return self.metavar
        if typing.get_origin(self.type) is Literal:
            return "|".join(typing.get_args(self.type))
        if typing.get_origin(self.type) is tuple:
            return "VALUE,..."
        return getattr(self.type, "__name__", str(self.type))

    def default_text(self) -> str:
        if isinstance(self.default, tuple):
            return ",".join(self.default) or "(none)"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return str(self.default)

    def range_text(self) -> str:
        """`>= 0`, `0..1`, `<= 8` or "" (any finite value)."""
        if self.min is not None and self.max is not None:
            return f"{self.min:g}..{self.max:g}"
        if self.min is not None:
            return f">= {self.min:g}"
        return f"<= {self.max:g}" if self.max is not None else ""


def _option_info(f: dataclasses.Field, hints: dict[str, Any]) -> OptionInfo:
    t = hints[f.name]
    low, high = f.metadata.get("min"), f.metadata.get("max")
    number = t in (int, float)
    if number and low is None and isinstance(f.default, (int, float)) and f.default > 0:
        low = 0
    return OptionInfo(f.name.replace("_", "-"), f.name, t, f.default, f.metadata.get("help", ""),
                      f.metadata.get("metavar"), low if number else None,
                      high if number else None)


def _parse_option(pass_name: str, info: OptionInfo, text: str) -> Any:
    t = info.type
    bad = PassOptionError(
        f"pass '{pass_name}': option '{info.name}' expects {info.type_text()}, got '{text}'")
    if typing.get_origin(t) is Literal:
        if text not in typing.get_args(t):
            raise bad
        return text
    if typing.get_origin(t) is tuple:
        return tuple(k.strip() for k in text.split(",") if k.strip())
    if t is bool:
        if text.lower() in ("1", "true", "on", "yes"):
            return True
        if text.lower() in ("0", "false", "off", "no"):
            return False
        raise bad
    try:
        value = t(text)
    except ValueError:
        raise bad from None
    if t in (int, float):
        if value != value or value in (float("inf"), float("-inf")):  # NaN, infinities
            raise PassOptionError(f"pass '{pass_name}': option '{info.name}' must be a finite "
                                  f"number, got '{text}'")
        if (info.min is not None and value < info.min) or (
                info.max is not None and value > info.max):
            raise PassOptionError(f"pass '{pass_name}': option '{info.name}' must be "
                                  f"{info.range_text()}, got '{text}'")
    return value


# ---------------------------------------------------------------- candidates and keys


P = TypeVar("P")
V = TypeVar("V")


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
    # Why the pass's own cost rule would not apply a feasible plan; a measured decision
    # (a decisions file) may still apply it.
    declined: str | None = None
    # What the rewrite saves: "dispatches" (fewer dispatches or bytes between them: the
    # driver reverts linalg changes that reduce neither) or "work" (less computation, e.g. a
    # quadratic scan made linear: kept even at equal dispatch counts).
    gain: Literal["dispatches", "work"] = "dispatches"
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

    @property
    def blocked(self) -> bool:
        return self.plan is None

    @staticmethod
    def of(key: str, where: ir.Operation | ir.OpView | str, summary: str,
           make_plan: Callable[[], P], gain: Literal["dispatches", "work"] = "dispatches"
           ) -> Candidate[P]:
        """A candidate whose plan is `make_plan()`, or blocked with the NoMatch it raised."""
        try:
            return Candidate(key, where, summary, make_plan(), gain=gain)
        except NoMatch as e:
            return Candidate(key, where, summary, None, str(e), gain=gain)


@dataclass(frozen=True)
class Change:
    key: str
    what: str
    location: str
    decided_by: str = "rule"  # "rule" (the pass's own) or the decisions file that chose it
    gain: str = "dispatches"  # what the change saves (Candidate.gain)
    sure: str | None = None  # why it pays whatever stock IREE does (Candidate.sure)
    at: ir.Location | None = field(default=None, compare=False, repr=False)  # for remarks
    # The source locations (`location_keys`) of the ops the change read or wrote: where its
    # effect shows in the dispatches (the driver weighs each pass by them).
    touched: frozenset[str] = field(default=frozenset(), compare=False, repr=False)


@dataclass(frozen=True)
class Skip:
    key: str
    reason: str
    location: str
    decided_by: str = "rule"
    feasible: bool = False  # the plan exists: a decision could apply it
    at: ir.Location | None = field(default=None, compare=False, repr=False)  # for remarks

    @staticmethod
    def of(cand: Candidate, reason: str, decided_by: str = "rule",
           feasible: bool | None = None) -> Skip:
        """A candidate left alone (`feasible`: default, whether it has a plan)."""
        return Skip(cand.key, reason, cand.location, decided_by,
                    not cand.blocked if feasible is None else feasible, cand.at)


# ---------------------------------------------------------------- footprints

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


# ---------------------------------------------------------------- report


@dataclass
class PassReport:
    """What one pass did to one module: changes made, candidates skipped (with reasons)."""

    pass_name: str
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ops_before: Counter = field(default_factory=Counter)
    ops_after: Counter = field(default_factory=Counter)
    error: str | None = None
    target: str | None = None  # `backend:chip` the module was compiled for, when known
    # What the driver did (rounds, finds, candidates found, applied, waited) and the wall
    # seconds of each part of the pass (find, apply, verify, count): --fusions-timing.
    stats: Counter = field(default_factory=Counter)
    timing: dict[str, float] = field(default_factory=dict)

    def change(self, key: str, what: str, location: str, decided_by: str = "rule",
               gain: str = "dispatches", sure: str | None = None,
               at: ir.Location | None = None, touched: frozenset[str] = frozenset()) -> None:
        self.changes.append(Change(key, what, location, decided_by, gain, sure, at,
                                   touched | location_keys(at)))

    def applied(self, cand: Candidate, what: str, decided_by: str,
                footprint: Footprint | None = None) -> None:
        """Records the change a candidate made (`footprint`: the ops it touched)."""
        self.change(cand.key, what, cand.location, decided_by, cand.gain, cand.sure, cand.at,
                    footprint.locations if footprint is not None else frozenset())

    def skip(self, key: str, reason: str, location: str, decided_by: str = "rule",
             feasible: bool = False) -> None:
        self.skipped.append(Skip(key, reason, location, decided_by, feasible))

    def note(self, message: str) -> None:
        """Information that is neither a change nor a skipped candidate (analysis results)."""
        self.notes.append(message)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def format(self, verbose: bool = True) -> str:
        lines = [f"[{self.pass_name}] {len(self.changes)} change(s), {len(self.skipped)} skipped"]
        if self.error:
            lines.append(f"  FAILED (IR from before this pass kept): {self.error}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  changed [{c.key}] {c.location}: {c.what}{_by(c.decided_by)}"
                  for c in self.changes]
        if verbose:
            lines += [f"  skipped [{s.key}] {s.location}: {s.reason}{_by(s.decided_by)}"
                      for s in self.skipped]
        delta = _format_op_delta(self.ops_before, self.ops_after)
        if delta:
            lines.append(f"  ops: {delta}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "pass": self.pass_name,
            "changes": [{"pass": self.pass_name, **_json_fields(c, "sure", "touched")}
                        for c in self.changes],
            "skipped": [{"pass": self.pass_name, **_json_fields(s)} for s in self.skipped],
            "notes": self.notes,
            "ops_before": dict(self.ops_before),
            "ops_after": dict(self.ops_after),
            "error": self.error,
            "target": self.target,
            "stats": dict(self.stats),
            "timing": {k: round(v, 6) for k, v in self.timing.items()},
        }

    @contextlib.contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Adds the wall time of the block to `timing[part]`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing[part] = self.timing.get(part, 0.0) + time.perf_counter() - start


    def emit_remarks(self, context: ir.Context) -> None:
        """Each change (a passed remark) and each skipped candidate (a missed one) as an
        MLIR optimization remark at its op, category the pass name, when the context has
        remarks enabled (`Context.enable_remarks`: iree-fusions-opt --fusions-remarks or
        -verify-diagnostics). Printed as a diagnostic:
        `file.mlir:12:5: remark: [Missed] skipped | Category:batch-gathers |
        Remark="<reason>", key=<key>`."""
        if not context.remarks_enabled:
            return
        for c in self.changes:
            if c.at is not None:
                c.at.emit_remark(ir.RemarkKind.PASSED, "changed", category=self.pass_name,
                                 message=c.what + _by(c.decided_by), args=[("key", c.key)])
        for s in self.skipped:
            if s.at is not None:
                s.at.emit_remark(ir.RemarkKind.MISSED, "skipped", category=self.pass_name,
                                 message=s.reason + _by(s.decided_by), args=[("key", s.key)])


def _json_fields(record: Change | Skip, *leave_out: str) -> dict[str, Any]:
    """A change or skip as the JSON report has it: its fields but the MLIR location (`at`)
    and those in `leave_out` (a change's `sure` and `touched` are the driver's, to weigh)."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)
            if f.name != "at" and f.name not in leave_out}


def _by(decided_by: str) -> str:
    return "" if decided_by == "rule" else f" (decided by {decided_by})"


def _format_op_delta(before: Counter, after: Counter) -> str:
    parts = []
    for name in sorted(set(before) | set(after)):
        if before[name] != after[name]:
            parts.append(f"{name} {before[name]}->{after[name]}")
    return ", ".join(parts)


_FILE_LINE_COL = re.compile(r'"([^"]*)":(\d+):(\d+)')


def format_location(location: ir.Location) -> str:
    """`file.mlir:12:5`: the first file location in `loc(...)` (the callee of a callsite,
    the first of a fused location); other locations as printed."""
    return uniqued_cached(_LOCATION_TEXTS, location, _format_location)


def file_line_col(location: ir.Location) -> tuple[str, int, int] | None:
    """(file, line, column) of the first file location in `loc(...)`, else None."""
    found = _FILE_LINE_COL.search(str(location))  # ~36 us for a torch call-site location
    return (found.group(1), int(found.group(2)), int(found.group(3))) if found else None


def _format_location(location: ir.Location) -> str:
    where = file_line_col(location)
    return f"{where[0]}:{where[1]}:{where[2]}" if where else str(location)


# Location texts while a pass runs on one module (one context): every layer's ops share a
# few source locations, and every round finds the blocked candidates again.
_LOCATION_TEXTS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "iree_fusions_location_texts", default=None)


def op_location(op: ir.Operation | ir.OpView) -> str:
    """`linalg.generic at file.mlir:12:5`: how reports name the op a candidate is at."""
    operation = op.operation
    return f"{operation.name} at {format_location(operation.location)}"


def describe_value(value: ir.Value) -> str:
    """`the result of linalg.generic at f.mlir:3:7` / `block argument #1`: names a value
    cheaply (Value.get_name() prints the whole module to number SSA names: avoid it in
    loops)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return f"block argument #{ir.BlockArgument(value).arg_number}"
    return f"the result of {op_location(owner)}"


# ---------------------------------------------------------------- passes


@dataclass
class PassContext:
    """What a pass run sees besides the IR: the module, the report it fills in, the target
    it is compiled for (None when unknown, e.g. in iree-fusions-opt without
    --fusions-target) and the measured decisions to follow."""

    module: ir.Operation
    report: PassReport
    target: Target | None = None
    decider: Decider | None = None
    # What one run of the pass keeps across candidates (e.g. load-time globals it made).
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FusionPass:
    """Base of every plugin pass: metadata, options, and `run` over a whole module."""

    name: ClassVar[str]
    phase: ClassVar[str]
    description: ClassVar[str]
    # Options the pass had and another pass has now (option name -> that pass): given to
    # this pass, they are refused with a message that says where they went.
    moved_options: ClassVar[dict[str, str]] = {}

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[OptionInfo]:
        hints = typing.get_type_hints(cls)
        return [_option_info(f, hints) for f in dataclasses.fields(cls)]

    @classmethod
    def from_options(cls, options: dict[str, str]) -> FusionPass:
        """Builds the pass from `{key=value}` options; keys are the fields in kebab-case."""
        infos = {o.name: o for o in cls.options()}
        kwargs: dict[str, Any] = {}
        for key, text in options.items():
            key = key.strip()
            if key not in infos and key in cls.moved_options:
                new = cls.moved_options[key]
                raise PassOptionError(
                    f"pass '{cls.name}': option '{key}' moved to pass '{new}' (write "
                    f"'{new}{{{key}={text}}}' before '{cls.name}' in the pipeline; "
                    "--fusions=all runs both)")
            if key not in infos:
                known = ", ".join(sorted(infos)) or "none"
                raise PassOptionError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            kwargs[infos[key].field_name] = _parse_option(cls.name, infos[key], text)
        try:
            return cls(**kwargs)
        except ValueError as e:  # __post_init__ checks of combined values
            raise PassOptionError(f"pass '{cls.name}': {e}") from None

    def option_values(self, values: type[V]) -> V:
        """`values` (a frozen dataclass of some of this pass's options, e.g. the ones a
        helper module reads) filled from the pass's option fields of the same names: helpers
        get the option values they use, never the pass object."""
        return values(**{f.name: getattr(self, f.name) for f in dataclasses.fields(values)})

    @classmethod
    def option_help(cls) -> list[str]:
        """`name=TYPE (default D, RANGE): help`, one line per option."""
        return [f"{o.name}={o.type_text()} (default {o.default_text()}"
                f"{', ' + o.range_text() if o.range_text() else ''}): {o.help}"
                for o in cls.options()]


@dataclass(frozen=True)
class CandidatePass(FusionPass, Generic[P]):
    """A rewriting pass: finds keyed candidates per block, applies the selected ones."""

    # After one candidate is applied, are the others found in the same round still valid?
    # False: the driver finds again after each one. True: it applies them all (apply_all).
    independent_candidates: ClassVar[bool] = False

    skip: tuple[str, ...] = option((), "candidate keys (or fnmatch patterns) to leave alone",
                                   "KEY,...")
    only: tuple[str, ...] = option((), "apply only the candidates with these keys (patterns)",
                                   "KEY,...")

    def normalize(self, block: ir.Block, ctx: PassContext) -> None:
        """Rewrites that change no value and put the block in the form `find` matches (views
        moved next to their operands, an importer's idiom turned into the one the pass
        knows). The driver calls it before each round's find, which never changes the IR.
        Must be idempotent: a round that changes nothing else must leave the IR as it was."""

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[P]]:
        raise NotImplementedError

    def apply(self, candidate: Candidate[P], ctx: PassContext) -> str:
        """Performs `candidate.plan`; returns what changed. May raise NoMatch only before
        it changed anything."""
        raise NotImplementedError

    def apply_all(self, candidates: list[Candidate[P]], ctx: PassContext) -> list[str]:
        """Applies independent candidates of one round (passes may merge their plans)."""
        return [self.apply(c, ctx) for c in candidates]

    def footprint(self, candidate: Candidate[P], ctx: PassContext) -> Footprint | None:
        """What the candidate's plan reads and writes (asked when it is found, before any
        change of the round). A pass that declares footprints gets every candidate of a
        round whose footprint no earlier change wrote; None (the default) makes the driver
        find again after each change."""
        return None

    def end_round(self, block: ir.Block, ctx: PassContext) -> None:
        """Called after a round that changed the block (cleanup shared by its changes,
        e.g. erasing what they left dead), before the next round finds again."""

    @property
    def declares_footprints(self) -> bool:
        return type(self).footprint is not CandidatePass.footprint

    def deselected(self, key: str) -> str | None:
        """Why the pass's own options keep a candidate with this key from being applied."""
        if self.only and not _matches(key, self.only):
            return f"not selected (only={','.join(self.only)})"
        if _matches(key, self.skip):
            return "skipped on request (skip=KEY)"
        return None

    def decide(self, cand: Candidate, ctx: PassContext) -> tuple[str | None, str]:
        """(why not, decided by) for a feasible candidate: None means apply. The pass's
        skip/only options come first, then a measured decision, then the pass's own rule."""
        reason = self.deselected(cand.key)
        if reason is not None:
            return reason, "option"
        decision = ctx.decider.lookup(cand.key, self.name) if ctx.decider is not None else None
        if decision is not None:
            return (None if decision.apply else _turned_off(decision, cand.declined)
                    ), decision.source
        return cand.declined, "rule"

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        run_candidates(self, module, ctx)


def _turned_off(decision, declined: str | None) -> str:
    """Why a decision from a file leaves a candidate alone: the times measured, or, where
    the tuner found nothing to measure, the rule's reason (`declined`) it kept."""
    ev = decision.evidence
    if ev.get("identical"):
        return ((f"{declined}; " if declined else "") + "the decisions file keeps it off "
                "(untimed: with and without it the tuned model compiled to the same program)")
    if "ms_with" in ev and "ms_without" in ev:
        return (f"a measured decision turns it off ({ev['ms_with']} ms with it, "
                f"{ev['ms_without']} ms without{', ' + ev['note'] if ev.get('note') else ''})")
    return "a measured decision turns it off"


def _matches(key: str, patterns: Iterable[str]) -> bool:
    return any(key == p or fnmatch.fnmatchcase(key, p) for p in patterns)


def run_candidates(pass_: CandidatePass, module: ir.Operation, ctx: PassContext) -> None:
    """The one driver: every block of every function body, to a fixpoint."""
    from .ir_helpers import functions

    tokens = _LOCATION_TEXTS.set({}), ATTRIBUTE_TEXTS.set({})
    try:
        for func in functions(module):
            for block in func.regions[0].blocks:
                _run_block(pass_, block, ctx)
    finally:
        _LOCATION_TEXTS.reset(tokens[0])
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
            selected.append((cand, reason, decided_by,
                             None if reason is not None else pass_.footprint(cand, ctx)))
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
                skipped.append(Skip.of(cand, str(e), feasible=False))
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
                skipped.append(Skip.of(cand, str(e), feasible=False))
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


# ---------------------------------------------------------------- analysis counts


def count_compute_ops(module: ir.Operation) -> Counter:
    """Counts the ops a report compares before/after: linalg, linalg_ext, tensor, flow ops."""
    counts: Counter = Counter()
    prefixes = ("linalg.", "iree_linalg_ext.", "tensor.", "flow.dispatch")

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name.startswith(prefixes) and name not in ("linalg.yield", "linalg.index"):
            counts[name] += 1
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return counts
