"""Helpers shared by the batch_gathers test modules (test_batch_gathers*.py)."""

# ruff: noqa: E501  (IR lines in the test programs)

from __future__ import annotations

import re

import numpy as np

from support import passes


PASS = "batch-gathers"
BAGS = "rewrite-embedding-bags"
# The lit cases are small: below the default min-sliced-indices and min-pooled-indices.
LOW = "batch-gathers{min-sliced-indices=0 min-pooled-indices=0}"
# What --fusions=all runs of the two (F.embedding_bag generics are rewritten first).
GATHERS = f"{BAGS},{PASS}"
GATHERS_LOW = f"{BAGS},{LOW}"


def table_values(rows: int, dim: int, k: int) -> np.ndarray:
    """t_k[r, c] = 100 k + r + c / 1000: every element of every table differs."""
    r = np.arange(rows, dtype=np.float32)[:, None]
    c = np.arange(dim, dtype=np.float32)[None, :]
    return (100 * k + r + c / 1000).astype(np.float32)


def dense(values: np.ndarray) -> str:
    rows = ", ".join("[" + ", ".join(repr(float(x)) for x in row) + "]" for row in values)
    return f"dense<[{rows}]>"


def lit_cases() -> dict[str, str]:
    """function name -> IR of each `// -----` chunk of batch-gathers.mlir and
    rewrite-embedding-bags.mlir, splat tables made all-distinct."""

    def distinct(m: re.Match) -> str:
        k, rows, dim = int(float(m.group(1))), int(m.group(2)), int(m.group(3))
        return f"arith.constant {dense(table_values(rows, dim, k))} : tensor<{rows}x{dim}xf32>"

    return {name: re.sub(r"arith\.constant dense<(\d+)\.0> : tensor<(\d+)x(\d+)xf32>",
                         distinct, chunk)
            for p in (PASS, BAGS) for name, chunk in passes.lit_cases(p).items()}


def run_pass(text: str, pipeline: str = PASS) -> tuple[str, list]:
    return passes.run_pass(text, pipeline)
