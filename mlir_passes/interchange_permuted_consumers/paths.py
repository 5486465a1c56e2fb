"""The chain from a producer to a permuted reader: how the pass finds what to rewrite.

A consumer C reads, through a permutation, the value of a path that starts at a producer P
(a non-elementwise op: the root of a dispatch) and goes through reshapes and elementwise ops
that read the chain with the identity map (bias adds, scales). Sizes may be dynamic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import op_location

from .views import is_reshape


def is_producer(op: ir.Operation | None) -> bool:
    """An op IREE makes a dispatch root: non-elementwise linalg / linalg_ext."""
    return op is not None and h.is_dispatch_root(op)



@dataclass
class Path:
    """The chain from a producer P to the value a consumer C reads (operand `operand`)."""

    consumer: ir.Operation
    operand: int  # index among C's DPS inputs
    producer: ir.Operation | None
    ops: list[ir.Operation] = field(default_factory=list)  # between P and C, P-side first
    reason: str | None = None

    @property
    def reshapes(self) -> list[ir.Operation]:
        return [op for op in self.ops if is_reshape(op)]

    @property
    def value(self) -> ir.Value:
        return h.dps_inputs(self.consumer)[self.operand]


def trace_path(consumer: ir.Operation, operand: int, max_depth: int = 16) -> Path:
    """Walks up from C's operand through reshapes and identity-reading elementwise ops."""
    value = h.dps_inputs(consumer)[operand]
    path = Path(consumer, operand, None)
    for _ in range(max_depth):
        op = h.defining_op(value)
        if op is None:
            path.reason = "reads a function argument"
            return path
        if is_producer(op):
            path.producer = op
            path.ops.reverse()
            return path
        if is_reshape(op):
            path.ops.append(op)
            value = op.operands[0]
            continue
        if h.is_elementwise(op):
            nxt = identity_chain_input(op)
            if nxt is None:
                path.reason = f"{op_location(op)} reads no producer with the identity map"
                return path
            path.ops.append(op)
            value = nxt
            continue
        path.reason = f"value comes from {op.name}"
        return path
    path.reason = "path too long"
    return path


def identity_chain_input(op: ir.Operation) -> ir.Value | None:
    """The input of an elementwise op read with the same map as its (single) result whose
    producer chain leads to a non-elementwise op; the first such input."""
    maps = h.indexing_maps(op)
    n_in = len(h.dps_inputs(op))
    if len(h.dps_inits(op)) != 1:
        return None
    out_map = maps[n_in]
    for value, map_ in zip(h.dps_inputs(op), maps[:n_in]):
        if map_ != out_map:
            continue
        producer = h.defining_op(value)
        if producer is not None and (is_producer(producer) or is_reshape(producer)
                                     or h.is_elementwise(producer)):
            return value
    return None
