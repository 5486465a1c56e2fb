"""iree-fusions: a Python MLIR plugin for IREE that cuts dispatches and bytes moved.

    import iree_fusions
    out = iree_fusions.compile("model.mlir", fusions="all")        # .vmfb bytes in out.output
    results = iree_fusions.run(out.output, inputs, device="local-task")
"""

from . import api, numerics  # noqa: F401
from .api import compare_outputs, compile_file, compile_str, load, run  # noqa: F401

compile = compile_file  # noqa: A001  (the name the documentation uses)

__version__ = "0.1.0"
