"""fusions-report: an analysis pass that counts, per rewrite, the candidate ops in a module.

It changes nothing. Its report lists, per function, how many ops each rewrite could look at:

    util.func @main: 12 contraction(s), 4 permuted-consumer(s), 16 lookup(s), 3 factory op(s)

Use it to see whether a model has anything for the other passes before turning them on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    LINALG_BATCH_MATMUL, LINALG_FILL, LINALG_GENERIC, LINALG_MATMUL, TENSOR_COLLAPSE_SHAPE,
    TENSOR_EXPAND_SHAPE
)
from iree_fusions.compiler.protocol import FusionPass, PassContext


CONTRACTIONS = (LINALG_MATMUL, LINALG_BATCH_MATMUL, "linalg.matmul_transpose_b",
                "linalg.batch_matmul_transpose_b")


def reads_reduction_through_permutation(op: ir.Operation) -> bool:
    """An elementwise generic reading a reduction/contraction result with a non-identity
    permutation map (the producer may sit behind expand/collapse_shape)."""
    if not h.is_elementwise_generic(op):
        return False
    maps = h.indexing_maps(op)
    for value, amap in zip(h.dps_inputs(op), maps):
        producer = h.defining_op(value)
        while producer is not None and producer.name in (TENSOR_EXPAND_SHAPE,
                                                         TENSOR_COLLAPSE_SHAPE):
            producer = h.defining_op(producer.operands[0])
        if producer is None or not h.is_dispatch_root(producer):
            continue
        if amap.is_projected_permutation and not h.is_identity_map(amap):
            return True
    return False


def is_factory_generic(op: ir.Operation) -> bool:
    """A generic computed from indices and scalars only (no tensor input)."""
    return op.name == LINALG_GENERIC and not h.dps_inputs(op) and not h.reads_table_in_body(op)


def classify(op: ir.Operation) -> str | None:
    if op.name in CONTRACTIONS:
        return "contraction"
    if op.name == h.LINALG_EXT_GATHER or (
        op.name == LINALG_GENERIC and h.reads_table_in_body(op)
    ):
        return "lookup"
    if op.name == LINALG_FILL or is_factory_generic(op):
        return "factory op"
    if reads_reduction_through_permutation(op):
        return "permuted-consumer"
    return None


@dataclass(frozen=True)
class FusionsReport(FusionPass):
    name = "fusions-report"
    phase = "linalg"
    description = "counts the candidate ops of each rewrite; changes nothing"

    def run(self, module: ir.Operation, ctx: PassContext) -> None:
        for func in h.functions(module):
            counts: Counter = Counter()
            for op in h.walk_ops(func):
                kind = classify(op)
                if kind:
                    counts[kind] += 1
            if counts:
                sym = func.attributes["sym_name"].value
                summary = ", ".join(f"{num} {label}(s)" for label, num in sorted(counts.items()))
                ctx.report.note(f"{func.name} @{sym}: {summary}")
