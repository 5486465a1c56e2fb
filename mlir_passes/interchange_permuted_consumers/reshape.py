"""Reshapes out of the producer -> consumer path, by splitting loops.

An expand_shape on the path is bubbled up to the producer by splitting the loops of the ops
above it (the producer then computes the expanded shape; a `[384,384]` weight becomes a free
`[12,32,384]` reshape); a collapse_shape is sunk to the consumer by splitting the loops of the
ops below it. Each is planned first (`plan_*`: the ops and their loop splits, or why not) and
then applied (`apply_*`).

Sizes may be dynamic: a plan names each size by `ir_helpers.dim_key` (static, the index value
IREE holds, or a tensor's dim) and the build materializes it (`tensor.dim` only where IREE holds
no value). A loop of dynamic range is split as the reshape says (its sizes multiply to the
range by the reshape's own semantics). A `tensor.reshape` (torch's `view` with dynamic sizes)
is a reshape here when its shapes determine it (`reshape_view`): it is rewritten as the
expand_shape / collapse_shape it is before the loops are split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build
from iree.compiler._mlir_libs._mlirDialectsLinalg import fill_builtin_region

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (LINALG_FILL, RESHAPES, TENSOR_COLLAPSE_SHAPE,
                                              TENSOR_EMPTY, TENSOR_EXPAND_SHAPE, op_location)

from .paths import Path, identity_chain_input
from .views import is_reshape, reshape_view, size_text

# ---------------------------------------------------------------- values at another shape


def recreated_init(value: ir.Value, shape: list[b.Size]) -> ir.Value | None:
    """A tensor.empty / linalg.fill-of-empty init re-created at another shape, else None."""
    producer = h.defining_op(value)
    if producer is None:
        return None
    elt = ir.RankedTensorType(value.type).element_type
    if producer.name == TENSOR_EMPTY:
        return tensor.EmptyOp(shape, elt).result
    if producer.name == LINALG_FILL:
        init = h.defining_op(h.dps_inits(producer)[0])
        if init is not None and init.name == TENSOR_EMPTY:
            empty = tensor.EmptyOp(shape, elt).result
            fill = linalg.FillOp([empty.type], [h.dps_inputs(producer)[0]], [empty])
            fill_builtin_region(fill.operation)  # the op linalg.fill() makes, 14x faster
            return fill.results[0]
    return None


def init_can_be_recreated(value: ir.Value) -> bool:
    producer = h.defining_op(value)
    if producer is None:
        return False
    if producer.name == TENSOR_EMPTY:
        return True
    if producer.name == LINALG_FILL:
        init = h.defining_op(h.dps_inits(producer)[0])
        return init is not None and init.name == TENSOR_EMPTY
    return False


def _expand_value(value: ir.Value, groups: list[list[int]], keys: list[h.DimKey]) -> ir.Value:
    """`value` reshaped to the sizes `keys` (groups: source dim i -> result dims groups[i]).

    Folds `expand(collapse(x))` back to x, re-creates empties and fills at the new shape,
    and otherwise inserts a tensor.expand_shape (free: a metadata change).
    """
    if list(h.shape_keys(value)) == keys:
        return value
    producer = h.defining_op(value)
    if (producer is not None and producer.name == TENSOR_COLLAPSE_SHAPE
            and h.reassociation(producer) == groups
            and list(h.shape_keys(producer.operands[0])) == keys):
        return producer.operands[0]
    sizes = [b.size_from_key(key) for key in keys]
    init = recreated_init(value, sizes)
    if init is not None:
        return init
    return b.expand_mixed(value, groups, sizes)


def _unavailable(splits: dict[int, list[h.DimKey]], op: ir.Operation) -> str | None:
    """Why a dynamic size of a split cannot be used where `op` is rebuilt (None: every one
    can); the reason names the loop, its split and where the size is computed."""
    for loop, sizes in splits.items():
        for size in sizes:
            value = size[0] if isinstance(size, tuple) else size
            if isinstance(value, ir.Value) and not h.dominates(value, op):
                what = h.defining_op(value).name if h.defining_op(value) is not None else "a value"
                return (f"loop {loop} splits into [{', '.join(map(size_text, sizes))}]: a dynamic "
                        f"size of the reshape ({what}) is computed after {op_location(op)}")
    return None


# ---------------------------------------------------------------- iteration-space expansion


@dataclass
class Expansion:
    """How one op's loops are split: old loop d -> new loops new_dims[d] with sizes."""

    splits: dict[int, list[int]]  # old loop -> sizes (only loops split into >1 dims)
    n_old: int

    def new_dims(self) -> list[list[int]]:
        out, start = [], 0
        for loop in range(self.n_old):
            count = len(self.splits.get(loop, [0]))
            out.append(list(range(start, start + count)))
            start += count
        return out

    @property
    def n_new(self) -> int:
        return sum(len(group) for group in self.new_dims())


def expansion_blocker(op: ir.Operation, splits: dict[int, list[h.DimKey]]) -> str | None:
    """Why op's loops cannot be split as asked (None: they can). A loop of dynamic range is
    split as the reshape says (its sizes multiply to the range: the reshape's semantics)."""
    if not h.is_structured(op):
        return f"{op.name} has no indexing maps/body to expand"
    for map_ in h.indexing_maps(op):
        dims = h.map_dim_positions(map_)
        if dims is None or len(set(dims)) != len(dims):
            return "an indexing map is not a projected permutation"
    ranges = h.loop_keys(op)
    if ranges is None:
        return "a loop ranges over no tensor dim"
    for loop, sizes in splits.items():
        if not isinstance(ranges[loop], int):
            continue
        if any(not isinstance(size, int) for size in sizes) or h.numel(sizes) != ranges[loop]:
            return (f"loop {loop} has {ranges[loop]} iterations, cannot split into "
                    f"[{', '.join(map(size_text, sizes))}]")
    if h.index_dims(op) & set(splits):
        return "the body uses linalg.index on a loop that would be split"
    return _unavailable(splits, op)


def expand_op(op: ir.Operation, splits: dict[int, list[h.DimKey]]
              ) -> tuple[ir.Operation, list]:
    """Builds (before op) a linalg.generic computing op with its loops split as in `splits`.

    Returns the new op and, per result, (groups, old type): the reassociation from the old
    result dims to the new result dims, to collapse a new result back to the old type.
    """
    exp = Expansion(splits, h.indexing_maps(op)[0].n_dims)
    new_dims = exp.new_dims()
    maps = h.indexing_maps(op)
    iters = h.iterator_types(op)
    new_iters = [iters[loop] for loop in range(exp.n_old) for _ in new_dims[loop]]
    n_in = len(h.dps_inputs(op))
    operands = list(h.dps_inputs(op)) + list(h.dps_inits(op))
    new_operands, new_maps, result_groups = [], [], []
    with ir.InsertionPoint(op), op.location:
        for i, (value, map_) in enumerate(zip(operands, maps)):
            dims = h.map_dim_positions(map_)
            groups, shape, out_dims = [], [], []
            if isinstance(value.type, ir.RankedTensorType):
                old_shape = h.shape_keys(value)
                start = 0
                for pos, loop in enumerate(dims):
                    group = new_dims[loop]
                    groups.append(list(range(start, start + len(group))))
                    start += len(group)
                    shape += splits.get(loop, [old_shape[pos]])
                    out_dims += group
                new_value = _expand_value(value, groups, shape)
            else:
                new_value = value
                out_dims = []
            new_operands.append(new_value)
            new_maps.append(b.map_attr(exp.n_new, out_dims))
            if i >= n_in:
                result_groups.append((groups, value.type))
        index_map = {loop: new_dims[loop][0] for loop in range(exp.n_old)}
        new = b.cloned_generic(op, new_operands[:n_in], new_operands[n_in:], new_maps,
                               new_iters, index_map)
    return new, result_groups


def replace_with_expanded(op: ir.Operation, new: ir.Operation, result_groups: list,
                          direct: dict[int, ir.Operation] | None = None) -> None:
    """Replaces op's results by new's, collapsing back for every user but `direct[i]`
    (an expand_shape of result i whose result new's result i equals). Reshapes that fed
    op and are now dead (expand(collapse(x)) folded to x) are erased."""
    direct = direct or {}
    feeding = [h.defining_op(operand) for operand in op.operands]
    feeding = [feeder for feeder in feeding if feeder is not None and feeder.name in RESHAPES]
    for i, (old, res) in enumerate(zip(op.results, new.results)):
        reshape = direct.get(i)
        if reshape is not None:
            value = res
            if res.type != reshape.results[0].type:  # a dim static here, dynamic there
                with ir.InsertionPoint(reshape), reshape.location:
                    value = tensor.CastOp(reshape.results[0].type, res).result
            reshape.results[0].replace_all_uses_with(value)
            reshape.erase()
        if not list(old.uses):
            continue
        groups, old_type = result_groups[i]
        with ir.InsertionPoint(op), op.location:
            collapsed = b.collapse(res, groups, old_type)
        old.replace_all_uses_with(collapsed)
    op.erase()
    for feeder in dict.fromkeys(feeding):
        if not list(feeder.results[0].uses):
            feeder.erase()


# ---------------------------------------------------------------- paths from producers


def plan_bubble_expand(path: Path, reshape: ir.Operation) -> list[tuple[ir.Operation, dict]] | str:
    """Plans moving an expand_shape up to the producer: [(op, splits)], consumer-side first."""
    idx = path.ops.index(reshape)
    chain = [path.producer] + path.ops[:idx]
    view = reshape_view(reshape)
    groups, shape = view.groups, view.expanded
    value = reshape.operands[0]
    plan = []
    for op in reversed(chain):
        if is_reshape(op):
            return "two reshapes on the path"
        res_idx = h.result_index(value)
        maps = h.indexing_maps(op) if h.is_structured(op) else None
        if maps is None:
            return f"producer {op.name} cannot be expanded (no indexing maps)"
        n_in = len(h.dps_inputs(op))
        splits = _step_splits(op, h.map_dim_positions(maps[n_in + res_idx]), groups, shape,
                              f"{op.name} result map is not a permutation", op.name)
        if isinstance(splits, str):
            return splits
        plan.append((op, splits))
        if op == path.producer:
            return plan
        # The path input of this elementwise op carries the expansion further up.
        inputs = h.dps_inputs(op)
        nxt = identity_chain_input(op)
        in_dims = h.map_dim_positions(maps[inputs.index(nxt)])
        old_shape = h.shape_keys(nxt)
        groups, shape = _split_operand(in_dims, splits, lambda pos, loop: old_shape[pos])
        value = nxt
    return "producer not reached"


def _dim_splits(dims: list[int], groups: list[list[int]], shape: list[h.DimKey]
                ) -> dict[int, list[h.DimKey]]:
    """Loop dim -> the sizes it is split into, for each reassociation group of several dims
    (`dims[j]`: the loop dim of the operand's j-th collapsed dim)."""
    return {dims[j]: [shape[pos] for pos in group]
            for j, group in enumerate(groups) if len(group) > 1}


def _step_splits(op: ir.Operation, dims: list[int] | None, groups: list[list[int]],
                 shape: list[h.DimKey], not_permutation: str, where: str
                 ) -> dict[int, list[h.DimKey]] | str:
    """One op of a walk along the path: the loop splits that carry the reshape through it
    (its path operand's j-th dim is loop `dims[j]`), or why it cannot be expanded."""
    if dims is None:
        return not_permutation
    splits = _dim_splits(dims, groups, shape)
    blocker = expansion_blocker(op, splits)
    return f"cannot expand {where}: {blocker}" if blocker else splits


def _split_operand(dims: list[int], splits: dict[int, list[h.DimKey]],
                   unsplit: Callable[[int, int], h.DimKey]
                   ) -> tuple[list[list[int]], list[h.DimKey]]:
    """The reassociation groups and expanded shape of the next operand on the path (its j-th
    dim is loop `dims[j]`) once the loops in `splits` are split; a dim whose loop is not split
    keeps the size `unsplit(j, loop)`."""
    groups, shape, start = [], [], 0
    for pos, loop in enumerate(dims):
        sizes = splits.get(loop, [unsplit(pos, loop)])
        groups.append(list(range(start, start + len(sizes))))
        shape += sizes
        start += len(sizes)
    return groups, shape


def plan_sink_collapse(path: Path, reshape: ir.Operation) -> list[tuple[ir.Operation, dict]] | str:
    """Plans moving a collapse_shape down to the consumer: [(op, splits)], reshape-side first."""
    idx = path.ops.index(reshape)
    chain = path.ops[idx + 1:] + [path.consumer]
    view = reshape_view(reshape)
    groups, src_shape = view.groups, view.expanded
    value = reshape.results[0]
    plan = []
    for op in chain:
        if is_reshape(op):
            return "two reshapes on the path"
        operands = list(op.operands)
        maps = h.indexing_maps(op)
        pos_in = [i for i, operand in enumerate(operands) if operand == value]
        if len(pos_in) != 1:
            return "the collapsed value is read twice"
        splits = _step_splits(op, h.map_dim_positions(maps[pos_in[0]]), groups, src_shape,
                              "a map on the path is not a permutation", op_location(op))
        if isinstance(splits, str):
            return splits
        plan.append((op, splits))
        if op == path.consumer:
            return plan
        n_in = len(h.dps_inputs(op))
        out_dims = h.map_dim_positions(maps[n_in])
        loop_sizes = h.loop_keys(op)
        groups, src_shape = _split_operand(out_dims, splits, lambda pos, loop: loop_sizes[loop])
        value = op.results[0]
    return "consumer not reached"


def apply_bubble(plan: list[tuple[ir.Operation, dict]], reshape: ir.Operation) -> None:
    """Expands each planned op, consumer side first; each one's new input expand_shape is
    the reshape the next op up absorbs."""
    direct = reshape
    for step, (op, splits) in enumerate(plan):
        res_idx = h.result_index(direct.operands[0])
        new, groups = expand_op(op, splits)
        replace_with_expanded(op, new, groups, {res_idx: direct})
        if step + 1 == len(plan):
            return
        direct = h.defining_op(identity_chain_input(new))
        assert direct is not None and direct.name == TENSOR_EXPAND_SHAPE


def apply_sink(plan: list[tuple[ir.Operation, dict]]) -> ir.Operation:
    """Returns the rebuilt consumer."""
    new = None
    for op, splits in plan:
        new, groups = expand_op(op, splits)
        replace_with_expanded(op, new, groups)
    return new


# ---------------------------------------------------------------- consumer rewrites
