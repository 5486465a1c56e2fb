"""Shared by the passes that batch independent ops of one block (batch-gathers,
rewrite-embedding-bags): buckets by key, greedy groups of independent members in program
order, where the batched op goes, and views hoisted next to their operands so that
independent members do not look interleaved."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from iree.compiler import ir

from . import ir_helpers as h
from .ir_helpers import TENSOR_CAST, TENSOR_COLLAPSE_SHAPE, TENSOR_EXPAND_SHAPE
from iree_fusions.compiler.ir_helpers.names import COMPUTE_BARRIER_START

# Pure views an importer puts just before their reader (moved up by `hoist_view_chain`).
VIEW_OPS = (TENSOR_COLLAPSE_SHAPE, TENSOR_EXPAND_SHAPE, TENSOR_CAST,
            COMPUTE_BARRIER_START)


def hoist_view_chain(value: ir.Value, block: ir.Block) -> None:
    """Moves the reshapes/barriers that produce `value` up to right after their operands.

    At B = 1 IREE reshapes each id tensor (and opens its compute barrier) just before its
    lookup, after the previous lookup's results were used, which makes independent lookups
    look interleaved. These ops are pure views of values defined earlier: moving them
    changes no value (a normalization, idempotent)."""
    hoist_chain(value, block, lambda op: op.name in VIEW_OPS)


def hoist_chain(value: ir.Value, block: ir.Block,
                movable: Callable[[ir.Operation], bool]) -> None:
    """Moves the ops of `block` that `movable` accepts (pure ones) and that produce
    `value`, recursively, up to right after the ops that define their operands."""
    op = h.defining_op(value)
    if op is None or not movable(op) or op.block != block:
        return
    for operand in op.operands:
        hoist_chain(operand, block, movable)
    order = h.block_positions(block)
    last = h.last_definition(op.operands, order)
    if order[op] > last + 1:
        op.move_before(h.op_at(order, last + 1))


def independent_groups(members: list, order: h.Positions) -> list[list]:
    """Greedy groups in program order whose members are independent (one place comes after
    every input they read and before every use of their results) and placed on the same
    devices. A member has `op`, `inputs`, `result` and `placement`."""
    groups: list[tuple[list, int, int]] = []
    for member in sorted(members, key=lambda member: order[member.op]):
        def_at = h.last_definition(member.inputs, order)
        use_at = h.first_use(member.result, order)
        for i, (group, group_def_at, group_use_at) in enumerate(groups):
            if max(group_def_at, def_at) < min(group_use_at, use_at) and \
                    group[0].placement == member.placement:
                groups[i] = (group + [member], max(group_def_at, def_at), min(group_use_at, use_at))
                break
        else:
            groups.append(([member], def_at, use_at))
    return [group for group, _, _ in groups]


def buckets(lookups: list, key: Callable[..., tuple]) -> list[list]:
    """The members by `key(member)`, in order of first appearance."""
    by_key: dict[tuple, list] = defaultdict(list)
    for lookup in lookups:
        by_key[key(lookup)].append(lookup)
    return list(by_key.values())


def first_use_anchor(members: list, order: h.Positions) -> ir.Operation:
    """The first op that uses a member's result: the batched gather goes as late as it can
    (grouping made sure that every member's first use comes after the last definition the
    group reads). As early as possible (right after that definition) measured worse: in a
    function whose arguments are imported one by one, the gather lands between two imports
    and IREE's stream partitioning then cuts the call into two submissions (dlrm-b8: a host
    wait between the bag dispatch and the rest)."""
    return h.op_at(order, min(h.first_use(member.result, order) for member in members))
