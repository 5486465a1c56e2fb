"""The consumer-side rewrites: interchange, merge of sibling readers, transpose-copy folding,
and the producer-layout rewrite (the producer computes in the layout the consumer reads)."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, TENSOR_EMPTY, op_location

from .paths import Path
from .reshape import init_can_be_recreated, recreated_init, expansion_blocker


def fold_copy_into_producer(copy: ir.Operation, elementwise: ir.Operation) -> ir.Operation:
    """E -> transpose copy C  ==>  E writing C's layout (C's init, composed output map)."""
    c_in, c_out = (h.map_dim_positions(map_) for map_ in h.indexing_maps(copy))
    n_in = len(h.dps_inputs(elementwise))
    e_maps = h.indexing_maps(elementwise)
    e_out = h.map_dim_positions(e_maps[n_in])
    # E writes X[j] from its loop e_out[j]; C reads X[j] at its loop c_in[j] and writes that
    # loop to the output position p where c_out[p] == c_in[j].
    where_out = {dim: pos for pos, dim in enumerate(c_out)}
    new_out = [None] * len(c_out)
    for j, e_dim in enumerate(e_out):
        new_out[where_out[c_in[j]]] = e_dim
    maps = [ir.AffineMapAttr.get(map_) for map_ in e_maps[:n_in]]
    maps.append(b.map_attr(e_maps[0].n_dims, new_out))
    with ir.InsertionPoint(copy), copy.location:
        new = b.cloned_generic(elementwise, h.dps_inputs(elementwise), h.dps_inits(copy), maps,
                               h.iterator_types(elementwise))
    copy.results[0].replace_all_uses_with(new.results[0])
    copy.erase()
    elementwise.erase()
    return new


def _out_arg_used(op: ir.Operation) -> bool:
    block = h.body_block(op)
    n_in = len(h.dps_inputs(op))
    return any(len(list(arg.uses)) for arg in list(block.arguments)[n_in:])


def can_fold_copy(copy: ir.Operation, path: Path) -> ir.Operation | None:
    """The elementwise op a pure transpose copy can be folded into, if any."""
    if not h.is_pure_copy(copy) or not path.ops:
        return None
    elem_op = path.ops[-1]
    if elem_op.name != LINALG_GENERIC or h.defining_op(path.value) != elem_op:
        return None
    c_maps = [h.map_dim_positions(map_) for map_ in h.indexing_maps(copy)]
    loops = h.indexing_maps(copy)[0].n_dims
    if not all(dims is not None and h.is_permutation(dims, loops) for dims in c_maps):
        return None
    e_out = h.map_dim_positions(h.indexing_maps(elem_op)[len(h.dps_inputs(elem_op))])
    if (len(elem_op.results) != 1 or h.single_user(elem_op.results[0]) != copy
            or _out_arg_used(elem_op)
            or e_out is None or len(e_out) != h.indexing_maps(elem_op)[0].n_dims):
        return None
    return elem_op


def merge_siblings(consumers: list[ir.Operation]) -> ir.Operation:
    """Merges elementwise consumers with the same loop ranges (each reads the shared value
    with the identity map) into one multi-result generic at the first one's position."""
    first = consumers[0]
    loops = h.indexing_maps(first)[0].n_dims
    slots = b.InputSlots()
    inits: list[tuple[ir.Value, ir.AffineMap]] = []
    arg_maps = []
    for consumer in consumers:
        maps = h.indexing_maps(consumer)
        arg_maps.append([slots.slot(value, map_)
                         for value, map_ in zip(h.dps_inputs(consumer), maps)])
        n_in = len(h.dps_inputs(consumer))
        inits += list(zip(h.dps_inits(consumer), maps[n_in:]))
    bodies, pos = [], len(slots.pairs)
    for consumer, amap in zip(consumers, arg_maps):
        n_out = len(h.dps_inits(consumer))
        bodies.append((consumer, amap + list(range(pos, pos + n_out))))
        pos += n_out
    with ir.InsertionPoint(first), first.location:
        new = b.multi_result_generic(slots.pairs, inits, ["parallel"] * loops, bodies)
    pos = 0
    for consumer in consumers:
        for old in consumer.results:
            old.replace_all_uses_with(new.results[pos])
            pos += 1
    for consumer in consumers:
        consumer.erase()
    return new


# ---------------------------------------------------------------- producer layout


def rebuild(op: ir.Operation, order: list[int], operands: list[ir.Value] | None = None,
            dims: list[list[int]] | None = None) -> ir.Operation:
    """op as a linalg.generic whose loop k is op's loop order[k] (built before op).

    `operands` (DPS inputs then inits) and `dims` (each map as dims of op's loops) replace
    op's own when given. Uses are not replaced.
    """
    operands = list(op.operands) if operands is None else operands
    dims = [h.map_dim_positions(map_) for map_ in h.indexing_maps(op)] if dims is None else dims
    where = {old: new for new, old in enumerate(order)}
    n_in = len(h.dps_inputs(op))
    iters = h.iterator_types(op)
    with ir.InsertionPoint(op), op.location:
        new = b.cloned_generic(op, operands[:n_in], operands[n_in:],
                               [b.map_attr(len(order), [where[dim] for dim in map_dims])
                                for map_dims in dims],
                               [iters[loop] for loop in order], where)
    return new


def interchange_order(consumer: ir.Operation, operand: int) -> list[int]:
    """New loop order making the operand's map (d0, d1, ...): its dims first, others after."""
    dims = h.map_dim_positions(h.indexing_maps(consumer)[operand])
    loops = h.indexing_maps(consumer)[0].n_dims
    return list(dims) + [dim for dim in range(loops) if dim not in dims]


def interchange(consumer: ir.Operation, order: list[int]) -> ir.Operation:
    """Replaces consumer by itself with loop k = old loop order[k]."""
    new = rebuild(consumer, order)
    for old, res in zip(consumer.results, new.results):
        old.replace_all_uses_with(res)
    consumer.erase()
    return new


def _loop_groups(order: list[int], maps: list[list[int]]) -> list[list[int]]:
    """Consecutive loops of `order` that every map reads together, adjacent and in order
    (IREE's collapse-dimensions folds them into one loop)."""
    groups: list[list[int]] = []
    for loop in order:
        if groups:
            last = groups[-1][-1]
            together = True
            for dims in maps:
                if (last in dims) != (loop in dims) or \
                        (last in dims and dims.index(loop) != dims.index(last) + 1):
                    together = False
                    break
            if together:
                groups[-1].append(loop)
                continue
        groups.append([loop])
    return groups


def contraction_order_ok(op: ir.Operation, order: list[int],
                         out_layout: list[int]) -> bool | None:
    """For a two-input contraction run with loop order `order`, whose result ends up stored
    as `out_layout` (dims of op's loops): are the two innermost parallel loop groups an M
    group (first input only) then an N group (second input only)? That is the shape CPU and
    GPU matmul configurations tile well; anything else (two N loops of a split N dimension,
    or N before M) is slower on llvm-cpu (bench/results/code-costs.md,
    interchange-permuted-consumers). None: op is not such a contraction."""
    ins = [operand for operand in h.dps_inputs(op) if isinstance(operand.type, ir.RankedTensorType)]
    iters = h.iterator_types(op)
    if len(ins) != 2 or "reduction" not in iters:
        return None
    maps = [h.map_dim_positions(map_) for map_ in h.indexing_maps(op)]
    if any(map_ is None for map_ in maps):
        return None
    lhs, rhs = set(maps[0]), set(maps[1])
    groups = _loop_groups([loop for loop in order if iters[loop] == "parallel"],
                          maps + [out_layout])
    if len(groups) < 2:
        return False
    kinds = []
    for group in groups[-2:]:
        loop = group[0]
        kinds.append("m" if loop in lhs and loop not in rhs else
                     "n" if loop in rhs and loop not in lhs
                     else "x")
    return kinds == ["m", "n"]


@dataclass(frozen=True)
class LayoutPlan:
    """How P's loops and result change so that C reads P's result with the identity map."""

    pinv: list[int]  # new dim k of a chain tensor <- its old dim pinv[k]
    ordered: list[int]  # C's loops read the chain through, in increasing order
    order: list[int]  # P's new loop k is its old loop order[k]
    new_out: list[int]  # P's result dims, as P's old loops


def layout_plan(path: Path) -> LayoutPlan | str:
    """Checks that P and the identity chain can compute in the layout C reads (so that C
    reads it with the identity map) and returns what apply_layout needs."""
    producer, consumer = path.producer, path.consumer
    if not h.is_structured(producer) or len(producer.results) != 1:
        return f"{producer.name} cannot change its result layout"
    read_dims = h.map_dim_positions(h.indexing_maps(consumer)[path.operand])
    ordered = sorted(read_dims)
    pos = [ordered.index(dim) for dim in read_dims]  # tail dim j -> new dim pos[j]
    pinv = [0] * len(pos)
    for j, new_dim in enumerate(pos):
        pinv[new_dim] = j
    n_in = len(h.dps_inputs(producer))
    out_dims = h.map_dim_positions(h.indexing_maps(producer)[n_in])
    if out_dims is None or expansion_blocker(producer, {}) is not None:
        return f"{producer.name} maps are not projected permutations"
    if not init_can_be_recreated(h.dps_inits(producer)[0]):
        return f"{producer.name} accumulates into a tensor that is not a fill/empty"
    for chain_op in path.ops:
        if len(h.dps_inits(chain_op)) != 1 or _out_arg_used(chain_op) or \
                h.defining_op(h.dps_inits(chain_op)[0]) is None or \
                h.defining_op(h.dps_inits(chain_op)[0]).name != TENSOR_EMPTY:
            return f"{op_location(chain_op)} cannot change its result layout"
    new_out = [out_dims[pinv[new_dim]] for new_dim in range(len(out_dims))]
    order = new_out + [dim for dim in range(len(h.iterator_types(producer))) if dim not in new_out]
    return LayoutPlan(pinv, ordered, order, new_out)


def preferred_layout_plan(path: Path, producer_layout: str) -> LayoutPlan | None:
    """Change P's layout instead of interchanging C when that gives P the loop order
    matmul configurations handle well and interchanging C does not (see
    contraction_order_ok); `producer_layout`: the pass's option (auto / always / never)."""
    if producer_layout == "never":
        return None
    producer = path.producer
    if not h.is_structured(producer):
        return None
    plan = layout_plan(path)
    if isinstance(plan, str):
        return None
    if producer_layout == "always":
        return plan
    n_loops = len(h.iterator_types(producer))
    # Interchanging C: P keeps its loops; C stores P's result in its own output layout.
    c_maps = [h.map_dim_positions(map_) for map_ in h.indexing_maps(path.consumer)]
    c_read = c_maps[path.operand]
    c_out = c_maps[len(h.dps_inputs(path.consumer))]
    p_out = h.map_dim_positions(h.indexing_maps(producer)[len(h.dps_inputs(producer))])
    loop_of_c = {c_read[j]: p_out[j] for j in range(len(c_read))}
    stored = [loop_of_c[loop] for loop in c_out if loop in loop_of_c]
    if contraction_order_ok(producer, list(range(n_loops)), stored) is not False:
        return None
    if contraction_order_ok(producer, plan.order, plan.new_out):
        return plan
    return None


def sizes_of(value: ir.Value) -> list[b.Size]:
    """The sizes of a tensor at the current insertion point: static, the index values IREE
    holds, else `tensor.dim`s."""
    return [b.size_from_key(key) for key in h.shape_keys(value)]


def apply_layout(path: Path, plan: LayoutPlan) -> ir.Operation | None:
    """P computes in C's read layout, the identity chain follows, C reads it with the
    identity map (a pure transpose copy C disappears). Returns the new consumer (or None)."""
    producer, consumer = path.producer, path.consumer
    pinv = plan.pinv

    def permute(items):  # a chain tensor's shape, or a map reading it, in the new layout
        return [items[pinv[new_dim]] for new_dim in range(len(items))]

    n_in = len(h.dps_inputs(producer))
    init = h.dps_inits(producer)[0]
    with ir.InsertionPoint(producer), producer.location:
        new_init = recreated_init(init, permute(sizes_of(init)))
    dims = [h.map_dim_positions(map_) for map_ in h.indexing_maps(producer)]
    new_p = rebuild(producer, plan.order, list(h.dps_inputs(producer)) + [new_init],
                    dims[:n_in] + [plan.new_out])
    prev_old, prev = producer.results[0], new_p.results[0]
    dead = [producer]
    for chain_op in path.ops:
        e_in = len(h.dps_inputs(chain_op))
        dims = [h.map_dim_positions(map_) for map_ in h.indexing_maps(chain_op)]
        operands = list(h.dps_inputs(chain_op))
        for i, operand in enumerate(operands):
            if operand == prev_old:
                operands[i] = prev
                dims[i] = permute(dims[i])
        with ir.InsertionPoint(chain_op), chain_op.location:
            empty = tensor.EmptyOp(permute(sizes_of(chain_op.results[0])),
                                   ir.RankedTensorType(chain_op.results[0].type).element_type).result
        dims[e_in] = permute(dims[e_in])
        new_e = rebuild(chain_op, dims[e_in], operands + [empty], dims)
        prev_old, prev = chain_op.results[0], new_e.results[0]
        dead.append(chain_op)
    c_dims = [h.map_dim_positions(map_) for map_ in h.indexing_maps(consumer)]
    result = None
    if (h.is_pure_copy(consumer) and c_dims[1] == plan.ordered
            and consumer.results[0].type == prev.type):
        consumer.results[0].replace_all_uses_with(prev)
    else:
        operands = list(consumer.operands)
        for i, operand in enumerate(list(h.dps_inputs(consumer))):
            if operand == prev_old:
                operands[i] = prev
                c_dims[i] = permute(c_dims[i])
        result = rebuild(consumer, list(range(len(h.iterator_types(consumer)))), operands, c_dims)
        for old, res in zip(consumer.results, result.results):
            old.replace_all_uses_with(res)
    consumer.erase()
    for op in reversed(dead):
        op.erase()
    return result
