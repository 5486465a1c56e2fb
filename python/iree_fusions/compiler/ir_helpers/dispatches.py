"""flow.dispatch.workgroups: the operand layout the flow-phase passes read (op names: `names.py`;
builders over a dispatch are in `ir_build/dispatches.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from iree.compiler import ir

from .names import DISPATCH_WORKLOAD_ORDINAL
from .values import segment_sizes


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
        return op.operands[Workgroups(op).operand_number(ir.BlockArgument(value).arg_number)]
    return value


def argument_dims(op: ir.Operation) -> list[list[int]]:
    """Per argument of a flow.dispatch.workgroups, the operand numbers of its dynamic dims
    (operands: workload, arguments, argument dims, result dims)."""
    seg = segment_sizes(op)
    spans, at = [], seg[0] + seg[1]
    for value in Workgroups(op).arguments:
        n = (sum(1 for d in value.type.shape if d == ir.ShapedType.get_dynamic_size())
             if isinstance(value.type, ir.RankedTensorType) else 0)
        spans.append(list(range(at, at + n)))
        at += n
    return spans


@dataclass(frozen=True)
class Workgroups:
    """A flow.dispatch.workgroups, its operands decoded once: workload, arguments, the
    arguments' dynamic dims, the results' dynamic dims (`operandSegmentSizes`, read once per
    view: an op's segments never change), and the body argument each argument is bound to.
    Operand numbers are the op's."""

    op: ir.Operation

    @cached_property
    def segments(self) -> tuple[int, ...]:
        return tuple(segment_sizes(self.op))

    @property
    def workload(self) -> list[ir.Value]:
        return list(self.op.operands)[:self.segments[0]]

    @property
    def arguments(self) -> list[ir.Value]:
        seg = self.segments
        return list(self.op.operands)[seg[0]:seg[0] + seg[1]]

    @property
    def argument_dim_values(self) -> list[ir.Value]:
        seg = self.segments
        return list(self.op.operands)[seg[0] + seg[1]:sum(seg[:3])]

    @property
    def result_dims(self) -> list[ir.Value]:
        seg = self.segments
        return list(self.op.operands)[sum(seg[:3]):sum(seg[:4])]

    @property
    def body_arguments(self) -> list[ir.BlockArgument]:
        return list(self.op.regions[0].blocks[0].arguments)

    def argument_number(self, operand_number: int) -> int | None:
        """Which argument an operand number is (None: a workload value or a dim)."""
        seg = self.segments
        return operand_number - seg[0] if seg[0] <= operand_number < seg[0] + seg[1] else None

    def operand_number(self, argument: int) -> int:
        return self.segments[0] + argument

    def body_argument(self, operand_number: int) -> ir.BlockArgument:
        """The body argument an argument operand is bound to."""
        return self.body_arguments[operand_number - self.segments[0]]
