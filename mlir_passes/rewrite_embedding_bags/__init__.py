"""rewrite-embedding-bags: F.embedding_bag's quadratic scan -> lookups + sums, or one generic.

At global-optimization torch-mlir's `F.embedding_bag(mode="sum")` is one generic that scans
every index for every bag (quadratic in the batch) and adds `table[ids[j], d]` where
`offsets[b] <= j < offsets[b + 1]`. On each function body the pass

1. rewrites each such generic whose bags have one fixed length (offsets `b * L`, known at
   compile time, or a dynamic batch whose shape facts fix L) into a lookup over [B, L, D]
   and a sum over L: a pooled bag, which `batch-gathers` (run after this pass in
   `--fusions=all`) batches with the other lookups and bags;
2. batches the embedding_bags whose offsets come at run time (`nn.EmbeddingBag` called with
   (flat ids, offsets): variable-length bags) into one generic over (bag, member, column)
   whose body switches on the member and sums its bag's ids offsets[b] .. offsets[b+1] in a
   loop, from its own table (no stacking: nothing crosses tables), in the scan's order.

Measured policy (bench/results/batch-gathers.md, section 11): bags with run-time offsets
need two bags per table or more (`min-offsets-batch`: at B = 1 stock's scan is already
linear). Both rewrites save work (a quadratic scan made linear): the compile driver keeps
them even where the dispatch count does not drop.

    %bag = linalg.generic ins(%ids : tensor<40xi64>, %offs : tensor<8xi64>)
             {out[b, d] += t[ids[j], d] if offs[b] <= j < next(b)} -> tensor<8x4xf32>
  =>
    %ids2 = tensor.expand_shape %ids [[0, 1]] : tensor<40xi64> into tensor<8x5xi64>
    %rows = linalg.generic ins(%ids2) {yield t[ids2[b, l], d]}        -> tensor<8x5x4xf32>
    %bag  = linalg.generic ins(%rows) {out[b, d] += rows[b, l, d]}    -> tensor<8x4xf32>

    %s0 = linalg.generic ins(%ids0, %offs0) {out[b, d] += t0[ids0[j], d] if offs0[b] <= j <
           next(b)} -> tensor<8x64xf32>                       (every j for every bag)
    %s1 = (the same with %ids1, %offs1, %t1)
  =>
    %g = linalg.generic outs(tensor<2x8x64xf32>)                  loops (b, k, d)
           { scf.index_switch k: case k:
               scf.for j = offs_k[b] to next_k(b): acc = t_k[ids_k[j], d] + acc }
    %s0 = tensor.extract_slice %g[0, 0, 0] [1, 8, 64]; %s1 = ... %g[1, ...]

Candidates, in the order they are applied: fixed-length bags (key family `gathers-bag`),
then groups of bags with run-time offsets (`gathers-offsets`). Both families were
batch-gathers' before the split (issue 23), with the same keys; a decisions file names
rewrite-embedding-bags for them.

Layout: `match.py` (F.embedding_bag recognition, fixed-length and run-time offsets),
`plan.py` (candidates, keys, groups), `build.py` (the rewrites). Grouping
(`compiler.batching`, shared with batch-gathers) and the body helpers (`ir_build`,
`ir_helpers`) come from the compiler layer: no pass imports another.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import Candidate, CandidatePass, PassContext, option


from .build import emit_offsets_bags, rewrite_embedding_bag
from .match import EmbeddingBag, OffsetsBag, is_bag_like
from .plan import OffsetsBagGroup, OffsetsOptions, Plan, bag_candidate, offsets_bag_candidates

__all__ = ["EmbeddingBag", "OffsetsBagGroup", "RewriteEmbeddingBags"]


@dataclass(frozen=True)
class RewriteEmbeddingBags(CandidatePass[Plan]):
    name = "rewrite-embedding-bags"
    phase = "linalg"
    description = "F.embedding_bag's quadratic scan -> lookup + sum, or one summing generic"

    embedding_bag: bool = option(True, "rewrite fixed-length F.embedding_bag into lookup + sum")
    offsets_bags: bool = option(
        True, "F.embedding_bags with run-time offsets (variable-length bags) -> one generic "
        "summing each bag's ids")
    min_offsets_batch: int = option(
        2, "bags per embedding_bag with run-time offsets (the batch) for the rewrite, at least "
        "(one bag alone is slower rewritten: stock's scan of one bag is already linear)")

    def normalize(self, block: ir.Block, ctx: PassContext) -> None:
        """Changes no value: the index views of each embedding_bag with run-time offsets
        (its ids and offsets) moved up to right after their operands. Idempotent."""
        if not self.embedding_bag:
            return
        for op in list(block.operations):
            found = bag_candidate(op.operation) if is_bag_like(op.operation) else None
            if isinstance(found, OffsetsBag):
                batching.hoist_view_chain(found.ids, block)
                batching.hoist_view_chain(found.offsets, block)

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[Plan]]:
        if not self.embedding_bag:
            return
        offsets_bags = []
        for op in list(block.operations):
            op = op.operation
            if not is_bag_like(op) or (found := bag_candidate(op)) is None:
                continue
            if isinstance(found, OffsetsBag):
                offsets_bags.append(found)
            else:
                yield found
        if offsets_bags:  # (whole-block analyses only for a block that has such bags)
            placements = h.block_placements(block)
            for bag in offsets_bags:
                bag.placement = placements[bag.op]
            yield from offsets_bag_candidates(offsets_bags, h.block_positions(block),
                                              self.option_values(OffsetsOptions))

    def apply(self, candidate: Candidate[Plan], ctx: PassContext) -> str:
        if isinstance(candidate.plan, EmbeddingBag):
            return rewrite_embedding_bag(candidate.plan)
        return emit_offsets_bags(candidate.plan)
