"""Linalg phase: the factory values read by non-factory ops (roots), whether each is forwarded
into its consuming generics (a plan, or the reason it is not), and which materialized ones are
compacted into one generic. Keys describe structure only (see `structural_key`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_CONSTANT, LINALG_BROADCAST, LINALG_FILL, LINALG_GENERIC, LINALG_TRANSPOSE, TENSOR_EMPTY,
    RESHAPES, TENSOR_COLLAPSE_SHAPE, TENSOR_EXPAND_SHAPE, TENSOR_EXTRACT_SLICE, TENSOR_INSERT_SLICE
)
from iree_fusions.compiler.protocol import Candidate, NoMatch, structural_key

from .analysis import Factory, FactoryAnalysis, missing_sizes
from iree_fusions.compiler.ir_helpers.names import (
    COMPUTE_BARRIER_END, FLOW_TENSOR_TRANSFER, FUNC_CALL, FUNC_RETURN, HAL_TENSOR_ALIAS,
    HAL_TENSOR_EXPORT, UTIL_CALL, UTIL_RETURN,
)


@dataclass(frozen=True)
class ForwardCost:
    """The options of forward-factory-ops that weighing a forward reads."""

    ops_per_byte: float
    ops_per_dispatch: float
    ignore_cost: bool
    dynamic_dim_estimate: int


ESCAPES = (UTIL_RETURN, FUNC_RETURN, HAL_TENSOR_EXPORT, HAL_TENSOR_ALIAS,
           COMPUTE_BARRIER_END, h.UTIL_GLOBAL_STORE, FLOW_TENSOR_TRANSFER,
           UTIL_CALL, FUNC_CALL)
# Chain ops that form a dispatch of their own (compaction is worth it when there are several).
_HEAVY = (LINALG_GENERIC, TENSOR_INSERT_SLICE, LINALG_BROADCAST, LINALG_TRANSPOSE,
          TENSOR_EXTRACT_SLICE)


@dataclass
class Root:
    """A factory value read by ops that are not factory ops."""

    factory: Factory
    consumers: list[tuple[ir.Operation, int]] = field(default_factory=list)  # (generic, ins #)
    blocked: list[str] = field(default_factory=list)  # users it cannot be forwarded into
    escapes: bool = False
    chain_users: list[ir.Operation] = field(default_factory=list)  # factory ops reading it
    not_forwarded: str | None = None  # the cost rule's reason, when it declined the forward

    @property
    def value(self) -> ir.Value:
        return self.factory.value

    @property
    def op(self) -> ir.Operation:
        return h.defining_op(self.factory.value)


@dataclass
class ForwardPlan:
    """Recompute the root inside each of its consumers (`detail`: the cost balance)."""

    root: Root
    detail: str
    analysis: FactoryAnalysis


@dataclass
class CompactPlan:
    """Compute the roots (one shape) with one generic from indices and leaves."""

    roots: list[Root]
    block: ir.Block
    analysis: FactoryAnalysis


def _consumer_problem(op: ir.Operation) -> str | None:
    """None if the pass can recompute a factory operand inside op; else the reason why not."""
    if op.name != LINALG_GENERIC:
        return f"consumer {op.name} is not a linalg.generic"
    for body_op in h.body_block(op).operations:
        if len(body_op.operation.regions):
            return "consumer body has nested regions"
    if h.loop_keys(op) is None:
        return "a consumer loop ranges over no tensor dim"
    return None


def collect_roots(block: ir.Block, analysis: FactoryAnalysis
                  ) -> tuple[list[Root], list[tuple[ir.Value, str]]]:
    """The roots of the block, and the values that are not factory values only because they
    are expensive generators (with that reason)."""
    roots: list[Root] = []
    generators: list[tuple[ir.Value, str]] = []
    for op in block.operations:
        op = op.operation
        if op.name in (ARITH_CONSTANT, TENSOR_EMPTY):
            continue
        for value in op.results:
            if not isinstance(value.type, ir.RankedTensorType) or not list(value.uses):
                continue
            factory = analysis.info(value)
            if factory is None:
                if value in analysis.expensive:
                    generators.append((value, analysis.reasons[value]))
                continue
            root = Root(factory)
            _classify_uses(root, block, analysis)
            if root.consumers or root.blocked:
                roots.append(root)
    return roots, generators


def _classify_uses(root: Root, block: ir.Block, analysis: FactoryAnalysis) -> None:
    for use in root.value.uses:
        user = h.use_owner(use)
        if user.name in ESCAPES or user.block != block:
            root.escapes = root.escapes or user.name in ESCAPES
            root.blocked.append(f"used by {user.name}")
            continue
        if any(analysis.info(result) is not None for result in user.results):
            root.chain_users.append(user)  # the factory chain goes on in that user
            continue
        reason = _consumer_problem(user)
        n_in = len(h.dps_inputs(user)) if user.name == LINALG_GENERIC else 0
        if reason is None and use.operand_number >= n_in:
            reason = "used as the init of a generic"
        if reason:
            root.blocked.append(reason)
        else:
            root.consumers.append((user, use.operand_number))


# ---------------------------------------------------------------- keys


def _chain_signature(factory: Factory) -> tuple:
    value = factory.value
    return (tuple(h.op_signature(chain_op) for chain_op in factory.ops), h.result_index(value),
            h.type_text(value))


def root_key(root: Root) -> str:
    """The chain, how each consumer reads the value (not where: consumers are rebuilt when
    other roots are forwarded into them), and the users it cannot be forwarded into."""
    reads = []
    for consumer, operand in root.consumers:
        read_map = str(h.indexing_maps(consumer)[operand])
        reads.append((consumer.name, tuple(h.type_text(result) for result in consumer.results),
                      tuple(h.iterator_types(consumer)), read_map))
    return structural_key("forward-factory-ops", _chain_signature(root.factory),
                          tuple(sorted(reads)), tuple(sorted(root.blocked)))


def generator_key(value: ir.Value) -> str:
    return structural_key("forward-factory-ops", h.op_signature(h.defining_op(value)),
                          h.type_text(value), "expensive generator")


def compact_key(roots: list[Root]) -> str:
    return structural_key("forward-factory-ops-compact",
                          *[_chain_signature(root.factory) for root in roots])


# ---------------------------------------------------------------- decisions

# The ops of an index-only chain that IREE's dispatch creation fuses into elementwise readers
# by itself: generics by elementwise fusion (or cloned into each reader), and, for a chain
# with one reader only, reshapes by propagating them through the generics (toy DeepSeek's MoE
# routing: arange, expand, view, expand read by a gather's generic is one dispatch in stock
# IREE too). Read by two dispatches, a reshaped chain is one more dispatch in stock IREE.
_STOCK_FUSES_INDEX_CHAIN = (LINALG_GENERIC, LINALG_FILL, ARITH_CONSTANT, TENSOR_EXPAND_SHAPE,
                            TENSOR_COLLAPSE_SHAPE)


def plan_forward(root: Root, analysis: FactoryAnalysis, options: ForwardCost
                 ) -> ForwardPlan:
    """Forward the root into its consumers, or NoMatch: why not (IREE does it already, it
    is materialized anyway, or recomputing costs more than it saves)."""
    factory = root.factory
    estimate = options.dynamic_dim_estimate
    elements = h.estimated_numel(factory.value, estimate)
    nbytes = h.estimated_bytes(factory.value, estimate)
    if len(factory.ops) == 1 and factory.ops[0].name in (LINALG_FILL, ARITH_CONSTANT):
        raise NoMatch("fill-or-splat", "a fill/splat: IREE already clones it into its consumers")
    if root.escapes:
        raise NoMatch("function-result", "the value is a function result (materialized anyway)")
    if not root.consumers:
        raise NoMatch("no-consumer", "; ".join(sorted(set(root.blocked))))
    consumers = [consumer for consumer, _ in root.consumers]  # per reading operand
    if not factory.leaves and not root.blocked and all(
            chain_op.name in _STOCK_FUSES_INDEX_CHAIN for chain_op in factory.ops) \
            and all(h.is_elementwise_generic(consumer) for consumer in consumers) \
            and (len(consumers) == 1 or not any(chain_op.name in RESHAPES
                                                for chain_op in factory.ops)):
        raise NoMatch("index-generic-fused",
                      "computed from indices only and read by elementwise generics: IREE "
                      "fuses it into them itself")
    if _clones_constant_broadcast(factory):
        raise NoMatch("constant-broadcast",
                      "one elementwise generic of constants (a broadcast bias): IREE clones it "
                      "into the dispatches that read it itself")
    # The consumer body recomputes the value once per iteration (broadcast dims repeat it).
    iterations = sum(h.numel([h.estimated_size(key, estimate) for key in h.loop_keys(consumer)])
                     for consumer in consumers)
    extra = factory.cost * (iterations - elements)
    disappears = not root.blocked
    saved = nbytes * (len(consumers) + (1 if disappears else 0))
    budget = options.ops_per_byte * saved + (options.ops_per_dispatch if disappears else 0)
    detail = (f"{factory.cost:g} weighted ops/element x {iterations} iterations vs {elements} "
              f"elements: {extra:.3g} extra ops; {saved} bytes saved, budget {budget:.3g}"
              + (_estimate_note(factory.value, consumers, estimate)))
    if not options.ignore_cost and extra > budget:
        root.not_forwarded = f"recomputing costs more than it saves ({detail})"
        raise NoMatch("costs-more", root.not_forwarded)
    return ForwardPlan(root, detail, analysis)


def _estimate_note(value: ir.Value, consumers: list[ir.Operation], estimate: int) -> str:
    """Which sizes were dynamic and what each counted as (empty when all are static)."""
    def count(key: h.DimKey) -> str:
        bound = h.assumed_max(key)
        return f"{estimate} (dynamic-dim-estimate)" if bound is None else \
            f"{bound} (util.assume.int umax)"

    notes = [f"dim {dim} of the value as {count(size_key)}"
             for dim, size_key in enumerate(h.shape_keys(value)) if not isinstance(size_key, int)]
    loops: dict[str, list[int]] = {}
    for consumer in consumers:
        for dim, size_key in enumerate(h.loop_keys(consumer)):
            if not isinstance(size_key, int) and dim not in loops.setdefault(count(size_key), []):
                loops[count(size_key)].append(dim)
    notes += [f"consumer loop(s) {', '.join(map(str, dims))} as {what}"
              for what, dims in loops.items() if dims]
    return f" (dynamic sizes: {'; '.join(notes)})" if notes else ""


def _clones_constant_broadcast(factory) -> bool:
    """A single elementwise generic whose leaves are all constants known at load time
    (`arith.constant`, or the same weights as external parameters): IREE's dispatch
    formation clones such producers into their consumers' dispatches (measured: ConvNeXt's
    per-channel scale/bias broadcasts, 21 -> 21 dispatches forwarded or not); a parameter
    form is left as its inline form is."""
    return (len(factory.ops) == 1 and h.is_elementwise_generic(factory.ops[0])
            and bool(factory.leaves)
            and all(h.is_constant_like(leaf) for leaf in factory.leaves))


def worth_compacting(root: Root) -> bool:
    """A materialized root whose chain forms more than one dispatch. Index-only chains (no
    leaf) IREE fuses into one dispatch, or into their consumers, by itself."""
    if root.escapes or not root.factory.leaves:
        return False
    heavy = [chain_op for chain_op in root.factory.ops if chain_op.name in _HEAVY]
    return len(heavy) > 1 or any(chain_op.name == TENSOR_INSERT_SLICE for chain_op in heavy)


def compaction_candidates(roots: list[tuple[Root, bool]], block: ir.Block,
                          analysis: FactoryAnalysis) -> Iterator[Candidate[CompactPlan]]:
    """Roots that stay materialized, grouped by shape (and device, in multi-device programs:
    values placed on different devices are never computed by one generic): one candidate per
    group, or per root when a leaf of the group is defined after the group's first reader.
    `roots` pairs each root with whether it is forwarded into its consumers in the same
    round."""
    placements = h.block_placements(block) if len(roots) > 1 else {}
    groups: dict[tuple, list[tuple[Root, bool]]] = {}
    for root, forwarded in roots:
        where = placements.get(root.op, frozenset())
        # Equal keys are equal sizes (a dynamic dim by the value IREE holds for it).
        groups.setdefault((h.shape_keys(root.value), where), []).append((root, forwarded))
    for group in groups.values():
        parts = [group]
        if len(group) > 1 and _leaf_after_first_reader(group, block) is not None:
            parts = [[member] for member in group]
        for part in parts:
            members = [member for member, _ in part]
            types = ", ".join(h.type_text(member.value) for member in members)
            yield Candidate.of(compact_key(members), members[0].op,
                               f"{len(members)} materialized factory value(s) {types}",
                               lambda part=part: _plan_compaction(part, block, analysis))


def _plan_compaction(group: list[tuple[Root, bool]], block: ir.Block,
                     analysis: FactoryAnalysis) -> CompactPlan:
    value = group[0][0].value
    problem = missing_sizes(value, list(range(h.tensor_type(value).rank)), products=True) or \
        _leaf_after_first_reader(group, block) or \
        next(filter(None, (_broadcast_in_chain(root) for root, _ in group)), None)
    if problem is not None:
        raise NoMatch("not-compactable", problem)
    return CompactPlan([root for root, _ in group], block, analysis)


def _broadcast_in_chain(root: Root) -> str | None:
    """Why compacting the root would make a tensor bigger than what it replaces: the chain
    ends in a broadcast (then views) of a smaller value, e.g. prefill's attention mask
    [B, S, S] broadcast over the heads and collapsed to [B * H, S, S], and S is dynamic.
    Compacted, the broadcast value is materialized, where IREE passes the smaller one and
    broadcasts it in the reading dispatch. (A static one is not materialized: the flow pass
    forward-factory-dispatches clones its generator into the reading dispatch.)"""
    if h.static_shape(root.value) is not None:
        return None  # forward-factory-dispatches clones a static one into its readers
    chain = set(root.factory.ops)
    value = root.value
    while (op := h.defining_op(value)) is not None and op in chain:
        if op.name in RESHAPES:
            value = op.operands[0]
            continue
        if not _copies_its_input(op):
            return None
        source = op.operands[0]
        # Equal dynamic dims (by the value IREE holds) count alike: the ratio is exact.
        grown, before = h.estimated_numel(value, 64), h.estimated_numel(source, 64)
        if grown > before:
            return (f"the chain ends in a broadcast of {source.type} to {value.type} "
                    f"({grown // max(before, 1)}x the elements) of dynamic shape: compacted, "
                    "the larger value would be materialized (a rewrite never makes a tensor "
                    "bigger)")
        value = source
    return None


def _copies_its_input(op: ir.Operation) -> bool:
    """A linalg.broadcast, or a generic that yields its one input (a broadcast or transpose
    written as a generic)."""
    if op.name == LINALG_BROADCAST:
        return True
    if op.name != LINALG_GENERIC or len(h.dps_inputs(op)) != 1:
        return False
    body = list(h.body_block(op).operations)
    return len(body) == 1 and list(body[0].operands) == [h.body_block(op).arguments[0]]


def _leaf_after_first_reader(group: list[tuple[Root, bool]], block: ir.Block) -> str | None:
    """Why one generic cannot compute the group where it would go (before the first op that
    still reads one of its values once the forwarded roots are forwarded), or None."""
    positions = h.block_positions(block)
    readers = []
    for root, forwarded in group:
        gone = set(root.consumers) if forwarded else set()
        for use in root.value.uses:
            user = h.use_owner(use)
            if (user, use.operand_number) in gone:
                continue
            ancestor = h.block_ancestor(user, positions)
            if ancestor is not None:
                readers.append(ancestor)
    if not readers:
        return "every reader is in another block"
    first = min(positions[reader] for reader in readers)
    for root, _ in group:
        for leaf in root.factory.leaves:
            op = h.defining_op(leaf)
            if op is not None and op.block == block and positions[op] >= first:
                return f"leaf {op.name} is defined after the first reader of the value"
    return None
