"""Which consumers are candidates, their keys, and whether each can join its producer's
dispatch (the reason at the check that failed when it cannot)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import RESHAPES, TENSOR_DIM, TENSOR_EXPAND_SHAPE
from iree_fusions.compiler.protocol import (Candidate, Footprint, NoMatch, round_analysis,
                                            structural_key)

from .build import preferred_layout_plan
from .paths import Path, is_producer, trace_path
from .reshape import plan_bubble_expand, plan_sink_collapse


@dataclass(frozen=True)
class MatchOptions:
    """The options of interchange-permuted-consumers that matching reads."""

    propagate_reshapes: bool
    merge_multi_use: bool
    leave_to_stock: bool
    producer_layout: Literal["auto", "always", "never"]


@dataclass
class InterchangePlan:
    """The permuted read to remove: the path from its producer, and how good it is."""

    path: Path
    score: tuple  # higher is better: (1, producer bytes, full map, -reshapes, -operand)


def match_consumer(consumer: ir.Operation, options: MatchOptions
                   ) -> Candidate[InterchangePlan] | None:
    """The candidate of an elementwise generic that reads a producer's result through a
    permutation (None: not a candidate at all)."""
    if not h.is_elementwise_generic(consumer):
        return None  # IREE fuses only all-parallel consumers into a root
    loops = len(h.iterator_types(consumer))
    permuted, identity = [], []
    input_dims = h.indexing_map_dims(consumer)[:h.num_dps_inputs(consumer)]
    for i, dims in enumerate(input_dims):
        if dims is None or not h.is_projected_permutation(dims, loops):
            continue
        if dims == tuple(range(len(dims))):  # the identity map, or a projection of it
            identity.append(i)
        else:
            permuted.append(i)
    if not permuted:
        return None
    traced = {i: path for i in permuted if (path := trace_path(consumer, i)).producer is not None}
    if not traced:
        return None
    key = structural_key("interchange-permuted-consumers", h.op_signature(consumer), *[
        (i, [h.op_signature(op) for op in path.ops], h.op_signature(path.producer),
         len(h.users(path.value))) for i, path in traced.items()])
    summary = f"{consumer.name} reading {len(traced)} permuted producer result(s)"
    return Candidate.of(key, consumer, summary,
                        lambda: _choose_path(consumer, traced, identity, options))


def _choose_path(consumer: ir.Operation, traced: dict[int, Path], identity: list[int],
                 options: MatchOptions) -> InterchangePlan:
    if h.body_reads_tensor(consumer):
        raise NoMatch("consumer-reads-tensor", "consumer reads a tensor inside its body")
    plans, declines = [], []
    for operand, path in traced.items():
        try:
            plans.append(InterchangePlan(path, feasibility(path, options)))
        except NoMatch as e:
            declines.append((operand, path, e))
    if not plans:  # one operand's code (the first's): the reason names each operand's
        raise NoMatch(declines[0][2].code, "; ".join(
            f"operand {operand} ({path.producer.name}): {e}" for operand, path, e in declines))
    best = max(plans, key=lambda plan: plan.score)
    for operand in identity:
        path = trace_path(consumer, operand)
        if path.producer is None or path.reshapes:
            continue
        try:
            score = feasibility(path, options)
        except NoMatch:
            continue
        if score >= best.score:
            raise NoMatch("identity-already",
                          f"already reads {path.producer.name} (operand {operand}) with the "
                          "identity map and fuses there")
    if options.leave_to_stock and stock_interchanges_it(consumer, best.path, options):
        raise NoMatch("stock-does-it", STOCK_DOES_IT)
    return best


# How large a dynamic dim without a `util.assume.int` bound counts when candidates of one
# consumer are ranked by the bytes of their producer's result.
DYNAMIC_DIM_ESTIMATE = h.TYPICAL_DYNAMIC_DIM

STOCK_DOES_IT = ("IREE's own iree-dispatch-creation-transpose-generic-ops interchanges this "
                 "consumer the same way (single-use producer read through a permutation): "
                 "nothing to gain")


def stock_interchanges_it(consumer: ir.Operation, path: Path,
                          options: MatchOptions) -> bool:
    """Would the rewrite be exactly stock IREE's TransposeGenericOpPattern? It takes the
    first input produced by a single-use, non-elementwise linalg op (stopping at one read
    with the identity map) whose map is a permutation, and interchanges the consumer."""
    if path.ops or len(set(h.users(path.value))) != 1 or \
            preferred_layout_plan(path, options.producer_layout) is not None:
        return False  # the pass does more than stock here
    for value, map_ in zip(h.dps_inputs(consumer), h.indexing_maps(consumer)):
        producer = h.defining_op(value)
        if producer is None or not h.is_reduction_or_contraction(producer) or \
                len(h.users(producer.results[0])) != 1:
            continue
        if h.is_identity_map(map_):
            return False
        if map_.is_permutation:
            return value == path.value
    return False


# Producers whose readers' map does not decide the dispatches in IREE 3.13: a gather is not
# the root of a dispatch of its own, IREE fuses it into its readers' dispatch (sharktank's
# paged cache: gather, transpose and attention are one); a scatter's dispatch takes no
# consumer, whatever map it reads the scatter through (isFusableWithConsumer wants a
# LinalgFusionOpInterface producer; checked with and without aggressive fusion: a scatter and
# its identity-map reader stay two dispatches; toy DeepSeek's MoE routing transposes one).
MAP_DOES_NOT_MATTER = {
    h.LINALG_EXT_GATHER: "IREE fuses iree_linalg_ext.gather into its readers' dispatch "
    "whichever map they read it through: nothing to gain",
    h.LINALG_EXT_SCATTER: "IREE fuses no reader into iree_linalg_ext.scatter's dispatch, "
    "whichever map it reads the scatter through: nothing to gain",
}


def feasibility(path: Path, options: MatchOptions) -> tuple:
    """Score (higher is better) if C could join P's dispatch after the rewrite."""
    if path.producer.name in MAP_DOES_NOT_MATTER:
        raise NoMatch("map-does-not-matter", MAP_DOES_NOT_MATTER[path.producer.name])
    if path.reshapes and not options.propagate_reshapes:
        raise NoMatch("reshape-between",
                      "a reshape sits between producer and consumer (propagate-reshapes=false)")
    # Every value between P and C but the last must flow to the next op only.
    values = [path.producer.results[0]] if path.producer.results else []
    values += [op.results[0] for op in path.ops]
    chain_ops = path.ops + [path.consumer]
    for value, nxt in zip(values[:-1], chain_ops[:-1]):
        users = {user for user in h.users(value) if user.name != TENSOR_DIM}
        if users != {nxt}:
            raise NoMatch("multi-use-result",
                          f"{h.defining_op(value).name} result has {len(users)} users (IREE fuses "
                          "consumers only into single-consumer producers)")
    if len(path.producer.results) != 1:
        raise NoMatch("multi-result-producer", f"producer {path.producer.name} has several results")
    for reshape in path.reshapes:
        plan = (plan_bubble_expand(path, reshape) if reshape.name == TENSOR_EXPAND_SHAPE
                else plan_sink_collapse(path, reshape))
        if isinstance(plan, str):
            raise NoMatch("reshape-not-movable", plan)
        break  # later reshapes are planned after the first one is gone
    tail = path.value
    siblings = list(dict.fromkeys(user for user in h.users(tail) if user.name != TENSOR_DIM))
    if len(siblings) > 1:
        check_siblings(siblings, tail, options)
    dims = h.map_dim_positions(h.indexing_maps(path.consumer)[path.operand])
    full = len(dims) == h.indexing_maps(path.consumer)[0].n_dims
    return (1, h.estimated_bytes(path.producer.results[0], DYNAMIC_DIM_ESTIMATE), int(full),
            -len(path.reshapes), -path.operand)


def check_siblings(siblings: list[ir.Operation], value: ir.Value,
                   options: MatchOptions) -> None:
    """The readers of a multi-use value can be interchanged and merged into one generic."""
    if not options.merge_multi_use:
        raise NoMatch("merge-multi-use-off",
                      f"value has {len(siblings)} users (merge-multi-use=false)")
    rank = ir.RankedTensorType(value.type).rank
    for sibling in siblings:
        if not h.is_elementwise(sibling) or h.body_reads_tensor(sibling):
            raise NoMatch("sibling-not-mergeable",
                          f"value has {len(siblings)} users, {sibling.name} is not a mergeable "
                          "elementwise op")
        maps = h.indexing_maps(sibling)
        loops = maps[0].n_dims
        if loops != rank:
            raise NoMatch("sibling-spaces",
                          "value has several users with different iteration spaces")
        for operand, map_ in zip(h.dps_inputs(sibling), maps):
            dims = h.map_dim_positions(map_)
            if operand == value and (dims is None or not h.is_permutation(dims, loops)):
                raise NoMatch("sibling-broadcast",
                              "value has several users, one reads it through a broadcast")
        for map_ in maps:
            if h.map_dim_positions(map_) is None:
                raise NoMatch("sibling-map", "a sibling has a non-permutation map")
    block = siblings[0].parent
    if any(sibling.parent != block for sibling in siblings):
        raise NoMatch("sibling-blocks", "siblings in different blocks")
    placements = round_analysis(h.block_placements, siblings[0].block)
    if len({placements[sibling] for sibling in siblings}) > 1:
        raise NoMatch("multi-device",
                      "the readers take inputs placed on different devices (a multi-device "
                      "program): ops on different devices are never merged")
    positions = round_analysis(h.block_positions, siblings[0].block)
    first = min(siblings, key=lambda sibling: positions[sibling])
    pos = positions[first]
    for sibling in siblings:
        for operand in sibling.operands:
            if not h.defined_before(operand, pos, positions):
                raise NoMatch("siblings-dependent",
                              "siblings depend on each other or on values defined between them")


def plan_footprint(path: Path) -> Footprint:
    """What a plan reads: the consumer, the path from its producer, the other readers of the
    value it reads (their maps and users were checked) and the chains behind the consumer's
    other inputs (weighed against this one). What it writes: the consumer, the path and those
    readers (rewritten, interchanged or merged), the producers of their operands (a merge
    changes their users, a reshape moved above an op reads them) and the readers of their
    results (which read the new ops)."""
    consumer = path.consumer
    core = [consumer, path.producer, *path.ops, *h.users(path.value)]
    reads = list(core)
    for i, value in enumerate(h.dps_inputs(consumer)):
        other = trace_path(consumer, i)
        reads += other.ops + ([other.producer] if other.producer is not None else [])
        owner = h.defining_op(value)
        if owner is not None and is_producer(owner):  # stock_interchanges_it counts its users
            reads.append(owner)
    writes = list(core)
    for op in core:
        writes += [def_op for operand in op.operands
                   if (def_op := h.defining_op(operand)) is not None]
        writes += [user for result in op.results for user in h.users(result)]
    return Footprint.of(reads, writes)


def sure_gain(path: Path, first_plan: list | str | None = None) -> str | None:
    """Why rewriting this path saves a dispatch whatever stock IREE does, when the path
    itself says so (Candidate.sure): an expand_shape between a contraction and its permuted
    reader that splits a loop of the contraction's constant operand (a weight: the heads of
    a Q/K/V projection). Moving it above takes reshaping the weight, which IREE's dispatch
    creation never does to fuse a reader into a contraction (a split of the rows it can
    match itself: convnext's, no dispatch saved). None: the driver weighs it.
    `first_plan`: `plan_bubble_expand` of the path's first reshape, when already made."""
    reshapes = path.reshapes
    if not reshapes or reshapes[0].name != TENSOR_EXPAND_SHAPE:
        return None
    plan = first_plan if first_plan is not None else plan_bubble_expand(path, reshapes[0])
    if isinstance(plan, str):
        return None
    split = next((splits for op, splits in plan if op == path.producer), {})
    producer = path.producer
    for value, map_ in zip(h.dps_inputs(producer), h.indexing_maps(producer)):
        dims = h.map_dim_positions(map_) or []
        if h.is_constant_like(value) and any(dim in split for dim in dims):
            return ("an expand_shape between the contraction and its permuted reader splits a "
                    "loop of its constant operand: IREE does not reshape a contraction's "
                    "weight to fuse a reader into it")
    return None


# IREE's LLVMGPU backends, whose configs the rule is about (ROCm gfx942 compiles to the same
# pair of configs; timed on CUDA only). Vulkan's SPIR-V configs differ: not declined there.
GPU_BACKENDS = ("cuda", "rocm")
GPU_DYNAMIC_RULE = (
    "on a CUDA/ROCm target a contraction with dynamic dims whose result this rewrite splits (a "
    "projection's N split into heads) loses the config IREE gives the plain contraction: "
    "stock compiles the [?,N] matmul with VectorDistribute's matvec config (one workgroup per "
    "output element), the split [H,?,D] contraction gets TileAndFuse's tile for an unknown "
    "large M (workgroup [1,32,128,1] over a head dim of 32: 8-16 workgroups at 64 rows); "
    "measured 0.91-0.98x of stock on an H200 (llama-start_pos-s64, bert-tiny-b1-s64, dynamic "
    "sequence)")


def gpu_dynamic_declined(path: Path, target) -> str | None:
    """Why the default rule declines this path on `target` (None: it does not): a GPU
    target, a producer contraction with a dynamic dim reading a weight (a constant, or one
    computed from constants alone), and an expanding reshape on the path that splits a dim
    into two or more static sizes > 1 (the projection's N into heads). The rewrite moves that
    split into the contraction, which IREE's GPU configs then tile as a generic multi-N
    contraction. A batch_matmul of activations (attention) is left to the rewrite."""
    if target is None or target.backend not in GPU_BACKENDS:
        return None
    producer = path.producer
    result = producer.results[0].type
    if not isinstance(result, ir.RankedTensorType) or result.has_static_shape or \
            not producer.name.startswith("linalg.") or \
            not any(_weight_like(v) for v in h.dps_inputs(producer)):
        return None
    from .views import reshape_view

    for op in path.reshapes:
        view = reshape_view(op)
        if view is not None and view.kind == TENSOR_EXPAND_SHAPE and any(
                sum(isinstance(view.expanded[i], int) and view.expanded[i] > 1
                    for i in group) >= 2 for group in view.groups):
            return GPU_DYNAMIC_RULE
    return None


def _weight_like(value: ir.Value, depth: int = 4) -> bool:
    """A constant-like tensor, or one computed from such tensors alone (a weight transposed
    or reshaped in the program: IREE hoists that to load time)."""
    if h.is_constant_like(value):
        return True
    op = h.defining_op(value)
    if op is None or depth == 0 or not (op.name.startswith("linalg.") or op.name in RESHAPES):
        return False
    inputs = h.dps_inputs(op) if op.name.startswith("linalg.") else [op.operands[0]]
    return bool(inputs) and all(_weight_like(v, depth - 1) for v in inputs)
