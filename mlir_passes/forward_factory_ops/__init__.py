"""forward-factory-ops: cheap generated tensors are recomputed inside each consumer, never
passed from one dispatch to another through memory (nvFuser's forwarding of factory ops).

A *factory* value is a tensor computed from nothing but loop indices, scalars and *leaves*
(tiny inputs, constants or globals, e.g. a 0-d `start_pos` or a 16-element inverse-frequency
table, that the op reading them broadcasts): `linalg.fill`, splat constants, all-parallel
`linalg.generic`s with cheap bodies (iota / `arange`, index compares = masks, `cos`/`sin` of
positions, casts, scales), and reshapes, slices, concats (`insert_slice`), broadcasts and
transposes of those. IREE materializes such a value whenever it has an input and feeds several
dispatches, a reduction or a contraction. This pass (linalg phase) scalarizes the factory chain
into the body of every consuming `linalg.generic` (any iterator types), which then computes the
value at its own indices and no longer reads the tensor:

    %pos  = linalg.generic ins(%start : tensor<i64>) { index(0) + start }   : tensor<512xi64>
    %mask = linalg.generic ins(%pos) { select(index(1) <= pos, 0, -inf) }  : tensor<512x512xf32>
    %s    = linalg.generic ins(%scores, %mask) { s / c + m }           : tensor<8x512x512xf32>
  becomes
    %s    = linalg.generic ins(%scores, %start) { i = index(1); j = index(2);
                                                  m = select(j <= i + start, 0, -inf); s / c + m }

A factory value it does not forward (cost, or a reader that is not a generic) is *compacted*:
one generic computes it (several values of one shape: one multi-result generic) from indices and
its leaves instead of the chain, so the chain's dispatches and intermediate tensors disappear
(RoPE: positions, frequencies, two concat copies, cos and sin = 6 dispatches -> 1). Its
flow-phase half, `forward-factory-dispatches` (below), then clones such a dispatch into the
dispatches whose root cannot take it at this phase (`iree_linalg_ext.attention`'s mask).

Not forwarded (each reported with `--fusions-report`): values that leave the function (they are
materialized anyway), expensive generators (more than `max-element-ops` arithmetic ops per
element: RNG-like hashes; reductions are never factory ops), single fills/splats (IREE clones
those itself), chains of indices only read by elementwise generics (IREE fuses those itself:
generics into each reader, through reshapes into a single reader), and values whose
recomputation costs more than the memory traffic it saves.
The cost model, in weighted scalar ops (OP_COST: 1 per cheap op, 8 per division, 200 per
transcendental), with constants measured on llvm-cpu (bench/results/forward-factory-ops.md):

    extra  = cost_per_element * (sum of consumer iterations - elements)   # redundant recompute
    saved  = bytes * (readers + 1 if the producer disappears else readers)
    forward when extra <= ops-per-byte * saved + ops-per-dispatch * (producer disappears)

Shapes may be dynamic (a causal mask of [S, S], positions `arange(S)`, RoPE tables of [S, D]
for a dynamic sequence length S): the consumer recomputes the value at its own indices whatever
its loop ranges; a reshape in the chain reads its dynamic sizes from the values IREE holds
(`tensor.empty` operands, an expand_shape's `output_shape`, `util.assume.int`). In the cost
model a dynamic dim counts as its `util.assume.int` umax, else `dynamic-dim-estimate`.

Fully constant factory chains never reach this pass as chains: IREE's global optimization
const-evaluates them into globals (cos/sin tables) or, for index-only broadcasts (masks), keeps
them and fuses them into their consumers itself; the pass leaves both alone.

Candidates (keys from the structure: chain op signatures, types, how consumers read it): one
per root (a factory value read by non-factory ops: forwarded into its consuming generics, the
rest of its readers keep it materialized) and one per group of materialized roots of one shape
(compacted). The roots found in one block are forwarded together, one rebuild per consumer.

Layout: `analysis.py` (factory values, the cost table), `roots.py` (roots, decisions, keys),
`scalarize.py` (one element of a factory value inside a body), `forward.py` (linalg-phase
rewrites), `dispatches.py` (the flow-phase pass).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, NoMatch, PassContext,
                                         option)

from .analysis import OP_COST, Factory, FactoryAnalysis
from .dispatches import (CloneForward, DispatchOptions, clone_into, consumer_candidates,
                         dynamic_generators, factory_dispatches)
from .forward import compact, erase_dead_chains, forward_roots
from .roots import (CompactPlan, ForwardCost, ForwardPlan, collect_roots, compaction_candidates,
                    generator_key, plan_forward, root_key, worth_compacting)
from .scalarize import Scalarizer

__all__ = ["OP_COST", "CloneForward", "CompactPlan", "Factory", "FactoryAnalysis",
           "ForwardFactoryDispatches", "ForwardFactoryOps", "ForwardPlan", "Scalarizer"]


# Weighted ops that cost as much as one byte written or read between dispatches, and as one
# dispatch launch. Measured on llvm-cpu (bench/results/forward-factory-ops.md): a 512x512 mask
# recomputed for 32 heads still wins (needs >= 27); cos/sin tables recomputed for 1 head win
# (needs >= 19), for 2 heads (S=128, D=128) lose 1-2% (needs < 56); ~13 us per dispatch on
# local-task at ~1.6 ps per cheap op.
OPS_PER_BYTE = 32.0
OPS_PER_DISPATCH = 8.0e6
# Arithmetic ops per element above which a generator is "expensive" (RNG-like hashes; RoPE's
# chain has ~8).
MAX_ELEMENT_OPS = 40
# Largest non-factory tensor a factory chain may read element-wise (start_pos, inv_freq).
MAX_LEAF_ELEMENTS = 4096
# A dynamic dim (a sequence length) in the cost model: its `util.assume.int` umax when IREE
# carries one, else a long sequence (`h.LONG_DYNAMIC_DIM`: a forward that pays at the largest
# size pays at every smaller one).
DYNAMIC_DIM_ESTIMATE = h.LONG_DYNAMIC_DIM

FactoryPlan = ForwardPlan | CompactPlan


@dataclass(frozen=True)
class FactoryCostOptions:
    """The cost model both passes share (see the module docstring)."""

    ops_per_byte: float = option(
        OPS_PER_BYTE, "weighted ops that cost as much as one byte passed between dispatches")
    ops_per_dispatch: float = option(
        OPS_PER_DISPATCH, "weighted ops that cost as much as one dispatch launch")
    max_element_ops: int = option(
        MAX_ELEMENT_OPS, "arithmetic ops per element above which a generator is expensive")
    max_leaf_elements: int = option(
        MAX_LEAF_ELEMENTS, "largest input, constant or global a factory computation may read "
        "element-wise (start_pos, inv_freq)")
    ignore_cost: bool = option(
        False, "forward regardless of the byte/recompute balance (measurements only)")
    dynamic_dim_estimate: int = option(
        DYNAMIC_DIM_ESTIMATE, "size a dynamic dim counts as in the cost model when IREE "
        "carries no util.assume.int bound for it (with a bound: the bound)", min=1)

    def __post_init__(self) -> None:
        if self.max_leaf_elements < 1:
            raise ValueError("max-leaf-elements must be >= 1")


@dataclass(frozen=True)
class ForwardFactoryOps(CandidatePass[FactoryPlan], FactoryCostOptions):
    name = "forward-factory-ops"
    phase = "linalg"
    description = ("recomputes cheap generated tensors (fill, iota, masks, RoPE tables) inside "
                   "each consuming generic instead of passing them between dispatches")
    # Roots found together are forwarded together (one rebuild per consumer): apply_all.
    independent_candidates = True

    compact: bool = option(
        True, "compute a factory value that stays materialized with one generic from indices "
        "and leaves instead of its chain (values of one shape share it)")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[FactoryPlan]]:
        analysis = FactoryAnalysis(self.max_leaf_elements, self.max_element_ops, block=block,
                                   dynamic_estimate=self.dynamic_dim_estimate)
        roots, generators = collect_roots(block, analysis)
        for value, reason in generators:
            yield Candidate.refused(generator_key(value), h.defining_op(value),
                                    f"{value.type} generator",
                                    NoMatch("expensive-generator", reason))
        cost = self.option_values(ForwardCost)
        materialized = []
        for root in roots:
            cand = Candidate.of(
                root_key(root), root.op, f"{root.value.type} read by {len(root.consumers)} "
                f"generic(s), {len(root.blocked)} other reader(s)",
                lambda: plan_forward(root, analysis, cost))
            yield cand
            forwarded = not cand.blocked and self.deselected(cand.key) is None
            # A root left alone on request is not compacted either.
            if self.compact and worth_compacting(root) and (
                    cand.blocked or (forwarded and root.blocked)):
                materialized.append((root, forwarded))
        yield from compaction_candidates(materialized, block, analysis)

    def apply(self, candidate: Candidate[FactoryPlan], ctx: PassContext) -> str:
        return self.apply_all([candidate], ctx)[0]

    def apply_all(self, candidates: list[Candidate[FactoryPlan]], ctx: PassContext
                  ) -> list[str]:
        """Forwarding first (all roots at once), then compaction, then dead chains erased."""
        forwards = [cand.plan for cand in candidates if isinstance(cand.plan, ForwardPlan)]
        compactions = [cand.plan for cand in candidates if isinstance(cand.plan, CompactPlan)]
        chain_ops: list[ir.Operation] = []
        for roots in [[plan.root for plan in forwards], *[plan.roots for plan in compactions]]:
            chain_ops += [op for root in roots for op in root.factory.ops if op not in chain_ops]
        forwarded = forward_roots(forwards) if forwards else []
        compacted = [compact(plan) for plan in compactions]  # after forwarding: what still reads it
        erase_dead_chains(chain_ops)
        texts = {id(plan): text for plan, text in zip([*forwards, *compactions],
                                                      [*forwarded, *compacted])}
        return [texts[id(cand.plan)] for cand in candidates]


@dataclass(frozen=True)
class ForwardFactoryDispatches(CandidatePass[CloneForward], FactoryCostOptions):
    """The flow-phase half: a dispatch that only builds a factory tensor (from tiny operands)
    is cloned into each consuming dispatch whose root cannot take it at the linalg phase
    (`iree_linalg_ext.attention`'s mask), so the tensor is never written to memory.

        %m = flow.dispatch.workgroups(%start) { mask = generic(load %start) ; store mask }
        %o = flow.dispatch.workgroups(%q, %k, %v, %m) { attention(q, k, v, load %m) }
      becomes
        %o = flow.dispatch.workgroups(%q, %k, %v, %start) {
               mask = generic(load %start) [recomputed, in the consumer's shape]
               attention(q, k, v, mask) }

    A candidate per (factory dispatch, consuming dispatch); the factory dispatch goes once
    nothing reads it.
    """

    name = "forward-factory-dispatches"
    phase = "flow"
    description = ("clones dispatches that only build a generated tensor (an attention mask) "
                   "into the dispatches that read it")

    consumers: tuple[str, ...] = option(
        (h.LINALG_EXT_ATTENTION,),
        "ops that may read a forwarded tensor inside the consuming dispatch", "OP,...")

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [name for name in self.consumers if "." not in name or ":" in name or " " in name]
        if bad:
            raise ValueError(f"consumers: not op names: {', '.join(bad)} (a comma-separated "
                             "list, e.g. iree_linalg_ext.attention,linalg.generic)")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[CloneForward]]:
        options = self.option_values(DispatchOptions)
        for producer in factory_dispatches(block, options):
            yield from consumer_candidates(producer, options)
        yield from dynamic_generators(block, options)

    def apply(self, candidate: Candidate[CloneForward], ctx: PassContext) -> str:
        return clone_into(candidate.plan)
