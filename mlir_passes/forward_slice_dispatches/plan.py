"""How a copy's readers load its part of the source: the view a reshape gives it, and the
checks that the view keeps the copy's elements (named `check_*`, raising NoMatch)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

from iree.compiler import ir

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import NoMatch

from .match import DYN, CopySlice, Read, ViewSlice, find_reads


@dataclass
class SliceFold:
    copy: CopySlice
    reads: list[Read]


def _same_dims(reshape: ir.Operation, shape: list[int], view: list[int], n: int) -> bool:
    """The first `n` dims of the copy's `shape` and the reshape's `view` are the same."""
    if shape[:n] != view[:n]:
        return False
    source_dims, result_dims = reshape_dims(reshape)
    dynamic = sum(1 for size in shape[:n] if size == DYN)
    return ia.same_values(source_dims[:dynamic], result_dims[:dynamic])


def reshape_dims(reshape: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    """The run-time sizes of a flow.tensor.reshape's source and result dims (outside)."""
    view = h.FlowReshape(reshape)
    return view.source_dims, view.result_dims


def reshaped_slices(copy: CopySlice, reshape: ir.Operation) -> list[tuple[int, ViewSlice]]:
    """Per sliced dim of the copy (its part of the source in the source's rank: dropped unit
    dims are a reshape too), the view dim it becomes and its ViewSlice there, each placed on
    its own (`plan_fold` checks them together). A sliced dim keeps its place (the dims before
    it, or all after it, the same on both sides), or is split into static dims with the same
    dims around: with stride 1 and an offset and extent that the inner dims' product P divides,
    the source dim is split into (extent / P, inner dims), the part starting at offset / P."""
    view = list(reshape.results[0].type.shape)
    src_shape = list(copy.source.type.shape)
    shape = [extent if part is None else part[1] for extent, part in zip(src_shape, copy.sliced)]
    out: list[tuple[int, ViewSlice]] = []
    for d, part in enumerate(copy.sliced):
        if part is None:
            continue
        offset, size, stride = part
        tail = len(shape) - d  # dims from d on
        after = shape[d + 1:]
        if len(view) >= tail and all(a == b != DYN for a, b in zip(shape[d:], view[-tail:])):
            out.append((len(view) - tail, ViewSlice(src_shape[d], offset, stride, d)))
        elif _same_dims(reshape, shape, view, d + 1):  # (False where the view is shorter)
            out.append((d, ViewSlice(src_shape[d], offset, stride, d)))
        elif _same_dims(reshape, shape, view, d) and \
                all(a == b != DYN for a, b in zip(after, view[len(view) - len(after):])):
            split = view[d:len(view) - len(after)]
            inner = math.prod(split[1:])
            if not split or DYN in split or math.prod(split) != size or stride != 1 or \
                    offset % inner or src_shape[d] % inner:
                raise NoMatch("reshape-splits-slice",
                              f"the reshape to {view} splits sliced dim {d} where the slice "
                              "does not fall on whole rows of the split")
            out.append((d, ViewSlice(src_shape[d] // inner, offset // inner, 1, d,
                                     len(split))))
        else:
            raise NoMatch("reshape-moves-slice", f"the reshape to {view} moves sliced dim {d}")
    return out


# ---------------------------------------------------------------- invariant checks
# Each raises NoMatch("<check>", ...) rather than let the fold load other elements.

def _inside(offset: int, size: int, stride: int, extent: int) -> bool:
    """The part (size kDynamic: known at run time) starts and, if static, ends in [0, extent)."""
    last = offset + (0 if size == DYN else (size - 1) * stride)
    return offset >= 0 and stride >= 1 and (size == DYN or size >= 1) and last < extent


def check_part_in_source(copy: CopySlice) -> None:
    """the copy's part of each sliced dim is inside the source's extent."""
    for d, part in enumerate(copy.sliced):
        if part is not None and not _inside(*part, copy.source.type.shape[d]):
            raise NoMatch("part-in-source", f"the copy's part {list(part)} (offset, size, stride) "
                          f"of source dim {d} is not inside its extent "
                          f"{copy.source.type.shape[d]}")


def check_reader_part_in_copy(copy: CopySlice, read: Read,
                              placed: list[tuple[int, ViewSlice]] | None) -> None:
    """each load of the reader reads inside the copy's part of every sliced
    dim (its result dim, or the view dim it became): composed, inside the source's part."""
    extents = {copy.kept[d]: part[1] for d, part in enumerate(copy.sliced)
               if part is not None and copy.kept[d] is not None} if placed is None else \
        {j: read.reshape.results[0].type.shape[j] for j, _ in placed}
    reader = read.reader
    for load in h.users(h.Workgroups(reader).body_argument(read.operand)):
        for k, part in enumerate(zip(*h.static_parts(load))):
            if k in extents and not _inside(*part, extents[k]):
                raise NoMatch("reader-part-in-copy", f"a reader loads {list(part)} (offset, size, "
                              f"stride) of dim {k} of extent {extents[k]}, outside the copy's part")


def check_own_view_dims(placed: list[tuple[int, ViewSlice]], view: list[int]) -> None:
    """each sliced dim becomes view dims of its own (not two unit dims on one)."""
    owner: dict[int, int] = {}
    for j, part in placed:
        for k in range(j, j + part.span):
            if owner.setdefault(k, part.source_dim) != part.source_dim:
                raise NoMatch("own-view-dim", f"sliced dims {owner[k]} and {part.source_dim} both "
                              f"become dim {k} of the reshape to {view}")


def check_view_order(placed: list[tuple[int, ViewSlice]], view: list[int]) -> None:
    """the sliced dims keep their order in the view (unit dims could swap)."""
    in_order = sorted(placed, key=lambda placement: placement[1].source_dim)
    for (j, first), (k, second) in itertools.pairwise(in_order):
        if k < j + first.span:
            raise NoMatch("view-dim-order", f"sliced dims {first.source_dim} and "
                          f"{second.source_dim} become dims {j} and {k} of the reshape to "
                          f"{view}, in the other order")


def check_element_count(copy: CopySlice, reshape: ir.Operation, wide: list[int]) -> None:
    """the widened view has the source's element count. The view has the copy's,
    so prod(wide) / prod(view) must be prod(source) / prod(copy): exact fractions over the dims
    that differ (static), the run-time ones the same values (the copy's and its reshape's)."""
    if not ia.same_values(copy.result_dims, reshape_dims(reshape)[0]) or \
            not ia.same_values(copy.result_dims, copy.source_dims):
        raise NoMatch("element-count-dims",
                      "the copy or its reshape has other run-time dims than the "
                      "source")
    view = list(reshape.results[0].type.shape)
    # (wide is the view with its placed dims widened: as long, and those dims static, as the
    # placement rules require)
    widened = math.prod(Fraction(w, v) for w, v in zip(wide, view) if w != v)
    sliced = math.prod(Fraction(extent, part[1]) for extent, part in
                       zip(copy.source.type.shape, copy.sliced) if part is not None)
    if widened != sliced:
        raise NoMatch("element-count", f"the widened view {wide} has {widened} times the elements "
                      f"of the view {view}, the source {sliced} times the copy's")


def plan_fold(copy: CopySlice) -> SliceFold:
    reads = find_reads(copy)
    check_part_in_source(copy)
    for read in reads:
        placed = None
        if read.reshape is not None:
            placed = reshaped_slices(copy, read.reshape)
            view = list(read.reshape.results[0].type.shape)
            check_own_view_dims(placed, view)
            check_view_order(placed, view)
            read.view = dict(placed)
            read.wide = [read.view[j].extent if j in read.view else n for j, n in enumerate(view)]
            check_element_count(copy, read.reshape, read.wide)
        check_reader_part_in_copy(copy, read, placed)
    return SliceFold(copy, reads)

