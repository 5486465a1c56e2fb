"""Pass options: typed dataclass fields, parsed and checked from `pass{name=value}` text."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from ..files import UserError


class PassOptionError(UserError, ValueError):
    """A pass option that does not exist or does not parse."""


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


def option_info(f: dataclasses.Field, hints: dict[str, Any]) -> OptionInfo:
    t = hints[f.name]
    low, high = f.metadata.get("min"), f.metadata.get("max")
    number = t in (int, float)
    if number and low is None and isinstance(f.default, (int, float)) and f.default > 0:
        low = 0
    return OptionInfo(f.name.replace("_", "-"), f.name, t, f.default, f.metadata.get("help", ""),
                      f.metadata.get("metavar"), low if number else None,
                      high if number else None)


def parse_option(pass_name: str, info: OptionInfo, text: str) -> Any:
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

