"""The lookup groups of one block (cross-table first, then same-table): candidates, keys and
typed plans. The concat writers' are in `writer.py`.

Grouping decides why a lookup stays alone where it checks: a cross-table group that fails a
check passes its reason to its members; a member the same-table stage leaves alone is
reported with the reason of the larger of its two groups (the cross-table one on a tie).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from iree.compiler import ir

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.invariants import check_no_parameter_stack
from iree_fusions.compiler.protocol import Candidate, NoMatch, structural_key

from .match import Lookup, distinct_tables, index_count, is_lookup_like, match_lookup
from .concats import SameSizes


@dataclass(frozen=True)
class GroupOptions:
    """The options of batch-gathers that grouping lookups reads."""

    min_group_size: int
    min_sliced_indices: int
    min_pooled_indices: int
    cross_table: bool
    same_table: bool
    dynamic_dim_estimate: int
    max_table_bytes: int
    stack_parameters: bool


SizeCheck = tuple[h.DimKey, h.DimKey]  # two sizes checked equal at run time
ELSEWHERE = ("the other candidate lookups read inputs placed on other devices (a multi-device "
             "program): ops on different devices are never merged")
DEPENDS = ("depends on the other candidates (or they on it): no single place dominates their "
           "inputs and precedes their uses")
NOT_CONSTANT = ("table is not a constant (stacking it would copy it on every call); only "
                "lookups of the same table merge")
OTHERS_NOT_CONSTANT = ("the other lookups of this shape read tables that are not constants "
                       "(stacking them would copy them on every call)")


@dataclass
class GroupPlan:
    """Lookups merged into one gather: of several constant tables stacked once at load
    (cross), or of one table (same); index tensors of different shapes are flattened."""

    members: list[Lookup]
    kind: Literal["cross", "same"]
    layout: Literal["stacked", "flat"]
    # Sizes that must be equal for the stacked layout and are not known to be (dynamic
    # batches of a concat's slots): checked at run time before the gather.
    checks: list[SizeCheck] = field(default_factory=list)


# ---------------------------------------------------------------- lookups


def collect_lookups(block: ir.Block, unroll_means: bool
                    ) -> tuple[list[Lookup], list[Candidate]]:
    """The block's lookups (pooled where a sum follows), and the lookup-like ops that are
    not candidates, as blocked candidates with the reason."""
    lookups: list[Lookup] = []
    blocked: list[Candidate] = []
    for op in list(block.operations):
        op = op.operation
        if not is_lookup_like(op):
            continue
        try:
            lookups.append(match_lookup(op, unroll_means))
        except NoMatch as e:
            key = structural_key("batch-gathers-lookup", h.op_signature(op))
            blocked.append(Candidate.refused(key, op, "lookup-like op", e))
    return lookups, blocked


# ---------------------------------------------------------------- groups


def group_key(kind: str, members: list[Lookup], layout: str = "stacked") -> str:
    """Group kind, member count, embedding dim, element and index types, index shapes,
    pooling, table shapes and origins (constant, global, argument), and which members share
    a table or an index tensor."""
    first = members[0]
    tables = distinct_tables(members)
    indices = list(dict.fromkeys(member.index for member in members))
    return structural_key(
        "batch-gathers-group", kind if layout == "stacked" else f"{kind}-{layout}", len(members),
        first.dim, str(first.elem), str(first.index_elem),
        tuple(str(member.index.type) for member in members), first.pooling, first.pool_axis,
        tuple(str(member.table.type) for member in members),
        tuple(h.value_origin(member.table) for member in members),
        tuple(tables.index(member.table) for member in members),
        tuple(indices.index(member.index) for member in members),
        tuple(member.op.name for member in members),
        tuple(check is not None for check in first.checks))


def not_constant_reason(table: ir.Value) -> str:
    """Why a table is not stacked: a mutable global (it can change between calls), else
    a value known only at run time."""
    op = h.defining_op(table)
    if op is not None and op.name == h.UTIL_GLOBAL_LOAD and "is_immutable" not in op.attributes:
        name = h.global_symbol(op)
        return (f"table is the mutable global @{name} (it can change between calls: never "
                "stacked); only lookups of the same table merge")
    return NOT_CONSTANT


def _left_alone(key: str, lookup: Lookup, why: NoMatch) -> Candidate[GroupPlan]:
    return Candidate.refused(key, lookup.op, "lookup left alone", why)


def group_candidates(lookups: list[Lookup], order: dict, sizes: SameSizes,
                     opts: GroupOptions) -> Iterator[Candidate[GroupPlan]]:
    """Cross-table groups, then same-table groups (seed 001: the other order strands
    lookups); a lookup no group takes is a blocked candidate with the reason."""
    cross, left_alone = _cross_table_stage(lookups, order, sizes, opts) if opts.cross_table \
        else ([], {})
    yield from cross
    taken = {member for cand in cross for member in cand.plan.members}
    yield from _same_table_stage([lookup for lookup in lookups if lookup not in taken], order,
                                 left_alone, sizes, opts)


LeftAlone = dict[Lookup, tuple[int, Candidate[GroupPlan]]]  # lookup -> (group size, why)


def _cross_table_stage(lookups: list[Lookup], order: dict, sizes: SameSizes,
                       opts: GroupOptions) -> tuple[list[Candidate[GroupPlan]], LeftAlone]:
    """The cross-table groups that can apply, and why the stage leaves lookups out (those of
    one table are left to the same-table stage without a reason)."""
    groups: list[Candidate[GroupPlan]] = []
    left_alone: LeftAlone = {}
    same_shape = Counter(lookup.shape_key() for lookup in lookups)
    constant = []
    for lookup in lookups:
        if h.is_constant_like(lookup.table):
            constant.append(lookup)
        elif same_shape[lookup.shape_key()] > 1:
            left_alone[lookup] = (1, _left_alone(
                group_key("cross", [lookup]), lookup,
                NoMatch("table-not-constant", not_constant_reason(lookup.table))))
    for bucket in batching.buckets(constant, Lookup.shape_key):
        for group in batching.independent_groups(bucket, order):
            if len(group) == 1:
                if same_shape[group[0].shape_key()] > 1:
                    why = _alone(group[0], bucket) if len(bucket) > 1 else \
                        NoMatch("others-not-constant", OTHERS_NOT_CONSTANT)
                    left_alone[group[0]] = (1, _left_alone(group_key("cross", group), group[0],
                                                           why))
                continue
            if len(distinct_tables(group)) < 2:
                continue  # one table: the same-table stage merges these
            layout = group_layout(group, sizes)
            cand = Candidate.of(group_key("cross", group, layout[0]), group[0].op,
                                f"cross-table group of {len(group)} lookups",
                                lambda group=group, layout=layout: _cross_plan(group, layout, opts))
            if cand.blocked:
                why = NoMatch(cand.code, cand.reason)
                left_alone.update({member: (len(group), _left_alone(cand.key, member, why))
                                   for member in group})
            else:
                groups.append(cand)
    return groups, left_alone


def _same_table_stage(lookups: list[Lookup], order: dict, left_alone: LeftAlone,
                      sizes: SameSizes, opts: GroupOptions) -> Iterator[Candidate[GroupPlan]]:
    """Groups of one table; a member of a blocked group is reported with the reason of the
    larger of its cross-table and same-table groups (the cross-table one on a tie)."""
    for bucket in batching.buckets(lookups, Lookup.table_key):
        for group in batching.independent_groups(bucket, order):
            layout = group_layout(group, sizes)
            kind = "flat" if layout[0] == "flat" else "same"
            cand = Candidate.of(group_key(kind, group), group[0].op,
                                f"same-table group of {len(group)} lookups",
                                lambda group=group, bucket=bucket, layout=layout:
                                _same_plan(group, bucket, layout, opts))
            if not cand.blocked:
                yield cand
                continue
            for member in group:
                size, cross = left_alone.get(member, (0, None))
                placed_apart = cand.code == "placed-apart"  # the reason that matters most
                yield cross if size >= len(group) and not placed_apart else \
                    _left_alone(cand.key, member, NoMatch(cand.code, cand.reason))


Layout = tuple[Literal["stacked", "flat"], list[SizeCheck], str | None]


def group_layout(group: list[Lookup], sizes: SameSizes) -> Layout:
    """(layout, run-time size checks, why no layout fits): stacked [K, S..., D] when the
    members' index shapes are one shape (dynamic dims: the same size, or sizes a concat
    makes equal, checked at run time); otherwise the flat layout [sum N_k, D] (any sizes),
    which pooled lookups do not have."""
    first = group[0]
    checks: list[SizeCheck] = []
    unequal: list[str] = []
    for member in group[1:]:
        if member.index_shape != first.index_shape:
            unequal.append(f"{member.describe()} vs {first.describe()}")
            continue
        for size, first_size in zip(member.index_sizes, first.index_sizes):
            if size == first_size:
                continue
            if sizes.same(size, first_size):
                checks.append((size, first_size))
            else:
                unequal.append(f"{h.size_text(size)} vs {h.size_text(first_size)}")
    if not unequal:
        return "stacked", list(dict.fromkeys(checks)), None
    if first.pool is None:
        return "flat", [], None
    return "flat", [], (f"the bags' index shapes differ ({'; '.join(unequal[:3])}: dynamic "
                        "dims not known to be equal) and bags are batched only stacked")


def _cross_plan(group: list[Lookup], layout: Layout, opts: GroupOptions) -> GroupPlan:
    _check_size(group, opts)
    if layout[2] is not None:
        raise NoMatch("bag-shapes", layout[2])
    if h.value_bytes(distinct_tables(group)) > opts.max_table_bytes:
        raise NoMatch("max-table-bytes",
                      f"stacking the tables would exceed max-table-bytes={opts.max_table_bytes}")
    check_no_parameter_stack(distinct_tables(group), "tables", opts.stack_parameters)
    _check_indices(group, opts)
    return GroupPlan(group, "cross", layout[0], layout[1])


def _same_plan(group: list[Lookup], bucket: list[Lookup], layout: Layout,
               opts: GroupOptions) -> GroupPlan:
    if len(group) == 1 and len(group) < opts.min_group_size:
        if len(bucket) == 1:
            raise NoMatch("alone",
                          f"no other lookup with {group[0].describe()} (or of the same table)")
        raise _alone(group[0], bucket)
    _check_size(group, opts)
    if not opts.same_table:
        raise NoMatch("same-table-off", "lookups of one table are not merged (same-table=false)")
    if layout[2] is not None:
        raise NoMatch("bag-shapes-same-table", layout[2])
    _check_indices(group, opts)
    return GroupPlan(group, "same", layout[0], layout[1])


def _alone(lookup: Lookup, bucket: list[Lookup]) -> NoMatch:
    """Why a lookup with partners of its kind is left alone."""
    if all(other.placement != lookup.placement for other in bucket if other is not lookup):
        return NoMatch("placed-apart", ELSEWHERE)
    return NoMatch("dependent", DEPENDS)


def _check_size(group: list[Lookup], opts: GroupOptions) -> None:
    if len(group) < opts.min_group_size:
        raise NoMatch("min-group-size", f"{len(group)} candidate lookup(s), below "
                      f"min-group-size={opts.min_group_size}")


def _check_indices(group: list[Lookup], opts: GroupOptions) -> None:
    count = index_count(group, opts.dynamic_dim_estimate)
    if group[0].pool is None and count < opts.min_sliced_indices:
        raise NoMatch("min-sliced-indices",
                      f"{count} indices in all candidates, below min-sliced-indices="
                      f"{opts.min_sliced_indices} (results would be sliced back)")
    if group[0].pool is not None and count < opts.min_pooled_indices:
        raise NoMatch("min-pooled-indices",
                      f"{count} indices in all candidate bags, below min-pooled-indices="
                      f"{opts.min_pooled_indices}")
