"""share-layer-executables: slices that read one plane each of a per-layer tensor take the
plane's index from an operand, so that IREE compiles one executable for every layer.

IREE outlines each dispatch with the static offsets of the slices it reads folded into its
loads (`iree_tensor_ext.dispatch.tensor.load ... offsets = [0, 1, 0, ...]`), so dispatches
that differ only in which layer of a KV cache they read are distinct executables, each
compiled by LLVM. sharktank's 32-layer Llama reads K and V of each layer from its paged
cache, `[pages, layers, 2, heads, block, dim]`: 64 slices, 64 executables of one code. Each
varying static offset (a unit dim the slice drops: one layer, K or V) becomes an index
operand, a constant behind `util.optimization_barrier` so that IREE passes it to the
dispatch instead of folding it back; the dispatches are then the same and IREE deduplicates
their executables (fewer executables and less compile time, the same decode time, logits
and cache bit-identical: bench/results/code-costs.md, share-layer-executables).

    %k0 = tensor.extract_slice %c0[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 32, 32] [1, 1, 1, 1, 1, 1]
    %v0 = tensor.extract_slice %c0[0, 0, 1, 0, 0, 0] [%n, 1, 1, 2, 32, 32] ...
    %k1 = tensor.extract_slice %c1[0, 1, 0, 0, 0, 0] [%n, 1, 1, 2, 32, 32] ...     (x 32 layers)
  =>
    %l1 = util.optimization_barrier %c1_index : index           (one per value, at the top)
    %k1 = tensor.extract_slice %c1[0, %l1, %l0, 0, 0, 0] [%n, 1, 1, 2, 32, 32] ...

A group is the slices of a block with the same source and result types, sizes and strides,
whose readers are structurally the same ops (repeated layers; slices read by different code
would not share an executable anyway), at least `min-group` of them, with a dim that picks
one layer per tensor (each layer slices its own cache value at its own index: planes of one
tensor read side by side, a batched result or packed ids, are left to IREE). No value
changes (the same offsets, given at run time). Left alone (with the reason): slices with
offsets or strides known at run time, non-unit strides, groups whose offsets differ in a
dim the slice does not cut to one plane, and GPU targets (not measured on a GPU;
`on-gpu=true`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import util

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import ARITH_CONSTANT, TENSOR_EXTRACT_SLICE
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, option, structural_key)
from iree_fusions.compiler.target import is_llvm_cpu

BARRIER = h.UTIL_OPTIMIZATION_BARRIER
GPU_RULE = ("a GPU target: dynamic plane offsets not measured on a GPU (on-gpu=true applies "
            "them)")


@dataclass
class SharePlan:
    """The group's slices and the source dims whose offsets become operands."""

    slices: list[ir.Operation]
    dims: list[int]


def _readers_signature(op: ir.Operation) -> tuple:
    return tuple(sorted(repr(h.op_signature(h.use_owner(use))) for use in op.results[0].uses))


def _group_key(op: ir.Operation) -> tuple:
    """What the slices of one group share: types, sizes, strides, their readers' structure."""
    return (h.type_text(op.operands[0]), h.type_text(op.results[0]),
            tuple(h.i64_array(op, "static_sizes")), _readers_signature(op))


def plan_group(slices: list[ir.Operation], min_group: int) -> SharePlan:
    """The plan for one group of alike slices, or NoMatch at the check that fails."""
    if len(slices) < min_group:
        raise NoMatch("min-group",
                      f"{len(slices)} alike slice(s), fewer than min-group={min_group}")
    offsets = [h.i64_array(op, "static_offsets") for op in slices]
    sizes = h.i64_array(slices[0], "static_sizes")
    dims = [d for d in range(len(sizes)) if len({o[d] for o in offsets}) > 1]
    if not dims:
        raise NoMatch("same-offsets", "the slices read the same offsets (nothing to share)")
    for d in dims:
        if sizes[d] != 1:
            raise NoMatch("offsets-dim-not-plane",
                          f"their offsets differ in dim {d}, which they do not cut to one "
                          f"plane (size {sizes[d]}): a dynamic offset there is not a layer's")
    if not any(_picks_one_layer_per_tensor(slices, offsets, d) for d in dims):
        raise NoMatch("no-layer-dim",
                      "no dim picks one layer per tensor (each tensor sliced at one offset "
                      "of it, another one per tensor): planes of one tensor read side by "
                      "side (a batched result, packed ids), not one per layer")
    return SharePlan(slices, dims)


def _picks_one_layer_per_tensor(slices: list[ir.Operation], offsets: list[list[int]],
                                dim: int) -> bool:
    """Each source of the slices is read at one offset of `dim`, and no two sources at the
    same one: the dim is the layer each layer's own value is read at."""
    at: dict[ir.Value, set[int]] = {}
    for op, offset in zip(slices, offsets):
        at.setdefault(op.operands[0], set()).add(offset[dim])
    layers = [next(iter(seen)) for seen in at.values() if len(seen) == 1]
    return len(layers) == len(at) >= 2 and len(set(layers)) == len(layers)


def _plane_index(block: ir.Block, value: int) -> ir.Value:
    """`value` as an index IREE cannot fold into a dispatch: the block's own at its top
    (made by an earlier group), else made there. Only the constants and barriers at the
    top are visited."""
    first = next(iter(block.operations)).operation
    for op in block.operations:
        op = op.operation
        if op.name != BARRIER:
            if op.name == ARITH_CONSTANT:
                continue
            break
        source = h.defining_op(op.operands[0])
        if source is not None and source.name == ARITH_CONSTANT and \
                isinstance(op.results[0].type, ir.IndexType) and \
                ir.IntegerAttr(source.attributes["value"]).value == value:
            return op.results[0]
    with first.location, ir.InsertionPoint(first):
        return util.OptimizationBarrierOp([ir.IndexType.get()],
                                          [b.index_const(value)]).results[0]


def share_planes(plan: SharePlan) -> str:
    """Each slice of the group, its varying offsets given as operands."""
    first = plan.slices[0]
    text = (f"{len(plan.slices)} slices of {h.type_text(first.operands[0])} to "
            f"{h.type_text(first.results[0])} read their plane (dim(s) "
            f"{', '.join(map(str, plan.dims))}) from an operand: IREE can compile one "
            "executable for all of them")
    for op in plan.slices:
        offsets, sizes = h.i64_array(op, "static_offsets"), h.slice_sizes(op)
        mixed = [_plane_index(op.block, o) if d in plan.dims else o
                 for d, o in enumerate(offsets)]
        with op.location, ir.InsertionPoint(op):
            new = b.extract_slice(op.operands[0], mixed, sizes, op.results[0].type)
        op.results[0].replace_all_uses_with(new)
        op.erase()
    return text


@dataclass(frozen=True)
class ShareLayerExecutables(CandidatePass[SharePlan]):
    name = "share-layer-executables"
    phase = "linalg"
    description = ("slices reading one layer each of a per-layer tensor (a KV cache) -> the "
                   "layer's offset as an operand: one executable for all layers (compile time)")

    min_group: int = option(4, "fewest alike slices (repeated layers) that are shared", min=2)
    on_gpu: bool = option(False, "share on GPU targets too (not measured on a GPU)")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[SharePlan]]:
        groups: dict[tuple, list[ir.Operation]] = {}
        for op in block.operations:
            op = op.operation
            if op.name != TENSOR_EXTRACT_SLICE:
                continue
            if h.has_dynamic_offsets(op) or \
                    any(s != 1 for s in h.i64_array(op, "static_strides")):
                continue  # not a static plane selection: nothing to share
            groups.setdefault(_group_key(op), []).append(op)
        gpu = ctx.target is not None and not is_llvm_cpu(ctx.target) and not self.on_gpu
        for key, slices in groups.items():
            if len(slices) < 2:
                continue  # a slice alone: no group to report
            first = slices[0]
            summary = f"{len(slices)} slices of {h.type_text(first.operands[0])}"

            candidate = Candidate.of(
                structural_key("share-layer-executables", key, len(slices)), first, summary,
                lambda slices=slices: plan_group(slices, self.min_group), gain="compile-time")
            if gpu and not candidate.blocked:
                # (a decisions file measured on the GPU may apply it)
                candidate.decline("gpu", GPU_RULE)
            yield candidate

    def footprint(self, candidate: Candidate[SharePlan], ctx: PassContext) -> Footprint:
        return Footprint.of(reads=candidate.plan.slices, writes=candidate.plan.slices)

    def apply(self, candidate: Candidate[SharePlan], ctx: PassContext) -> str:
        return share_planes(candidate.plan)
