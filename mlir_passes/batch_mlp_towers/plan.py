"""Planning a tower group: batching order, the trie of shared layer prefixes, the stack that
consumes the results, how each batched layer gets its operands, where the batched ops go,
and the run-time stacking budget. Every check that can fail raises NoMatch here; building
(build.py) follows the plan."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from iree.compiler import ir

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import NoMatch

from .match import Layer, Positions, Tower, TowerGroup, position, trace_constant

if TYPE_CHECKING:
    from . import BatchMlpTowers

# Layouts of a stacked [tower, row, column] tensor; TN drops the row dim when there is one
# row (batch 1): [tower, column].
TMN, MTN, TN = "tmn", "mtn", "tn"
# Ops that may be moved later in the block (no side effects) when a user of a tower result
# comes before the last input of the group is available.
MOVABLE_PREFIXES = ("linalg.", "tensor.", "arith.", "math.", "iree_linalg_ext.",
                    "iree_tensor_ext.compute_barrier.")
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
        return 1 + max((c.chain_length() for c in self.children), default=0)

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()


def build_trie(towers: list[Tower], sig_id, lo: int, hi: int, depth: int) -> Node:
    """The node of towers [lo, hi) at `depth`; children: runs of >= 2 towers that agree on
    the next layer."""
    node = Node(lo, hi, depth)
    i = lo
    while i < hi:
        if len(towers[i].layers) <= depth + 1:
            i += 1
            continue
        s = sig_id(towers[i].layers[depth + 1])
        j = i
        while (j < hi and len(towers[j].layers) > depth + 1
               and sig_id(towers[j].layers[depth + 1]) == s):
            j += 1
        if j - i >= 2:
            node.children.append(build_trie(towers, sig_id, i, j, depth + 1))
        i = j
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
        if len(users) != 1 or users[0].name != "tensor.insert_slice" or \
                users[0].operands[0] != tail or len(users[0].operands) != 2:
            return None
        inserts.append(users[0])
    first = [op for op in inserts if h.defining_op(op.operands[1]) not in inserts]
    if len(first) != 1:
        return None
    empty = h.defining_op(first[0].operands[1])
    if empty is None or empty.name != "tensor.empty":
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


def _stack_layout(chain: list[ir.Operation], count: int, m: int, n: int) -> str | None:
    """TMN or MTN when the inserts write tower p's [m, n] result where that layout of a
    [count, m, n] batched result puts it (row-major, same element order); else None."""
    shape = list(chain[-1].results[0].type.shape)
    total = count * m * n
    if int(np.prod(shape)) != total or total > _MAX_STACK_ELEMENTS:
        return None
    target = np.arange(total).reshape(shape)
    for layout in (TMN, MTN):
        full = np.arange(total).reshape((count, m, n) if layout == TMN else (m, count, n))
        ok = True
        for p, op in enumerate(chain):
            offs = list(op.attributes["static_offsets"])
            sizes = list(op.attributes["static_sizes"])
            strides = list(op.attributes["static_strides"])
            if any(s != 1 for s in strides) or any(o < 0 for o in offs):
                return None
            region = target[tuple(slice(o, o + s) for o, s in zip(offs, sizes))]
            block = full[p] if layout == TMN else full[:, p, :]
            if region.size != block.size or not np.array_equal(region.reshape(-1),
                                                               block.reshape(-1)):
                ok = False
                break
        if ok:
            return layout
    return None


def find_stack(towers: list[Tower]) -> Stack | None:
    """The stack / concatenation of the towers' results that a batched result can be."""
    found = _insert_chain(towers)
    if found is None:
        return None
    chain, empty = found
    tails = [t.layers[-1].tail for t in towers]
    order = [tails.index(op.operands[0]) for op in chain]
    m, n = towers[0].layers[-1].result_type.shape
    layout = _stack_layout(chain, len(towers), m, n)
    return None if layout is None else Stack(chain, empty, layout, order)


# ---------------------------------------------------------------- batching order


@dataclass
class Arrangement:
    """A group's towers in batching order: towers equal on a prefix are contiguous (program
    order among equals, or the order of the stack that consumes them)."""

    towers: list[Tower]
    layer_ids: dict[tuple, int]  # Layer.key -> a number (first seen first)
    stack: Stack | None

    def sig_id(self, layer: Layer) -> int:
        return self.layer_ids[layer.key]


def arrange_towers(group: TowerGroup) -> Arrangement:
    ids: dict[tuple, int] = {}
    for t in group.towers:
        for lay in t.layers:
            ids.setdefault(lay.key, len(ids))

    def signature(t: Tower) -> tuple:
        return tuple(ids[lay.key] for lay in t.layers)

    towers = sorted(group.towers, key=signature)
    uniform = len({signature(t) for t in towers}) == 1
    stack = find_stack(towers) if uniform else None
    if stack is not None:
        towers = [towers[i] for i in stack.order]
    return Arrangement(towers, ids, stack)


# ---------------------------------------------------------------- the plan


@dataclass
class NodePlan:
    """One batched layer: its towers' layers and how each operand is provided."""

    node: Node
    parent: int | None  # index of the parent node in GroupPlan.nodes
    layers: list[Layer]
    shared_lhs: ir.Value | None  # first layer, shared input: read once (broadcast)
    stack_inputs: list[ir.Value] | None  # first layer, separate inputs: stacked per call
    # Weight, then each epilogue parameter: one value per tower, and how it is provided:
    # "shared" (one value for all), "const" (stacked at load time), "runtime" (per call).
    slots: list[list[ir.Value]]
    slot_kinds: list[str]
    externals: list[ir.Value]  # values from outside the group the batched ops read
    runtime_bytes: int  # bytes stacked per call


@dataclass
class GroupPlan:
    group: TowerGroup  # towers in program order (describe(), the report's location)
    towers: list[Tower]  # batching order (Node.lo/hi index this)
    stack: Stack | None  # the stack the batched result replaces
    nodes: list[NodePlan]  # the trie, pre-order (a parent before its children)
    rowless: bool  # one row (batch 1) and drop-unit-rows: batched tensors are [T, N]
    batched_depth: list[int]  # per tower: the deepest batched layer
    group_ops: set[ir.Operation]  # the towers' batched ops (and expand_shapes between layers)
    consumed: set[ir.Operation]  # the stack's insert_slices
    anchor: ir.Operation  # the batched ops go before it
    sink: list[ir.Operation]  # users of tower results moved after the batched ops
    runtime_bytes: int
    positions: Positions

    @property
    def removed(self) -> set[ir.Operation]:
        return self.group_ops | self.consumed

    def layer(self, tower: int, depth: int) -> Layer:
        return self.towers[tower].layers[depth]


def plan_group(group: TowerGroup, arrangement: Arrangement | None, block: ir.Block,
               positions: Positions, options: BatchMlpTowers) -> GroupPlan:
    """The plan to batch `group`; NoMatch with the reason at the first check that fails."""
    if len(group.towers) < 2:
        t = group.towers[0]
        raise NoMatch(f"tower of {len(t.layers)} layer(s) ({t.layers[0].kind}) has no other "
                      "tower of equal structure")
    try:
        return _plan_batched(group, arrangement, block, positions, options)
    except NoMatch as e:
        raise NoMatch(f"{group.describe()}: {e}") from None


def _plan_batched(group: TowerGroup, arr: Arrangement, block: ir.Block, positions: Positions,
                  options: BatchMlpTowers) -> GroupPlan:
    towers, stack = arr.towers, arr.stack
    root = build_trie(towers, arr.sig_id, 0, len(towers), 0)
    if root.chain_length() < options.min_layers:
        raise NoMatch(f"only {root.chain_length()} layer(s) batch "
                      f"(min-layers={options.min_layers}); left to IREE")
    nodes = list(root.walk())
    rowless = options.drop_unit_rows and towers[0].layers[0].result_type.shape[0] == 1
    _choose_layouts(nodes, towers, stack, rowless)
    batched_depth = [0] * len(towers)
    for node in nodes:
        for i in range(node.lo, node.hi):
            batched_depth[i] = max(batched_depth[i], node.depth)
    group_ops = _group_ops(towers, batched_depth)
    consumed = set(stack.inserts) if stack else set()

    parents = {id(c): k for k, node in enumerate(nodes) for c in node.children}
    node_plans = [plan_node(node, parents.get(id(node)), towers, group.shared)
                  for node in nodes]
    externals = [v for p in node_plans for v in p.externals]
    anchor, sink = placement(block, positions, externals, group_ops | consumed)
    runtime_bytes = sum(p.runtime_bytes for p in node_plans)
    saved = sum(n.size - 1 for n in nodes)
    budget = options.runtime_stack_bytes_per_dispatch
    if runtime_bytes and runtime_bytes > saved * budget:
        raise NoMatch(
            f"stacking run-time tensors would copy {runtime_bytes} bytes per call to save "
            f"{saved} dispatches (runtime-stack-bytes-per-dispatch={budget})")
    return GroupPlan(group, towers, stack, node_plans, rowless, batched_depth, group_ops,
                     consumed, anchor, sink, runtime_bytes, positions)


def _choose_layouts(nodes: list[Node], towers: list[Tower], stack: Stack | None,
                    rowless: bool) -> None:
    """TMN everywhere; the stack's layout at the leaf it replaces; TN without rows."""
    if stack is not None:
        leaf = nodes[-1]
        assert leaf.size == len(towers) and not leaf.children
        leaf.layout = stack.layout
    if rowless:
        for node in nodes:  # with one row every layout is the same order of elements
            node.layout = TN


def _group_ops(towers: list[Tower], batched_depth: list[int]) -> set[ir.Operation]:
    """The ops of the batched layers, and the expand_shapes linking them."""
    ops: set = set()
    for i, t in enumerate(towers):
        for d in range(batched_depth[i] + 1):
            ops.update(t.layers[d].ops)
            if d > 0 and t.links[d - 1] is not None:
                ops.add(t.links[d - 1])
    return ops


def plan_node(node: Node, parent: int | None, towers: list[Tower], shared: bool) -> NodePlan:
    """Checks one batched layer and decides how each of its operands is provided."""
    layers = [towers[i].layers[node.depth] for i in range(node.lo, node.hi)]
    t0 = layers[0]
    externals: list[ir.Value] = []
    runtime_bytes = 0
    shared_lhs = stack_inputs = None
    if node.depth == 0:
        if shared:
            shared_lhs = t0.lhs
            externals.append(t0.lhs)
        else:
            stack_inputs = [lay.lhs for lay in layers]
            externals += stack_inputs
            runtime_bytes += _bytes(stack_inputs)
    slots = [[lay.weight for lay in layers]] + [
        [lay.params[j] for lay in layers] for j in range(len(t0.params))]
    kinds = [_slot_kind(values) for values in slots]
    for values, kind in zip(slots, kinds):
        if kind == "shared":
            externals.append(values[0])
        elif kind == "runtime":
            externals += values
            runtime_bytes += _bytes(values)
    _check_same_values_from_above(layers)
    externals += t0.captured + [t0.fill_scalar]
    return NodePlan(node, parent, layers, shared_lhs, stack_inputs, slots, kinds, externals,
                    runtime_bytes)


def _slot_kind(values: list[ir.Value]) -> str:
    """One value for all towers (shared), constants (const), else runtime."""
    if all(v == values[0] for v in values):
        return "shared"
    return "const" if all(trace_constant(v) for v in values) else "runtime"


def _bytes(values: list[ir.Value]) -> int:
    return sum(h.static_tensor_bytes(v.type) for v in values)


def _check_same_values_from_above(layers: list[Layer]) -> None:
    """The values the bodies and the accumulator use from above are equal across towers."""
    t0 = layers[0]
    for lay in layers[1:]:
        for a, b in zip(lay.captured, t0.captured):
            if a != b and not h.same_constant(a, b):
                raise NoMatch("epilogue bodies use different values from above")
        if lay.fill_scalar != t0.fill_scalar and not h.same_constant(lay.fill_scalar,
                                                                     t0.fill_scalar):
            raise NoMatch("accumulators are filled with different values")


def placement(block: ir.Block, positions: Positions, externals: list[ir.Value],
              removed: set[ir.Operation]) -> tuple[ir.Operation, list[ir.Operation]]:
    """Where the batched ops go (before `anchor`: after every value they read) and the users
    of tower results that must move after them; NoMatch if towers depend on each other."""
    last = -1
    ext_defs = set()
    for v in externals:
        op = h.defining_op(v)
        if op is None or op not in positions:
            continue  # a block argument, or defined above the function body
        ext_defs.add(op)
        last = max(last, positions[op])

    def early_users(op: ir.Operation) -> list[ir.Operation]:
        """Users of op's results (as ops of the block) that come before `last`."""
        found = (h.block_ancestor(u, positions) for r in op.results for u in h.users(r))
        return [u for u in found
                if u is not None and u not in removed and position(u, positions) <= last]

    sink: set = set()
    work = [u for op in sorted(removed, key=lambda o: position(o, positions))
            for u in early_users(op)]
    while work:
        op = work.pop()
        if op in sink:
            continue
        if op in ext_defs:
            raise NoMatch("towers depend on each other (a tower's input is computed from "
                          "another tower's result)")
        if not op.name.startswith(MOVABLE_PREFIXES):
            raise NoMatch(f"a user of a tower result ({op.name}) comes before the group's "
                          "inputs are all available and cannot be moved")
        sink.add(op)
        work += early_users(op)
    anchor = next((op.operation for op in block.operations
                   if positions[op.operation] > last and op.operation not in removed
                   and op.operation not in sink), None)
    if anchor is None:
        raise NoMatch("no op after the group's inputs to put the batched ops before")
    return anchor, sorted(sink, key=lambda o: position(o, positions))
