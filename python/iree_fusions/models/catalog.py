"""The catalog of benchmark models `iree-fusions-bench` knows by name.

A model is built lazily (PyTorch models are exported at run time, never stored in git) into
an Artifact: the IR to compile, inputs, extra compile flags and, when there is one, the
reference outputs (PyTorch's) that both compiled versions must match.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import bundled_mlir_models

# Modules under iree_fusions.models that define `MODELS: list[BenchModel]`.
MODEL_MODULES: list[str] = ["llama", "dlrm", "towers", "transformers", "zoo"]


@dataclass
class Artifact:
    source: bytes
    inputs: list[np.ndarray]
    flags: list[str] = field(default_factory=list)
    reference: list[np.ndarray] | None = None
    function: str = "main"
    reference_atol: float = 1e-5

    def write(self, folder: str, stem: str = "model") -> str:
        """Writes the IR into `folder` as `<stem>.mlirbc` (bytecode) or `<stem>.mlir` (text)
        and returns the path."""
        from ..api import source_suffix

        path = os.path.join(folder, stem + source_suffix(self.source))
        with open(path, "wb") as f:
            f.write(self.source)
        return path


@dataclass
class BenchModel:
    name: str
    description: str
    build: Callable[[], Artifact]
    fusions: str = "all"  # the pass(es) the model shows (`iree-fusions-bench --fusions=model`)
    needs_torch: bool = False
    default: bool = True  # part of the no-argument bench run
    dtype: str = "float32"  # the model's float element type ("bfloat16", "float16")


def half_models() -> dict[str, BenchModel]:
    """The catalog's bf16 / f16 models (named `<f32 model>-bf16` / `-f16`)."""
    return {n: m for n, m in all_models().items() if m.dtype != "float32"}


def _bundled_models() -> list[BenchModel]:
    from ..numerics import random_inputs

    models = []
    for name, path in bundled_mlir_models().items():
        def build(path=path) -> Artifact:
            with open(path, "rb") as f:
                data = f.read()
            return Artifact(data, random_inputs(data))

        models.append(BenchModel(name, f"bundled {name}.mlir", build))
    return models


def all_models() -> dict[str, BenchModel]:
    models = {m.name: m for m in _bundled_models()}
    for module in MODEL_MODULES:
        mod = importlib.import_module(f"iree_fusions.models.{module}")
        for m in mod.MODELS:
            models[m.name] = m
    return models


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True
