"""merge-cache-scatters: two scatters into one cache, the second writing into the first's
result (a paged cache's K then V), whose index sets are proven disjoint -> one scatter over
the concatenated updates and indices (one dispatch instead of two).

A paged KV cache is written by two scatters per layer, K's and V's, into the same cache
tensor with their own indices (sharktank: a row `((page * layers + layer) * 2 + {0, 1})
* heads + head) * block_stride + position`). IREE makes each scatter the root of a dispatch
of its own and never merges two. The pass concatenates the updates and the indices along
the scatter's batch dim and scatters once:

    %k_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(%k_upd, %k_idx : [16, 32], [16]) outs(%cache)
    %v_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(%v_upd, %v_idx : [16, 32], [16]) outs(%k_cache)
  =>
    %upd = tensor.concat dim(0) %v_upd, %k_upd : [32, 32]
    %idx = tensor.concat dim(0) %v_idx, %k_idx : [32]
    %v_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(%upd, %idx : [32, 32], [32]) outs(%cache)

The result is the same only if no row is written by both: a row in both would hold V's value
after the two scatters and an unspecified one after the merged one. So the pass proves the
two index sets disjoint from the index arithmetic itself, as the IR computes it: fixed
width, wrapping, signed and unsigned casts (`compiler/index_arith.py`). Each index is a set
`m * k + [lo, hi]` modulo 2^w, m a power of two (constants, loop indices, floor-mods,
divisions and remainders by a constant, `util.assume.int` ranges; anything else, a page id
read from a tensor, is any value, times its coefficient), and the two windows must not meet
modulo the common m. Wrap keeps residues modulo a power of two, so sharktank's cache rows
`768 * page + [0, 127]` (K) and `768 * page + [128, 255]` (V), page any i64, are disjoint
modulo 256 whatever the page ids; `3 * p` and `3 * p + 1` in i32 are not (p = -1431655765
wraps 3 * p to 1), nor an `extui` of an i8 that may be negative. Each scatter already
claims its own indices unique, so the merged one keeps `unique_indices(true)`; with unique
indices the order of the pieces does not matter, and the piece whose update is produced
first goes first, which lets IREE's stream allocation write both producers' results in place
(measured on the toy Llama's decode: no copy added).

With IREE's aggressive fusion (shark-ai's LLM flags) IREE puts an update's elementwise
producer (RoPE on K) and each index computation in its scatter's dispatch. A concatenation
would stop that (RoPE a dispatch of its own again: bench/results/code-costs.md), so
there the pieces are stacked by one elementwise generic that selects by its leading index,
which IREE fuses with both pieces' producers into the one scatter (32-layer GQA Llama
decode with the LLM flags: 424 -> 392 dispatches):

    %upd = linalg.generic ins(%v_upd, %k_upd : [16, 32], [16, 32]) outs([2, 16, 32])
             { s = linalg.index 0; yield select(s == 0, v, k) }
    %idx = linalg.generic ... (the same for the indices) -> [2, 16]
    %v_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(collapse(%upd) : [32, 32], collapse(%idx) : [32]) outs(%cache)

A select copies the value it picks (NaN payloads included). Stacking needs the two pieces of
the same size, each produced by a single-result op (IREE fuses no multi-result producer into
the stack's dispatch: its results would be a dispatch of their own).

Left alone, with the reason: updates or indices not computed by a linalg op (toy DeepSeek's
K assembled by tensor.insert_slice and V padded by tensor.pad: measured, both pieces were
copied into the concatenation, two copies for the one dispatch saved), or read by anything
else (IREE writes a result in place of its one reader only), updates with a dynamic size
(prefill's tokens: the concatenation would copy them, and IREE then stops fusing K's cache
layout into RoPE's dispatch: bench/results/code-costs.md, merge-cache-scatters), scatters
with different dimension maps or combining regions (only a plain overwrite is merged), a
first scatter whose result is read by anything else (the cache between the two writes is
observed), and indices that cannot be proven disjoint (the check that failed is named).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.analyses.cache_scatters import (
    ScatterPair, cache_scatter_pairs, plan_pair,
)
from iree_fusions.compiler.ir_build.joins import concat, concat_as_generic
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, PassContext,
                                            round_analysis, structural_key)

SURE = ("IREE makes each scatter the root of a dispatch of its own and never merges two; "
        "one scatter is one dispatch")


def merge_pair(pair: ScatterPair) -> str:
    first, second = pair.first, pair.second
    pieces = [(first, second)[i] for i in pair.order]
    join = concat_as_generic if pair.stacked else concat
    with second.location, ir.InsertionPoint(second):
        updates = join([op.operands[0] for op in pieces])
        indices = join([op.operands[1] for op in pieces])
    second.operands[0] = updates
    second.operands[1] = indices
    second.operands[2] = first.operands[2]
    text = (f"two scatters of {first.operands[0].type} into {first.operands[2].type}, indices "
            f"proven disjoint -> one scatter of {updates.type}"
            + (" (pieces stacked by a selecting generic)" if pair.stacked else ""))
    first.erase()
    return text


def pairs(block: ir.Block) -> list[tuple[ir.Operation, ir.Operation]]:
    """The block's pairs (`cache_scatter_pairs`), in block order."""
    return cache_scatter_pairs(op.operation for op in block.operations)


@dataclass(frozen=True)
class MergeCacheScatters(CandidatePass[ScatterPair]):
    name = "merge-cache-scatters"
    phase = "linalg"
    description = ("two scatters into one cache (a paged cache's K and V), the second writing "
                   "into the first's result, indices proven disjoint -> one scatter")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[ScatterPair]]:
        positions = round_analysis(h.block_positions, block)
        for first, second in pairs(block):
            key = structural_key("merge-cache-scatters", h.op_signature(first),
                                 h.op_signature(second))
            candidate = Candidate.of(
                key, second, "two scatters into one cache",
                lambda first=first, second=second: plan_pair(first, second, positions,
                                                             ctx.aggressive_fusion))
            if not candidate.blocked:
                candidate.sure = SURE
            yield candidate

    def footprint(self, candidate: Candidate[ScatterPair], ctx: PassContext) -> Footprint:
        pair = candidate.plan
        ops = [pair.first, pair.second]
        return Footprint.of(reads=ops + pair.index_ops, writes=ops)

    def apply(self, candidate: Candidate[ScatterPair], ctx: PassContext) -> str:
        return merge_pair(candidate.plan)
