"""The one registry of plugin passes: name -> where the pass class lives.

The builtin passes are listed in one table, `BUILTIN` (name, "module:Class", part of
`--fusions=all` or not), in the order `--fusions=all` runs them. Phase, description and
options are read from the pass class itself (one place); `test_protocol.py` checks that every
entry's name is its class's name. Modules are imported lazily, on first use of an entry, so
running one pass does not import the others. Out-of-tree passes are added with `register`
(a module named by `--fusions-load`). Every tool (iree-fusions-opt, -compile, -bench)
resolves pass names here.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
import traceback
from dataclasses import dataclass

from .protocol import HOOK_PHASES, FusionPass, PassOptionError


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


_P = "iree_fusions.passes."
# The builtin passes, in the order `--fusions=all` runs them (a pass's place here is its
# order). Nothing is imported until an entry is loaded.
BUILTIN: tuple[PassEntry, ...] = (
    PassEntry("fusions-report", _P + "fusions_report:FusionsReport", default=False),
    PassEntry("rewrite-embedding-bags", _P + "rewrite_embedding_bags:RewriteEmbeddingBags"),
    PassEntry("batch-gathers", _P + "batch_gathers:BatchGathers"),
    PassEntry("forward-factory-ops", _P + "forward_factory_ops:ForwardFactoryOps"),
    PassEntry("forward-slices", _P + "forward_slices:ForwardSlices"),
    PassEntry("forward-factory-dispatches", _P + "forward_factory_ops:ForwardFactoryDispatches"),
    PassEntry("forward-slice-dispatches", _P + "forward_slice_dispatches:ForwardSliceDispatches"),
    PassEntry("batch-mlp-towers", _P + "batch_mlp_towers:BatchMlpTowers"),
    PassEntry("merge-sibling-contractions",
              _P + "merge_sibling_contractions:MergeSiblingContractions"),
    PassEntry("merge-sibling-generics", _P + "merge_sibling_generics:MergeSiblingGenerics"),
    PassEntry("merge-cache-scatters", _P + "merge_cache_scatters:MergeCacheScatters"),
    PassEntry("interchange-permuted-consumers",
              _P + "interchange_permuted_consumers:InterchangePermutedConsumers"),
    PassEntry("rewrite-attention", _P + "rewrite_attention:RewriteAttention"),
    PassEntry("share-layer-executables",
              _P + "share_layer_executables:ShareLayerExecutables"),
)

REGISTRY: dict[str, PassEntry] = {e.name: e for e in BUILTIN}


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
    return [e.name for e in BUILTIN if e.default]


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
