"""merge-cache-scatters: two scatters into one cache, the second writing into the first's
result (a paged cache's K then V), whose index sets are proven disjoint -> one scatter over
the concatenated updates and indices (one dispatch instead of two).

A paged KV cache is written by two scatters per layer, K's and V's, into the same cache
tensor with their own indices (sharktank: a row `((page * layers + layer) * 2 + {0, 1})
* heads + head) * block_stride + position`). IREE makes each scatter the root of a dispatch
of its own and never merges two. The pass concatenates the updates and the indices along
the scatter's batch dim and scatters once:

    %k_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(%k_upd, %k_idx : [16, 32], [16]) outs(%cache)
    %v_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(%v_upd, %v_idx : [16, 32], [16]) outs(%k_cache)
  =>
    %upd = tensor.concat dim(0) %v_upd, %k_upd : [32, 32]
    %idx = tensor.concat dim(0) %v_idx, %k_idx : [32]
    %v_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(%upd, %idx : [32, 32], [32]) outs(%cache)

The result is the same only if no row is written by both: a row in both would hold V's value
after the two scatters and an unspecified one after the merged one. So the pass proves the
two index sets disjoint from the index arithmetic itself: each index is evaluated as
`modulus * (anything) + [lo, hi]` (constants, loop indices over static ranges, floor-mods by
a constant; anything else, a page id read from a tensor, is "anything" times its
coefficient), and the two residue intervals must not meet modulo the common modulus. On
sharktank's cache that is `768 * page + [0, 127]` for K and `768 * page + [128, 255]` for V.
(The arithmetic is taken as exact: i64 wrap-around would need page ids near 2^54, far
outside any cache, where a scatter is undefined in stock IREE too.) Each scatter already
claims its own indices unique, so the merged one keeps `unique_indices(true)`; with unique
indices the order of the pieces does not matter, and the piece whose update is produced
first goes first, which lets IREE's stream allocation write both producers' results in place
(measured on the toy Llama's decode: no copy added).

Left alone, with the reason: with IREE's aggressive fusion (shark-ai's LLM flags), an update
computed by an elementwise generic (IREE puts RoPE on K in K's scatter dispatch; merged, RoPE
was a dispatch of its own again: GQA-24 decode 320 -> 344 dispatches); updates or indices
not computed by a linalg op (toy DeepSeek's K assembled by tensor.insert_slice and V padded
by tensor.pad: measured, both pieces were copied into the concatenation, two copies for the
one dispatch saved), or read by anything else (IREE writes a result in place of its one
reader only), updates with a dynamic size (prefill's tokens: the concatenation would copy
them, and IREE then stops fusing K's cache layout into RoPE's dispatch; measured on
the toy Llama: 1 dispatch saved of 3 layers' 6 scatters), scatters with different dimension
maps or combining regions (only a plain overwrite is merged), a first scatter whose result is
read by anything else (the cache between the two writes is observed), and indices that cannot
be proven disjoint (the check that failed is named).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_CONSTANT, LINALG_FILL, LINALG_GENERIC,
                                              RESHAPES, TENSOR_CAST)
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, round_analysis, structural_key)

SCATTER = "iree_linalg_ext.scatter"
AGGRESSIVE = ("IREE's aggressive fusion puts an update's elementwise producer in its scatter's "
              "dispatch (RoPE on K): concatenated, it would be a dispatch of its own (measured "
              "with shark-ai's LLM flags: one dispatch more a layer)")
SURE = ("IREE makes each scatter the root of a dispatch of its own and never merges two; "
        "one scatter is one dispatch")


# ------------------------------------------------------------------ index residues


@dataclass(frozen=True)
class Residues:
    """The values `modulus * k + r` for any integer k and r in [lo, hi] (modulus 0: just
    [lo, hi]); modulus 1 says nothing."""

    modulus: int
    lo: int
    hi: int

    def __add__(self, other: Residues) -> Residues:
        return Residues(math.gcd(self.modulus, other.modulus), self.lo + other.lo,
                        self.hi + other.hi)

    def __sub__(self, other: Residues) -> Residues:
        return Residues(math.gcd(self.modulus, other.modulus), self.lo - other.hi,
                        self.hi - other.lo)

    def scaled(self, factor: int) -> Residues:
        a, b = self.lo * factor, self.hi * factor
        return Residues(self.modulus * abs(factor), min(a, b), max(a, b))

    def hull(self, other: Residues) -> Residues:
        return Residues(math.gcd(self.modulus, other.modulus), min(self.lo, other.lo),
                        max(self.hi, other.hi))

    @property
    def constant(self) -> int | None:
        return self.lo if self.modulus == 0 and self.lo == self.hi else None


ANY = Residues(1, 0, 0)


def disjoint(a: Residues, b: Residues) -> str | None:
    """None if no value is in both, else why that is not proven."""
    modulus = math.gcd(a.modulus, b.modulus)
    if modulus == 1:
        return "an index term is not a multiple of a common modulus"
    if modulus == 0:
        return None if a.hi < b.lo or b.hi < a.lo else "the index ranges overlap"
    width_a, width_b = a.hi - a.lo + 1, b.hi - b.lo + 1
    shift = (b.lo - a.lo) % modulus
    if width_a + width_b <= modulus and width_a <= shift and shift + width_b <= modulus:
        return None
    return f"the indices' residues modulo {modulus} overlap"


_NE, _SLT = 1, 2  # arith.cmpi predicates
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui")


class IndexAnalysis:
    """Residues of integer values and tensors, memoized (one analysis per scatter pair); `visited`:
    the ops read on the way (the plan's footprint)."""

    def __init__(self) -> None:
        self.tensors: dict[ir.Value, Residues] = {}
        self.visited: list[ir.Operation] = []

    def tensor(self, value: ir.Value) -> Residues:
        if value not in self.tensors:
            self.tensors[value] = self._tensor(value)
        return self.tensors[value]

    def _tensor(self, value: ir.Value) -> Residues:
        op = h.defining_op(value)
        if op is None:
            return ANY
        self.visited.append(op)
        if op.name in RESHAPES + (TENSOR_CAST,):
            return self.tensor(op.operands[0])
        if op.name == ARITH_CONSTANT:
            splat = h.splat_value(op)
            return (Residues(0, splat.value, splat.value)
                    if isinstance(splat, ir.IntegerAttr) else ANY)
        if op.name == LINALG_FILL:
            return self.scalar(op.operands[0], None)
        if op.name != LINALG_GENERIC or not _writes_every_element(op):
            return ANY
        body = list(h.body_block(op).operations)
        return self.scalar(body[-1].operands[h.result_index(value)], op)

    def scalar(self, value: ir.Value, generic: ir.Operation | None) -> Residues:
        op = h.defining_op(value)
        if op is None:  # a block argument: an input of the generic
            if generic is None or value.owner != h.body_block(generic):
                return ANY
            number = ir.BlockArgument(value).arg_number
            inputs = h.dps_inputs(generic)
            return self.tensor(inputs[number]) if number < len(inputs) else ANY
        if op.name == ARITH_CONSTANT:
            c = h.const_int(value)
            return ANY if c is None else Residues(0, c, c)
        if generic is None or not h.defined_inside(value, generic):
            return ANY
        name = op.name
        if name == "linalg.index":
            ranges = h.loop_ranges(generic)
            dim = ir.IntegerAttr(op.attributes["dim"]).value
            if ranges is None or ranges[dim] <= 0:
                return ANY
            return Residues(0, 0, ranges[dim] - 1)
        if name in _CASTS:
            return self.scalar(op.operands[0], generic)
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            a, b = (self.scalar(v, generic) for v in op.operands)
            if name == "arith.addi":
                return a + b
            if name == "arith.subi":
                return a - b
            if b.constant is not None:
                return a.scaled(b.constant)
            if a.constant is not None:
                return b.scaled(a.constant)
            return ANY
        if name == "arith.remui":
            divisor = h.const_int(op.operands[1])
            return Residues(0, 0, divisor - 1) if divisor and divisor > 0 else ANY
        if name == "arith.select":
            divisor = _floor_mod_divisor(op)
            if divisor is not None:
                return Residues(0, 0, divisor - 1)
            return self.scalar(op.operands[1], generic).hull(self.scalar(op.operands[2],
                                                                         generic))
        return ANY


def _writes_every_element(op: ir.Operation) -> bool:
    """Every element of each result is a value the body yields (no init read)."""
    maps = h.indexing_maps(op)
    outs = maps[h.num_dps_inputs(op):]
    n = maps[0].n_dims if maps else 0
    return (all(t == "parallel" for t in h.iterator_types(op))
            and all(m.is_permutation and m.n_dims == n for m in outs)
            and not any(list(arg.uses) for arg in
                        list(h.body_block(op).arguments)[h.num_dps_inputs(op):]))


def _floor_mod_divisor(select: ir.Operation) -> int | None:
    """C if `select` is torch's floor-mod by a positive constant C:
    r = remsi(x, C); select(r != 0 and r < 0, r + C, r)."""
    cond, then, other = (h.defining_op(v) for v in select.operands)
    if other is None or other.name != "arith.remsi":
        return None
    divisor = h.const_int(other.operands[1])
    if not divisor or divisor <= 0:
        return None
    r = other.results[0]
    if then is None or then.name != "arith.addi" or r not in list(then.operands) or \
            select.operands[2] != r or cond is None:
        return None
    added = then.operands[1] if then.operands[0] == r else then.operands[0]
    if h.const_int(added) != divisor:
        return None
    tests = [cond] if cond.name == "arith.cmpi" else (
        [h.defining_op(v) for v in cond.operands] if cond.name == "arith.andi" else [])
    # The select must add C exactly when r < 0: `r < 0`, alone or and-ed with `r != 0`.
    kinds = []
    for test in tests:
        if test is None or test.name != "arith.cmpi" or test.operands[0] != r or \
                h.const_int(test.operands[1]) != 0:
            return None
        kinds.append(ir.IntegerAttr(test.attributes["predicate"]).value)
    return divisor if sorted(kinds) in ([_SLT], [_NE, _SLT]) else None


# ------------------------------------------------------------------ plans


@dataclass
class ScatterPair:
    """The first scatter (its result read only by the second), the second, the order of the
    pieces in the concatenation (indices into (first, second)), and the index arithmetic the
    disjointness proof read."""

    first: ir.Operation
    second: ir.Operation
    order: tuple[int, int]
    index_ops: list[ir.Operation]


def _overwrites(scatter: ir.Operation) -> bool:
    block = scatter.regions[0].blocks[0]
    ops = list(block.operations)
    return len(ops) == 1 and len(ops[0].operands) == 1 and ops[0].operands[0] == block.arguments[0]


def _other_readers(value: ir.Value, reader: ir.Operation) -> list[ir.Operation]:
    """Readers of `value`, through the reshapes between it and its producer, other than
    `reader`."""
    others = [user for user in h.users(value) if user != reader]
    op = h.defining_op(value)
    while op is not None and op.name in RESHAPES + (TENSOR_CAST,):
        others += [user for user in h.users(op.operands[0]) if user != op]
        op = h.defining_op(op.operands[0])
    return others


def plan_pair(first: ir.Operation, second: ir.Operation,
              positions: dict[ir.Operation, int], aggressive_fusion: bool) -> ScatterPair:
    """The pair's plan, or NoMatch at the check that fails."""
    for attr in ("dimension_map", "unique_indices"):
        if str(first.attributes[attr]) != str(second.attributes[attr]):
            raise NoMatch(f"scatters with different {attr}")
    if not ir.BoolAttr(first.attributes["unique_indices"]).value:
        raise NoMatch("a scatter whose indices are not declared unique (the order of its "
                      "writes matters)")
    if not (_overwrites(first) and _overwrites(second)):
        raise NoMatch("a scatter that combines with the cache (only overwrites are merged)")
    shapes = [h.static_shape(op.operands[i]) for op in (first, second) for i in (0, 1)]
    if any(shape is None for shape in shapes):
        raise NoMatch("updates or indices with a dynamic size (prefill's tokens): the "
                      "concatenation would copy them")
    if shapes[0][1:] != shapes[2][1:] or shapes[1][1:] != shapes[3][1:] or \
            first.operands[0].type.element_type != second.operands[0].type.element_type or \
            first.operands[1].type.element_type != second.operands[1].type.element_type:
        raise NoMatch("updates or indices of different types beyond the batch dim")
    for op in (first, second):
        for value, what in ((op.operands[0], "update"), (op.operands[1], "index tensor")):
            producer = h.producer_through_views(value)
            if producer is None or not h.is_linalg(producer):
                raise NoMatch(f"an {what} not computed by a linalg op ("
                              f"{producer.name if producer else 'an argument'}: IREE writes it "
                              "in place of its own; concatenated, it would be copied)")
            if aggressive_fusion and what == "update" and h.is_elementwise_generic(producer):
                raise NoMatch(AGGRESSIVE)
            others = _other_readers(value, op)
            if others:
                raise NoMatch(f"an {what} is also read by {others[0].name}: concatenated, it "
                              "would be copied (IREE writes a producer's result in place only "
                              "for its one reader)")
    analysis = IndexAnalysis()
    why = disjoint(analysis.tensor(first.operands[1]), analysis.tensor(second.operands[1]))
    if why is not None:
        raise NoMatch(f"cannot prove the two scatters' indices disjoint: {why}")

    def produced_at(op: ir.Operation) -> int:
        producer = h.producer_through_views(op.operands[0])
        block_op = h.block_ancestor(producer, positions) if producer is not None else None
        return positions.get(block_op, -1)

    order = (1, 0) if produced_at(second) < produced_at(first) else (0, 1)
    return ScatterPair(first, second, order, analysis.visited)


def _concat(values: list[ir.Value]) -> ir.Value:
    types = [ir.RankedTensorType(v.type) for v in values]
    shape = [sum(t.shape[0] for t in types)] + list(types[0].shape[1:])
    result = ir.RankedTensorType.get(shape, types[0].element_type)
    return tensor.ConcatOp(result, 0, values).result


def merge_pair(pair: ScatterPair) -> str:
    first, second = pair.first, pair.second
    pieces = [(first, second)[i] for i in pair.order]
    with second.location, ir.InsertionPoint(second):
        updates = _concat([op.operands[0] for op in pieces])
        indices = _concat([op.operands[1] for op in pieces])
    second.operands[0] = updates
    second.operands[1] = indices
    second.operands[2] = first.operands[2]
    text = (f"two scatters of {first.operands[0].type} into {first.operands[2].type}, indices "
            f"proven disjoint -> one scatter of {updates.type}")
    first.erase()
    return text


def pairs(block: ir.Block) -> list[tuple[ir.Operation, ir.Operation]]:
    """(first, second) in block order: a scatter whose only reader is a scatter writing into
    its result; a scatter is in one pair at most."""
    found, taken = [], set()
    for op in block.operations:
        op = op.operation
        if op.name != SCATTER or op in taken:
            continue
        readers = h.users(op.results[0])
        if len(readers) == 1 and readers[0].name == SCATTER and \
                readers[0].operands[2] == op.results[0]:
            found.append((op, readers[0]))
            taken.update((op, readers[0]))
    return found


@dataclass(frozen=True)
class MergeCacheScatters(CandidatePass[ScatterPair]):
    name = "merge-cache-scatters"
    phase = "linalg"
    description = ("two scatters into one cache (a paged cache's K and V), the second writing "
                   "into the first's result, indices proven disjoint -> one scatter")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[ScatterPair]]:
        positions = round_analysis(h.block_positions, block)
        for first, second in pairs(block):
            key = structural_key("cache-scatters", h.op_signature(first),
                                 h.op_signature(second))
            candidate = Candidate.of(
                key, second, "two scatters into one cache",
                lambda first=first, second=second: plan_pair(first, second, positions,
                                                             ctx.aggressive_fusion))
            if not candidate.blocked:
                candidate.sure = SURE
            yield candidate

    def footprint(self, candidate: Candidate[ScatterPair], ctx: PassContext) -> Footprint:
        pair = candidate.plan
        ops = [pair.first, pair.second]
        return Footprint.of(reads=ops + pair.index_ops, writes=ops)

    def apply(self, candidate: Candidate[ScatterPair], ctx: PassContext) -> str:
        return merge_pair(candidate.plan)
