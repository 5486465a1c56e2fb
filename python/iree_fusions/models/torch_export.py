"""PyTorch -> torch-dialect MLIR through torch.export and IREE's fx_importer (the recipe in
NOTES.md): `torch.export.export(strict=False)` -> `run_decompositions(core ATen table)` ->
`FxImporter().import_frozen_program`. Weights are inlined as dense_resource blobs; compile the
result with `--iree-input-type=torch`.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

TORCH_INPUT_FLAGS = ["--iree-input-type=torch"]

# torch 2.13's own export code trips its own deprecation (raised from copyreg while it copies
# pytree specs); it says nothing about the user's model. Only this message is silenced.
_TORCH_INTERNAL_WARNINGS = [r".*isinstance\(treespec, LeafSpec\)` is deprecated"]


@contextlib.contextmanager
def quiet_torch_export() -> Iterator[None]:
    """Silences torch's internal FutureWarning(s) of torch.export; other warnings stay."""
    with warnings.catch_warnings():
        for message in _TORCH_INTERNAL_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=FutureWarning)
        yield


def export_to_mlir(
    model,
    example_args: Sequence,
    *,
    keep_ops: Iterable = (),
    bytecode: bool = True,
) -> bytes:
    """Exports `model(*example_args)` and returns torch-dialect MLIR (bytecode by default).

    keep_ops: ATen ops to keep out of the decomposition table (e.g.
    `torch.ops.aten.scaled_dot_product_attention.default` to get iree_linalg_ext.attention).
    """
    import torch
    from iree.compiler import ir
    from iree.compiler.extras.fx_importer import FxImporter

    model = model.eval()
    with torch.no_grad(), quiet_torch_export():
        ep = torch.export.export(model, tuple(example_args), strict=False)
        table = torch.export.default_decompositions()
        for op in keep_ops:
            table.pop(op, None)
        ep = ep.run_decompositions(table)
    # Non-persistent buffers live in ep.constants; the importer only looks in state_dict.
    for name, value in ep.constants.items():
        if isinstance(value, torch.Tensor) and name not in ep.state_dict:
            ep.state_dict[name] = value
    with ir.Context() as ctx:
        importer = FxImporter(context=ctx)
        importer.import_frozen_program(ep)
        module = importer.module
        if not bytecode:
            return str(module).encode()
        buf = io.BytesIO()
        module.operation.write_bytecode(buf)
        return buf.getvalue()


def torch_outputs(model, example_args: Sequence) -> list[np.ndarray]:
    """The reference: the model run eagerly in PyTorch, outputs flattened to numpy."""
    import torch

    with torch.no_grad():
        out = model.eval()(*example_args)
    flat = out if isinstance(out, (tuple, list)) else [out]
    return [o.detach().cpu().numpy() for o in flat]
