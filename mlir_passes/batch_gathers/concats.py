"""Concats a pass writes in place (torch.cat of lookup results and other slots), and sizes a
rewrite treats as one (`SameSizes`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (TENSOR_EMPTY, TENSOR_EXTRACT_SLICE,
                                              TENSOR_INSERT_SLICE)


# ---------------------------------------------------------------- concats


@dataclass(eq=False)
class Concat:
    inserts: list[ir.Operation]  # chain order
    batch: h.DimKey  # rows of the result: static, or the key of a dynamic size
    widths: list[int]  # per slot, in column order
    slots: list[ir.Operation]  # insert_slice ops ordered by column
    elem: ir.Type
    rows: list[h.DimKey]  # per slot: the rows its insert writes (equal to `batch` when valid)

    @property
    def chunk(self) -> int:
        """Columns per writer chunk: the gcd of the slot widths."""
        return math.gcd(*self.widths)

    @property
    def final(self) -> ir.Operation:
        return self.inserts[-1]

    @property
    def unit_batch(self) -> bool:
        return self.batch == 1 if isinstance(self.batch, int) else False

    @property
    def batch_text(self) -> str:
        """The batch in a structural key: the static size, or "?"."""
        return str(self.batch) if isinstance(self.batch, int) else "?"

    def source(self, slot: int) -> ir.Value:
        return self.slots[slot].operands[0]


def match_concats(block: ir.Block) -> list[Concat]:
    """tensor.empty [B, W] filled by insert_slices of [B, w] slots along dim 1, each once
    (B may be dynamic: each insert then writes its own dynamic row count)."""
    found = []
    for op in block.operations:
        op = op.operation
        if op.name != TENSOR_INSERT_SLICE:
            continue
        dest = h.defining_op(op.operands[1])
        if dest is None or dest.name != TENSOR_EMPTY:
            continue
        chain = [op]
        while True:
            uses = h.users(chain[-1].results[0])
            if len(uses) == 1 and uses[0].name == TENSOR_INSERT_SLICE and \
                    uses[0].operands[1] == chain[-1].results[0]:
                chain.append(uses[0])
            else:
                break
        concat = _concat_from_chain(chain)
        if concat is not None:
            found.append(concat)
    return found


def _is_dynamic(size: int) -> bool:
    return ir.ShapedType.is_dynamic_size(size)


def _concat_from_chain(chain: list[ir.Operation]) -> Concat | None:
    dest = chain[0].operands[1]
    dest_t = h.tensor_type(dest)
    if dest_t is None or dest_t.rank != 2 or len(chain) < 2 or _is_dynamic(dest_t.shape[1]):
        return None
    batch, width = h.dim_key(dest, 0), dest_t.shape[1]
    cols = []
    for ins in chain:
        offs, sizes, strides = (h.i64_array(ins, attr) for attr in
                                ("static_offsets", "static_sizes", "static_strides"))
        src_t = h.tensor_type(ins.operands[0])
        if any(map(_is_dynamic, offs + strides + sizes[1:])) or strides != [1, 1] or \
                offs[0] != 0 or src_t is None or \
                tuple(src_t.shape) not in (tuple(sizes),
                                           tuple(size for size in sizes if size != 1)):
            return None
        if _is_dynamic(sizes[0]):  # the one dynamic operand: the slot's row count
            if isinstance(batch, int):
                return None
            rows = h.size_key(ins.operands[2])
        elif sizes[0] != batch:
            return None
        else:
            rows = batch
        cols.append((offs[1], sizes[1], ins, rows))
    cols.sort(key=lambda info: info[0])
    start = 0
    for col, col_width, _, _ in cols:
        if col != start:
            return None  # gaps or overlaps: not a concat
        start += col_width
    if start != width:
        return None
    return Concat(chain, batch, [info[1] for info in cols], [info[2] for info in cols],
                  dest_t.element_type, [info[3] for info in cols])


def stacked_source(value: ir.Value, dim: int) -> tuple[ir.Value, int] | None:
    """(G, k) when value = extract_slice G[k, 0, 0] [1, B, D] of G: [K, B, D] (or of
    G: [K, D] when B is 1; B static or dynamic): a slot of a batched gather."""
    op = h.defining_op(value)
    if op is None or op.name != TENSOR_EXTRACT_SLICE:
        return None
    src_t = h.tensor_type(op.operands[0])
    offs, sizes, strides = (h.i64_array(op, attr) for attr in
                            ("static_offsets", "static_sizes", "static_strides"))
    if src_t is None or src_t.rank not in (2, 3) or src_t.shape[-1] != dim or \
            any(map(_is_dynamic, offs + strides)) or any(stride != 1 for stride in strides) or \
            any(offs[1:]) or sizes[0] != 1 or sizes[-1] != dim or \
            (src_t.rank == 3 and not _is_dynamic(sizes[1]) and sizes[1] != src_t.shape[1]):
        return None
    if src_t.rank == 2 and h.tensor_type(value).rank != 1:
        return None
    return op.operands[0], offs[0]


class SameSizes:
    """Sizes known to be equal: equal keys, or the rows of the slots of one concat and the
    concat's batch (torch.cat requires equal batches; in a dynamic export with no shape facts
    every argument's batch is its own value). A rewrite that relies on a relation of the
    second kind checks it at run time (`scalars.emit_size_checks`)."""

    def __init__(self, concats: list[Concat]):
        self.parent: dict = {}
        for concat in concats:
            for slot, rows in enumerate(concat.rows):
                self._union(rows, concat.batch)
                if h.tensor_type(concat.source(slot)).rank == 2:
                    self._union(h.dim_key(concat.source(slot), 0), concat.batch)

    def _find(self, key: h.DimKey) -> h.DimKey:
        while key in self.parent:
            key = self.parent[key]
        return key

    def _union(self, lhs: h.DimKey, rhs: h.DimKey) -> None:
        lhs_root, rhs_root = self._find(lhs), self._find(rhs)
        if lhs_root != rhs_root:
            self.parent[lhs_root] = rhs_root

    def same(self, lhs: h.DimKey, rhs: h.DimKey) -> bool:
        return lhs == rhs or self._find(lhs) == self._find(rhs)
