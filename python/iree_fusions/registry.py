"""The one registry of plugin passes: name -> where the pass class lives.

Name, phase, description and options are read from the pass class itself (one place);
`test_registry.py` checks that every entry's name is its class's name. Modules are imported
lazily, so running one pass does not import the others. Every tool (iree-fusions-opt,
-compile, -bench) resolves pass names here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .pass_base import FusionPass, PassOptionError


@dataclass(frozen=True)
class PassEntry:
    name: str
    target: str  # "package.module:ClassName" ("module:Class" under iree_fusions.passes)
    default: bool = True  # part of --fusions=all

    def load(self) -> type[FusionPass]:
        module, _, class_name = self.target.partition(":")
        module = module if "." in module else f"iree_fusions.passes.{module}"
        try:
            return getattr(importlib.import_module(module), class_name)
        except (ImportError, AttributeError) as e:
            raise PassOptionError(f"pass '{self.name}' cannot be loaded: {e}") from None

    @property
    def phase(self) -> str:
        return self.load().phase

    @property
    def description(self) -> str:
        return self.load().description


# Order = the order `--fusions=all` runs them.
_ENTRIES = [
    PassEntry("fusions-report", "fusions_report:FusionsReport", default=False),
    PassEntry("batch-gathers", "batch_gathers:BatchGathers"),
    PassEntry("forward-factory-ops", "forward_factory_ops:ForwardFactoryOps"),
    PassEntry("forward-factory-dispatches", "forward_factory_ops:ForwardFactoryDispatches"),
    PassEntry("batch-mlp-towers", "batch_mlp_towers:BatchMlpTowers"),
    PassEntry("interchange-permuted-consumers",
              "interchange_permuted_consumers:InterchangePermutedConsumers"),
]

REGISTRY: dict[str, PassEntry] = {e.name: e for e in _ENTRIES}


class UnknownPassError(PassOptionError):
    pass


def register(cls: type[FusionPass]) -> type[FusionPass]:
    """Adds a pass class from outside the package; usable as a class decorator.

    Out-of-tree passes are loaded with `--fusions-load=python.module`, a module that calls
    this at import time. They are never part of `--fusions=all`.
    """
    entry = PassEntry(cls.name, f"{cls.__module__}:{cls.__name__}", default=False)
    if cls.name in REGISTRY and REGISTRY[cls.name] != entry:
        raise PassOptionError(f"a pass named '{cls.name}' is already registered")
    REGISTRY[cls.name] = entry
    return cls


def load_plugin_modules(modules: list[str]) -> None:
    """Imports each module named by `--fusions-load` (each registers its passes)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise PassOptionError(f"--fusions-load: cannot import '{name}': {e}") from None


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


def describe_passes() -> str:
    """`--fusions-list`: each pass, its phase and description, then its options."""
    lines = []
    for entry in REGISTRY.values():
        cls = entry.load()
        tag = "" if entry.default else "  [not in 'all']"
        lines.append(f"{cls.name} ({cls.phase}): {cls.description}{tag}")
        lines += [f"    {line}" for line in cls.option_help()]
    return "\n".join(lines)
