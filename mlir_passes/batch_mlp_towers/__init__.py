"""batch-mlp-towers: N independent MLP towers of equal structure -> one chain of batched ops.

A tower is a chain of layers `linalg.matmul -> elementwise epilogue (bias, activation)`, each
layer reading the previous layer's result. Towers whose layers agree (shapes, element types,
indexing maps, epilogue bodies: the activation is part of the key) are rewritten into, per
layer, one batched contraction over the stacked weights and one batched generic per epilogue
op; the stacked `[T, M, N]` tensor is carried from layer to layer and each tower's result is
sliced out only where it is used. A first-layer input shared by the towers is read once
through a broadcast map; constant weights and biases are stacked once, at module load, in a
`util.initializer` (weights read from external parameters only with `stack-parameters=true`:
the stack would be a second resident copy beside the parameter file); towers equal only on
a prefix of layers batch that prefix (a trie over their layer signatures). Where the towers'
results are stacked / concatenated by `tensor.insert_slice` chains (torch.stack in a
mixture-of-experts), the batched result is written in that layout and replaces the stack.

Constant weights are stacked as [T, K, N] (transposed at load time: measured faster on
llvm-cpu than [T, N, K]); at batch 1 the unit row is dropped ([T, N] tensors) and, on
llvm-cpu, the weights keep the towers' [T, N, K] (a batch_matvec: [T, K, N]'s batch_vecmat
was slower than stock there: bench/results/code-costs.md, batch-mlp-towers). On llvm-cpu a
group whose rows are dynamic is left to IREE by default (`cpu-dynamic-rows`): IREE runs a
partial 64-row tile of a batched contraction with masked vectors. Run-time tensors (weights
passed as arguments, one input per tower) are stacked per call only within a byte budget per
saved dispatch (see the options).

    per tower i, per layer:                     per layer, once:
      %f = linalg.fill 0 -> [B,N]                 %W = util.global.load @stack : [T,K,N]
      %a = linalg.matmul ins(%x, %W_i             %a = linalg.batch_matmul
                             : [B,K],[N,K])            {maps (t,m,n,k): x (m,k), W (t,k,n)}
      %b = linalg.generic {+ bias_i}                   ins(%x, %W) -> [T,B,N]
                          ins(%a, %b_i)           %b = linalg.generic {+ bias}
      %s = linalg.generic {sigmoid} ins(%b)                            ins(%a, %bs : [T,N])
      %y = linalg.generic {mul} ins(%b, %s)       %s, %y = (the same generics on [T,B,N])
                                                  %y_i = tensor.extract_slice %y[i] (where used)

What a group saves is counted at plan time (`plan.Gain`): stock makes one dispatch per tower
layer, so batching saves towers x layers - batched layers dispatches, plus the copies stock
makes into a stack of the results (a [M, T, N] stack with M > 1 rows is one strided
slow_memcpy dispatch per tower; the batched result is the stack); it adds one copy per tower
value sliced out for a non-linalg user (a function result). A group is applied when saved -
added >= min-net-dispatches (0): single-layer towers whose results are all returned (net -1)
are left to IREE, a mixture of one-layer experts feeding torch.stack is batched (net +7 at
B=1, +15 at B=4). Towers placed on different devices (multi-device programs) never group.

Towers that agree on everything but their widths (task heads 32/64/96/128 wide on one trunk)
can be padded to the widest (`max-padding-waste`, off by default: measured slower on
llvm-cpu): weights and biases are zero-padded at load time, and each padded column is set
to zero (a select on the column index, fused into the epilogue) before the next layer reads
it: act(x . 0 + 0) is NaN where x holds an infinity (inf * 0), and the next weight's zero rows
would carry that NaN into real columns. So the real columns are unchanged, infinities and NaNs
included (bit-identical with M > 1 rows; at M = 1 the matvec reduction order changes in the
last bits); each tower's result is sliced back to its width:

    head i (N_i = 32, 64, ...):                  padded to N = max N_i, once:
      %a = linalg.matmul ins(%x, %W_i             %W = util.global.load @stack : [T,K,N]
                 : [B,K],[N_i,K]) -> [B,N_i]          (W_i written into zeros at load time)
      %r = relu(%a + %b_i)                        %a = linalg.batch_matmul ins(%x, %W) -> [T,B,N]
      %o = linalg.matmul ins(%r, %V_i             %r = relu(%a + %bs : [T,N])
                 : [B,N_i],[1,N_i]) -> [B,1]      %z = n < N_t ? %r : 0   (padded columns)
                                                  %o = linalg.batch_matmul ins(%z, %V : [T,N,1])
                                                  %o_i = tensor.extract_slice %o[i] (width N_i)

Layout: `match.py` (layers, towers, groups, candidate keys), `plan.py` (batching order, the
trie of shared prefixes, the stack of the results, per-layer operand plans, placement, the
run-time stacking budget: every NoMatch), `build.py` (stacked operands, batched contractions
and epilogues, slices, erasing the towers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import Candidate, CandidatePass, PassContext, option

from .build import BuildOptions, auto_weight_layout, build_group, change_text
from .towers import (TowerGroup, find_layers, group_key, group_towers, link_towers, matmul_key,
                     place_towers)
from .plan import (GroupPlan, PlanOptions, cpu_dynamic_rows_declined, decline_by_cost,
                   plan_group)
from .arrange import arrange_towers

__all__ = ["BatchMlpTowers", "GroupPlan"]


@dataclass(frozen=True)
class BatchMlpTowers(CandidatePass[GroupPlan]):
    name = "batch-mlp-towers"
    phase = "linalg"
    description = ("batches N independent MLP towers of equal structure into one chain of "
                   "batched contractions over stacked weights")

    min_layers: int = option(
        1, "minimum number of batched layers in a group (a hard floor; what a group saves is "
        "decided by min-net-dispatches)", min=1)
    min_net_dispatches: int = option(
        0, "apply a group when the dispatches it saves (towers x layers - batched layers, + "
        "stack copies stock runs as slow_memcpy dispatches) less the result copies it adds "
        "(slices for non-linalg users) are at least this (on llvm-cpu a net loss was slower: "
        "bench/results/code-costs.md)")
    max_padding_waste: float = option(
        0.0, "towers of different widths are padded to the widest with zero weights when at "
        "most this share of the batched contraction work is padding; 0 (default) never pads "
        "(padded heads were slower on llvm-cpu: bench/results/code-costs.md)", min=0.0,
        max=1.0)
    runtime_stack_bytes_per_dispatch: int = option(
        32768, "run-time tensors (weights/biases passed as arguments, separate tower inputs) "
        "are stacked on every call; only when the copied bytes are at most this x the "
        "dispatches saved (the llvm-cpu crossover: bench/results/code-costs.md)", min=0)
    named_batch_matmul: bool = option(
        True, "batched contractions as linalg.batch_matmul (with a broadcast map for a shared "
        "input) wherever the layouts allow; linalg.generic contractions otherwise")
    weight_layout: Literal["auto", "keep", "kn", "nk"] = option(
        "auto", "layout of stacked constant weights: the towers' own (keep), transposed at "
        "load time to [T,K,N] (kn) or [T,N,K] (nk); auto: kn, but nk for batch 1 (dropped "
        "rows) on llvm-cpu (kn's batch_vecmat is slower than stock there, nk's batch_matvec "
        "is not: bench/results/code-costs.md)")
    dynamic_dim_estimate: int = option(
        h.TYPICAL_DYNAMIC_DIM, "rows a dynamic dim 0 (batch, tokens) count as when separate "
        "inputs are stacked per call (runtime-stack-bytes-per-dispatch) and IREE holds no "
        "upper bound for it (util.assume.int umax)", min=1)
    drop_unit_rows: bool = option(
        True, "with one row (batch 1), drop the row dim from the batched tensors: [T, N] "
        "instead of [T, 1, N]")
    stack_parameters: bool = option(
        False, "stack weights and biases read from external parameters at load (a second "
        "resident copy beside the parameter file); off: their towers are left to IREE")
    cpu_dynamic_rows: bool = option(
        False, "on llvm-cpu, batch towers whose rows (M: batch, tokens) are dynamic; declined "
        "by default: IREE's CPU codegen runs a partial 64-row tile of a batched contraction "
        "with masked vectors (slower than stock: bench/results/code-costs.md)")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[GroupPlan]]:
        """The matmuls that are no tower layer (blocked), then one candidate per tower group
        in block order of its first matmul (a tower without a partner is blocked)."""
        positions = h.block_positions(block)
        layers, rejected = find_layers(block, positions)
        for matmul, why in rejected:
            yield Candidate.refused(matmul_key(matmul), matmul, "linalg.matmul (no tower layer)",
                                    why)
        towers = link_towers(layers)
        place_towers(towers, h.block_placements(block))
        options = self.option_values(PlanOptions)
        for group in group_towers(towers, positions):
            yield self._group_candidate(group, block, positions, options, ctx)

    def _group_candidate(self, group: TowerGroup, block: ir.Block, positions: h.Positions,
                         options: PlanOptions, ctx: PassContext) -> Candidate[GroupPlan]:
        arrangement = arrange_towers(group) if len(group.towers) >= 2 else None
        stack = arrangement.stack if arrangement is not None else None
        key = group_key(group, stack.layout if stack is not None else None)
        cand = Candidate.of(key, group.first_mm, group.describe(),
                            lambda: plan_group(group, arrangement, block, positions, options))
        if cand.plan is not None:
            decline_by_cost(cand, options)
            if cand.declined is None and not self.cpu_dynamic_rows:
                cand.decline("cpu-dynamic-rows", cpu_dynamic_rows_declined(group, ctx.target))
        return cand

    def apply(self, candidate: Candidate[GroupPlan], ctx: PassContext) -> str:
        plan = candidate.plan
        what = change_text(plan)
        options = self.option_values(BuildOptions)
        if options.weight_layout == "auto":
            options = replace(options, weight_layout=auto_weight_layout(plan, ctx.target))
        build_group(plan, ctx.module, options)
        return what
