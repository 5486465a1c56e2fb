"""The candidates of one block, their keys and typed plans: each fixed-length embedding_bag
generic alone, and groups of independent embedding_bags with run-time offsets."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import Candidate, NoMatch, structural_key


from .match import (EmbeddingBag, OffsetsBag, VariableBags, match_embedding_bag,
                    match_offsets_bag)


@dataclass(frozen=True)
class OffsetsOptions:
    """The options of rewrite-embedding-bags that planning offsets bags reads."""

    offsets_bags: bool
    min_offsets_batch: int


@dataclass
class OffsetsBagGroup:
    """embedding_bags with run-time offsets summed by one generic writing [K, B, D]: member
    k's bags are summed in switch case k, from its own table, ids and offsets."""

    members: list[OffsetsBag]


Plan = EmbeddingBag | OffsetsBagGroup


def bag_candidate(op: ir.Operation) -> Candidate[EmbeddingBag] | OffsetsBag | None:
    """The rewrite of a fixed-length embedding_bag-like generic; an embedding_bag with
    run-time offsets (for `offsets_bag_candidates`); None: not one and reads no table."""
    try:
        return Candidate(_bag_key(op), op, "embedding_bag generic",
                         match_embedding_bag(op), gain="work")  # a quadratic scan made linear
    except VariableBags:
        try:
            return match_offsets_bag(op)
        except NoMatch as e:
            why = NoMatch(e.code, f"embedding_bag-like generic with run-time offsets: {e}")
    except NoMatch as e:
        why = NoMatch(e.code, f"embedding_bag-like generic: {e}")
    if not h.reads_table_in_body(op):
        return None
    return Candidate.refused(_bag_key(op), op, "embedding_bag generic", why)


def _bag_key(op: ir.Operation) -> str:
    """bags x length x dim, element and index types (from the operand types)."""
    ids, offsets = (h.static_type(operand) for operand in h.dps_inputs(op))
    res = h.static_type(op.results[0])
    if ids is None or offsets is None or res is None or ids.rank != 1 or res.rank == 0:
        return structural_key("rewrite-embedding-bags", h.op_signature(op))
    bags = offsets.shape[0] if offsets.rank else 1
    return structural_key("rewrite-embedding-bags", bags, ids.shape[0] // max(bags, 1),
                          res.shape[-1], str(res.element_type), str(ids.element_type))


def offsets_bag_candidates(bags: list[OffsetsBag], order: dict, opts: OffsetsOptions
                           ) -> Iterator[Candidate[OffsetsBagGroup]]:
    """Groups of independent embedding_bags with run-time offsets of one bag count, dim and
    element type (tables need not be constants: each is read in its own switch case)."""
    def shape(bag: OffsetsBag) -> tuple:
        return (bag.bags, bag.dim, str(bag.elem), h.static_type(bag.result).rank)

    for bucket in batching.buckets(bags, shape):
        for group in batching.independent_groups(bucket, order):
            cand = Candidate.of(offsets_key(group), group[0].op,
                                f"{len(group)} embedding_bag(s) with run-time offsets",
                                lambda group=group: _offsets_plan(group, opts), gain="work")
            if not cand.blocked:
                cand.decline("offsets-cost", offsets_declined(group, opts))
            yield cand


def offsets_key(members: list[OffsetsBag]) -> str:
    """Member count, bags, dim, element type; per member its id count, operand types, table
    origin and sum order; which members share a table, ids or offsets."""
    def sharing(values: list[ir.Value]) -> tuple[int, ...]:
        distinct = list(dict.fromkeys(values))
        return tuple(distinct.index(value) for value in values)

    first = members[0]
    return structural_key(
        "rewrite-embedding-bags-offsets", len(members), first.bags, first.dim, str(first.elem),
        tuple((member.n, str(member.table.type), h.value_origin(member.table), str(member.ids.type),
               str(member.offsets.type), member.row_first) for member in members),
        sharing([member.table for member in members]),
        sharing([member.ids for member in members]),
        sharing([member.offsets for member in members]))


def offsets_declined(group: list[OffsetsBag], opts: OffsetsOptions) -> str | None:
    """The cost rule (bench/results/batch-gathers.md, section 11): one bag per table is
    left to stock, whose scan of it is already linear and vectorized."""
    if group[0].bags < opts.min_offsets_batch:
        return (f"{group[0].bags} bag(s) per table, below min-offsets-batch="
                f"{opts.min_offsets_batch} (stock's scan is linear there)")
    return None


def _offsets_plan(group: list[OffsetsBag], opts: OffsetsOptions) -> OffsetsBagGroup:
    if not opts.offsets_bags:
        raise NoMatch("offsets-bags-off", "embedding_bags with run-time offsets are not rewritten "
                      "(offsets-bags=false)")
    return OffsetsBagGroup(group)
