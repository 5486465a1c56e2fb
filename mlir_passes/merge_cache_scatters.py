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
two index sets disjoint from the index arithmetic itself, as the IR computes it: fixed
width, wrapping, signed and unsigned casts (`compiler/index_arith.py`). Each index is a set
`m * k + [lo, hi]` modulo 2^w, m a power of two (constants, loop indices, floor-mods,
divisions and remainders by a constant, `util.assume.int` ranges; anything else, a page id
read from a tensor, is any value, times its coefficient), and the two windows must not meet
modulo the common m. Wrap keeps residues modulo a power of two, so sharktank's cache rows
`768 * page + [0, 127]` (K) and `768 * page + [128, 255]` (V), page any i64, are disjoint
modulo 256 whatever the page ids; `3 * p` and `3 * p + 1` in i32 are not (p = -1431655765
wraps 3 * p to 1), nor an `extui` of an i8 that may be negative. Each scatter already
claims its own indices unique, so the merged one keeps `unique_indices(true)`; with unique
indices the order of the pieces does not matter, and the piece whose update is produced
first goes first, which lets IREE's stream allocation write both producers' results in place
(measured on the toy Llama's decode: no copy added).

With IREE's aggressive fusion (shark-ai's LLM flags) IREE puts an update's elementwise
producer (RoPE on K) and each index computation in its scatter's dispatch. A concatenation
would stop that (measured: RoPE a dispatch of its own again, GQA-24 decode 320 -> 344), so
there the pieces are stacked by one elementwise generic that selects by its leading index,
which IREE fuses with both pieces' producers into the one scatter (32-layer GQA Llama
decode with the LLM flags: 424 -> 392 dispatches):

    %upd = linalg.generic ins(%v_upd, %k_upd : [16, 32], [16, 32]) outs([2, 16, 32])
             { s = linalg.index 0; yield select(s == 0, v, k) }
    %idx = linalg.generic ... (the same for the indices) -> [2, 16]
    %v_cache = iree_linalg_ext.scatter unique_indices(true)
                 ins(collapse(%upd) : [32, 32], collapse(%idx) : [32]) outs(%cache)

A select copies the value it picks (NaN payloads included). Stacking needs the two pieces of
the same size, each produced by a single-result op (IREE fuses no multi-result producer into
the stack's dispatch: its results would be a dispatch of their own).

Left alone, with the reason: updates or indices
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

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.index_arith import IndexAnalysis, disjoint
from iree_fusions.compiler.ir_build.attributes import map_attr
from iree_fusions.compiler.ir_build.bodies import append_body_block, new_generic
from iree_fusions.compiler.ir_build.shapes import cmpi, collapse, index_const
from iree_fusions.compiler.ir_helpers import VIEWS
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, round_analysis, structural_key)

SCATTER = h.LINALG_EXT_SCATTER
AGGRESSIVE = ("IREE's aggressive fusion puts an update's elementwise producer in its scatter's "
              "dispatch (RoPE on K): concatenated, it would be a dispatch of its own (measured "
              "with shark-ai's LLM flags: one dispatch more a layer); stacked by a selecting "
              "generic it would not, but {why}")
SURE = ("IREE makes each scatter the root of a dispatch of its own and never merges two; "
        "one scatter is one dispatch")


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
    stacked: bool = False  # joined by a selecting generic (aggressive fusion), else concat


def _overwrites(scatter: ir.Operation) -> bool:
    block = scatter.regions[0].blocks[0]
    ops = list(block.operations)
    return len(ops) == 1 and len(ops[0].operands) == 1 and ops[0].operands[0] == block.arguments[0]


def _other_readers(value: ir.Value, reader: ir.Operation) -> list[ir.Operation]:
    """Readers of `value`, through the reshapes between it and its producer, other than
    `reader`."""
    others = [user for user in h.users(value) if user != reader]
    op = h.defining_op(value)
    while op is not None and op.name in VIEWS:
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
    producers = []
    for op in (first, second):
        for value, what in ((op.operands[0], "update"), (op.operands[1], "index tensor")):
            producer = h.producer_through_views(value)
            if producer is None or not h.is_linalg(producer):
                raise NoMatch(f"an {what} not computed by a linalg op ("
                              f"{producer.name if producer else 'an argument'}: IREE writes it "
                              "in place of its own; concatenated, it would be copied)")
            producers.append(producer)
            others = _other_readers(value, op)
            if others:
                raise NoMatch(f"an {what} is also read by {others[0].name}: concatenated, it "
                              "would be copied (IREE writes a producer's result in place only "
                              "for its one reader)")
    stacked = aggressive_fusion and any(h.is_elementwise_generic(p) for p in producers[::2])
    if stacked:
        _check_stackable(shapes, producers)
    analysis = IndexAnalysis()
    why = disjoint(analysis.tensor(first.operands[1]), analysis.tensor(second.operands[1]))
    if why is not None:
        raise NoMatch(f"cannot prove the two scatters' indices disjoint: {why}")

    def produced_at(op: ir.Operation) -> int:
        producer = h.producer_through_views(op.operands[0])
        block_op = h.block_ancestor(producer, positions) if producer is not None else None
        return positions.get(block_op, -1)

    order = (1, 0) if produced_at(second) < produced_at(first) else (0, 1)
    return ScatterPair(first, second, order, analysis.visited, stacked)


def _check_stackable(shapes: list[list[int]], producers: list[ir.Operation]) -> None:
    """NoMatch unless the pieces can be stacked by one generic that IREE fuses with their
    producers into the scatter's dispatch: the same sizes, single-result producers."""
    if shapes[0] != shapes[2] or shapes[1] != shapes[3]:
        raise NoMatch(AGGRESSIVE.format(why="the two scatters write different numbers of rows"))
    for producer in producers:
        if len(producer.results) != 1:
            raise NoMatch(AGGRESSIVE.format(
                why=f"a piece comes from a {producer.name} with {len(producer.results)} "
                    "results, which IREE fuses into no consumer: a dispatch of its own"))


def _concat(values: list[ir.Value]) -> ir.Value:
    types = [ir.RankedTensorType(v.type) for v in values]
    shape = [sum(t.shape[0] for t in types)] + list(types[0].shape[1:])
    result = ir.RankedTensorType.get(shape, types[0].element_type)
    return tensor.ConcatOp(result, 0, values).result


def _stack(values: list[ir.Value]) -> ir.Value:
    """[n, ...] x 2 -> one generic [2, n, ...] yielding select(index 0 == 0, a, b),
    collapsed to [2n, ...] (the concatenation's value)."""
    piece = ir.RankedTensorType(values[0].type)
    rank = piece.rank
    init = tensor.EmptyOp([2, *piece.shape], piece.element_type).result
    gen = new_generic(values, [init], [map_attr(rank + 1, range(1, rank + 1))] * 2 +
                      [map_attr(rank + 1, range(rank + 1))], ["parallel"] * (rank + 1))
    block = append_body_block(gen, [*values, init])
    with ir.InsertionPoint(block):
        first = cmpi("eq", linalg.IndexOp(0).result, index_const(0))
        linalg.YieldOp([arith.SelectOp(first, block.arguments[0], block.arguments[1]).result])
    joined = ir.RankedTensorType.get([2 * piece.shape[0], *piece.shape[1:]],
                                     piece.element_type)
    return collapse(gen.results[0], [[0, 1], *([d] for d in range(2, rank + 1))], joined)


def merge_pair(pair: ScatterPair) -> str:
    first, second = pair.first, pair.second
    pieces = [(first, second)[i] for i in pair.order]
    join = _stack if pair.stacked else _concat
    with second.location, ir.InsertionPoint(second):
        updates = join([op.operands[0] for op in pieces])
        indices = join([op.operands[1] for op in pieces])
    second.operands[0] = updates
    second.operands[1] = indices
    second.operands[2] = first.operands[2]
    text = (f"two scatters of {first.operands[0].type} into {first.operands[2].type}, indices "
            f"proven disjoint -> one scatter of {updates.type}"
            + (" (pieces stacked by a selecting generic)" if pair.stacked else ""))
    first.erase()
    return text


def pairs(block: ir.Block) -> list[tuple[ir.Operation, ir.Operation]]:
    """(first, second) in block order: a scatter whose only reader is a scatter writing into
    its result; a scatter is in one pair at most."""
    return cache_scatter_pairs(op.operation for op in block.operations)


def cache_scatter_pairs(ops) -> list[tuple[ir.Operation, ir.Operation]]:
    """`pairs` among `ops` (in their order): the pairs whose first scatter is one of them."""
    found, taken = [], set()
    for op in ops:
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
