"""flow.dispatch.workgroups: op names and the operand layout the flow-phase passes read."""

from __future__ import annotations

from iree.compiler import ir

from .values import segment_sizes

FLOW_DISPATCH_WORKGROUPS = "flow.dispatch.workgroups"
FLOW_TENSOR_RESHAPE = "flow.tensor.reshape"
DISPATCH_TENSOR_LOAD = "iree_tensor_ext.dispatch.tensor.load"
DISPATCH_TENSOR_STORE = "iree_tensor_ext.dispatch.tensor.store"
DISPATCH_WORKLOAD_ORDINAL = "iree_tensor_ext.dispatch.workload.ordinal"


def tied_operands(op: ir.Operation) -> list[int]:
    """Per result of a dispatch, the argument it is tied to (written in place; -1: none)."""
    if "tied_operands" not in op.attributes:
        return [-1] * len(op.results)
    return [ir.IntegerAttr(attr).value for attr in ir.ArrayAttr(op.attributes["tied_operands"])]


def argument_dims(op: ir.Operation) -> list[list[int]]:
    """Per argument of a flow.dispatch.workgroups, the operand numbers of its dynamic dims
    (operands: workload, arguments, argument dims, result dims)."""
    seg = segment_sizes(op)
    spans, at = [], seg[0] + seg[1]
    for i in range(seg[0], seg[0] + seg[1]):
        value = op.operands[i]
        n = (sum(1 for d in value.type.shape if d == ir.ShapedType.get_dynamic_size())
             if isinstance(value.type, ir.RankedTensorType) else 0)
        spans.append(list(range(at, at + n)))
        at += n
    return spans
