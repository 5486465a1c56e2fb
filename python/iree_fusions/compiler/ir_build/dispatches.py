"""Builders over `flow.dispatch.workgroups` (after dispatch creation): a dispatch rebuilt with
other arguments, its repeated operands merged."""

from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir

from .. import ir_helpers as h
from .bodies import replace_op


def rebuild_workgroups(op: ir.Operation, kept: Sequence[int], added: Sequence[ir.Value],
                       added_types: Sequence[ir.Type]) -> tuple[ir.Operation, list[ir.Value]]:
    """A flow.dispatch.workgroups like `op` with the arguments `kept` (their dynamic dims and
    ties with them) and `added` appended (static, bound as `added_types`); both regions and
    every other attribute move over. Returns it, before `op`, and the body arguments of
    `added`. The body arguments of dropped operands stay with `op`: their uses must go before
    `op` is erased (`replace_op(op, new)`)."""
    view = h.Workgroups(op)
    operands, arguments = list(op.operands), view.arguments
    spans = h.argument_dims(op)
    n = len(arguments)
    position = {i: at for at, i in enumerate(kept)}
    tied = [position.get(t, -1) for t in h.tied_operands(op)]
    new_operands = (view.workload + [arguments[i] for i in kept] + list(added)
                    + [operands[k] for i in kept for k in spans[i]] + view.result_dims)
    with op.location, ir.InsertionPoint(op):
        new = ir.Operation.create(
            h.FLOW_DISPATCH_WORKGROUPS, results=[res.type for res in op.results],
            operands=new_operands,
            attributes={
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                    [len(view.workload), len(kept) + len(added),
                     sum(len(spans[i]) for i in kept), len(view.result_dims)]),
                "tied_operands": ir.ArrayAttr.get(
                    [ir.IntegerAttr.get(ir.IndexType.get(), t) for t in tied]),
            },
            regions=2)
    for attr_name in h.attr_names(op):
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


def merge_repeated_operands(op: ir.Operation) -> ir.Operation:
    """The dispatch with each tensor operand passed once (IREE's later passes expect that:
    RoPE's even and odd columns, once folded, are the same source twice); the uses of a
    repeated argument become uses of its first one."""
    view, operands = h.Workgroups(op), list(op.operands)
    args, arguments = view.body_arguments, view.arguments
    spans, tied, n = h.argument_dims(op), h.tied_operands(op), len(arguments)
    seen: list[tuple[int, ir.Value, list[ir.Value]]] = []
    drop: set[int] = set()
    for i, value in enumerate(arguments):
        if not isinstance(value.type, ir.RankedTensorType) or i in tied:
            continue
        dims = [operands[k] for k in spans[i]]
        first = next((j for j, v, d in seen if v == value and d == dims
                      and args[j].type == args[i].type), None)
        if first is None:
            seen.append((i, value, dims))
            continue
        args[i].replace_all_uses_with(args[first])
        drop.add(i)
    if not drop:
        return op
    new, _ = rebuild_workgroups(op, [i for i in range(n) if i not in drop], [], [])
    replace_op(op, new)
    return new
