"""Example models: small `.mlir` files shipped in the package and PyTorch models generated at
run time (weights are never committed; see `torch_export`)."""

from __future__ import annotations

import os

MODELS_DIR = os.path.dirname(__file__)


def bundled_mlir_models() -> dict[str, str]:
    """name -> path of each `.mlir` example shipped in the package."""
    return {
        f[: -len(".mlir")]: os.path.join(MODELS_DIR, f)
        for f in sorted(os.listdir(MODELS_DIR))
        if f.endswith(".mlir")
    }
