"""PyTorch entry point: an `nn.Module` in, a compiled module and the plugin's report out.

    import torch, iree_fusions
    out = iree_fusions.compile_torch(model, (x,), device="local-task", fusions="all")
    out.output                      # .vmfb bytes
    out.reports                     # what each pass changed (and left alone), per pass
    iree_fusions.run(out.output, [x.numpy()])

The model is exported as the catalog's models are (torch.export, core-ATen decompositions,
IREE's fx_importer; see `models/torch_export.py`), then compiled by iree-fusions-compile with
`--iree-input-type=torch` in a child process (`iree_fusions.compile_file`). A module exported
by iree-turbine is taken as it is:

    from iree.turbine import aot
    out = iree_fusions.compile_torch(aot.export(model, x))
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

from .api import CompileOptions, CompileOutput, compile_file


def compile_torch(
    module,
    example_args=None,
    options: CompileOptions | None = None,
    *,
    keep_ops: Iterable = (),
    save_mlir: str | None = None,
    dynamic_shapes=None,
    **overrides,
) -> CompileOutput:
    """Exports `module(*example_args)` and compiles it with the plugin.

    - `module`: a `torch.nn.Module`, or the result of iree-turbine's `aot.export(...)` (then
      without `example_args`: it is compiled as turbine exported it).
    - `example_args`: a tensor or a tuple/list of tensors (their shapes and dtypes are the
      compiled function's signature: `main`).
    - `options` (`api.CompileOptions`) and `overrides` (its fields as keywords): how to
      compile -- `device` / `target` (`local-task`, `cuda`, `hip`, `vulkan`, ...; `sm_80`,
      `gfx942`, `ampere`, ...), `fusions` (`all`, `none` or `pass-a,pass-b{opt=v}`), `stock`
      (plain iree-compile, the reference), `decisions` (a file of iree-fusions-tune),
      `flags` (more iree-compile flags), `compile_to` (stop at a phase, e.g. `flow`, and
      return IR), `output_file`, `timeout`, `keep_no_gain`, `timing`.
    - `keep_ops`: ATen ops kept out of the decompositions (e.g.
      `torch.ops.aten.scaled_dot_product_attention.default`).
    - `save_mlir`: also write the exported torch-dialect module (bytecode) to this path.
    - `dynamic_shapes`: torch.export's argument, passed through (`({0: Dim("batch")},)`): the
      compiled function takes any size in those dims.

    Returns a `CompileOutput`: `.output` (the .vmfb, or IR; empty when `output_file` is
    given), `.reports` (per pass: what it changed and why it left candidates alone),
    `.command` (to reproduce from the saved module), `.stderr`.
    """
    from ..models.torch_export import TORCH_INPUT_FLAGS, export_to_mlir

    with tempfile.TemporaryDirectory(prefix="iree-fusions-torch-") as tmp:
        path = save_mlir or os.path.join(tmp, "model.mlirbc")
        if _is_turbine_export(module):
            if example_args is not None:
                raise TypeError("compile_torch: an aot.export(...) result takes no example_args")
            if dynamic_shapes is not None:
                raise TypeError("compile_torch: give dynamic_shapes to aot.export(...), not here")
            module.save_mlir(path)  # bytecode for .mlirbc, else text
        else:
            if example_args is None:
                raise TypeError("compile_torch: example_args are needed to export a module")
            args = (tuple(example_args) if isinstance(example_args, (tuple, list))
                    else (example_args,))
            with open(path, "wb") as f:
                f.write(export_to_mlir(module, args, keep_ops=keep_ops,
                                       dynamic_shapes=dynamic_shapes))
        opts = (options or CompileOptions()).with_(**overrides)
        return compile_file(path, opts.with_(flags=(*TORCH_INPUT_FLAGS, *opts.flags)))


def _is_turbine_export(obj) -> bool:
    """iree-turbine's `aot.export(...)` result (ExportOutput), without importing turbine."""
    return hasattr(obj, "save_mlir") and hasattr(obj, "mlir_module")
