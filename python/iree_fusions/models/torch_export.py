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

# Element types a catalog model can be built in: the dtype name (a torch attribute) and the
# suffix its catalog entries carry (`towers-silu-b1-bf16`). float32 entries have no suffix.
DTYPE_SUFFIXES = {"float32": "", "bfloat16": "-bf16", "float16": "-f16"}
HALF_DTYPES = ("bfloat16", "float16")
# How far a half model's outputs may be from PyTorch's eager run of the same half model (both
# round every op to 8 or 11 significant bits, in different orders and with different
# accumulators); relative to the largest reference magnitude.
HALF_REFERENCE_RTOL = {"bfloat16": 2 ** -4, "float16": 2 ** -7}


def torch_dtype(name: str):
    """`torch.<name>` for one of DTYPE_SUFFIXES' names."""
    import torch

    if name not in DTYPE_SUFFIXES:
        raise ValueError(f"unknown dtype '{name}' (known: {', '.join(DTYPE_SUFFIXES)})")
    return getattr(torch, name)


def to_numpy(t) -> np.ndarray:
    """A torch tensor as numpy; bfloat16 (which numpy lacks) as ml_dtypes.bfloat16, the type
    iree.runtime reads and writes for bf16 buffers."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def reference_atol(reference: Sequence[np.ndarray], dtype: str, f32_atol: float) -> float:
    """The tolerance of a model's reference check: `f32_atol` for float32, else
    HALF_REFERENCE_RTOL[dtype] x the largest output magnitude."""
    if dtype == "float32":
        return f32_atol
    peak = max((float(np.abs(r.astype(np.float64)).max()) for r in reference if r.size),
               default=1.0)
    return HALF_REFERENCE_RTOL[dtype] * max(peak, 1.0)

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
    dynamic_shapes=None,
    shape_facts: bool = False,
) -> bytes:
    """Exports `model(*example_args)` and returns torch-dialect MLIR (bytecode by default).

    keep_ops: ATen ops to keep out of the decomposition table (e.g.
    `torch.ops.aten.scaled_dot_product_attention.default` to get iree_linalg_ext.attention).
    dynamic_shapes: torch.export's argument, passed through (e.g.
    `({0: torch.export.Dim("batch", min=2, max=64)},)`): those dims are dynamic (`?`) in the
    exported signature.
    shape_facts: import the symbolic shapes (`torch.bind_symbolic_shape`, which IREE lowers to
    `util.assume.int` facts), as sharktank's exports do.
    """
    import torch
    from iree.compiler import ir
    from iree.compiler.extras.fx_importer import FxImporter

    model = model.eval()
    with torch.no_grad(), quiet_torch_export():
        ep = torch.export.export(model, tuple(example_args), dynamic_shapes=dynamic_shapes,
                                 strict=False)
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
        importer.import_frozen_program(ep, import_symbolic_shape_expressions=shape_facts)
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
    return [to_numpy(o) for o in flat]
