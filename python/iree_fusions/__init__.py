"""iree-fusions: a Python MLIR plugin for IREE that cuts dispatches and bytes moved.

    import iree_fusions
    out = iree_fusions.compile("model.mlir", fusions="all")        # .vmfb bytes in out.output
    results = iree_fusions.run(out.output, inputs, device="local-task")
    out = iree_fusions.compile_torch(torch_model, (x,), fusions="all")  # PyTorch in

The script API (`iree_fusions.harness.api`, numpy) loads on first use, so that the compile
driver (`iree-fusions-compile`) does not pay for it at start-up.

Subpackages: `compiler` (passes' protocol, registry, pipeline, driver), `tools` (the CLIs),
`harness` (the script API, numerics, timing, bundles), `runtime` (the bundle runner: numpy and
iree.runtime only), `models`, and `passes` (the plugin's passes).
"""

import importlib

__version__ = "0.1.0"

_API_NAMES = ("CompileOptions", "compare_outputs", "compile_file", "compile_str", "load", "run")
__all__ = ["compile", "compile_torch", *_API_NAMES]


def __getattr__(name: str):
    if name == "compile_torch":
        return importlib.import_module(".harness.torch_api", __name__).compile_torch
    if name in _API_NAMES or name == "compile":
        api = importlib.import_module(".harness.api", __name__)
        return api.compile_file if name == "compile" else getattr(api, name)
    raise AttributeError(f"module 'iree_fusions' has no attribute '{name}'")
