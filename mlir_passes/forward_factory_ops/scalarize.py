"""Scalarizer: one element of a factory value, emitted inside a linalg body."""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (
    ARITH_CONSTANT, LINALG_BROADCAST, LINALG_FILL, LINALG_GENERIC, LINALG_INDEX, LINALG_TRANSPOSE,
    LINALG_YIELD, TENSOR_COLLAPSE_SHAPE, TENSOR_EMPTY, TENSOR_EXPAND_SHAPE, TENSOR_EXTRACT_SLICE,
    TENSOR_INSERT_SLICE
)
from iree_fusions.compiler.ir_build import BodyBuilder

from .analysis import FactoryAnalysis, available_size


class Scalarizer(BodyBuilder):
    """Emits, at an insertion point inside a linalg body, one element of a factory value.

    `value_at(v, idx)` returns the scalar `v[idx]` (idx: index-typed values), memoized so that
    one body computes each (value, indices) once. Index arithmetic comes from BodyBuilder.
    Dynamic sizes a reshape needs are the index values the IR holds for them (the analysis
    accepts a reshape only when they are in reach: analysis.available_size).
    """

    def __init__(self, analysis: FactoryAnalysis, insertion: ir.InsertionPoint, loc: ir.Location,
                 leaf_map: dict[ir.Value, ir.Value] | None = None):
        super().__init__(insertion, loc)
        self.analysis = analysis
        # Leaves as seen where the value is emitted (another dispatch loads them itself).
        self.leaf_map = leaf_map or {}
        self._memo: dict[tuple, ir.Value] = {}
        self._generic_memo: dict[tuple, list[ir.Value]] = {}

    @staticmethod
    def dims(value: ir.Value, which: list[int]) -> list[int | ir.Value]:
        """Sizes of these dims of a chain value (static, or an index value in reach)."""
        sizes = [available_size(value, dim) for dim in which]
        assert all(size is not None for size in sizes), \
            "the analysis checks that sizes are in reach"
        return sizes

    def value_at(self, value: ir.Value, idx: list[ir.Value]) -> ir.Value:
        key = (value, *idx)
        if key not in self._memo:
            self._memo[key] = self._emit(value, idx)
        return self._memo[key]

    def captured(self, value: ir.Value) -> ir.Value:
        """A scalar a cloned body captures from outside: constants are cloned next to it."""
        op = h.defining_op(value)
        if op is None or op.name != ARITH_CONSTANT:
            return value
        key = ("captured", value)
        if key not in self._memo:
            with self:
                self._memo[key] = op.clone().results[0]
        return self._memo[key]

    def _emit(self, value: ir.Value, idx: list[ir.Value]) -> ir.Value:
        if self.analysis.info(value) is None:  # a leaf: one element read
            with self:
                return tensor.ExtractOp(self.leaf_map.get(value, value), idx).result
        op = h.defining_op(value)
        name = op.name
        if name == ARITH_CONSTANT:
            with self:
                return arith.ConstantOp(value.type.element_type, h.splat_value(op)).result
        if name == LINALG_FILL:
            return self.captured(op.operands[0])
        if name == LINALG_GENERIC:
            return self._emit_generic(op, h.result_index(value), idx)
        if name == TENSOR_INSERT_SLICE:
            return self._emit_insert_slice(op, idx)
        if name == TENSOR_EXTRACT_SLICE:
            return self.value_at(op.operands[0], self._extract_slice_source(op, idx))
        if name == TENSOR_EXPAND_SHAPE:
            src_idx = [self.linearize([idx[dim] for dim in group], self.dims(value, group))
                       for group in h.reassociation(op)]
            return self.value_at(op.operands[0], src_idx)
        if name == TENSOR_COLLAPSE_SHAPE:
            return self.value_at(op.operands[0], self._collapse_source(op, idx))
        if name == LINALG_BROADCAST:
            dims = set(h.i64_array(op, "dimensions"))
            return self.value_at(op.operands[0],
                                 [index for pos, index in enumerate(idx) if pos not in dims])
        if name == LINALG_TRANSPOSE:
            perm = h.i64_array(op, "permutation")
            src_idx: list[ir.Value] = [None] * len(perm)
            for pos, src_pos in enumerate(perm):
                src_idx[src_pos] = idx[pos]
            return self.value_at(op.operands[0], src_idx)
        raise AssertionError(f"not a factory op: {name}")

    def _extract_slice_source(self, op: ir.Operation, idx: list[ir.Value]) -> list[ir.Value]:
        offsets = h.i64_array(op, "static_offsets")
        strides = h.i64_array(op, "static_strides")
        dropped = set(h.dropped_dims(op) or [])
        src_idx, kept = [], 0
        for dim, off in enumerate(offsets):
            if dim in dropped:
                src_idx.append(self.const(off))
                continue
            index = idx[kept]
            kept += 1
            if strides[dim] != 1:
                index = self.binary(arith.MulIOp, index, self.const(strides[dim]))
            src_idx.append(self.add(index, off))
        return src_idx

    def _collapse_source(self, op: ir.Operation, idx: list[ir.Value]) -> list[ir.Value]:
        src = op.operands[0]
        src_idx: list[ir.Value] = [None] * h.tensor_type(src).rank
        for out_dim, group in enumerate(h.reassociation(op)):
            parts = (self.delinearize(idx[out_dim], self.dims(src, group)) if len(group) > 1
                     else [idx[out_dim]])
            for src_dim, part in zip(group, parts):
                src_idx[src_dim] = part
        return src_idx

    def _concat_pieces(self, op: ir.Operation) -> list[tuple[list[int], list[int]]] | None:
        """(offsets, sizes) of each piece when `op` ends a chain of insert_slices of one source
        value into a tensor.empty (`cat(x, x, ...)`), else None."""
        src = op.operands[0]
        pieces = []
        while op is not None and op.name == TENSOR_INSERT_SLICE:
            if op.operands[0] != src:
                return None
            pieces.append((h.i64_array(op, "static_offsets"), h.slice_sizes(op)))
            op = h.defining_op(op.operands[1])
        return pieces if op is not None and op.name == TENSOR_EMPTY else None

    def _emit_insert_slice(self, op: ir.Operation, idx: list[ir.Value]) -> ir.Value:
        pieces = self._concat_pieces(op)
        if pieces is not None and len(pieces) > 1:
            return self._emit_self_concat(op.operands[0], pieces, idx)
        src, dest = op.operands[:2]
        offsets = h.i64_array(op, "static_offsets")
        sizes = h.slice_sizes(op)
        conds, src_idx = [], []
        for dim, (index, off, size) in enumerate(zip(idx, offsets, sizes)):
            if off == 0 and (size == h.tensor_type(dest).shape[dim] or not isinstance(size, int)):
                src_idx.append(index)  # the whole dim (a dynamic size is: analysis.slice_problem)
                continue
            with self:
                above = arith.CmpIOp(arith.CmpIPredicate.sge, index, self.const(off)).result
                below = arith.CmpIOp(arith.CmpIPredicate.slt, index, self.const(off + size)).result
                conds.append(arith.AndIOp(above, below).result)
                # Clamped into the source, so the unselected branch never reads out of bounds.
                shifted = arith.SubIOp(index, self.const(off)).result
                clamped = arith.MaxSIOp(shifted, self.const(0)).result
                src_idx.append(arith.MinSIOp(clamped, self.const(size - 1)).result)
        src_val = self.value_at(src, src_idx)
        dest_op = h.defining_op(dest)
        if not conds or (dest_op is not None and dest_op.name == TENSOR_EMPTY):
            return src_val
        dest_val = self.value_at(dest, idx)
        with self:
            cond = conds[0]
            for other in conds[1:]:
                cond = arith.AndIOp(cond, other).result
            return arith.SelectOp(cond, src_val, dest_val).result

    def _emit_self_concat(self, src: ir.Value, pieces: list[tuple[list[int], list[int]]],
                          idx: list[ir.Value]) -> ir.Value:
        """cat(x, x, ...): select where in x to read, then compute x once (the concat dim is
        static: analysis.slice_problem)."""
        src_shape = h.tensor_type(src).shape
        src_idx = []
        for dim, index in enumerate(idx):
            offs = [piece[0][dim] for piece in pieces]
            if len(set(offs)) == 1:
                src_idx.append(self.add(index, -offs[0]) if offs[0] else index)
                continue
            with self:
                cur = arith.SubIOp(index, self.const(offs[0])).result
                for off, size in zip(offs[1:], [piece[1][dim] for piece in pieces[1:]]):
                    above = arith.CmpIOp(arith.CmpIPredicate.sge, index, self.const(off)).result
                    below = arith.CmpIOp(arith.CmpIPredicate.slt, index,
                                         self.const(off + size)).result
                    inside = arith.AndIOp(above, below).result
                    shifted = arith.SubIOp(index, self.const(off)).result
                    cur = arith.SelectOp(inside, shifted, cur).result
                clamped = arith.MaxSIOp(cur, self.const(0)).result
                src_idx.append(arith.MinSIOp(clamped, self.const(src_shape[dim] - 1)).result)
        return self.value_at(src, src_idx)

    def _emit_generic(self, op: ir.Operation, result: int, idx: list[ir.Value]) -> ir.Value:
        maps = h.indexing_maps(op)
        ins, inits = h.dps_inputs(op), h.dps_inits(op)
        out_map = maps[len(ins) + result]
        loops: list[ir.Value] = [None] * out_map.n_dims
        for pos, expr in enumerate(out_map.results):
            loops[expr.position] = idx[pos]
        key = (op, *loops)
        if key in self._generic_memo:
            return self._generic_memo[key][result]
        body = h.body_block(op)
        mapping: dict[ir.Value, ir.Value] = {}
        for arg, value, map_ in zip(body.arguments, [*ins, *inits], maps):
            if list(arg.uses):
                mapping[arg] = self.value_at(value, [self.affine(expr, loops)
                                                     for expr in map_.results])
        yielded: list[ir.Value] = []
        for body_op in body.operations:
            body_op = body_op.operation
            if body_op.name == LINALG_YIELD:
                yielded = [mapping[value] if value in mapping else self.captured(value)
                           for value in body_op.operands]
                break
            if body_op.name == LINALG_INDEX:
                dim = ir.IntegerAttr(body_op.attributes["dim"]).value
                mapping[body_op.results[0]] = loops[dim]
                continue
            operands = [mapping[value] if value in mapping else self.captured(value)
                        for value in body_op.operands]
            with self:
                clone = body_op.clone()
            for operand_no, value in enumerate(operands):
                clone.operands[operand_no] = value
            for old, new in zip(body_op.results, clone.results):
                mapping[old] = new
        self._generic_memo[key] = yielded
        return yielded[result]

