"""interchange-permuted-consumers: fuse transposed epilogues into their producers.

An elementwise `linalg.generic` C reads the result of a non-elementwise op P (matmul,
batch_matmul, reduction, softmax, linalg_ext ...) through a permutation, possibly behind
identity elementwise ops E (bias, scale) and `tensor.expand_shape`/`collapse_shape`. IREE 3.13
fuses a permuted reader into P's dispatch by itself (its dispatch formation maps loops through
permutations); what stops it is a reshape on the path and a producer value with several
readers. This pass removes those obstacles and puts the permutation where the contraction
still vectorizes well:

1. reshapes leave the path: an expand_shape is bubbled up by splitting the loops of the ops
   above it, down to P (P then produces the expanded shape; a `[384,384]` weight becomes a
   free `[12,32,384]` reshape); a collapse_shape is sunk by splitting the loops of the ops
   below it, down to C (a collapse_shape follows C);
2. the permutation moves either into C's output map (C is interchanged so that it reads the
   value with the identity map; a pure transpose copy is instead folded into the E before
   it) or, for a contraction whose innermost parallel loops would then both come from one
   operand (a split N dimension: slower on llvm-cpu, bench/results/code-costs.md), into P's
   result layout:
   P computes the layout C reads, the E's follow, a transpose copy disappears
   (`producer-layout=auto|always|never`);
3. when the value C reads has several elementwise readers, they are interchanged and merged
   into one multi-result generic, since IREE fuses consumers only into single-consumer
   producers.

    %m = linalg.matmul ins(%x, %w : tensor<128x384xf32>, tensor<384x384xf32>) ...
    %e = tensor.expand_shape %m [[0], [1, 2]] ... into tensor<128x12x32xf32>
    %b = linalg.generic {(d0,d1,d2) -> (d0,d1,d2) ...} ins(%e, %bias)      // + bias
    %t = linalg.generic {(d0,d1,d2) -> (d1,d0,d2), id} ins(%b)            // transpose copy
  becomes (MiniLM's query projection: one dispatch instead of two)
    %w3 = tensor.expand_shape %w [[0, 1], [2]] ... into tensor<12x32x384xf32>
    %m3 = linalg.generic {(h,m,d,k): (m,k), (h,d,k) -> (h,m,d)} ins(%x, %w3)
    %t = linalg.generic {id, ...} ins(%m3, %bias) -> tensor<12x128x32xf32>

Of several permuted operands from different producers, the one whose producer can take C
and whose tensor is largest wins. Consumers with reduction loops are left alone (IREE fuses
only all-parallel consumers into a root), and so are readers of an `iree_linalg_ext.gather`
(IREE fuses the gather into its readers whatever the map) or of a `scatter` (IREE fuses no
reader into a scatter's dispatch whatever the map).

Layout: `match.py` (which consumers are candidates, keys, feasibility), `paths.py` (the chain
from producer to consumer), `reshape.py` (reshapes out of the path by splitting loops),
`build.py` (interchange, merge, copy folding, producer layout), `views.py` (which ops are
reshapes: a `tensor.reshape` with dynamic sizes can be one).

Shapes may be dynamic (a permutation does not care): new tensors take their sizes from the
values IREE holds (`tensor.empty` operands, `util.assume.int`, `flow.tensor.tie_shape`, an
expand_shape's `output_shape`), else from `tensor.dim`; a reshape whose dynamic size is
computed after an op it would have to move above is left alone, with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    LINALG_FILL, LINALG_GENERIC, RESHAPES, TENSOR_DIM, TENSOR_EMPTY, TENSOR_EXPAND_SHAPE,
    TENSOR_RESHAPE
)
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, option)

from .build import (apply_layout, can_fold_copy, fold_copy_into_producer, interchange,
                    interchange_order, merge_siblings, preferred_layout_plan)
from .match import (InterchangePlan, MatchOptions, gpu_dynamic_declined, match_consumer,
                    plan_footprint, sure_gain)
from .paths import Path, trace_path
from .reshape import apply_bubble, apply_sink, plan_bubble_expand, plan_sink_collapse
from .views import normalize_reshape, reshape_view

__all__ = ["InterchangePermutedConsumers", "InterchangePlan"]


@dataclass(frozen=True)
class InterchangePermutedConsumers(CandidatePass[InterchangePlan]):
    name = "interchange-permuted-consumers"
    phase = "linalg"
    description = ("elementwise consumers reading a matmul/reduction result through a "
                   "permutation (behind reshapes, bias ops) are moved into its dispatch")

    propagate_reshapes: bool = option(
        True, "move expand_shape/collapse_shape out of the producer -> consumer path")
    merge_multi_use: bool = option(
        True, "merge the elementwise readers of a multi-use value into one generic")
    fold_transposes: bool = option(
        True, "fold a pure transpose copy into the elementwise op that feeds it")
    leave_to_stock: bool = option(
        True, "leave a consumer to IREE when its own transpose-generic-ops would interchange "
        "it the same way (the rewrite would change nothing)")
    producer_layout: Literal["auto", "always", "never"] = option(
        "auto", "move the permutation into the producer's result layout: when that gives a "
        "contraction whose innermost parallel loops are an M and an N loop and the other "
        "form does not (auto), whenever possible (always), or never")
    gpu_dynamic: bool = option(
        False, "on CUDA / ROCm, split a contraction with dynamic dims (a projection's N into "
        "heads); declined by default: measured slower than stock on CUDA")

    def find(self, block: ir.Block, ctx: PassContext):
        options = self.option_values(MatchOptions)
        for op in list(block.operations):
            op = op.operation
            if op.name == LINALG_GENERIC:
                cand = match_consumer(op, options)
                if cand is not None:
                    if not cand.blocked and not self.gpu_dynamic:
                        cand.decline("gpu-dynamic",
                                     gpu_dynamic_declined(cand.plan.path, ctx.target))
                    yield cand

    def footprint(self, candidate: Candidate[InterchangePlan], ctx: PassContext) -> Footprint:
        return plan_footprint(candidate.plan.path)

    def apply(self, candidate: Candidate[InterchangePlan], ctx: PassContext) -> str:
        path = candidate.plan.path
        first = path.reshapes[0] if path.reshapes else None
        # The first expand_shape's plan, made once for both uses below.
        first_plan = plan_bubble_expand(path, first) if first is not None and \
            first.name == TENSOR_EXPAND_SHAPE else None
        sure = sure_gain(path, first_plan)  # read before the rewrite changes the path
        steps: list[str] = []
        try:
            text = self._rewrite(path, steps, first_plan)
        except NoMatch as e:
            if not steps:
                raise  # nothing changed yet: the candidate is skipped with this reason
            # A later step failed after earlier reshape steps changed the IR (still correct).
            return f"{'; '.join(steps)}; stopped: {e}"
        candidate.sure = sure
        return text

    def end_round(self, block: ir.Block, ctx: PassContext) -> None:
        _erase_dead_views(block)  # once per round, not per change (a walk of the block)

    def _rewrite(self, path: Path, steps: list[str], first_plan: list | str | None) -> str:
        consumer = path.consumer
        producer_name = path.producer.name
        # 1. Reshapes out of the way, one at a time.
        for step in range(12):
            if not path.reshapes:
                break
            reshape = path.reshapes[0]
            if reshape.name == TENSOR_RESHAPE:
                view = reshape_view(reshape)
                kind = view.kind.removeprefix("tensor.")
                normalize_reshape(view)
                steps.append(f"tensor.reshape rewritten as the {kind} it is")
                path = _retrace(consumer, path)
                if path is None:
                    return f"{'; '.join(steps)} (consumer no longer permuted)"
                continue
            if reshape.name == TENSOR_EXPAND_SHAPE:
                plan = first_plan if step == 0 and first_plan is not None else \
                    plan_bubble_expand(path, reshape)
                if isinstance(plan, str):
                    raise NoMatch("expand-not-bubbled", plan)
                names = ", ".join(op.name for op, _ in plan)
                apply_bubble(plan, reshape)
                steps.append(f"expand_shape moved above {names} (loops split)")
            else:
                plan = plan_sink_collapse(path, reshape)
                if isinstance(plan, str):
                    raise NoMatch("collapse-not-sunk", plan)
                names = ", ".join(op.name for op, _ in plan)
                consumer = apply_sink(plan)
                steps.append(f"collapse_shape moved below {names} (loops split)")
            path = _retrace(consumer, path)
            if path is None:
                return f"{'; '.join(steps)} (consumer no longer permuted)"
        if path.reshapes:
            raise NoMatch("reshapes-remain", "reshapes remain on the path")
        # 2. The permutation moves into C's output map, P's layout, or a folded copy.
        tail = path.value
        siblings = list(dict.fromkeys(user for user in h.users(tail) if user.name != TENSOR_DIM))
        if len(siblings) > 1:
            merged = []
            for sibling in siblings:
                idx = [i for i, operand in enumerate(h.dps_inputs(sibling)) if operand == tail][0]
                dims = h.map_dim_positions(h.indexing_maps(sibling)[idx])
                if dims != list(range(len(dims))):
                    sibling = interchange(sibling, interchange_order(sibling, idx))
                merged.append(sibling)
            merged = h.in_block_order(merged)  # no walk of the block
            new = merge_siblings(merged)
            steps.append(f"interchanged and merged {len(merged)} readers of the "
                         f"{producer_name} result into one {len(new.results)}-result generic")
        elif (layout := preferred_layout_plan(path, self.producer_layout)) is not None:
            name = path.producer.name
            apply_layout(path, layout)
            steps.append(f"{name} computes in the layout the consumer reads (loops "
                         f"{layout.order}), consumer reads it with the identity map")
        else:
            folded = can_fold_copy(consumer, path) if self.fold_transposes else None
            if folded is not None:
                fold_copy_into_producer(consumer, folded)
                steps.append("folded the transpose copy into the elementwise op before it")
            else:
                interchange(consumer, interchange_order(consumer, path.operand))
                steps.append(f"interchanged the consumer (operand {path.operand} read with "
                             "the identity map)")
        return f"reading {producer_name}: {'; '.join(steps)}"


def _retrace(consumer: ir.Operation, old: Path) -> Path | None:
    """The consumer's path through the same operand after a reshape step."""
    path = trace_path(consumer, old.operand)
    if path.producer is None:
        return None
    dims = h.map_dim_positions(h.indexing_maps(consumer)[old.operand])
    if dims is None or dims == list(range(len(dims))):
        return None
    return path


def _erase_dead_views(block: ir.Block) -> None:
    """The empties, fills and reshapes a rewrite leaves without users."""
    b.erase_dead(list(block.operations), b.of_kind(TENSOR_EMPTY, LINALG_FILL, *RESHAPES))
