"""Where ops are: positions in a block (the one notion of op order), ancestors in a block,
where values are defined, dominance."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from iree.compiler import ir

from .values import defining_op, users

# op -> its index in its block: which op comes first. Every pass asks it of one snapshot,
# `block_positions` (once per round with `round_analysis`), or of the ops themselves
# (`in_block_order`); no pass keeps an order of its own.
Positions = dict[ir.Operation, int]
# Where an op that is not one of the block's ops (nested in a region, or gone) sorts: last.
NOT_IN_BLOCK = 1 << 60


def block_positions(block: ir.Block) -> Positions:
    """op -> its index in the block (a snapshot: recompute after edits)."""
    return {op.operation: i for i, op in enumerate(block.operations)}


def position(op: ir.Operation, positions: Positions) -> int:
    """The op's index in the block of `positions` (ops nested deeper sort last)."""
    return positions.get(op, NOT_IN_BLOCK)


def op_at(positions: Positions, index: int) -> ir.Operation:
    """The op at `index` of the block of `positions`."""
    return next(op for op, pos in positions.items() if pos == index)


def in_block_order(ops: Iterable[ir.Operation]) -> list[ir.Operation]:
    """Ops of one block sorted in block order, without a walk of the block."""
    return sorted(ops, key=functools.cmp_to_key(
        lambda one, other: -1 if one.is_before_in_block(other) else 1))


def last_definition(values: Iterable[ir.Value], positions: Positions) -> int:
    """Position of the last op of the block (or the block's op that holds it) that defines
    one of `values`; -1 when the block defines none of them."""
    pos = -1
    for value in values:
        def_op = defining_op(value)
        if def_op is not None:
            ancestor = block_ancestor(def_op, positions)
            if ancestor is not None:
                pos = max(pos, positions[ancestor])
    return pos


def first_use(value: ir.Value, positions: Positions) -> int:
    """Position of the first op of the block (or the block's op that holds it) that uses
    `value`; NOT_IN_BLOCK when none does."""
    pos = NOT_IN_BLOCK
    for user in users(value):
        ancestor = block_ancestor(user, positions)
        if ancestor is not None:
            pos = min(pos, positions[ancestor])
    return pos


def defined_before(value: ir.Value, index: int, positions: Positions) -> bool:
    """`value` is defined before the op at `index` of the block of `positions`: by an op
    before it, or outside the block (a block argument, an enclosing region's value)."""
    owner = defining_op(value)
    if owner is None:
        return True  # block argument of an enclosing region
    if owner.parent is None or owner not in positions:
        return True  # defined outside this block (enclosing region)
    return positions[owner] < index


def block_ancestor(op: ir.Operation | None, positions: Positions) -> ir.Operation | None:
    """The op itself, or its ancestor that is one of `positions` (the block's ops)."""
    while op is not None and op not in positions:
        parent = op.parent
        op = parent.operation if parent is not None and hasattr(parent, "operation") else parent
    return op


def defined_in(value: ir.Value, block: ir.Block) -> bool:
    """The value is a result of an op of `block`, or one of its arguments."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return owner == block
    return owner.operation.block == block


def defined_inside(value: ir.Value, op: ir.Operation | ir.OpView) -> bool:
    """The value is a result of `op` or of an op nested in it, or an argument of one of its
    regions' blocks (e.g. a table a linalg body computes itself, not one it captures)."""
    owner = value.owner
    node = owner.owner if isinstance(owner, ir.Block) else owner.operation
    target = op.operation
    while node is not None:
        node = node.operation if hasattr(node, "operation") else node
        if node == target:
            return True
        node = node.parent
    return False


def dominates(value: ir.Value, op: ir.Operation | ir.OpView) -> bool:
    """`value` is available at `op`: a block argument or result of an op in a block enclosing
    `op`, defined before it (before its ancestor in that block)."""
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    node = op.operation
    while node is not None and node.block != block:
        parent = node.parent
        node = parent.operation if parent is not None and hasattr(parent, "operation") else None
    if node is None:
        return False
    if isinstance(owner, ir.Block):
        return True
    defining = owner.operation
    for other in block.operations:
        other = other.operation
        if other == defining:
            return other != node
        if other == node:
            return False
    return False
