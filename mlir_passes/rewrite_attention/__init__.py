"""rewrite-attention: `iree_linalg_ext.attention` -> what the target runs fastest; on llvm-cpu,
contractions, reductions and elementwise generics in f32, one query block at a time.

IREE's CPU code for the fused attention op is slow (most of sharktank's Llama decode and
prefill); IREE's CPU users decompose it before dispatch creation (iree-org/iree#24177), and
IREE's own decomposition (`convert-attention-to-online-attention,decompose-attention` as a
preprocessing pipeline) runs decode faster, but holds the scores of every query row at once
(bench/results/llm-suite.md, attention-forms.md): its peak memory grows with S^2 in prefill.
The pass decomposes each attention into generics IREE's CPU codegen tiles well, in f32 (the
f16 inputs extended once; the probabilities are not truncated to f16 before the second
contraction), and, where the query has many rows (prefill's tokens), in a loop over query
blocks: the scores held at once are one block's [rows, keys], not [keys, keys]. A block has
64 rows, or fewer where the keys are many (its scores at most `block-scores` f32, at least 8
rows: small blocks also run faster, their scores stay in cache), and each step waits on the
host for the one before (`host-sync`: else IREE's task executor queues every step at once
and holds all their buffers).

    %o = iree_linalg_ext.attention ins(%q, %k, %v, %scale, %mask) outs(%e)
           : [32, ?, 32] x [32, ?, 32] x [32, 32, ?] x f32 x [32, ?, ?] -> [32, ?, 32]
  =>
    %step = max(8, min(64, 2^19 / (32 * %keys)))
    %o, %lag = scf.for %j = 0 to %m step %step iter_args(%acc = %e, %lag = 0) {
      %i  = %j + %lag              // %lag is 0, but the host knows it only after a read
      %qb = tensor.extract_slice %q[0, %i, 0] [32, %rows, 32]
      %mb = tensor.extract_slice %mask[0, %i, 0] [32, %rows, %keys]
      %s  = linalg.generic {sum_k1 qb * k}            -> [32, %rows, %keys] f32
      %s2 = linalg.generic {s * scale + mb}
      %mx = linalg.generic {max_k2 s2}                -> [32, %rows] f32
      %p  = linalg.generic {exp(s2 - mx)};  %l = linalg.generic {sum_k2 p}
      %pv = linalg.generic {sum_k2 p * v}             -> [32, %rows, 32] f32
      %ob = linalg.generic {pv / l, truncf}           -> [32, %rows, 32] f16
      %next = %i + %rows < %m ? index_cast(bits(%ob[0, 0, 0]) & opaque 0) : 0
      scf.yield (tensor.insert_slice %ob into %acc[0, %i, 0]), %next
    }

Decode (one query row per sequence) is decomposed whole, and so is a static attention whose
whole query's scores are few (`whole-scores`, 2^21 f32 by default): a loop's steps wait on the
host and end IREE's execution regions, which costs more than holding those scores at once
(bench/results/attention-forms.md). A dynamic one asks at run time: where its whole query's
scores fit one block's (`block-scores`), one step of every row, its result returned as it is
(`scf.if`; the loop writes each block's rows into strided rows of its output, a copy dispatch
per step: 2-3% of a small dynamic f32 attention). That step's start and rows are opaque to the
compiler, so its dispatches are the loop's and IREE compiles them once. A static attention of
few multiply-adds (below its CPU class's measured crossover, `fused-below`: `FUSED_BELOW`) is
left to IREE's fused op: a few microseconds of work, where the decomposition's dispatches cost
more than they save.

Where IREE's fused op with the plugin's CPU tiles was measured faster than the decomposition
(`fused-tiles`, `tiles.fused_faster`: static f16 decode of large k and v not repeated per
query head, on AVX2 and the baseline and on AMD Zen 4; on AVX-512, static f16 prefill of many
keys with head and value dims of at most 32), the op is kept and given those tiles as its
`compilation_info`: each step computes the whole value dim (IREE 3.13 computes a tile's
scores again for every vector of value columns):

    %o = iree_linalg_ext.attention ins(%q, %k, %v ..: [128, 128] x [128, 1024, 128] x ..)
  =>
    %o = iree_linalg_ext.attention {compilation_info = #iree_codegen.compilation_info<
           lowering_config = #iree_cpu.lowering_config<distribution = [1, 128, 0, 0],
           vector_common_parallel = [1, 128, 0, 0], vector_reduction = [0, 0, 0, 4]>, ..>}
           ins(%q, %k, %v ..)

Wherever the tiles apply, the form is also a decision of its own, keyed
`rewrite-attention-tiles-<digest>` (the change's digest): a decisions file picks the tiles or
the decomposition per attention, and `iree-fusions-tune` measures one against the other; the
report records the form taken (`chose` / `did not choose`, a `report.Choice`).

Where the result is read only as its first value columns (`read-columns`, on by default on
llvm-cpu; `compiler/analyses/attention_columns.py`): sharktank's MLA export (DeepSeek) pads
v's head dim 128 to q's 192 and slices the output back, so p @ v and the output are computed
over those columns only (each column is a sum over the keys of p times that column of v
alone), and the slice reads the narrow result (forward-slices, where this pass is selected,
leaves that slice to it on CPU targets):

    %o = iree_linalg_ext.attention ins(%q, %k, %v : [16, ?, 192] x .. x [16, 192, ?]) ..
    %c = tensor.extract_slice (tensor.expand_shape %o) [.., 128]
  =>
    %vc = tensor.extract_slice %v[0, 0, 0] [16, 128, %keys]     (p @ vc: [16, ?, 128])
    %c  = tensor.extract_slice (tensor.expand_shape %o') [.., 128]   (whole: folds away)

On the toy DeepSeek's prefill: faster, outputs bit-identical (bench/results/llm-suite.md,
twelfth run).

Grouped-query attention (`kv-heads`, on by default; `heads.py`): sharktank hands the op k and
v repeated over the query heads of each KV head's group (a copy [B, KVH, G, ..] collapsed to
[B*H, ..]), which IREE fuses into the fused op's dispatch and a decomposition would write
whole. The decomposition then loops over [batch, KV head, query head of the group] and the
copies keep only the dims they read: k and v are written and read once per KV head (the
32-layer GQA Llama, 8 query heads per 2 KV heads: G = 4). The same sums of the same terms
(bit-identical there: bench/results/llm-suite.md; the order of a sum is IREE's codegen's).

The order of the sums and of the softmax differs from the fused op's (its online softmax
rescales per key tile): the result is within a bound, not bit-identical (docs/testing.md: the
bound); the NaN pattern is stock's
(a fully masked row is 0/0 = NaN in both; NaN and infinity in q, k or v spread alike).

On GPU targets the fused op is left to IREE's GPU attention codegen, also where k or v is
gathered from a paged cache (decode): where IREE compiles it, it is faster than the
decomposition (CUDA: bench/results/gpu-h200-2026-12-04.md). For some shapes IREE 3.13 fuses
the gather into the fused op's dispatch and crashes compiling it for CUDA and ROCm
(TransferGatherOp in vector lowering: sharktank's toy Llama); then `iree-fusions-compile`
compiles again with `gpu-gathered=true`, which decomposes the gathered attentions whole
(faster than stock on the decomposed export, the form stock compiles: the same file).
`on-gpu=true` decomposes every attention.

A boolean mask (PyTorch's `attn_mask` of bools; an integer mask is read by its low bit, as
IREE does) adds 0 where it is true and -inf where it is false. An attention whose query is
another attention's output waits for the next round of the driver (its plan holds the value
the first change replaces; `protocol.plan_owners`).

A score modification region of arith and math ops (a soft cap) is applied to the f32
scores before the mask, as IREE's decomposition applies it. Left alone, with the reason: a
region that reads the position (`iree_linalg_ext.index`) or holds other ops, indexing maps
that are not projections or loops of no attention role.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Choice, Footprint, NoMatch,
                                            PassContext, option, structural_key)
from iree_fusions.compiler.target import cpu_vector_class, is_gpu

from .build import decompose
from .heads import copy_under_collapse, head_split
from .match import (ATTENTION, AttentionPlan, choose_block, gathered, match_attention,
                    multiply_adds, read_columns, untransposed_v)
from .tiles import (COMPILATION_INFO, DECIDED, NOT_FASTER, choice_text, fused_faster,
                    fused_tiles, set_fused_tiles, tiles_set_here)


def with_columns(plan: AttentionPlan, columns: bool) -> AttentionPlan:
    """The plan, with the value columns its result's reader reads noted where `columns`
    (`read_columns`; after the head split, which it does not combine with)."""
    return read_columns(plan) if columns else plan


def with_heads(plan: AttentionPlan, kv_heads: bool) -> AttentionPlan:
    """The plan, with the split of its heads noted where `kv_heads` and k and v repeat their
    KV heads over the query heads (`heads.py`)."""
    split = head_split(plan) if kv_heads else None
    if isinstance(split, str):
        return replace(plan, heads=None, heads_note=split)
    return replace(plan, heads=split, heads_note=None)


# Per x86 vector class (`target.cpu_vector_class`), the multiply-adds below which a static
# attention keeps IREE's fused op: where the decomposition was measured slower
# (bench/results/attention-forms.md, "Small attentions").
FUSED_BELOW = {"avx512": 1 << 17, "avx2": 1 << 14, "baseline": 0}

GPU_RULE = ("a GPU target: IREE's GPU pipelines compile the fused op themselves (on-gpu=true "
            "decomposes)")
GPU_GATHER = ("on a GPU target, k or v gathered from a paged cache: decomposed whole (no query "
              "blocks), as gpu-gathered=true asks: IREE 3.13 crashes on some such fused ops "
              "(TransferGatherOp), the decomposition compiles")
GPU_GATHER_FUSED = ("on a GPU target, k or v gathered from a paged cache: left fused, measured "
                    "faster than the decomposition where IREE compiles it (CUDA decode); "
                    "iree-fusions-compile compiles again with gpu-gathered=true if IREE crashes "
                    "on it")


@dataclass(frozen=True)
class RewriteAttention(CandidatePass[AttentionPlan]):
    name = "rewrite-attention"
    phase = "linalg"
    description = ("iree_linalg_ext.attention -> f32 contractions, reductions and elementwise "
                   "generics, prefill in query blocks (llvm-cpu)")

    query_block: int = option(
        64, "query rows per step of the loop over query blocks (prefill), at most; 0: every "
        "row at once (the scores of the whole query held at once, as IREE's decomposition)",
        min=0)
    block_scores: int = option(
        1 << 19, "at most this many f32 scores per query block: fewer rows per step (at least 8) "
        "where the keys are many; 0: `query-block` rows at every length", min=0)
    whole_scores: int = option(
        1 << 21, "static shapes: no loop over query blocks where the whole query's scores "
        "(every batch, row and key) are at most this many f32 (the default is where the loop "
        "starts to pay: bench/results/attention-forms.md); 0: the loop wherever the rows "
        "pass a block", min=0)
    fused_below: int = option(
        -1, "llvm-cpu, static shapes: keep IREE's fused op where the attention has fewer "
        "multiply-adds than this (a few microseconds: the decomposition's dispatches cost more "
        "than they save); -1: by the target CPU's vector class (FUSED_BELOW, per class: "
        "bench/results/attention-forms.md); 0: decompose every size", min=-1)
    host_sync: bool = option(
        True, "each query block step waits on the host for the step before it (IREE's "
        "task executor otherwise runs ahead and holds every step's buffers at once)")
    on_gpu: bool = option(False, "decompose every attention on GPU targets too (not measured "
                          "there)")
    kv_heads: bool = option(
        True, "grouped-query attention: read k and v once per KV head (the decomposition "
        "loops over [KV head, query head of its group]) instead of the copy that repeats "
        "them for every query head (the same sums; measured bit-identical on sharktank's GQA "
        "Llama)")
    gpu_gathered: bool = option(
        False, "on GPU targets, decompose (whole) the attentions whose k or v is gathered from "
        "a paged cache (IREE 3.13 crashes compiling some of them fused for CUDA and ROCm; "
        "where it compiles them, fused measured faster on CUDA: iree-fusions-compile sets "
        "this only after such a crash)")

    read_columns: bool = option(
        True, "where only the first value columns of the result are read (sharktank's MLA "
        "export: v padded 128 -> 192, the output sliced back), compute only those (llvm-cpu)")
    fused_tiles: bool = option(
        True, "llvm-cpu: keep IREE's fused op, with the plugin's CPU tiles (tiles.py: the "
        "whole value dim per step), where that ran faster than the decomposition (static f16 "
        "decode without repeated KV heads; static f16 prefill of narrow heads: "
        "tiles.fused_faster); false: decompose those too")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[AttentionPlan]]:
        gpu = is_gpu(ctx.target)
        device = h.single_device_affinity(block)
        least, source = self.least_multiply_adds(ctx)  # (the target's: one per find)
        vector_class = cpu_vector_class(ctx.target)
        for op in block.operations:
            op = op.operation
            if op.name != ATTENTION:
                continue
            signature = h.op_signature(op)
            key = structural_key("rewrite-attention", signature)
            if COMPILATION_INFO in op.attributes:
                if tiles_set_here(op, vector_class):
                    continue  # (this pass's change of an earlier round)
                yield Candidate.refused(key, op, "an attention", NoMatch(
                    "has-compilation-info", "the op carries a compilation_info (a tuning "
                    "spec's, or this pass's fused-tiles): its CPU code is chosen already"),
                    gain="time")
                continue
            block = 0 if gpu else self.query_block  # GPU memory is not the limit: one pass
            sync, scores, heads = self.host_sync, self.block_scores, self.kv_heads
            columns, whole = self.reads_value_columns(ctx), self.whole_scores
            candidate = Candidate.of(
                key, op, "an attention",
                lambda op=op, block=block, sync=sync, scores=scores, heads=heads,
                columns=columns, whole=whole: with_columns(with_heads(
                    choose_block(untransposed_v(match_attention(op)), block, scores, sync,
                                 device, whole), heads), columns), gain="time")
            work = None if candidate.blocked or gpu or not least else \
                multiply_adds(candidate.plan)
            if work is not None and work < least:
                candidate.decline("small", f"small: {work} multiply-adds, fewer than {least} "
                                  f"({source}): IREE's fused op measured faster")
            if self.fused_tiles and not gpu and not candidate.blocked and \
                    not candidate.declined:
                self.choose_tiles(candidate, signature, vector_class, ctx)
            if not candidate.blocked and gpu and not self.on_gpu:
                plan = candidate.plan
                if not (gathered(plan.k) or gathered(plan.v)):
                    candidate.decline("gpu", GPU_RULE)
                elif self.gpu_gathered:
                    candidate.sure = GPU_GATHER
                else:
                    candidate.decline("gpu-gathered", GPU_GATHER_FUSED)
            yield candidate

    def choose_tiles(self, candidate: Candidate[AttentionPlan], signature: tuple,
                     vector_class: str | None, ctx: PassContext) -> None:
        """The form of a planned CPU attention: IREE's fused op with the plugin's tiles where
        a measured decision for its tiles key (`rewrite-attention-tiles-<digest>`) says so,
        else where `fused_faster` does; the decomposition otherwise. Where the tiles apply,
        the choice is reported under that key (a `report.Choice`: the tuner measures the other
        form); where a tile check fails and the tiles were wanted, the decomposition stays
        planned and its report says which check. `signature`: the op's (`h.op_signature`)."""
        plan = candidate.plan
        key = structural_key("rewrite-attention-tiles", signature)
        rule = fused_faster(plan, vector_class, ctx.target.chip if ctx.target else None)
        chosen, decided_by = self.choose_form(key, ctx, rule is not None)
        try:
            tiles = fused_tiles(plan, vector_class)
        except NoMatch as e:
            if chosen:
                candidate.plan = replace(plan, tiles_reason=(
                    f"IREE's fused op not kept with tiles: {e.reason} [{e.code}]"))
            return
        why = DECIDED if decided_by != "rule" else rule if chosen else NOT_FASTER
        candidate.plan = replace(plan, tiles=tiles if chosen else None,
                                 tiles_reason=why if chosen else None,
                                 form=Choice(key, choice_text(chosen, why), candidate.location,
                                             chosen, decided_by))

    def reads_value_columns(self, ctx: PassContext) -> bool:
        """Whether this pass computes only the first value columns of an attention whose
        result is read as those (forward-slices leaves such a slice to it, when selected)."""
        return self.read_columns and not is_gpu(ctx.target)

    def least_multiply_adds(self, ctx: PassContext) -> tuple[int, str]:
        """The fewest multiply-adds decomposed (below: the fused op is kept), and whence."""
        if self.fused_below >= 0:
            return self.fused_below, "fused-below"
        vector_class = cpu_vector_class(ctx.target)
        if vector_class is None:
            return 0, "an unmeasured CPU"
        return FUSED_BELOW[vector_class], f"fused-below for {vector_class} CPUs"

    def footprint(self, candidate: Candidate[AttentionPlan], ctx: PassContext) -> Footprint:
        plan = candidate.plan
        if plan.tiles is not None:
            return Footprint.of(reads=[plan.op], writes=[plan.op])
        ops = [plan.op] + ([plan.v_copy, h.defining_op(plan.v)] if plan.v_copy else [])
        if plan.columns is not None:  # the reshape and the slice that read the result
            ops += [op for op in (plan.columns.expand, plan.columns.slice) if op is not None]
        if plan.heads is not None:  # the copies that repeat k and v die
            ops += [op for value in (plan.k, plan.v)
                    for op in (h.defining_op(value), copy_under_collapse(value)[1])]
        return Footprint.of(reads=ops, writes=ops)

    def apply(self, candidate: Candidate[AttentionPlan], ctx: PassContext) -> str:
        plan = candidate.plan
        if plan.form is not None:  # (the tuner measures the other form under its key)
            ctx.report.choices.append(plan.form)
        if plan.tiles is not None:
            return set_fused_tiles(plan)
        return decompose(plan) + (f"; {plan.tiles_reason}" if plan.tiles_reason else "")
