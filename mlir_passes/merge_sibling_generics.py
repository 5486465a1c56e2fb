"""merge-sibling-generics: elementwise generics over the same loops whose results leave
linalg (read only by scatters and returns) -> one multi-result generic (one dispatch).

A paged KV cache is written by two scatters per layer, K's and V's, each with its own index
tensor: the same page arithmetic from the same arguments, ending in a different constant
(sharktank: `(page * layers + layer) * 2 + {0, 1}`). IREE fuses each index chain into a
dispatch of its own, and cannot fuse the two: a scatter takes no producer into its
dispatch, so each chain's last generic is the root of a dispatch, and a generic whose result
is read by both a scatter and the other chain (prefill's K index, which V's adds 1 to) is a
root too. The pass builds one linalg.generic computing every such chain end of a group, as
IREE's multi-use elementwise fusion would if the uses sat in one dispatch: each end is one
result of it; a chain that reads another end reads its value inside the body. The index
arithmetic shared by the chains is then fused into the one dispatch by IREE.

    %k = linalg.generic {addi} ins(%base, %c0) -> tensor<4x4xi64>    // K's page index
    %sk = iree_linalg_ext.scatter ins(%kv_k, %k) outs(%cache)
    %v = linalg.generic {addi} ins(%base, %c1) -> tensor<4x4xi64>    // V's page index
    %sv = iree_linalg_ext.scatter ins(%kv_v, %v) outs(%sk)
  =>
    %kv:2 = linalg.generic {addi, addi} ins(%base, %c0, %c1) -> tensor<4x4xi64>, tensor<4x4xi64>
    %sk = iree_linalg_ext.scatter ins(%kv_k, %kv#0) outs(%cache)
    %sv = iree_linalg_ext.scatter ins(%kv_v, %kv#1) outs(%sk)

The ops that a later end needs and that sit between the first end and it (V's chain, after
K's scatter) are moved up, before the first end; only ops without side effects move. Every
value is computed by the same operations on the same inputs, so results are bit-identical.

Left alone, with the reason: groups whose ends are separated by a contraction, a reduction
or an attention (the merged results would stay live across it); ends that read the result of
a contraction or reduction (IREE fuses such an end into that producer's dispatch: merged,
it would be a dispatch of its own); generics read by anything but scatters, returns and
other ends of the group with the same loops (IREE fuses those into their reader), and
generics whose body reads their init (the merged generic drops the inits of generics that
are no end); chains that need an op with side effects (a bounds assert), or one that does
not move (a `tensor.extract`), from between the ends; groups whose merged generic or moved
ops would use a value defined after the first generic of the group, where they go (a
group's result as another generic's init: the checks of `compiler/invariants.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.invariants import captured_values, check_defined_before, reads_init
from iree_fusions.compiler.ir_helpers import (
    ARITH_CONSTANT, LINALG_EXT_SCATTER, LINALG_FILL, LINALG_GENERIC, RESHAPES, TENSOR_CAST,
    TENSOR_DIM, TENSOR_EMPTY, VIEWS
)
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, option, round_analysis, structural_key)
from iree_fusions.compiler.analyses.cache_scatters import cache_scatter_pairs, plan_pair
from iree_fusions.compiler.ir_helpers.names import (
    AFFINE_APPLY, COMPUTE_BARRIER_END, HAL_TENSOR_BARRIER, HAL_TENSOR_EXPORT, UTIL_RETURN,
)


AGGRESSIVE = ("the ends index a cache's K and V scatters, which merge-cache-scatters stacks "
              "under IREE's aggressive fusion into one scatter with each index generic fused "
              "into it; merged into one multi-result generic, they would be a dispatch of "
              "their own")
SURE = ("IREE makes a generic read only by scatters or returns the root of a dispatch of its "
        "own; one multi-result generic is one dispatch")

# Readers that never take a producer into their dispatch.
_SINKS = (LINALG_EXT_SCATTER, UTIL_RETURN, HAL_TENSOR_EXPORT, HAL_TENSOR_BARRIER,
          COMPUTE_BARRIER_END)
# Ops that may move up: no side effects, no regions with them.
_MOVABLE = (TENSOR_EMPTY, TENSOR_DIM, TENSOR_CAST, ARITH_CONSTANT, LINALG_FILL,
            AFFINE_APPLY) + RESHAPES


@dataclass
class SiblingGenerics:
    """Generics merged into one, in block order, and which of them have readers outside."""

    members: list[ir.Operation]
    ends: list[ir.Operation]  # members whose result is read outside the group
    moved: list[ir.Operation]  # ops moved before the first member, in block order


def _is_heavy(op: ir.Operation) -> bool:
    """A contraction, reduction or attention: what IREE fuses elementwise consumers into (a
    scatter takes none, so ends on either side of one may merge)."""
    return op.name != LINALG_EXT_SCATTER and h.is_dispatch_root(op)


def _has_side_effects(op: ir.Operation) -> bool:
    return any(inner.name.startswith("cf.") for inner in h.walk_ops(op))


def _through_reshapes(value: ir.Value) -> Iterator[ir.Operation]:
    """The readers of `value`, looking through reshapes and casts."""
    for user in h.users(value):
        if user.name in VIEWS:
            yield from _through_reshapes(user.results[0])
        else:
            yield user


def _shape_ok(op: ir.Operation) -> bool:
    if op.name != LINALG_GENERIC or not h.is_elementwise(op) or len(op.results) != 1:
        return False
    out_map = h.indexing_maps(op)[-1]
    if out_map != ir.AffineMap.get_identity(out_map.n_dims) or _has_side_effects(op):
        return False
    return not reads_init(op)  # a member that is no end has its init dropped


def _reads_with_identity(reader: ir.Operation, value: ir.Value) -> bool:
    maps = h.indexing_maps(reader)
    return all(maps[i] == ir.AffineMap.get_identity(maps[i].n_dims)
               for i, v in enumerate(h.dps_inputs(reader)) if v == value)


def _input_from_heavy(op: ir.Operation) -> bool:
    return any((producer := h.producer_through_views(v)) is not None and _is_heavy(producer)
               for v in h.dps_inputs(op))


@dataclass
class BlockFacts:
    """One walk of a block: positions, the generics that may join a group (with whether a
    reader outside a group reads them) and their loops (dim_key per loop), and the number of
    heavy ops before each position."""

    positions: dict[ir.Operation, int]
    joinable: dict[ir.Operation, bool]
    loops: dict[ir.Operation, tuple]
    heavy_before: list[int]


def _joins(op: ir.Operation, facts: BlockFacts) -> bool | None:
    """Whether a sink reads `op` (None: it may not join; its readers are known already)."""
    if op.name != LINALG_GENERIC or len(op.results) != 1:
        return None
    result = op.results[0]
    direct = None
    readers = []
    for user in _through_reshapes(result):  # cheap checks first, stopping at the first
        if user.name not in _SINKS:         # reader that may not (most feed linalg ops)
            direct = h.users(result) if direct is None else direct
            if user not in facts.joinable or user not in direct:
                return None
        readers.append(user)
    if not readers or not _shape_ok(op) or _input_from_heavy(op):
        return None
    loops = h.loop_keys(op)
    if loops is None:
        return None
    keys = tuple(loops)
    for user in readers:
        if user.name not in _SINKS and not (_reads_with_identity(user, result)
                                            and facts.loops[user] == keys):
            return None
    facts.loops[op] = keys
    return any(u.name in _SINKS for u in readers)


def block_facts(block: ir.Block) -> BlockFacts:
    ops = [op.operation for op in block.operations]
    facts = BlockFacts({op: i for i, op in enumerate(ops)}, {}, {}, [])
    count = 0
    for op in ops:
        facts.heavy_before.append(count)
        count += _is_heavy(op)
    for op in reversed(ops):  # readers first: whether a reader may join is known
        read_outside = _joins(op, facts)
        if read_outside is not None:
            facts.joinable[op] = read_outside
    return facts


# Where the merged generic is built (the reasons' "after <WHERE>").
WHERE = "the first generic of the group"
SPLIT = "a contraction, reduction or attention lies between it and the chain end before"


def _groups(facts: BlockFacts) -> list[tuple[list[ir.Operation], bool]]:
    """Joinable generics with the same loops, linked by a shared input or a read of one
    another, in block order; split where a heavy op lies between consecutive members (the
    flag: the group starts at such a split)."""
    parent: dict[ir.Operation, ir.Operation] = {op: op for op in facts.joinable}

    def root(op: ir.Operation) -> ir.Operation:
        while parent[op] != op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    ordered = sorted(facts.joinable, key=facts.positions.__getitem__)
    first_reader: dict[tuple, ir.Operation] = {}
    for op in ordered:
        keys = facts.loops[op]
        for v in h.dps_inputs(op):
            producer = h.defining_op(v)
            if producer in facts.joinable:
                parent[root(op)] = root(producer)
            elif producer is None or producer.name != ARITH_CONSTANT:
                parent[root(op)] = root(first_reader.setdefault((keys, v), op))
    components: dict[ir.Operation, list[ir.Operation]] = {}
    for op in ordered:
        components.setdefault(root(op), []).append(op)
    groups = []
    heavy = facts.heavy_before
    for members in components.values():
        chunk, split = [members[0]], False
        for op in members[1:]:
            if heavy[facts.positions[op]] != heavy[facts.positions[chunk[-1]]]:
                groups.append((chunk, split))
                chunk, split = [], True
            chunk.append(op)
        groups.append((chunk, split))
    return groups


def _feeds_stacked_pair(ends: list[ir.Operation], positions: dict[ir.Operation, int]) -> bool:
    """Whether an end is the index tensor of a cache's K/V scatter pair that
    merge-cache-scatters stacks under aggressive fusion (it needs each index tensor from a
    generic of its own)."""
    scatters = dict.fromkeys(reader for op in ends for reader in _through_reshapes(op.results[0])
                             if reader.name == LINALG_EXT_SCATTER)  # in the ends' order
    for first, second in cache_scatter_pairs(scatters):
        try:
            if plan_pair(first, second, positions, aggressive_fusion=True).stacked:
                return True
        except NoMatch:
            pass
    return False


def plan_group(members: list[ir.Operation], facts: BlockFacts,
               defer_to_cache_scatters: bool = False) -> SiblingGenerics:
    """The group's plan, or NoMatch at the check that fails. `defer_to_cache_scatters`:
    leave a group whose ends index a cache's K/V scatter pair that merge-cache-scatters stacks
    (under IREE's aggressive fusion)."""
    member_set = set(members)
    ends = [op for op in members
            if facts.joinable[op] or any(u not in member_set for u in h.users(op.results[0]))]
    if len(ends) < 2:
        raise NoMatch("one-chain-end",
                      "one chain end: IREE fuses the chain into one dispatch already")
    if defer_to_cache_scatters and _feeds_stacked_pair(ends, facts.positions):
        raise NoMatch("aggressive", AGGRESSIVE)
    first = facts.positions[members[0]]
    moved: set[ir.Operation] = set()
    work = [v for op in members[1:] for v in list(op.operands) + captured_values(op)]
    while work:
        producer = h.defining_op(work.pop())
        if producer is None or producer in member_set or producer in moved:
            continue
        producer = h.block_ancestor(producer, facts.positions)
        if producer is None or facts.positions[producer] < first:
            continue
        if producer.name not in _MOVABLE and not (
                producer.name.startswith("arith.") or
                (h.is_elementwise_generic(producer) and not _has_side_effects(producer))):
            raise NoMatch("later-chain-needs",
                          f"a later chain needs {producer.name} from between the chain ends")
        moved.add(producer)
        work += list(producer.operands)
        if producer.regions:
            work += captured_values(producer)
    if any(h.defining_op(v) in member_set for op in moved for v in op.operands):
        raise NoMatch("later-chain-reads", "a later chain reads a chain end through another op")
    # The merged generic goes before the first member, after the moved ops: what it and the
    # moved ops use must exist there (a member's result only as another member's input).
    operands = [v for op in members for v in h.dps_inputs(op)
                if h.defining_op(v) not in member_set]
    operands += [h.dps_inits(op)[0] for op in ends]
    check_defined_before(operands, first, facts.positions, "an operand of the merged generic",
                         WHERE, moved)
    in_order = sorted(moved, key=facts.positions.__getitem__)
    for op in members + in_order:
        check_defined_before(captured_values(op), first, facts.positions,
                             f"a value the body of {op.name} captures", WHERE, moved)
    return SiblingGenerics(members, ends, in_order)


def merge_group(group: SiblingGenerics) -> str:
    first = group.members[0]
    for op in group.moved:
        op.move_before(first)
    rank = h.indexing_maps(first)[-1].n_dims
    identity = ir.AffineMap.get_identity(rank)
    member_set = set(group.members)
    member_at = {op: i for i, op in enumerate(group.members)}
    slots = b.InputSlots()
    for op in group.members:
        for v, m in zip(h.dps_inputs(op), h.indexing_maps(op)):
            if h.defining_op(v) not in member_set:
                slots.slot(v, m)

    def arg_map(op: ir.Operation) -> Callable[[list[list[ir.Value]]], b.ArgMap]:
        """Its block arguments: an input's slot, or, for a member's result it reads, the value
        that member's cloned body yields; its init is unread (checked when planning)."""
        return lambda yields: [
            yields[member_at[h.defining_op(v)]][0] if h.defining_op(v) in member_set
            else slots.slot(v, m) for v, m in zip(h.dps_inputs(op), h.indexing_maps(op))] + [None]

    inits = [(h.dps_inits(op)[0], identity) for op in group.ends]
    with first.location, ir.InsertionPoint(first):
        gen = b.multi_result_generic(
            slots.pairs, inits, ["parallel"] * rank,
            [(op, arg_map(op)) for op in group.members],
            results=lambda yields: [yields[member_at[op]][0] for op in group.ends])
    for i, op in enumerate(group.ends):
        op.results[0].replace_all_uses_with(gen.results[i])
    text = (f"{len(group.members)} elementwise generics over {first.results[0].type} with "
            f"{len(group.ends)} results read by scatters or returns -> one generic"
            + (f" ({len(group.moved)} op{'s' * (len(group.moved) > 1)} moved up)"
               if group.moved else ""))
    dead = [v for op in group.members for v in h.dps_inits(op)]
    for op in reversed(group.members):
        op.erase()
    b.erase_dead(dead, b.of_kind(TENSOR_EMPTY))
    return text


@dataclass(frozen=True)
class MergeSiblingGenerics(CandidatePass[SiblingGenerics]):
    name = "merge-sibling-generics"
    phase = "linalg"
    description = ("elementwise generics over the same loops read only by scatters or returns "
                   "(a paged cache's K and V indices) -> one multi-result generic")

    max_group: int = option(16, "generics merged into one, at most", min=2)

    def find(self, block: ir.Block, ctx: PassContext
             ) -> Iterator[Candidate[SiblingGenerics]]:
        facts = round_analysis(block_facts, block)
        # Chains whose ends index a K/V scatter pair are left to merge-cache-scatters where it
        # is selected and IREE fuses aggressively (it stacks the pair then).
        defer_to_cache_scatters = ctx.aggressive_fusion and \
            ctx.selected_pass("merge-cache-scatters") is not None
        for members, split in _groups(facts):
            if split:
                key = structural_key("merge-sibling-generics-split", h.op_signature(members[0]))
                yield Candidate.refused(key, members[0], "an elementwise generic read by scatters",
                                        NoMatch("split-by-scatters", SPLIT))
            if len(members) < 2:
                continue
            for start in range(0, len(members), self.max_group):
                chunk = members[start:start + self.max_group]
                if len(chunk) < 2:
                    continue
                key = structural_key("merge-sibling-generics", len(chunk),
                                     tuple(h.op_signature(op) for op in chunk))
                candidate = Candidate.of(
                    key, chunk[0], f"{len(chunk)} elementwise generics read by scatters",
                    lambda chunk=chunk: plan_group(chunk, facts, defer_to_cache_scatters))
                if not candidate.blocked:
                    candidate.sure = SURE
                yield candidate

    def footprint(self, candidate: Candidate[SiblingGenerics], ctx: PassContext) -> Footprint:
        group = candidate.plan
        readers = [u for op in group.ends for u in h.users(op.results[0])]
        ops = group.members + group.moved
        return Footprint.of(reads=ops, writes=ops + readers)

    def apply(self, candidate: Candidate[SiblingGenerics], ctx: PassContext) -> str:
        return merge_group(candidate.plan)
