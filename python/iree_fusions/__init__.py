"""iree-fusions: a Python MLIR plugin for IREE that cuts dispatches and bytes moved."""

from .api import compile_file, compile_str, load, run, compare_outputs  # noqa: F401

__version__ = "0.1.0"
