"""The plan of merge-cache-scatters (mlir_passes/merge_cache_scatters.py): which two scatters
into one cache (a paged cache's K then V) may become one, with the check that fails when not,
and whether the pieces are stacked by a selecting generic (IREE's aggressive fusion) or
concatenated. merge-sibling-generics asks it too: under aggressive fusion it leaves the index
chains of a stacked pair alone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from iree.compiler import ir

from .. import ir_helpers as h
from ..index_arith import IndexAnalysis, disjoint
from ..ir_helpers import VIEWS
from ..protocol import NoMatch

SCATTER = h.LINALG_EXT_SCATTER
AGGRESSIVE = ("IREE's aggressive fusion puts an update's elementwise producer in its scatter's "
              "dispatch (RoPE on K): concatenated, it would be a dispatch of its own (measured "
              "with shark-ai's LLM flags: one dispatch more a layer); stacked by a selecting "
              "generic it would not, but {why}")

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
            raise NoMatch("scatter-attrs", f"scatters with different {attr}")
    if not ir.BoolAttr(first.attributes["unique_indices"]).value:
        raise NoMatch("indices-not-unique",
                      "a scatter whose indices are not declared unique (the order of its "
                      "writes matters)")
    if not (_overwrites(first) and _overwrites(second)):
        raise NoMatch("scatter-combines",
                      "a scatter that combines with the cache (only overwrites are merged)")
    shapes = [h.static_shape(op.operands[i]) for op in (first, second) for i in (0, 1)]
    if any(shape is None for shape in shapes):
        raise NoMatch("dynamic-updates",
                      "updates or indices with a dynamic size (prefill's tokens): the "
                      "concatenation would copy them")
    if shapes[0][1:] != shapes[2][1:] or shapes[1][1:] != shapes[3][1:] or \
            first.operands[0].type.element_type != second.operands[0].type.element_type or \
            first.operands[1].type.element_type != second.operands[1].type.element_type:
        raise NoMatch("update-types", "updates or indices of different types beyond the batch dim")
    producers = []
    for op in (first, second):
        for value, what in ((op.operands[0], "update"), (op.operands[1], "index tensor")):
            producer = h.producer_through_views(value)
            if producer is None or not h.is_linalg(producer):
                raise NoMatch("piece-not-linalg", f"an {what} not computed by a linalg op ("
                              f"{producer.name if producer else 'an argument'}: IREE writes it "
                              "in place of its own; concatenated, it would be copied)")
            producers.append(producer)
            others = _other_readers(value, op)
            if others:
                raise NoMatch("piece-shared",
                              f"an {what} is also read by {others[0].name}: concatenated, it "
                              "would be copied (IREE writes a producer's result in place only "
                              "for its one reader)")
    stacked = aggressive_fusion and any(h.is_elementwise_generic(p) for p in producers[::2])
    if stacked:
        _check_stackable(shapes, producers)
    analysis = IndexAnalysis()
    why = disjoint(analysis.tensor(first.operands[1]), analysis.tensor(second.operands[1]))
    if why is not None:
        raise NoMatch("indices-not-disjoint",
                      f"cannot prove the two scatters' indices disjoint: {why}")

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
        raise NoMatch("aggressive-rows",
                      AGGRESSIVE.format(why="the two scatters write different numbers of rows"))
    for producer in producers:
        if len(producer.results) != 1:
            raise NoMatch("aggressive-piece", AGGRESSIVE.format(
                why=f"a piece comes from a {producer.name} with {len(producer.results)} "
                    "results, which IREE fuses into no consumer: a dispatch of its own"))


def cache_scatter_pairs(ops: Iterable[ir.Operation]
                        ) -> list[tuple[ir.Operation, ir.Operation]]:
    """(first, second) in the order of `ops`: a scatter among them whose only reader is a
    scatter writing into its result; a scatter is in one pair at most."""
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
