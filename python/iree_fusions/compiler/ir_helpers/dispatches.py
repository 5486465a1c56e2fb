"""flow.dispatch.workgroups: the operand layout the flow-phase passes read (op names: `names.py`;
builders over a dispatch are in `ir_build/dispatches.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from iree.compiler import ir

from .names import DISPATCH_TENSOR_STORE, DISPATCH_WORKLOAD_ORDINAL
from .slices import static_parts
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
    return Workgroups(op).argument_dims


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

    @cached_property
    def argument_dims(self) -> list[list[int]]:
        """Per argument, the operand numbers of its dynamic dims."""
        spans, at = [], self.segments[0] + self.segments[1]
        for value in self.arguments:
            n = (sum(1 for d in value.type.shape if ir.ShapedType.is_dynamic_size(d))
                 if isinstance(value.type, ir.RankedTensorType) else 0)
            spans.append(list(range(at, at + n)))
            at += n
        return spans


@dataclass(frozen=True)
class DispatchTensorAccess:
    """An `iree_tensor_ext.dispatch.tensor.load` (tensor = its source) or `.store` (tensor = its
    target; value = what it stores), its operands decoded once (`operandSegmentSizes`): the
    dispatch tensor, that tensor's dynamic dims, the dynamic offsets, sizes and strides, and
    the static parts (kDynamic where an operand gives one; read from the op each time: a pass
    may set them)."""

    op: ir.Operation

    @cached_property
    def segments(self) -> tuple[int, ...]:
        return tuple(segment_sizes(self.op))

    @property
    def _first(self) -> int:  # a store's value comes before its target
        return 1 if self.op.name == DISPATCH_TENSOR_STORE else 0

    @property
    def tensor(self) -> ir.Value:
        return self.op.operands[self._first]

    @property
    def value(self) -> ir.Value:
        """What a store stores (a load: its result)."""
        return self.op.operands[0] if self._first else self.op.results[0]

    def _segment(self, k: int) -> list[ir.Value]:
        """The operands of segment `k` of (tensor, tensor dims, offsets, sizes, strides)."""
        at = self._first + sum(self.segments[self._first:self._first + k])
        return list(self.op.operands)[at:at + self.segments[self._first + k]]

    @property
    def tensor_dims(self) -> list[ir.Value]:
        return self._segment(1)

    @property
    def dynamic_sizes(self) -> list[ir.Value]:
        return self._segment(3)

    @property
    def parts(self) -> tuple[list[int], list[int], list[int]]:
        """(offsets, sizes, strides), static (kDynamic: given by an operand)."""
        return static_parts(self.op)


@dataclass(frozen=True)
class FlowReshape:
    """A flow.tensor.reshape: its source, and the run-time sizes of its source's and result's
    dynamic dims (`operandSegmentSizes`)."""

    op: ir.Operation

    @cached_property
    def segments(self) -> tuple[int, ...]:
        return tuple(segment_sizes(self.op))

    @property
    def source(self) -> ir.Value:
        return self.op.operands[0]

    @property
    def source_dims(self) -> list[ir.Value]:
        return list(self.op.operands)[1:1 + self.segments[1]]

    @property
    def result_dims(self) -> list[ir.Value]:
        return list(self.op.operands)[1 + self.segments[1]:]
