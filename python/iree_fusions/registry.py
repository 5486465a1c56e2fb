"""The one registry of plugin passes: name -> (module, class, phase, description).

Modules are imported lazily so that listing passes (or running one) does not import the
others. Every tool (iree-fusions-opt, -compile, -bench) resolves pass names here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .pass_base import FusionPass, PassOptionError


@dataclass(frozen=True)
class PassEntry:
    name: str
    module: str
    class_name: str
    phase: str
    description: str
    default: bool = True  # part of --fusions=all

    def load(self) -> type[FusionPass]:
        module = self.module if "." in self.module else f"iree_fusions.passes.{self.module}"
        try:
            mod = importlib.import_module(module)
            return getattr(mod, self.class_name)
        except (ImportError, AttributeError) as e:
            raise PassOptionError(f"pass '{self.name}' cannot be loaded: {e}") from None


_ENTRIES = [
    PassEntry(
        "fusions-report",
        "fusions_report",
        "FusionsReport",
        "linalg",
        "analysis only: counts the candidate ops of each rewrite, changes nothing",
        default=False,
    ),
    PassEntry(
        "batch-gathers",
        "batch_gathers",
        "BatchGathers",
        "linalg",
        "embedding lookups -> a few batched gathers from merged tables, concat written in place",
    ),
    PassEntry(
        "forward-factory-ops",
        "forward_factory_ops",
        "ForwardFactoryOps",
        "linalg",
        "cheap generated tensors (masks, positions, RoPE tables) recomputed in each consumer",
    ),
    PassEntry(
        "forward-factory-dispatches",
        "forward_factory_ops",
        "ForwardFactoryDispatches",
        "flow",
        "dispatches that only build a generated tensor (attention masks) cloned into readers",
    ),
    PassEntry(
        "batch-mlp-towers",
        "batch_mlp_towers",
        "BatchMlpTowers",
        "linalg",
        "N independent MLP towers of equal structure -> one chain of batched contractions",
    ),
    PassEntry(
        "interchange-permuted-consumers",
        "interchange_permuted_consumers",
        "InterchangePermutedConsumers",
        "linalg",
        "transposed epilogues (behind reshapes, bias ops, multi-use) fused into their producer",
    ),
    # Each rewrite adds its entry here (order = the order `--fusions=all` runs them).
]

REGISTRY: dict[str, PassEntry] = {e.name: e for e in _ENTRIES}


class UnknownPassError(PassOptionError):
    pass


def register(entry: PassEntry) -> None:
    """Adds a pass from outside the package (`module` is then a full dotted module path).

    Out-of-tree passes are loaded with `--fusions-load=python.module`, a module that calls
    this at import time. They are never part of `--fusions=all`.
    """
    if entry.name in REGISTRY and REGISTRY[entry.name] != entry:
        raise PassOptionError(f"a pass named '{entry.name}' is already registered")
    REGISTRY[entry.name] = PassEntry(entry.name, entry.module, entry.class_name, entry.phase,
                                     entry.description, default=False)


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
