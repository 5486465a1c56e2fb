"""Shared helpers of the per-pass tests: the lit file's cases, and running a pipeline."""

from __future__ import annotations

import os
import re

from iree.compiler import ir

from iree_fusions.pipeline import parse_pipeline, run_pipeline

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def lit_cases(pass_name: str) -> dict[str, str]:
    """function name -> IR of each `// -----` chunk of test/passes/<pass_name>.mlir (the
    name of a chunk's first public function names the case)."""
    with open(os.path.join(ROOT, "test", "passes", f"{pass_name}.mlir")) as f:
        chunks = f.read().split("// -----")
    return {re.search(r"util\.func public @(\w+)", c).group(1): c for c in chunks}


def run_pass(text: str, pipeline: str) -> tuple[str, list]:
    """Runs `pipeline` (plugin and MLIR passes) on `text`: (printed IR, pass reports)."""
    with ir.Context():
        module = ir.Module.parse(text)
        out, reports = run_pipeline(module.operation, parse_pipeline(pipeline))
        return str(out), reports
