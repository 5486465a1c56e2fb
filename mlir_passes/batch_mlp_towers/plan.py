"""Planning a tower group: batching order, the trie of shared layer prefixes, the stack that
consumes the results, how each batched layer gets its operands, where the batched ops go,
and the run-time stacking budget. Every check that can fail raises NoMatch here; building
(build.py) follows the plan."""

from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.invariants import check_no_parameter_stack
from iree_fusions.compiler.protocol import Candidate, NoMatch, block_ops, round_analysis
from iree_fusions.compiler.target import is_llvm_cpu

from .arrange import MTN, TN, Arrangement, Node, Stack, build_trie
from .match import Layer, trace_constant
from .towers import Tower, TowerGroup


@dataclass(frozen=True)
class PlanOptions:
    """The options of batch-mlp-towers that planning a group and its cost rule read."""

    min_layers: int
    min_net_dispatches: int
    max_padding_waste: float
    runtime_stack_bytes_per_dispatch: int
    dynamic_dim_estimate: int
    drop_unit_rows: bool
    stack_parameters: bool


# Ops that may be moved later in the block (no side effects) when a user of a tower result
# comes before the last input of the group is available.
MOVABLE_PREFIXES = ("linalg.", "tensor.", "arith.", "math.", "iree_linalg_ext.",
                    "iree_tensor_ext.compute_barrier.")


# ---------------------------------------------------------------- what a group saves


@dataclass(frozen=True)
class Gain:
    """What batching a group saves, counted at plan time (stock IREE makes one dispatch per
    tower layer: the matmul with its epilogue)."""

    layer_dispatches: int  # towers x batched layers - batched layers
    stack_copies: int  # insert_slices of the stack stock runs as copy dispatches (slow_memcpy)
    stack_bytes: int  # bytes those copies move
    result_copies: int  # tower results sliced out of a batched tensor for a non-linalg user
    result_bytes: int  # bytes those slices copy
    padding_waste: float  # share of the batched contractions' work spent on zero padding

    @property
    def dispatches(self) -> int:
        return self.layer_dispatches + self.stack_copies

    @property
    def net(self) -> int:
        """Dispatches saved less the copies added (a copy counted like a dispatch)."""
        return self.dispatches - self.result_copies

    @property
    def bytes(self) -> int:
        """Bytes between dispatches saved (copies removed less copies added)."""
        return self.stack_bytes - self.result_bytes

    def describe(self) -> str:
        text = (f"saves {self.layer_dispatches} layer dispatch(es) + {self.stack_copies} "
                f"stack copies, adds {self.result_copies} result copies (net "
                f"{self.net:+d}; {self.bytes:+d} bytes between dispatches)")
        if self.padding_waste:
            text += f", {self.padding_waste:.0%} of the batched work is padding"
        return text


def _stack_copies(stack: Stack | None, towers: list[Tower]) -> tuple[int, int]:
    """Stock writes the towers' results into a stack in place when each is a contiguous
    block of it (stacked on the outer dim, or one row); a [M, T, N] stack of M > 1 rows is a
    strided copy per tower (one slow_memcpy dispatch each)."""
    if stack is None:
        return 0, 0
    rows, _ = towers[0].layers[-1].result_type.shape
    if stack.layout != MTN or rows == 1:
        return 0, 0
    return len(stack.inserts), sum(
        h.static_tensor_bytes(tower.layers[-1].tail.type) or 0 for tower in towers)


def _result_copies(towers: list[Tower], nodes: list[Node], removed: set[ir.Operation]
                   ) -> tuple[int, int]:
    """The tower values read outside the group by an op that is not a linalg op (a return,
    a flow/hal op, an insert_slice): each is sliced out of a batched tensor by a copy.
    Slices read by linalg ops are fused into their dispatches."""
    count = nbytes = 0
    for node in nodes:
        for i in range(node.lo, node.hi):
            for value in towers[i].layers[node.depth].chain:
                outside = [user for user in h.users(value) if user not in removed]
                if any(not user.name.startswith("linalg.") for user in outside):
                    count += 1
                    nbytes += h.static_tensor_bytes(value.type) or 0
    return count, nbytes


def _padding_waste(plans: list[NodePlan]) -> float:
    """1 - (the towers' contraction work) / (the batched contractions' work)."""
    real = padded = 0
    for plan in plans:
        for lay, width in zip(plan.layers, plan.widths):
            rows, inner = lay.lhs.type.shape
            real += rows * inner * width
        rows, _ = plan.layers[0].lhs.type.shape
        padded += len(plan.layers) * rows * _padded_k(plan) * plan.width
    return 1 - real / padded if padded else 0.0


def _padded_k(plan: NodePlan) -> int:
    """K of the node's batched contraction (the parent's padded width past the first layer)."""
    return plan.pad_shapes[0][1 if plan.layers[0].weight_layout == "nk" else 0] \
        if plan.pad_shapes and plan.pad_shapes[0] is not None else plan.layers[0].lhs.type.shape[1]


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
    width: int  # N of the batched tensors (the widest tower's when padded)
    widths: list[int]  # N of each tower's layer
    # Padded groups: per slot, the zero-padded shape of one tower's value (None: as it is).
    pad_shapes: list[list[int] | None] = field(default_factory=list)

    @property
    def padded(self) -> bool:
        return any(tower_width != self.width for tower_width in self.widths)


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
    positions: h.Positions
    gain: Gain = None  # type: ignore[assignment]

    @property
    def removed(self) -> set[ir.Operation]:
        return self.group_ops | self.consumed

    def layer(self, tower: int, depth: int) -> Layer:
        return self.towers[tower].layers[depth]


def plan_group(group: TowerGroup, arrangement: Arrangement | None, block: ir.Block,
               positions: h.Positions, options: PlanOptions) -> GroupPlan:
    """The plan to batch `group`; NoMatch with the reason at the first check that fails."""
    if len(group.towers) < 2:
        lone = group.towers[0]
        if group.elsewhere:
            raise NoMatch("lone-tower",
                          f"tower of {len(lone.layers)} layer(s) ({lone.layers[0].kind}): the "
                          "other towers of equal structure read inputs placed on other devices (a "
                          "multi-device program): ops on different devices are never merged")
        raise NoMatch("lone-tower-no-group",
                      f"tower of {len(lone.layers)} layer(s) ({lone.layers[0].kind}) has no other "
                      "tower of equal structure")
    try:
        return _plan_batched(group, arrangement, block, positions, options)
    except NoMatch as e:
        raise NoMatch(e.code, f"{group.describe()}: {e}") from None


def _plan_batched(group: TowerGroup, arr: Arrangement, block: ir.Block, positions: h.Positions,
                  options: PlanOptions) -> GroupPlan:
    towers, stack = arr.towers, arr.stack
    root = build_trie(towers, arr.sig_id, 0, len(towers), 0)
    if group.padded and (root.chain_length() != len(towers[0].layers)
                         or any(trie_node.size != len(towers) for trie_node in root.walk())):
        raise NoMatch("padded-partial", "padded towers must batch on every layer")
    if root.chain_length() < options.min_layers:
        raise NoMatch("min-layers", f"only {root.chain_length()} layer(s) batch "
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
    stack_sizes = list(stack.empty.operands) if stack else []  # its dynamic dims

    parents = {id(child): pos for pos, node in enumerate(nodes) for child in node.children}
    node_plans = [plan_node(node, parents.get(id(node)), towers, group.shared,
                            options.dynamic_dim_estimate)
                  for node in nodes]
    check_no_parameter_stack((value for plan in node_plans
                              for kind, values in zip(plan.slot_kinds, plan.slots)
                              if kind == "const" for value in values),
                             "weights or epilogue parameters", options.stack_parameters)
    if group.padded:
        _plan_padding(node_plans)
    externals = [value for plan in node_plans for value in plan.externals] + stack_sizes
    anchor, sink = placement(block, positions, externals, group_ops | consumed)
    runtime_bytes = sum(plan.runtime_bytes for plan in node_plans)
    saved = sum(trie_node.size - 1 for trie_node in nodes)
    budget = options.runtime_stack_bytes_per_dispatch
    if runtime_bytes and runtime_bytes > saved * budget:
        raise NoMatch(
            "runtime-stack-bytes", f"stacking run-time tensors would copy {runtime_bytes} bytes "
            f"per call to save {saved} dispatches (runtime-stack-bytes-per-dispatch={budget})")
    stack_copies, stack_bytes = _stack_copies(stack, towers)
    copies, copy_bytes = _result_copies(towers, nodes, group_ops | consumed)
    gain = Gain(saved, stack_copies, stack_bytes, copies, copy_bytes,
                _padding_waste(node_plans) if group.padded else 0.0)
    return GroupPlan(group, towers, stack, node_plans, rowless, batched_depth, group_ops,
                     consumed, anchor, sink, runtime_bytes, positions, gain)


def decline_by_cost(cand: Candidate[GroupPlan], options: PlanOptions) -> None:
    """The pass's cost rule on a feasible plan (`Candidate.decline`)."""
    plan = cand.plan
    gain = plan.gain
    if gain.net < options.min_net_dispatches:
        cand.decline("min-net-dispatches", f"{plan.group.describe()}: {gain.describe()}: "
                     f"below min-net-dispatches={options.min_net_dispatches}; left to IREE")
    elif gain.padding_waste > options.max_padding_waste:
        cand.decline("padding-waste", f"{plan.group.describe()}: {gain.padding_waste:.0%} of "
                     "the batched work would be zero padding (max-padding-waste="
                     f"{options.max_padding_waste})")


CPU_DYNAMIC_ROWS_RULE = (
    "rows (batch, tokens) dynamic on llvm-cpu: IREE peels a batched contraction's 64-row "
    "tile loop there, not its 8-row vector loop, so each row of a partial tile (a run-time "
    "size not a multiple of 64) runs masked vector code (towers-silu-b64, dynamic batch: "
    "0.36-0.43x of stock at batch 32, 0.36x at 48, 1.26x at 64); left to IREE "
    "(cpu-dynamic-rows=true batches them)")


def cpu_dynamic_rows_declined(group: TowerGroup, target) -> str | None:
    """The rule for dynamic rows (None: it does not decline): on llvm-cpu, a group whose
    matmuls have a dynamic M. At a static M IREE picks tiles that divide it; the GPU
    backends are not measured and keep the rewrite."""
    rows = group.first_mm.results[0].type.shape[0]
    return CPU_DYNAMIC_ROWS_RULE if is_llvm_cpu(target) and \
        ir.ShapedType.is_dynamic_size(rows) else None


def _plan_padding(plans: list[NodePlan]) -> None:
    """Per node of a padded group: the width of the batched tensors and the zero-padded shape
    of each stacked value. Padded columns of a layer meet zero rows of the next layer's
    weight; build.zero_padded_columns sets them to zero first (act(inf * 0) is NaN)."""
    k_pad = None
    for plan in plans:
        first = plan.layers[0]
        if any(lay.kind == "other" for lay in plan.layers):
            raise NoMatch("padded-unknown-input",
                          "padded towers need known activations (padded columns must stay "
                          "finite)")
        if any(kind == "runtime" for kind in plan.slot_kinds):
            raise NoMatch("padded-runtime-weight",
                          "padded towers need constant weights and parameters (padded once, "
                          "at load time)")
        if k_pad is None:
            k_pad = first.lhs.type.shape[1]
        weight = [plan.width, k_pad] if first.weight_layout == "nk" else [k_pad, plan.width]
        plan.pad_shapes = [weight] + [_param_pad_shape(first, j, plan.width)
                                   for j in range(len(first.params))]
        for kind, shape, values in zip(plan.slot_kinds, plan.pad_shapes, plan.slots):
            if kind == "shared" and list(values[0].type.shape) != shape:
                raise NoMatch("parameter-widths",
                              "a parameter shared by towers of different widths")
        k_pad = plan.width


def _param_pad_shape(layer: Layer, slot: int, width: int) -> list[int]:
    """The shape of parameter `slot` with its column dims at `width`."""
    for epi in layer.epilogue:
        for (role, index), amap in zip(epi.roles, h.indexing_maps(epi.op)):
            if role == "param" and index == slot:
                shape = list(layer.params[slot].type.shape)
                dims = h.map_dim_positions(amap)
                cols = layer.width
                out = []
                for size, dim in zip(shape, dims):
                    col = epi.dims[dim] == 1 and size == cols
                    out.append(width if col else size)
                return out
    raise NoMatch("parameter-unread", "parameter read by no epilogue op")


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
    for i, tower in enumerate(towers):
        for depth in range(batched_depth[i] + 1):
            ops.update(tower.layers[depth].ops)
            if depth > 0 and tower.links[depth - 1] is not None:
                ops.add(tower.links[depth - 1])
    return ops


def plan_node(node: Node, parent: int | None, towers: list[Tower], shared: bool,
              dynamic_estimate: int = h.TYPICAL_DYNAMIC_DIM) -> NodePlan:
    """Checks one batched layer and decides how each of its operands is provided."""
    layers = [towers[i].layers[node.depth] for i in range(node.lo, node.hi)]
    first = layers[0]
    externals: list[ir.Value] = []
    runtime_bytes = 0
    shared_lhs = stack_inputs = None
    if node.depth == 0:
        if shared:
            shared_lhs = first.lhs
            externals.append(first.lhs)
        else:
            stack_inputs = [lay.lhs for lay in layers]
            rows = list(dict.fromkeys(h.dim_key(value, 0) for value in stack_inputs))
            if len(rows) > 1:
                raise NoMatch("rows-not-equal",
                              "separate inputs whose rows M are sizes not provably equal ("
                              + " vs ".join(h.size_text(key) for key in rows[:3]) + "): they "
                              "cannot be stacked (shape facts relating them would tell)")
            externals += stack_inputs
            runtime_bytes += _bytes(stack_inputs, dynamic_estimate)
    slots = [[lay.weight for lay in layers]] + [
        [lay.params[j] for lay in layers] for j in range(len(first.params))]
    kinds = [_slot_kind(values) for values in slots]
    for values, kind in zip(slots, kinds):
        if kind == "shared":
            externals.append(values[0])
        elif kind == "runtime":
            externals += values
            runtime_bytes += _bytes(values)
    _check_same_values_from_above(layers)
    externals += first.captured + [first.fill_scalar]
    for lay in layers:  # the dynamic sizes a row view splits the rows into
        if lay.row_view is not None:
            externals += list(lay.row_view.operands)[1:]
    widths = [lay.width for lay in layers]
    return NodePlan(node, parent, layers, shared_lhs, stack_inputs, slots, kinds, externals,
                    runtime_bytes, max(widths), widths)


def _slot_kind(values: list[ir.Value]) -> str:
    """One value for all towers (shared), constants (const), else runtime."""
    if all(value == values[0] for value in values):
        return "shared"
    return "const" if all(trace_constant(value) for value in values) else "runtime"


def _bytes(values: list[ir.Value], dynamic_estimate: int = h.TYPICAL_DYNAMIC_DIM) -> int:
    """Bytes of the values; a dynamic dim counts as its util.assume.int umax, else
    `dynamic_estimate`."""
    return sum(h.estimated_numel(value, dynamic_estimate) * h.element_bytes(value.type.element_type)
               for value in values)


def _check_same_values_from_above(layers: list[Layer]) -> None:
    """The values the bodies and the accumulator use from above are equal across towers."""
    first = layers[0]
    for lay in layers[1:]:
        for ours, theirs in zip(lay.captured, first.captured):
            if ours != theirs and not h.same_constant(ours, theirs):
                raise NoMatch("epilogue-captures-differ",
                              "epilogue bodies use different values from above")
        if lay.fill_scalar != first.fill_scalar and not h.same_constant(lay.fill_scalar,
                                                                     first.fill_scalar):
            raise NoMatch("fills-differ", "accumulators are filled with different values")


def placement(block: ir.Block, positions: h.Positions, externals: list[ir.Value],
              removed: set[ir.Operation]) -> tuple[ir.Operation, list[ir.Operation]]:
    """Where the batched ops go (before `anchor`: after every value they read) and the users
    of tower results that must move after them; NoMatch if towers depend on each other."""
    last = -1
    ext_defs = set()
    for value in externals:
        op = h.defining_op(value)
        if op is None or op not in positions:
            continue  # a block argument, or defined above the function body
        ext_defs.add(op)
        last = max(last, positions[op])

    def early_users(op: ir.Operation) -> list[ir.Operation]:
        """Users of op's results (as ops of the block) that come before `last`."""
        found = (h.block_ancestor(user, positions) for result in op.results
                 for user in h.users(result))
        return [user for user in found
                if user is not None and user not in removed and h.position(user, positions) <= last]

    sink: set = set()
    work = [user for op in sorted(removed, key=lambda op: h.position(op, positions))
            for user in early_users(op)]
    while work:
        op = work.pop()
        if op in sink:
            continue
        if op in ext_defs:
            raise NoMatch("towers-dependent",
                          "towers depend on each other (a tower's input is computed from "
                          "another tower's result)")
        if not op.name.startswith(MOVABLE_PREFIXES):
            raise NoMatch("user-before-inputs",
                          f"a user of a tower result ({op.name}) comes before the group's "
                          "inputs are all available and cannot be moved")
        sink.add(op)
        work += early_users(op)
    ops = round_analysis(block_ops, block)  # in block order, listed once per round
    anchor = next((op for op in ops[last + 1:] if op not in removed and op not in sink), None)
    if anchor is None:
        raise NoMatch("no-insertion-point",
                      "no op after the group's inputs to put the batched ops before")
    return anchor, sorted(sink, key=lambda op: h.position(op, positions))
