"""The one registry of plugin passes: name -> where the pass class lives.

The builtin passes are found, not listed: each module or package under `iree_fusions.passes`
(`mlir_passes/`) declares its passes in a `PASSES` literal (name -> class, place in
`--fusions=all`), which is read from its source. Phase, description and options are read from
the pass class itself (one place); `test_protocol.py` checks that every entry's name is its
class's name. Modules are imported lazily, so running one pass does not import the others.
Every tool (iree-fusions-opt, -compile, -bench) resolves pass names here.
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import pkgutil
import re
import sys
import traceback
from dataclasses import dataclass

from .protocol import FusionPass, HOOK_PHASES, PassOptionError


@dataclass(frozen=True)
class PassEntry:
    name: str
    target: str  # "package.module:ClassName", the module's full name
    default: bool = True  # part of --fusions=all

    def load(self) -> type[FusionPass]:
        module, _, class_name = self.target.partition(":")
        try:
            return functools.reduce(getattr, class_name.split("."), importlib.import_module(module))
        except (ImportError, AttributeError) as e:
            raise PassOptionError(f"pass '{self.name}' cannot be loaded: {e}") from None

    @property
    def phase(self) -> str:
        return self.load().phase

    @property
    def description(self) -> str:
        return self.load().description


# Where the builtin passes are found: every module and package directly under this one.
PASSES_PACKAGE = "iree_fusions.passes"
_PASSES_STATEMENT = re.compile(r"^PASSES\s*=", re.M)


def _declared_passes(source: str, where: str) -> dict[str, dict]:
    """The module's `PASSES` (a literal: pass name -> {"class": ..., "order": ...[,
    "default": False]}) read from its source without running it; {} when the module declares
    none. Only that statement is parsed (the shortest run of lines from `PASSES =` that
    parses), not the whole module: the registry is read at every tool's start."""
    found = _PASSES_STATEMENT.search(source)
    if found is None:
        return {}
    lines = source[found.start():].splitlines()
    passes = None
    for n in range(1, min(len(lines), 100) + 1):
        try:
            statement = ast.parse("\n".join(lines[:n])).body[0]
        except SyntaxError:
            continue
        try:
            passes = ast.literal_eval(statement.value)
        except ValueError:
            pass
        break
    if not isinstance(passes, dict) or not all(
            isinstance(d, dict) and isinstance(d.get("class"), str)
            and type(d.get("order")) is int and type(d.get("default", True)) is bool
            for d in passes.values()):
        raise PassOptionError(f"{where}: PASSES must be a literal dict of pass name -> "
                              '{"class": "ClassName", "order": int[, "default": bool]}')
    return passes


def discover(path: list[str], package: str = PASSES_PACKAGE) -> list[PassEntry]:
    """The passes declared by the modules and packages in `path` (the `__path__` of
    `package`): each declares its passes in a module-level `PASSES` literal, read from its
    source (nothing is imported: running one pass imports only its own package). Ordered by
    their `order`, the order `--fusions=all` runs them in."""
    found = []
    for info in pkgutil.iter_modules(path):
        name = f"{package}.{info.name}"
        spec = info.module_finder.find_spec(name, None)
        source = spec.loader.get_source(name) if spec is not None and spec.loader else None
        if not source:
            continue
        for pass_name, d in _declared_passes(source, spec.origin or name).items():
            found.append((d["order"], PassEntry(pass_name, f"{name}:{d['class']}",
                                                d.get("default", True))))
    found.sort(key=lambda f: f[0])
    for (a, ea), (b, eb) in zip(found, found[1:]):
        if a == b:
            raise PassOptionError(f"passes '{ea.name}' and '{eb.name}' have the same order {a}")
    entries = [entry for _, entry in found]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise PassOptionError(f"pass(es) declared twice: {', '.join(twice)}")
    return entries


def _builtin_entries() -> list[PassEntry]:
    """The passes of `iree_fusions.passes`, found in its folder (the package itself holds
    only a docstring: importing it is cheap)."""
    return discover(list(importlib.import_module(PASSES_PACKAGE).__path__))


# Order = the order `--fusions=all` runs them.
_ENTRIES = _builtin_entries()

REGISTRY: dict[str, PassEntry] = {e.name: e for e in _ENTRIES}


class UnknownPassError(PassOptionError):
    pass


def register(cls: type[FusionPass]) -> type[FusionPass]:
    """Adds a pass class from outside the package; usable as a class decorator.

    Out-of-tree passes are loaded with `--fusions-load=python.module`, a module that calls
    this at import time. They are never part of `--fusions=all`.
    """
    _check_pass_class(cls)
    entry = PassEntry(cls.name, f"{cls.__module__}:{cls.__qualname__}", default=False)
    if cls.name in REGISTRY and REGISTRY[cls.name] != entry:
        raise PassOptionError(f"a pass named '{cls.name}' is already registered")
    REGISTRY[cls.name] = entry
    return cls


_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def _check_pass_class(cls: type) -> None:
    """A pass class is complete before it is registered: a pass that could never run (an
    unknown phase, no name) is an error here, not a silent no-op later."""
    what = f"pass class {getattr(cls, '__qualname__', cls)}"
    if not (isinstance(cls, type) and issubclass(cls, FusionPass)):
        raise PassOptionError(f"{what}: not a FusionPass subclass")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PassOptionError(f"{what}: name {name!r} is not a kebab-case pass name")
    phase = getattr(cls, "phase", None)
    if phase not in HOOK_PHASES:
        raise PassOptionError(f"pass '{name}': unknown phase {phase!r} (phases: "
                              f"{', '.join(HOOK_PHASES)})")
    if not isinstance(getattr(cls, "description", None), str):
        raise PassOptionError(f"pass '{name}': no description")


# Modules imported by --fusions-load, in order (reproducer commands repeat them).
LOADED: list[str] = []


def load_plugin_modules(modules: list[str]) -> None:
    """Imports each module named by `--fusions-load` (each registers its passes). A module
    that fails to import, for whatever reason, is one error line naming it."""
    for name in modules:
        try:
            importlib.import_module(name)
        except PassOptionError as e:
            raise PassOptionError(f"--fusions-load={name}: {e}") from None
        except Exception as e:  # noqa: BLE001 - the module's own error, reported in one line
            where = ""
            tb = traceback.extract_tb(e.__traceback__)
            if tb:
                where = f" ({os.path.basename(tb[-1].filename)}:{tb[-1].lineno})"
            if isinstance(e, SyntaxError):  # its text names the file and line already
                where = ""
            raise PassOptionError(f"--fusions-load: cannot import '{name}': "
                                  f"{type(e).__name__}: {e}{where}") from None
        if name not in LOADED:
            LOADED.append(name)


def lookup(name: str) -> PassEntry:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(REGISTRY)
        raise UnknownPassError(f"unknown iree-fusions pass '{name}' (known: {known})") from None


def default_pass_names() -> list[str]:
    """The passes `--fusions=all` runs, in pipeline order."""
    return [e.name for e in _ENTRIES if e.default]


def is_registered(name: str) -> bool:
    return name in REGISTRY


def describe_passes(verbose: bool = False) -> str:
    """`--fusions-list`: each pass, its phase and description, then its options; `verbose`
    (`--fusions-list -v`): then the docstring of the pass's module (what it rewrites, with a
    before/after IR sketch)."""
    lines = []
    for entry in REGISTRY.values():
        cls = entry.load()
        tag = "" if entry.default else "  [not in 'all']"
        lines.append(f"{cls.name} ({cls.phase}): {cls.description}{tag}")
        lines += [f"    {line}" for line in cls.option_help()]
        doc = sys.modules[cls.__module__].__doc__ if verbose else None
        if doc:
            lines += [""] + [f"    {line}".rstrip() for line in doc.strip().splitlines()] + [""]
    return "\n".join(lines)
