"""The consumer-side rewrites: interchange, merge of sibling readers, transpose-copy folding,
and the producer-layout rewrite (the producer computes in the layout the consumer reads)."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, TENSOR_EMPTY
from iree_fusions.compiler.pass_base import op_location

from .paths import Path
from .reshape import init_can_be_recreated, recreated_init, expansion_blocker


def fold_copy_into_producer(copy: ir.Operation, elementwise: ir.Operation) -> ir.Operation:
    """E -> transpose copy C  ==>  E writing C's layout (C's init, composed output map)."""
    c_in, c_out = (h.map_dim_positions(m) for m in h.indexing_maps(copy))
    n_in = len(h.dps_inputs(elementwise))
    e_maps = h.indexing_maps(elementwise)
    e_out = h.map_dim_positions(e_maps[n_in])
    # E writes X[j] from its loop e_out[j]; C reads X[j] at its loop c_in[j] and writes that
    # loop to the output position p where c_out[p] == c_in[j].
    where_out = {d: p for p, d in enumerate(c_out)}
    new_out = [None] * len(c_out)
    for j, e_dim in enumerate(e_out):
        new_out[where_out[c_in[j]]] = e_dim
    maps = [ir.AffineMapAttr.get(m) for m in e_maps[:n_in]]
    maps.append(b.map_attr(e_maps[0].n_dims, new_out))
    with ir.InsertionPoint(copy), copy.location:
        new = b.new_generic(h.dps_inputs(elementwise), h.dps_inits(copy), maps,
                           h.iterator_types(elementwise))
        block = b.append_body_block(new, list(elementwise.operands))
        b.clone_body(elementwise, block, list(range(len(elementwise.operands))))
    copy.results[0].replace_all_uses_with(new.results[0])
    copy.erase()
    elementwise.erase()
    return new


def _out_arg_used(op: ir.Operation) -> bool:
    block = h.body_block(op)
    n_in = len(h.dps_inputs(op))
    return any(len(list(a.uses)) for a in list(block.arguments)[n_in:])


def can_fold_copy(copy: ir.Operation, path: Path) -> ir.Operation | None:
    """The elementwise op a pure transpose copy can be folded into, if any."""
    if not h.is_pure_copy(copy) or not path.ops:
        return None
    e = path.ops[-1]
    if e.name != LINALG_GENERIC or h.defining_op(path.value) != e:
        return None
    c_maps = [h.map_dim_positions(m) for m in h.indexing_maps(copy)]
    n = h.indexing_maps(copy)[0].n_dims
    if not all(d is not None and h.is_permutation(d, n) for d in c_maps):
        return None
    e_out = h.map_dim_positions(h.indexing_maps(e)[len(h.dps_inputs(e))])
    if (len(e.results) != 1 or h.single_user(e.results[0]) != copy or _out_arg_used(e)
            or e_out is None or len(e_out) != h.indexing_maps(e)[0].n_dims):
        return None
    return e


def merge_siblings(consumers: list[ir.Operation]) -> ir.Operation:
    """Merges elementwise consumers with the same loop ranges (each reads the shared value
    with the identity map) into one multi-result generic at the first one's position."""
    first = consumers[0]
    n = h.indexing_maps(first)[0].n_dims
    inputs: list[ir.Value] = []
    in_maps: list[ir.AffineMapAttr] = []
    key_index: dict = {}
    inits, arg_maps = [], []
    for c in consumers:
        maps = h.indexing_maps(c)
        amap = []
        for v, m in zip(h.dps_inputs(c), maps):
            key = (v, str(m))
            if key not in key_index:
                key_index[key] = len(inputs)
                inputs.append(v)
                in_maps.append(ir.AffineMapAttr.get(m))
            amap.append(key_index[key])
        arg_maps.append(amap)
        n_in = len(h.dps_inputs(c))
        for v, m in zip(h.dps_inits(c), maps[n_in:]):
            inits.append((v, ir.AffineMapAttr.get(m)))
    n_inputs = len(inputs)
    with ir.InsertionPoint(first), first.location:
        new = b.new_generic(inputs, [v for v, _ in inits], in_maps + [m for _, m in inits],
                           ["parallel"] * n)
        block = b.append_body_block(new, inputs + [v for v, _ in inits])
        yields: list = []
        k = n_inputs
        for c, amap in zip(consumers, arg_maps):
            n_out = len(h.dps_inits(c))
            b.clone_body(c, block, amap + list(range(k, k + n_out)), yield_into=yields)
            k += n_out
        with ir.InsertionPoint(block):
            linalg.YieldOp(yields)
    k = 0
    for c in consumers:
        for old in c.results:
            old.replace_all_uses_with(new.results[k])
            k += 1
    for c in consumers:
        c.erase()
    return new


# ---------------------------------------------------------------- producer layout


def rebuild(op: ir.Operation, order: list[int], operands: list[ir.Value] | None = None,
            dims: list[list[int]] | None = None) -> ir.Operation:
    """op as a linalg.generic whose loop k is op's loop order[k] (built before op).

    `operands` (DPS inputs then inits) and `dims` (each map as dims of op's loops) replace
    op's own when given. Uses are not replaced.
    """
    operands = list(op.operands) if operands is None else operands
    dims = [h.map_dim_positions(m) for m in h.indexing_maps(op)] if dims is None else dims
    where = {old: new for new, old in enumerate(order)}
    n_in = len(h.dps_inputs(op))
    iters = h.iterator_types(op)
    with ir.InsertionPoint(op), op.location:
        new = b.new_generic(operands[:n_in], operands[n_in:],
                           [b.map_attr(len(order), [where[d] for d in ds]) for ds in dims],
                           [iters[o] for o in order])
        block = b.append_body_block(new, operands)
        b.clone_body(op, block, list(range(len(operands))), where)
    return new


def interchange_order(consumer: ir.Operation, operand: int) -> list[int]:
    """New loop order making the operand's map (d0, d1, ...): its dims first, others after."""
    dims = h.map_dim_positions(h.indexing_maps(consumer)[operand])
    n = h.indexing_maps(consumer)[0].n_dims
    return list(dims) + [d for d in range(n) if d not in dims]


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
    for d in order:
        if groups:
            a = groups[-1][-1]
            together = True
            for m in maps:
                if (a in m) != (d in m) or (a in m and m.index(d) != m.index(a) + 1):
                    together = False
                    break
            if together:
                groups[-1].append(d)
                continue
        groups.append([d])
    return groups


def contraction_order_ok(op: ir.Operation, order: list[int],
                         out_layout: list[int]) -> bool | None:
    """For a two-input contraction run with loop order `order`, whose result ends up stored
    as `out_layout` (dims of op's loops): are the two innermost parallel loop groups an M
    group (first input only) then an N group (second input only)? That is the shape CPU and
    GPU matmul configurations tile well; anything else (two N loops of a split N dimension,
    or N before M) measured 2-3x slower on llvm-cpu. None: op is not such a contraction."""
    ins = [v for v in h.dps_inputs(op) if isinstance(v.type, ir.RankedTensorType)]
    iters = h.iterator_types(op)
    if len(ins) != 2 or "reduction" not in iters:
        return None
    maps = [h.map_dim_positions(m) for m in h.indexing_maps(op)]
    if any(m is None for m in maps):
        return None
    lhs, rhs = set(maps[0]), set(maps[1])
    groups = _loop_groups([d for d in order if iters[d] == "parallel"],
                          maps + [out_layout])
    if len(groups) < 2:
        return False
    kinds = []
    for g in groups[-2:]:
        d = g[0]
        kinds.append("m" if d in lhs and d not in rhs else "n" if d in rhs and d not in lhs
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
    p, consumer = path.producer, path.consumer
    if not h.is_structured(p) or len(p.results) != 1:
        return f"{p.name} cannot change its result layout"
    c = h.map_dim_positions(h.indexing_maps(consumer)[path.operand])
    ordered = sorted(c)
    pos = [ordered.index(d) for d in c]  # tail dim j -> new dim pos[j]
    pinv = [0] * len(pos)
    for j, k in enumerate(pos):
        pinv[k] = j
    n_in = len(h.dps_inputs(p))
    o = h.map_dim_positions(h.indexing_maps(p)[n_in])
    if o is None or expansion_blocker(p, {}) is not None:
        return f"{p.name} maps are not projected permutations"
    if not init_can_be_recreated(h.dps_inits(p)[0]):
        return f"{p.name} accumulates into a tensor that is not a fill/empty"
    for e in path.ops:
        if len(h.dps_inits(e)) != 1 or _out_arg_used(e) or \
                h.defining_op(h.dps_inits(e)[0]) is None or \
                h.defining_op(h.dps_inits(e)[0]).name != TENSOR_EMPTY:
            return f"{op_location(e)} cannot change its result layout"
    new_out = [o[pinv[k]] for k in range(len(o))]
    order = new_out + [d for d in range(len(h.iterator_types(p))) if d not in new_out]
    return LayoutPlan(pinv, ordered, order, new_out)


def preferred_layout_plan(path: Path, producer_layout: str) -> LayoutPlan | None:
    """Change P's layout instead of interchanging C when that gives P the loop order
    matmul configurations handle well and interchanging C does not (see
    contraction_order_ok); `producer_layout`: the pass's option (auto / always / never)."""
    if producer_layout == "never":
        return None
    p = path.producer
    if not h.is_structured(p):
        return None
    plan = layout_plan(path)
    if isinstance(plan, str):
        return None
    if producer_layout == "always":
        return plan
    n_loops = len(h.iterator_types(p))
    # Interchanging C: P keeps its loops; C stores P's result in its own output layout.
    c_maps = [h.map_dim_positions(m) for m in h.indexing_maps(path.consumer)]
    c_read = c_maps[path.operand]
    c_out = c_maps[len(h.dps_inputs(path.consumer))]
    p_out = h.map_dim_positions(h.indexing_maps(p)[len(h.dps_inputs(p))])
    loop_of_c = {c_read[j]: p_out[j] for j in range(len(c_read))}
    stored = [loop_of_c[d] for d in c_out if d in loop_of_c]
    if contraction_order_ok(p, list(range(n_loops)), stored) is not False:
        return None
    if contraction_order_ok(p, plan.order, plan.new_out):
        return plan
    return None


def sizes_of(value: ir.Value) -> list[b.Size]:
    """The sizes of a tensor at the current insertion point: static, the index values IREE
    holds, else `tensor.dim`s."""
    return [b.size_from_key(k) for k in h.shape_keys(value)]


def apply_layout(path: Path, plan: LayoutPlan) -> ir.Operation | None:
    """P computes in C's read layout, the identity chain follows, C reads it with the
    identity map (a pure transpose copy C disappears). Returns the new consumer (or None)."""
    p, consumer = path.producer, path.consumer
    pinv = plan.pinv

    def permute(xs):  # a chain tensor's shape, or a map reading it, in the new layout
        return [xs[pinv[k]] for k in range(len(xs))]

    n_in = len(h.dps_inputs(p))
    init = h.dps_inits(p)[0]
    with ir.InsertionPoint(p), p.location:
        new_init = recreated_init(init, permute(sizes_of(init)))
    dims = [h.map_dim_positions(m) for m in h.indexing_maps(p)]
    new_p = rebuild(p, plan.order, list(h.dps_inputs(p)) + [new_init],
                    dims[:n_in] + [plan.new_out])
    prev_old, prev = p.results[0], new_p.results[0]
    dead = [p]
    for e in path.ops:
        e_in = len(h.dps_inputs(e))
        dims = [h.map_dim_positions(m) for m in h.indexing_maps(e)]
        operands = list(h.dps_inputs(e))
        for i, v in enumerate(operands):
            if v == prev_old:
                operands[i] = prev
                dims[i] = permute(dims[i])
        with ir.InsertionPoint(e), e.location:
            empty = tensor.EmptyOp(permute(sizes_of(e.results[0])),
                                   ir.RankedTensorType(e.results[0].type).element_type).result
        dims[e_in] = permute(dims[e_in])
        new_e = rebuild(e, dims[e_in], operands + [empty], dims)
        prev_old, prev = e.results[0], new_e.results[0]
        dead.append(e)
    c_dims = [h.map_dim_positions(m) for m in h.indexing_maps(consumer)]
    result = None
    if (h.is_pure_copy(consumer) and c_dims[1] == plan.ordered
            and consumer.results[0].type == prev.type):
        consumer.results[0].replace_all_uses_with(prev)
    else:
        operands = list(consumer.operands)
        for i, v in enumerate(list(h.dps_inputs(consumer))):
            if v == prev_old:
                operands[i] = prev
                c_dims[i] = permute(c_dims[i])
        result = rebuild(consumer, list(range(len(h.iterator_types(consumer)))), operands, c_dims)
        for old, res in zip(consumer.results, result.results):
            old.replace_all_uses_with(res)
    consumer.erase()
    for op in reversed(dead):
        op.erase()
    return result
