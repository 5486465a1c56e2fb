"""Counting what a compiled model does, from its `--compile-to=flow` IR.

- dispatches: `flow.dispatch` call sites in each public function (the entry points);
  dispatches inside `util.initializer` run once at load and are counted apart.
- bytes between dispatches: the sum of the sizes of tensors that one dispatch produces and
  another dispatch of the same function reads (looking through flow.tensor.reshape/bitcast).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir

from . import ir_helpers as h
from iree_fusions.compiler.ir_helpers.names import (
    FLOW_DISPATCH, FLOW_DISPATCH_WORKGROUPS, FLOW_TENSOR_BITCAST, FLOW_TENSOR_RESHAPE,
    TENSOR_CAST,
)

_LOOK_THROUGH = (FLOW_TENSOR_RESHAPE, FLOW_TENSOR_BITCAST, TENSOR_CAST)
# Dispatch ops: outlined (`flow.dispatch`, from the flow phase on) or still regions
# (`flow.dispatch.workgroups`, right after dispatch-creation).
DISPATCH_OPS = (FLOW_DISPATCH, FLOW_DISPATCH_WORKGROUPS)


@dataclass
class FlowCounts:
    dispatches: dict[str, int] = field(default_factory=dict)  # per public function
    initializer_dispatches: int = 0
    bytes_between: dict[str, int] = field(default_factory=dict)
    dynamic_edges: int = 0  # producer->consumer edges whose size is not static
    dispatch_names: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total_dispatches(self) -> int:
        return sum(self.dispatches.values())

    @property
    def total_bytes_between(self) -> int:
        return sum(self.bytes_between.values())

    @property
    def known_bytes_between(self) -> int | None:
        """total_bytes_between where every tensor between dispatches has a static size;
        None where some have a dynamic one (their bytes are unknown at compile time)."""
        return None if self.dynamic_edges else self.total_bytes_between


def _is_public(func: ir.Operation) -> bool:
    vis = func.attributes["sym_visibility"] if "sym_visibility" in func.attributes else None
    return vis is None or vis.value == "public"


def _reaches_dispatch(value: ir.Value) -> bool:
    for user in h.users(value):
        if user.name in DISPATCH_OPS:
            return True
        if user.name in _LOOK_THROUGH and any(_reaches_dispatch(r) for r in user.results):
            return True
    return False


def count_flow_module(module: ir.Operation) -> FlowCounts:
    counts = FlowCounts()
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == h.UTIL_INITIALIZER:
            counts.initializer_dispatches += len(h.walk_ops(op, DISPATCH_OPS))
            continue
        if op.name not in h.FUNC_OPS or not _is_public(op) or not op.regions[0].blocks:
            continue
        name = op.attributes["sym_name"].value
        dispatches = h.walk_ops(op, DISPATCH_OPS)
        counts.dispatches[name] = len(dispatches)
        counts.dispatch_names[name] = [str(d.attributes["entry_points"][0]).split("::@")[-1]
                                       if "entry_points" in d.attributes else d.name
                                       for d in dispatches]
        total = 0
        for d in dispatches:
            for result in d.results:
                if not _reaches_dispatch(result):
                    continue
                size = h.static_tensor_bytes(result.type)
                if size is None:
                    counts.dynamic_edges += 1
                else:
                    total += size
        counts.bytes_between[name] = total
    return counts


def count_flow_ir(flow_ir: bytes | str) -> FlowCounts:
    """Counts from flow-phase IR (text or bytecode) as written by --compile-to=flow."""
    with ir.Context():
        module = ir.Module.parse(flow_ir)
        return count_flow_module(module.operation)


@dataclass(frozen=True)
class DispatchSite:
    """A dispatch of a public function: the source positions (`ir_helpers.location_keys`) of
    the ops in it, and the bytes of its results of static size that another dispatch reads
    (the bytes between dispatches it makes)."""

    positions: frozenset[str]
    result_bytes: int
    function: str = ""


def dispatch_sites(module: ir.Operation) -> list[DispatchSite]:
    """Each dispatch of the module's public functions, as IREE's dispatch creation left them
    (`flow.dispatch.workgroups` regions: the ops in each keep their source locations)."""
    sites = []
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name not in h.FUNC_OPS or not _is_public(op) or not op.regions[0].blocks:
            continue
        function = op.attributes["sym_name"].value
        for dispatch in h.walk_ops(op, DISPATCH_OPS):
            positions = set(h.location_keys(dispatch.location))
            for inner in h.walk_ops(dispatch):
                positions |= h.location_keys(inner.location)
            size = sum(h.static_tensor_bytes(r.type) or 0 for r in dispatch.results
                       if _reaches_dispatch(r))
            sites.append(DispatchSite(frozenset(positions), size, function))
    return sites


def touching(sites: list[DispatchSite], positions: frozenset[str], function: str | None = None
             ) -> tuple[int, int]:
    """The dispatches among `sites` (of `function`, or of all) holding an op from one of
    `positions`, and the bytes they pass to other dispatches: where changes made at those
    positions show."""
    hit = [s for s in sites if not s.positions.isdisjoint(positions)
           and function in (None, s.function)]
    return len(hit), sum(s.result_bytes for s in hit)
