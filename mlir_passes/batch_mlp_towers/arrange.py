"""Batching order of a tower group: the trie of shared layer prefixes, the stack that consumes
the towers' results (when there is one), and the arrangement that puts towers equal on a
prefix next to each other."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import TENSOR_EMPTY, TENSOR_INSERT_SLICE

from .match import Layer
from .towers import Tower, TowerGroup

# Layouts of a stacked [tower, row, column] tensor; TN drops the row dim when there is one
# row (batch 1): [tower, column].
TMN, MTN, TN = "tmn", "mtn", "tn"
# A stack of more elements than this is not checked (and not taken over).
_MAX_STACK_ELEMENTS = 1 << 22


# ---------------------------------------------------------------- the trie of shared prefixes


@dataclass
class Node:
    """Towers [lo, hi) batched at layer `depth` (they agree on layers 0..depth)."""

    lo: int
    hi: int
    depth: int
    children: list[Node] = field(default_factory=list)
    layout: str = TMN

    @property
    def size(self) -> int:
        return self.hi - self.lo

    def chain_length(self) -> int:
        return 1 + max((child.chain_length() for child in self.children), default=0)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def build_trie(towers: list[Tower], sig_id, start: int, stop: int, depth: int) -> Node:
    """The node of towers [start, stop) at `depth`; children: runs of >= 2 towers that agree on
    the next layer."""
    node = Node(start, stop, depth)
    run_start = start
    while run_start < stop:
        if len(towers[run_start].layers) <= depth + 1:
            run_start += 1
            continue
        next_sig = sig_id(towers[run_start].layers[depth + 1])
        run_end = run_start
        while (run_end < stop and len(towers[run_end].layers) > depth + 1
               and sig_id(towers[run_end].layers[depth + 1]) == next_sig):
            run_end += 1
        if run_end - run_start >= 2:
            node.children.append(build_trie(towers, sig_id, run_start, run_end, depth + 1))
        run_start = run_end
    return node


# ---------------------------------------------------------------- a stack of the results


@dataclass
class Stack:
    """A tensor.insert_slice chain that stacks / concatenates the towers' results."""

    inserts: list[ir.Operation]
    empty: ir.Operation
    layout: str
    order: list[int]  # tower index (into the group) at each stack position


def _insert_chain(towers: list[Tower]) -> tuple[list[ir.Operation], ir.Operation] | None:
    """The insert_slice ops writing each tower's result into one tensor.empty, in chain
    order, and that empty."""
    inserts = []
    for tower in towers:
        tail = tower.layers[-1].tail
        users = h.users(tail)
        if len(users) != 1 or users[0].name != TENSOR_INSERT_SLICE or \
                users[0].operands[0] != tail or h.has_dynamic_offsets(users[0]):
            return None
        inserts.append(users[0])
    first = [op for op in inserts if h.defining_op(op.operands[1]) not in inserts]
    if len(first) != 1:
        return None
    empty = h.defining_op(first[0].operands[1])
    if empty is None or empty.name != TENSOR_EMPTY:
        return None
    chain: list[ir.Operation] = []
    op = first[0]
    while True:
        chain.append(op)
        users = h.users(op.results[0])
        if len(chain) == len(inserts):
            break
        if len(users) != 1 or users[0] not in inserts or users[0].operands[1] != op.results[0]:
            return None
        op = users[0]
    if len(set(chain)) != len(inserts):
        return None
    return chain, empty


def _stack_layout(chain: list[ir.Operation], count: int, rows: int, cols: int) -> str | None:
    """TMN or MTN when the inserts write each tower's [rows, cols] result where that layout of a
    [count, rows, cols] batched result puts it (row-major, same element order); else None."""
    shape = list(chain[-1].results[0].type.shape)
    total = count * rows * cols
    if int(np.prod(shape)) != total or total > _MAX_STACK_ELEMENTS:
        return None
    target = np.arange(total).reshape(shape)
    for layout in (TMN, MTN):
        full = np.arange(total).reshape((count, rows, cols) if layout == TMN
                                        else (rows, count, cols))
        matches = True
        for pos, op in enumerate(chain):
            offs = list(op.attributes["static_offsets"])
            sizes = list(op.attributes["static_sizes"])
            strides = list(op.attributes["static_strides"])
            if any(size != 1 for size in strides) or any(offset < 0 for offset in offs):
                return None
            region = target[tuple(slice(offset, offset + size)
                                  for offset, size in zip(offs, sizes))]
            block = full[pos] if layout == TMN else full[:, pos, :]
            if region.size != block.size or not np.array_equal(region.reshape(-1),
                                                               block.reshape(-1)):
                matches = False
                break
        if matches:
            return layout
    return None


def _concat_layout(chain: list[ir.Operation], cols: int) -> str | None:
    """The layout of a stack with dynamic dims: the inserts write whole tower results
    (row-major views of [M, N]) one after the other along one axis `axis` of the stack. That
    is TMN when every dim before `axis` is 1 (each result one contiguous block) and MTN when
    the dims from `axis` on span exactly the N columns (rows outside, towers inside)."""
    stacked = chain[-1].results[0].type.shape
    sizes = [h.i64_array(op, "static_sizes") for op in chain]
    offsets = [h.i64_array(op, "static_offsets") for op in chain]
    varying = [dim for dim in range(len(stacked)) if len({offs[dim] for offs in offsets}) > 1]
    if len(varying) > 1 or any(size != sizes[0] for size in sizes):
        return None
    axis = varying[0] if varying else 0
    step = sizes[0][axis]
    if ir.ShapedType.is_dynamic_size(step) or \
            any(offs[axis] != pos * step or
                any(offs[dim] for dim in range(len(offs)) if dim != axis)
                for pos, offs in enumerate(offsets)) or stacked[axis] != len(chain) * step:
        return None
    inner = sizes[0][axis:]
    if all(dim == 1 for dim in sizes[0][:axis]):
        return TMN
    if not any(ir.ShapedType.is_dynamic_size(dim) for dim in inner) and int(np.prod(inner)) == cols:
        return MTN
    return None


def find_stack(towers: list[Tower]) -> Stack | None:
    """The stack / concatenation of the towers' results that a batched result can be."""
    found = _insert_chain(towers)
    if found is None:
        return None
    chain, empty = found
    tails = [tower.layers[-1].tail for tower in towers]
    order = [tails.index(op.operands[0]) for op in chain]
    rows, cols = towers[0].layers[-1].result_type.shape
    if chain[-1].results[0].type.has_static_shape and not ir.ShapedType.is_dynamic_size(rows):
        layout = _stack_layout(chain, len(towers), rows, cols)
    else:
        layout = _concat_layout(chain, cols)
    return None if layout is None else Stack(chain, empty, layout, order)


# ---------------------------------------------------------------- batching order


@dataclass
class Arrangement:
    """A group's towers in batching order: towers equal on a prefix are contiguous (program
    order among equals, or the order of the stack that consumes them)."""

    towers: list[Tower]
    layer_ids: dict[tuple, int]  # Layer.key (width_free_key if padded) -> a number
    stack: Stack | None
    padded: bool = False

    def sig_id(self, layer: Layer) -> int:
        return self.layer_ids[_layer_key(layer, self.padded)]


def arrange_towers(group: TowerGroup) -> Arrangement:
    ids: dict[tuple, int] = {}
    for tower in group.towers:
        for lay in tower.layers:
            ids.setdefault(_layer_key(lay, group.padded), len(ids))

    def signature(tower: Tower) -> tuple:
        return tuple(ids[_layer_key(lay, group.padded)] for lay in tower.layers)

    towers = sorted(group.towers, key=signature)
    uniform = len({signature(tower) for tower in towers}) == 1 and not group.padded
    stack = find_stack(towers) if uniform else None
    if stack is not None:
        towers = [towers[pos] for pos in stack.order]
    return Arrangement(towers, ids, stack, group.padded)


def _layer_key(layer: Layer, padded: bool) -> tuple:
    return layer.width_free_key if padded else layer.key
