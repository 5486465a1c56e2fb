"""The contract every iree-fusions pass follows, and the report it fills in.

A pass is a small frozen dataclass: a kebab-case ``name``, the ``phase`` it runs at
("linalg": after IREE's global-optimization; "flow": after dispatch-creation), a one-line
``description``, its options as dataclass fields (``batch-gathers{min-group-size=3}`` sets
``min_group_size``), and ``apply(module, report)``, which rewrites the module in place and
records in ``report`` what it changed and, for each candidate it left alone, why.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from iree.compiler import ir

PHASES = ("linalg", "flow")


class PassOptionError(ValueError):
    """A pass option that does not exist or does not parse."""


@dataclass
class PassReport:
    """What one pass did to one module: changes made, candidates skipped (with reasons)."""

    pass_name: str
    changes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ops_before: Counter = field(default_factory=Counter)
    ops_after: Counter = field(default_factory=Counter)
    error: str | None = None

    def change(self, message: str) -> None:
        self.changes.append(message)

    def skip(self, where: ir.Operation | ir.OpView | str, reason: str) -> None:
        place = where if isinstance(where, str) else describe_op(where)
        self.skipped.append(f"{place}: {reason}")

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
        lines += [f"  changed: {c}" for c in self.changes]
        if verbose:
            lines += [f"  skipped: {s}" for s in self.skipped]
        delta = _format_op_delta(self.ops_before, self.ops_after)
        if delta:
            lines.append(f"  ops: {delta}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "pass": self.pass_name,
            "changes": self.changes,
            "skipped": self.skipped,
            "notes": self.notes,
            "ops_before": dict(self.ops_before),
            "ops_after": dict(self.ops_after),
            "error": self.error,
        }


def _format_op_delta(before: Counter, after: Counter) -> str:
    parts = []
    for name in sorted(set(before) | set(after)):
        if before[name] != after[name]:
            parts.append(f"{name} {before[name]}->{after[name]}")
    return ", ".join(parts)


def describe_op(op: ir.Operation | ir.OpView) -> str:
    """`linalg.generic at file.mlir:12:5`: how reports and skip reasons name an op."""
    operation = op.operation
    return f"{operation.name} at {format_location(operation.location)}"


def describe_value(value: ir.Value) -> str:
    """`the result of linalg.generic at f.mlir:3:7` / `block argument #1`: names a value
    cheaply (Value.get_name() prints the whole module to number SSA names: avoid it in
    loops)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return f"block argument #{ir.BlockArgument(value).arg_number}"
    return f"the result of {describe_op(owner)}"


def format_location(location: ir.Location) -> str:
    text = str(location)
    # loc("file.mlir":12:5) -> file.mlir:12:5 ; fused/named locations are kept as printed.
    if text.startswith('loc("') and text.endswith(")"):
        inner = text[4:-1]
        if inner.count('"') == 2:
            return inner.replace('"', "")
    return text


@dataclass(frozen=True)
class FusionPass:
    """Base of every plugin pass. Subclasses set the class variables and implement apply."""

    name: ClassVar[str]
    phase: ClassVar[str]
    description: ClassVar[str]

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        raise NotImplementedError

    @classmethod
    def from_options(cls, options: dict[str, str]) -> FusionPass:
        """Builds the pass from `{key=value}` options; keys are the fields in kebab-case."""
        fields = {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, text in options.items():
            if key not in fields:
                known = ", ".join(sorted(fields)) or "none"
                raise PassOptionError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            f = fields[key]
            kwargs[f.name] = _parse_option_value(cls.name, key, text, f.type)
        return cls(**kwargs)

    @classmethod
    def option_help(cls) -> list[str]:
        out = []
        for f in dataclasses.fields(cls):
            out.append(f"{f.name.replace('_', '-')}={f.default!r}")
        return out


def _parse_option_value(pass_name: str, key: str, text: str, type_name: Any) -> Any:
    type_name = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", "")
    try:
        if type_name == "bool":
            if text.lower() in ("1", "true", "on", "yes"):
                return True
            if text.lower() in ("0", "false", "off", "no"):
                return False
            raise ValueError(text)
        if type_name == "int":
            return int(text)
        if type_name == "float":
            return float(text)
        return text
    except ValueError:
        raise PassOptionError(
            f"pass '{pass_name}': option '{key}' expects {type_name}, got '{text}'"
        ) from None


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
