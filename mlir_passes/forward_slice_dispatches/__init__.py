"""forward-slice-dispatches: a copy-only dispatch is folded into the dispatches that read it.

IREE's dispatch creation gives a `tensor.extract_slice` that is not contiguous in memory (a
strided slice, or a column range of a row-major tensor) a dispatch of its own when it cannot
clone the slice into its reader (a reshape between them, or a reader that is not a dispatch
root): a `slow_memcpy` that loads the slice and stores it whole, for dispatches that load it
whole. sharktank's Llama makes four per layer (RoPE reads the even and odd columns of Q and K;
in prefill through a reshape that splits the sequence into pages). Here, after dispatch
creation, there is no guessing what IREE does: the copy dispatch is there. Each reader binds
the copy's source instead and loads the slice itself, with the copy's offsets and strides; the
copy goes. One dispatch fewer, the slice is never written, no value changes (the same elements
are loaded), and no tensor is made: a reshape between them is applied to the source (a
reshape of a row-major tensor, free).

    %s = flow.dispatch.workgroups(%q) : (tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> =
           (%a, %o) { %v = load %a offsets [0, 0, 0, 1] sizes [4, 1, 8, 16] strides [1, 1, 1, 2]
                      store %v, %o }
    %r = flow.dispatch.workgroups(%s, %cos) = (%b: tensor<4x8x16xf16>, ...) {
           %x = load %b offsets [0, 0, 0] sizes [4, 8, 16] strides [1, 1, 1]  ... }
  =>
    %r = flow.dispatch.workgroups(%q, %cos) = (%b: tensor<4x1x8x32xf16>, ...) {
           %x = load %b offsets [0, 0, 0, 1] sizes [4, 1, 8, 16] strides [1, 1, 1, 2] ... }

Through a reshape (prefill):
    %t = flow.tensor.reshape %s : tensor<4x?x8x16xf16>{%n} -> tensor<4x?x32x8x16xf16>{%p}
  =>
    %t = flow.tensor.reshape %q : tensor<4x?x8x32xf16>{%n} -> tensor<4x?x32x8x32xf16>{%p}
    (the reader loads [0, 0, 0, 0, 1] [4, %p, 32, 8, 16] [1, 1, 1, 1, 2] of it)

Left alone, with the reason: copies whose sliced dims (not read whole) have offsets, sizes or
strides known only at run time; copies read by anything but loads (of any part: offsets and
strides composed) with static offsets and strides in a dispatch, or by an operand tied to a
result; a reshape that moves a sliced dim, or splits one off whole rows. And, named by the
check (`check_*`), what would load other elements than the copy's: its part outside the source
(part-in-source), a reader's outside the copy's (reader-part-in-copy); through a reshape (of a
copy that drops unit dims: S[:, 1, 2, :] of 4x3x5x64 copied to 4x64 and viewed as 4x1x64 was
viewed as 4x5x64), two sliced dims on one view dim (own-view-dim) or swapped (view-dim-order),
a widened view of another element count than the source's (element-count).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, structural_key)

from .build import fold_copy  # noqa: F401
from .match import (WORKGROUPS, WholeCopy, CopySlice, Read, ViewSlice, copy_like,  # noqa: F401
                    match_copy)
from .plan import (SliceFold, check_element_count, check_own_view_dims,  # noqa: F401
                   check_view_order, plan_fold, reshaped_slices)


@dataclass(frozen=True)
class ForwardSliceDispatches(CandidatePass[SliceFold]):
    """Folds copy-only dispatches (IREE's `slow_memcpy` of a non-contiguous slice) into the
    dispatches that load them. Sure of its gain: it runs after dispatch creation and removes
    a dispatch that exists."""

    name = "forward-slice-dispatches"
    phase = "flow"
    description = ("a dispatch that only copies a non-contiguous slice (RoPE's even/odd "
                   "columns) -> its readers load the slice from the source themselves")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[SliceFold]]:
        for op in (o.operation for o in block.operations):
            if copy_like(op) is None:
                continue
            try:
                copy = match_copy(op)
            except WholeCopy:  # not a slice
                continue
            except NoMatch as e:  # a copy of a slice left as it is: reported, with why
                yield Candidate.refused(structural_key("forward-slice-dispatches",
                                                       h.op_signature(op)), op,
                                        f"a {op.results[0].type} copy", e)
                continue
            key = structural_key("forward-slice-dispatches", h.type_text(copy.source),
                                 h.type_text(op.results[0]), tuple(copy.sliced))
            yield Candidate.of(key, op, f"{op.results[0].type} copy of {copy.source.type}",
                               lambda copy=copy: plan_fold(copy))

    def footprint(self, candidate: Candidate[SliceFold], ctx: PassContext) -> Footprint:
        plan = candidate.plan
        ops = [plan.copy.op, *(read.reader for read in plan.reads),
               *(read.reshape for read in plan.reads if read.reshape is not None)]
        return Footprint.of(reads=ops, writes=ops)

    def apply(self, candidate: Candidate[SliceFold], ctx: PassContext) -> str:
        return fold_copy(candidate.plan)
