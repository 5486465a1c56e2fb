"""The base classes of every plugin pass: `FusionPass` (metadata, options, `run` over a
module) and `CandidatePass` (find keyed candidates per block, apply the selected ones)."""

from __future__ import annotations

import dataclasses
import fnmatch
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from iree.compiler import ir

from .candidates import Candidate, Footprint, P
from .options import OptionInfo, PassOptionError, option, option_info, parse_option
from .report import PassReport
from .rounds import run_candidates

if typing.TYPE_CHECKING:
    from ..decisions import Decider, Decision
    from ..target import Target

# Where a plugin pass runs: its two hook points ("linalg": after IREE's global-optimization;
# "flow": after dispatch-creation). IREE's own phases are `timing_report.PHASES`.
HOOK_PHASES = ("linalg", "flow")
V = TypeVar("V")


@dataclass
class PassContext:
    """What a pass run sees besides the IR: the module, the report it fills in, the target
    it is compiled for (None when unknown, e.g. in iree-fusions-opt without
    --fusions-target) and the measured decisions to follow."""

    module: ir.Operation
    report: PassReport
    target: Target | None = None
    decider: Decider | None = None
    # IREE's dispatch creation runs with --iree-dispatch-creation-enable-aggressive-fusion
    # (shark-ai's LLM flags): it fuses more producers into their readers (into a scatter, its
    # updates' elementwise producer).
    aggressive_fusion: bool = False
    # What one run of the pass keeps across candidates (e.g. load-time globals it made).
    state: dict[str, Any] = field(default_factory=dict)
    # Every plugin pass of this compile (both phases), with its options: a pass that leaves a
    # candidate to another pass does so only when that pass is here (`selected_pass`).
    selected: tuple[FusionPass, ...] = ()

    def selected_pass(self, name: str) -> FusionPass | None:
        """The pass named `name` as selected for this compile (its options), or None."""
        return next((p for p in self.selected if p.name == name), None)


@dataclass(frozen=True)
class FusionPass:
    """Base of every plugin pass: metadata, options, and `run` over a whole module."""

    name: ClassVar[str]
    phase: ClassVar[str]
    description: ClassVar[str]

    def measured_decision(self, key: str, ctx: PassContext) -> Decision | None:
        """The decision a decisions file holds for `key` (a user's, then the shipped one)."""
        return ctx.decider.lookup(key, self.name) if ctx.decider is not None else None

    def choose_form(self, key: str, ctx: PassContext, rule: bool) -> tuple[bool, str]:
        """(whether the form keyed `key` is taken, who decided) for a change that can take
        one of two forms (`report.Choice`): a measured decision for `key`, else `rule`."""
        decision = self.measured_decision(key, ctx)
        return (rule, "rule") if decision is None else (decision.apply, decision.source)

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[OptionInfo]:
        hints = typing.get_type_hints(cls)
        return [option_info(f, hints) for f in dataclasses.fields(cls)]

    @classmethod
    def from_options(cls, options: dict[str, str]) -> FusionPass:
        """Builds the pass from `{key=value}` options; keys are the fields in kebab-case."""
        infos = {o.name: o for o in cls.options()}
        kwargs: dict[str, Any] = {}
        for key, text in options.items():
            key = key.strip()
            if key not in infos:
                known = ", ".join(sorted(infos)) or "none"
                raise PassOptionError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            kwargs[infos[key].field_name] = parse_option(cls.name, infos[key], text)
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
    skip_functions: tuple[str, ...] = option(
        (), "functions (names or fnmatch patterns) whose bodies the pass leaves alone; the "
        "compile driver sets it for a function where the pass's changes did not pay", "FUNC,...")

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
        decision = self.measured_decision(cand.key, ctx)
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

