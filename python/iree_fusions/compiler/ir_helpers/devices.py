"""Device placements of the ops of a block (multi-device programs)."""

from __future__ import annotations

from iree.compiler import ir

from .order import defined_inside
from .values import attr_names, defining_op, walk_ops
from .names import BUILTIN_MODULE, FLOW_TENSOR_TRANSFER


# Dialects whose ops never carry a device affinity (IREE places affinities on flow, stream,
# hal and util ops: its AffinityOpInterface): their attributes are not read.
_NO_AFFINITY = ("linalg.", "tensor.", "arith.", "math.", "iree_linalg_ext.")


def _own_affinities(op: ir.Operation) -> set[str]:
    out: set[str] = set()
    if op.name.startswith(_NO_AFFINITY):
        return out
    for name in attr_names(op):
        attr = op.attributes[name]
        if type(attr) is not ir.Attribute:
            continue  # a builtin attribute (the bindings give its own class): never a device
        text = str(attr)
        if text.startswith(("#hal.device.affinity", "#hal.device.promise")):
            out.add(text)
    return out


def block_placements(block: ir.Block) -> dict[ir.Operation, frozenset[str]]:
    """Op -> the device affinities its inputs come from, for multi-device programs.

    A `flow.tensor.transfer` (or any op with a `#hal.device.affinity` attribute, e.g. an
    import on a device) places its result on that device; other ops inherit the placements
    of the values they read (operands, and values their bodies capture). Passes group only
    ops with equal placements, so nothing placed on different devices is merged. Empty sets
    everywhere in single-device programs."""
    ops = [op.operation for op in block.operations]
    owns = [_own_affinities(op) for op in ops]
    if not any(owns):  # no op names a device: nothing to propagate
        return dict.fromkeys(ops, frozenset())
    out: dict[ir.Operation, frozenset[str]] = {}
    for op, own in zip(ops, owns):
        if op.name == FLOW_TENSOR_TRANSFER:
            out[op] = frozenset(own)
            continue
        found = set(own)
        for v in _read_values(op):
            d = defining_op(v)
            if d is not None and d in out:
                found |= out[d]
        out[op] = frozenset(found)
    return out


def _read_values(op: ir.Operation) -> list[ir.Value]:
    """The op's operands and the values its regions use from outside."""
    values = list(op.operands)
    for nested in walk_ops(op):
        values += [v for v in nested.operands if not defined_inside(v, op)]
    return values


def single_device_affinity(block: ir.Block) -> ir.Attribute | None:
    """The module's default device affinity (`stream.affinity.default`, set by IREE's device
    materialization) when every op of `block` that names a device names that one (the
    imports of a single-device program do), i.e. every value of the block lives there; None
    in multi-device programs and in modules without one (IR given to iree-fusions-opt)."""
    op = block.owner
    while op is not None and op.name != BUILTIN_MODULE:
        op = op.parent
    if op is None or "stream.affinity.default" not in op.attributes:
        return None
    default = op.attributes["stream.affinity.default"]
    if any(_own_affinities(op.operation) - {str(default)} for op in block.operations):
        return None
    return default
