"""flow.dispatch.workgroups: op names, the operand layout the flow-phase passes read, and a
rebuild with other arguments."""

from __future__ import annotations

from iree.compiler import ir

from collections.abc import Sequence

from .values import attr_names, segment_sizes

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


def dispatch_operand(op: ir.Operation, value: ir.Value) -> ir.Value:
    """The operand of a flow.dispatch.workgroups that a value of its body stands for (a body
    argument, or a workload ordinal of one); any other value as it is."""
    producer = value.owner
    if not isinstance(producer, ir.Block) and producer.name == DISPATCH_WORKLOAD_ORDINAL:
        value = producer.operands[0]
    if isinstance(value.owner, ir.Block) and value.owner == op.regions[0].blocks[0]:
        return op.operands[segment_sizes(op)[0] + ir.BlockArgument(value).arg_number]
    return value


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


def rebuild_workgroups(op: ir.Operation, kept: Sequence[int], added: Sequence[ir.Value],
                       added_types: Sequence[ir.Type]) -> tuple[ir.Operation, list[ir.Value]]:
    """A flow.dispatch.workgroups like `op` with the arguments `kept` (their dynamic dims and
    ties with them) and `added` appended (static, bound as `added_types`); both regions and
    every other attribute move over. Returns it, before `op`, and the body arguments of
    `added`. The body arguments of dropped operands stay with `op`: their uses must go before
    `op` is erased (`ir_build.replace_op(op, new)`)."""
    seg = segment_sizes(op)
    operands = list(op.operands)
    spans = argument_dims(op)
    n = seg[1]
    position = {i: at for at, i in enumerate(kept)}
    tied = [position.get(t, -1) for t in tied_operands(op)]
    new_operands = (operands[:seg[0]] + [operands[seg[0] + i] for i in kept] + list(added)
                    + [operands[k] for i in kept for k in spans[i]]
                    + operands[seg[0] + n + seg[2]:])
    with op.location, ir.InsertionPoint(op):
        new = ir.Operation.create(
            FLOW_DISPATCH_WORKGROUPS, results=[res.type for res in op.results],
            operands=new_operands,
            attributes={
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                    [seg[0], len(kept) + len(added), sum(len(spans[i]) for i in kept),
                     seg[3]]),
                "tied_operands": ir.ArrayAttr.get(
                    [ir.IntegerAttr.get(ir.IndexType.get(), t) for t in tied]),
            },
            regions=2)
    for attr_name in attr_names(op):
        if attr_name not in ("operandSegmentSizes", "tied_operands"):
            new.attributes[attr_name] = op.attributes[attr_name]
    old_body = op.regions[0].blocks[0]
    old_args = list(old_body.arguments)
    moved = [old_args[i] for i in kept] + old_args[n:]
    with op.location:
        body = new.regions[0].blocks.append(
            *[arg.type for arg in moved[:len(kept)]], *added_types,
            *[arg.type for arg in moved[len(kept):]])
    _move_block(old_body, body)
    fresh = list(body.arguments)
    for old, arg in zip(moved, fresh[:len(kept)] + fresh[len(kept) + len(added):]):
        old.replace_all_uses_with(arg)
    if len(op.regions[1].blocks):  # the workgroup count region
        old_count = op.regions[1].blocks[0]
        with op.location:
            count = new.regions[1].blocks.append(*[a.type for a in old_count.arguments])
        _move_block(old_count, count)
        for old, arg in zip(old_count.arguments, count.arguments):
            old.replace_all_uses_with(arg)
    return new, fresh[len(kept):len(kept) + len(added)]


def _move_block(src: ir.Block, dst: ir.Block) -> None:
    for op in list(src.operations):
        dst.append(op.operation)
