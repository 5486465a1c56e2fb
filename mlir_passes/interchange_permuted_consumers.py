"""interchange-permuted-consumers: fuse transposed epilogues into their producers.

An elementwise `linalg.generic` C reads the result of a non-elementwise op P (matmul,
batch_matmul, reduction, softmax, linalg_ext ...) through a permutation, possibly behind
identity elementwise ops E (bias, scale) and `tensor.expand_shape`/`collapse_shape`. IREE 3.13
fuses a permuted reader into P's dispatch by itself (its dispatch formation maps loops through
permutations); what stops it is a reshape on the path and a producer value with several
readers. This pass removes those obstacles and puts the permutation where the contraction
still vectorizes well:

1. reshapes leave the path: an expand_shape is bubbled up by splitting the loops of the ops
   above it, down to P (P then produces the expanded shape; a `[384,384]` weight becomes a
   free `[12,32,384]` reshape); a collapse_shape is sunk by splitting the loops of the ops
   below it, down to C (a collapse_shape follows C);
2. the permutation moves either into C's output map (C is interchanged so that it reads the
   value with the identity map; a pure transpose copy is instead folded into the E before
   it) or, for a contraction whose innermost parallel loops would then both come from one
   operand (a split N dimension, measured 2-3x slower on llvm-cpu), into P's result layout:
   P computes the layout C reads, the E's follow, a transpose copy disappears
   (`producer-layout=auto|always|never`);
3. when the value C reads has several elementwise readers, they are interchanged and merged
   into one multi-result generic, since IREE fuses consumers only into single-consumer
   producers.

    %m = linalg.matmul ins(%x, %w : tensor<128x384xf32>, tensor<384x384xf32>) ...
    %e = tensor.expand_shape %m [[0], [1, 2]] ... into tensor<128x12x32xf32>
    %b = linalg.generic {(d0,d1,d2) -> (d0,d1,d2) ...} ins(%e, %bias)      // + bias
    %t = linalg.generic {(d0,d1,d2) -> (d1,d0,d2), id} ins(%b)            // transpose copy
  becomes (MiniLM's query projection: one dispatch instead of two)
    %w3 = tensor.expand_shape %w [[0, 1], [2]] ... into tensor<12x32x384xf32>
    %m3 = linalg.generic {(h,m,d,k): (m,k), (h,d,k) -> (h,m,d)} ins(%x, %w3)
    %t = linalg.generic {id, ...} ins(%m3, %bias) -> tensor<12x128x32xf32>

Of several permuted operands from different producers, the one whose producer can take C
and whose tensor is largest wins. Consumers with reduction loops are left alone (IREE fuses
only all-parallel consumers into a root).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from iree.compiler import ir
from iree.compiler.dialects import linalg, tensor

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import FusionPass, PassReport, describe_op

RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


# ---------------------------------------------------------------- small map helpers


def _dims_or_none(m: ir.AffineMap) -> list[int] | None:
    return h.map_dim_positions(m)


def _is_permutation(dims: Sequence[int], n: int) -> bool:
    return len(dims) == n and sorted(dims) == list(range(n))


def _is_projected_permutation(dims: Sequence[int] | None, n: int) -> bool:
    return dims is not None and len(set(dims)) == len(dims) and all(0 <= d < n for d in dims)


def _map_attr(n_dims: int, dims: Sequence[int]) -> ir.AffineMapAttr:
    return ir.AffineMapAttr.get(
        ir.AffineMap.get(n_dims, 0, [ir.AffineDimExpr.get(d) for d in dims]))


def _iterators_attr(kinds: Sequence[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _reassociation(op: ir.Operation) -> list[list[int]]:
    return [[ir.IntegerAttr(i).value for i in group] for group in op.attributes["reassociation"]]


def _reassociation_attr(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g])
                             for g in groups])


def _static_shape(value: ir.Value) -> list[int] | None:
    t = h.tensor_type(value)
    if t is None or not t.has_static_shape:
        return None
    return list(t.shape)


def _single_user(value: ir.Value) -> ir.Operation | None:
    users = h.users(value)
    return users[0] if len(users) == 1 else None


def _result_index(value: ir.Value) -> int:
    return ir.OpResult(value).result_number


# ---------------------------------------------------------------- op structure


def _iterators(op: ir.Operation) -> list[str]:
    """Iterator types; named ops have none stored: loops absent from the outputs reduce."""
    if "iterator_types" in op.attributes:
        return h.iterator_types(op)
    maps = h.indexing_maps(op)
    n_out = len(h.dps_inits(op))
    in_output = {d for m in maps[len(maps) - n_out:] for d in (_dims_or_none(m) or [])}
    return ["parallel" if d in in_output else "reduction" for d in range(maps[0].n_dims)]


def _loop_ranges(op: ir.Operation) -> list[int] | None:
    """Static loop ranges of a linalg op whose maps are projected permutations."""
    maps = h.indexing_maps(op)
    n = maps[0].n_dims
    ranges: list[int | None] = [None] * n
    for value, m in zip(list(op.operands), maps):
        dims = _dims_or_none(m)
        shape = _static_shape(value) if h.tensor_type(value) is not None else []
        if dims is None or shape is None:
            continue
        for d, size in zip(dims, shape):
            ranges[d] = size
    if any(r is None for r in ranges):
        return None
    return ranges  # type: ignore[return-value]


def _index_dims(op: ir.Operation) -> set[int]:
    """Loop dims read by `linalg.index` in the body."""
    out = set()
    for bop in h.body_block(op).operations:
        if bop.operation.name == "linalg.index":
            out.add(ir.IntegerAttr(bop.operation.attributes["dim"]).value)
    return out


def _body_captures(op: ir.Operation) -> bool:
    """True if the body reads a tensor defined outside (tensor.extract from a table)."""
    for bop in h.body_block(op).operations:
        for v in bop.operation.operands:
            if isinstance(v.type, ir.RankedTensorType):
                return True
    return False


def _is_structured(op: ir.Operation) -> bool:
    """A linalg op with indexing maps, a body and DPS operands we can rebuild as a generic."""
    return (h.is_linalg(op) and h.has_indexing_maps(op) and "operandSegmentSizes" in op.attributes
            and len(op.regions) == 1 and len(op.regions[0].blocks) == 1)


def is_elementwise(op: ir.Operation) -> bool:
    return (op.name == "linalg.generic" and h.is_elementwise_generic(op)
            and not h.reads_table_in_body(op))


def is_pure_copy(op: ir.Operation) -> bool:
    """A generic that only moves its single input to its single output."""
    if op.name != "linalg.generic" or len(h.dps_inputs(op)) != 1 or len(h.dps_inits(op)) != 1:
        return False
    block = h.body_block(op)
    ops = list(block.operations)
    return (len(ops) == 1 and ops[0].operation.name == "linalg.yield"
            and ops[0].operation.operands[0] == block.arguments[0])


def is_producer(op: ir.Operation | None) -> bool:
    """An op IREE makes a dispatch root: non-elementwise linalg / linalg_ext."""
    return op is not None and h.is_reduction_or_contraction(op)


def _tensor_bytes(value: ir.Value) -> int:
    return h.static_tensor_bytes(value.type) or 0


# ---------------------------------------------------------------- building


def _clone_body(src: ir.Operation, dst_block: ir.Block, arg_map: Sequence[int | None],
                index_map: dict[int, int] | None = None,
                yield_into: list | None = None) -> None:
    """Clones src's body into dst_block; src block arg i -> dst arg arg_map[i].

    `index_map` renumbers `linalg.index` dims. With `yield_into` the terminator is not cloned:
    its operands (mapped) are appended to the list, so that several bodies can be merged.
    """
    src_block = h.body_block(src)
    mapping: dict = {}
    for i, arg in enumerate(src_block.arguments):
        if arg_map[i] is not None:
            mapping[arg] = dst_block.arguments[arg_map[i]]
    with ir.InsertionPoint(dst_block):
        for bop in src_block.operations:
            bop = bop.operation
            if yield_into is not None and bop.name == "linalg.yield":
                yield_into.extend(mapping.get(v, v) for v in bop.operands)
                continue
            new = bop.clone()
            for i, v in enumerate(list(new.operands)):
                if v in mapping:
                    new.operands[i] = mapping[v]
            if bop.name == "linalg.index" and index_map is not None:
                dim = ir.IntegerAttr(bop.attributes["dim"]).value
                new.attributes["dim"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                           index_map[dim])
            for old, res in zip(bop.results, new.results):
                mapping[old] = res


def _new_generic(inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
                 maps: Sequence[ir.AffineMapAttr], iterators: Sequence[str]) -> ir.Operation:
    result_types = [v.type for v in inits]
    op = linalg.GenericOp(result_types, list(inputs), list(inits), ir.ArrayAttr.get(list(maps)),
                          _iterators_attr(iterators))
    return op.operation


def _append_body_block(op: ir.Operation, values: Sequence[ir.Value]) -> ir.Block:
    types = [ir.RankedTensorType(v.type).element_type if isinstance(v.type, ir.RankedTensorType)
             else v.type for v in values]
    return op.regions[0].blocks.append(*types)


def _collapse(value: ir.Value, groups: list[list[int]], result_type: ir.Type) -> ir.Value:
    return tensor.CollapseShapeOp(result_type, value, _reassociation_attr(groups)).result


def _recreated_init(value: ir.Value, shape: list[int]) -> ir.Value | None:
    """A tensor.empty / linalg.fill-of-empty init re-created at another shape, else None."""
    producer = h.defining_op(value)
    if producer is None:
        return None
    elt = ir.RankedTensorType(value.type).element_type
    if producer.name == "tensor.empty":
        return tensor.EmptyOp(shape, elt).result
    if producer.name == "linalg.fill":
        init = h.defining_op(h.dps_inits(producer)[0])
        if init is not None and init.name == "tensor.empty":
            fill = linalg.fill(h.dps_inputs(producer)[0], outs=[tensor.EmptyOp(shape, elt).result])
            return fill if isinstance(fill, ir.Value) else fill.results[0]
    return None


def _init_can_be_recreated(value: ir.Value) -> bool:
    producer = h.defining_op(value)
    if producer is None:
        return False
    if producer.name == "tensor.empty":
        return True
    if producer.name == "linalg.fill":
        init = h.defining_op(h.dps_inits(producer)[0])
        return init is not None and init.name == "tensor.empty"
    return False


def _expand_value(value: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    """`value` reshaped to `shape` (groups: source dim i -> result dims groups[i]).

    Folds `expand(collapse(x))` back to x, re-creates empties and fills at the new shape,
    and otherwise inserts a tensor.expand_shape (free: a metadata change).
    """
    if _static_shape(value) == shape:
        return value
    producer = h.defining_op(value)
    if (producer is not None and producer.name == "tensor.collapse_shape"
            and _reassociation(producer) == groups
            and _static_shape(producer.operands[0]) == shape):
        return producer.operands[0]
    init = _recreated_init(value, shape)
    if init is not None:
        return init
    elt = ir.RankedTensorType(value.type).element_type
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, elt), value,
                                _reassociation_attr(groups), [], shape).result


# ---------------------------------------------------------------- iteration-space expansion


@dataclass
class Expansion:
    """How one op's loops are split: old loop d -> new loops new_dims[d] with sizes."""

    splits: dict[int, list[int]]  # old loop -> sizes (only loops split into >1 dims)
    n_old: int

    def new_dims(self) -> list[list[int]]:
        out, k = [], 0
        for d in range(self.n_old):
            n = len(self.splits.get(d, [0]))
            out.append(list(range(k, k + n)))
            k += n
        return out

    @property
    def n_new(self) -> int:
        return sum(len(g) for g in self.new_dims())


def expansion_blocker(op: ir.Operation, splits: dict[int, list[int]]) -> str | None:
    """Why op's loops cannot be split as asked (None: they can)."""
    if not _is_structured(op):
        return f"{op.name} has no indexing maps/body to expand"
    for m in h.indexing_maps(op):
        dims = _dims_or_none(m)
        if dims is None or len(set(dims)) != len(dims):
            return "an indexing map is not a projected permutation"
    ranges = _loop_ranges(op)
    if ranges is None:
        return "dynamic shapes"
    for d, sizes in splits.items():
        prod = 1
        for s in sizes:
            prod *= s
        if ranges[d] != prod:
            return f"loop {d} has {ranges[d]} iterations, cannot split into {sizes}"
    if _index_dims(op) & set(splits):
        return "the body uses linalg.index on a loop that would be split"
    return None


def expand_op(op: ir.Operation, splits: dict[int, list[int]]) -> tuple[ir.Operation, list]:
    """Builds (before op) a linalg.generic computing op with its loops split as in `splits`.

    Returns the new op and, per result, (groups, old type): the reassociation from the old
    result dims to the new result dims, to collapse a new result back to the old type.
    """
    exp = Expansion(splits, h.indexing_maps(op)[0].n_dims)
    new_dims = exp.new_dims()
    maps = h.indexing_maps(op)
    iters = _iterators(op)
    new_iters = [iters[d] for d in range(exp.n_old) for _ in new_dims[d]]
    n_in = len(h.dps_inputs(op))
    operands = list(h.dps_inputs(op)) + list(h.dps_inits(op))
    new_operands, new_maps, result_groups = [], [], []
    with ir.InsertionPoint(op), op.location:
        for i, (value, m) in enumerate(zip(operands, maps)):
            dims = _dims_or_none(m)
            groups, shape, out_dims = [], [], []
            if isinstance(value.type, ir.RankedTensorType):
                old_shape = list(ir.RankedTensorType(value.type).shape)
                k = 0
                for pos, d in enumerate(dims):
                    g = new_dims[d]
                    groups.append(list(range(k, k + len(g))))
                    k += len(g)
                    shape += splits.get(d, [old_shape[pos]])
                    out_dims += g
                new_value = _expand_value(value, groups, shape)
            else:
                new_value = value
                out_dims = []
            new_operands.append(new_value)
            new_maps.append(_map_attr(exp.n_new, out_dims))
            if i >= n_in:
                result_groups.append((groups, value.type))
        new = _new_generic(new_operands[:n_in], new_operands[n_in:], new_maps, new_iters)
        block = _append_body_block(new, new_operands)
        index_map = {d: new_dims[d][0] for d in range(exp.n_old)}
        _clone_body(op, block, list(range(len(new_operands))), index_map)
    return new, result_groups


def replace_with_expanded(op: ir.Operation, new: ir.Operation, result_groups: list,
                          direct: dict[int, ir.Operation] | None = None) -> None:
    """Replaces op's results by new's, collapsing back for every user but `direct[i]`
    (an expand_shape of result i whose result new's result i equals). Reshapes that fed
    op and are now dead (expand(collapse(x)) folded to x) are erased."""
    direct = direct or {}
    feeding = [h.defining_op(v) for v in op.operands]
    feeding = [f for f in feeding if f is not None and f.name in RESHAPES]
    for i, (old, res) in enumerate(zip(op.results, new.results)):
        reshape = direct.get(i)
        if reshape is not None:
            reshape.results[0].replace_all_uses_with(res)
            reshape.erase()
        if not list(old.uses):
            continue
        groups, old_type = result_groups[i]
        with ir.InsertionPoint(op), op.location:
            collapsed = _collapse(res, groups, old_type)
        old.replace_all_uses_with(collapsed)
    op.erase()
    for f in dict.fromkeys(feeding):
        if not list(f.results[0].uses):
            f.erase()


# ---------------------------------------------------------------- paths from producers


@dataclass
class Path:
    """The chain from a producer P to the value a consumer C reads (operand `operand`)."""

    consumer: ir.Operation
    operand: int  # index among C's DPS inputs
    producer: ir.Operation | None
    ops: list[ir.Operation] = field(default_factory=list)  # between P and C, P-side first
    reason: str | None = None

    @property
    def reshapes(self) -> list[ir.Operation]:
        return [op for op in self.ops if op.name in RESHAPES]

    @property
    def value(self) -> ir.Value:
        return h.dps_inputs(self.consumer)[self.operand]


def trace_path(consumer: ir.Operation, operand: int, max_depth: int = 16) -> Path:
    """Walks up from C's operand through reshapes and identity-reading elementwise ops."""
    value = h.dps_inputs(consumer)[operand]
    path = Path(consumer, operand, None)
    for _ in range(max_depth):
        op = h.defining_op(value)
        if op is None:
            path.reason = "reads a function argument"
            return path
        if is_producer(op):
            path.producer = op
            path.ops.reverse()
            return path
        if op.name in RESHAPES:
            path.ops.append(op)
            value = op.operands[0]
            continue
        if is_elementwise(op):
            nxt = _identity_chain_input(op)
            if nxt is None:
                path.reason = f"{describe_op(op)} reads no producer with the identity map"
                return path
            path.ops.append(op)
            value = nxt
            continue
        path.reason = f"value comes from {op.name}"
        return path
    path.reason = "path too long"
    return path


def _identity_chain_input(op: ir.Operation) -> ir.Value | None:
    """The input of an elementwise op read with the same map as its (single) result whose
    producer chain leads to a non-elementwise op; the first such input."""
    maps = h.indexing_maps(op)
    n_in = len(h.dps_inputs(op))
    if len(h.dps_inits(op)) != 1:
        return None
    out_map = maps[n_in]
    for v, m in zip(h.dps_inputs(op), maps[:n_in]):
        if m != out_map:
            continue
        p = h.defining_op(v)
        if p is not None and (is_producer(p) or p.name in RESHAPES or is_elementwise(p)):
            return v
    return None


# ---------------------------------------------------------------- reshape propagation plans


def plan_bubble_expand(path: Path, reshape: ir.Operation) -> list[tuple[ir.Operation, dict]] | str:
    """Plans moving an expand_shape up to the producer: [(op, splits)], consumer-side first."""
    idx = path.ops.index(reshape)
    chain = [path.producer] + path.ops[:idx]
    groups = _reassociation(reshape)
    shape = _static_shape(reshape.results[0])
    if shape is None:
        return "dynamic expand_shape"
    value = reshape.operands[0]
    plan = []
    for op in reversed(chain):
        if op.name in RESHAPES:
            return "two reshapes on the path"
        res_idx = _result_index(value)
        maps = h.indexing_maps(op) if _is_structured(op) else None
        if maps is None:
            return f"producer {op.name} cannot be expanded (no indexing maps)"
        n_in = len(h.dps_inputs(op))
        out_dims = _dims_or_none(maps[n_in + res_idx])
        if out_dims is None:
            return f"{op.name} result map is not a permutation"
        splits = _dim_splits(out_dims, groups, shape)
        blocker = expansion_blocker(op, splits)
        if blocker:
            return f"cannot expand {op.name}: {blocker}"
        plan.append((op, splits))
        if op == path.producer:
            return plan
        # The path input of this elementwise op carries the expansion further up.
        inputs = h.dps_inputs(op)
        nxt = _identity_chain_input(op)
        in_dims = _dims_or_none(maps[inputs.index(nxt)])
        old_shape = _static_shape(nxt)
        groups, shape, k = [], [], 0
        for pos, d in enumerate(in_dims):
            sizes = splits.get(d, [old_shape[pos]])
            groups.append(list(range(k, k + len(sizes))))
            shape += sizes
            k += len(sizes)
        value = nxt
    return "producer not reached"


def _dim_splits(dims: list[int], groups: list[list[int]], shape: list[int]
                ) -> dict[int, list[int]]:
    """Loop dim -> the sizes it is split into, for each reassociation group of several dims
    (`dims[j]`: the loop dim of the operand's j-th collapsed dim)."""
    return {dims[j]: [shape[k] for k in g] for j, g in enumerate(groups) if len(g) > 1}


def plan_sink_collapse(path: Path, reshape: ir.Operation) -> list[tuple[ir.Operation, dict]] | str:
    """Plans moving a collapse_shape down to the consumer: [(op, splits)], reshape-side first."""
    idx = path.ops.index(reshape)
    chain = path.ops[idx + 1:] + [path.consumer]
    groups = _reassociation(reshape)
    src_shape = _static_shape(reshape.operands[0])
    if src_shape is None:
        return "dynamic collapse_shape"
    value = reshape.results[0]
    plan = []
    for op in chain:
        if op.name in RESHAPES:
            return "two reshapes on the path"
        operands = list(op.operands)
        maps = h.indexing_maps(op)
        pos_in = [i for i, v in enumerate(operands) if v == value]
        if len(pos_in) != 1:
            return "the collapsed value is read twice"
        dims = _dims_or_none(maps[pos_in[0]])
        if dims is None:
            return "a map on the path is not a permutation"
        splits = _dim_splits(dims, groups, src_shape)
        blocker = expansion_blocker(op, splits)
        if blocker:
            return f"cannot expand {describe_op(op)}: {blocker}"
        plan.append((op, splits))
        if op == path.consumer:
            return plan
        n_in = len(h.dps_inputs(op))
        out_dims = _dims_or_none(maps[n_in])
        out_shape = []
        groups, k = [], 0
        for d in out_dims:
            sizes = splits.get(d, [None])
            groups.append(list(range(k, k + len(sizes))))
            k += len(sizes)
        exp_ranges = _loop_ranges(op)
        for d in out_dims:
            out_shape += splits.get(d, [exp_ranges[d]])
        src_shape = out_shape
        value = op.results[0]
    return "consumer not reached"


def apply_bubble(plan: list[tuple[ir.Operation, dict]], reshape: ir.Operation) -> None:
    """Expands each planned op, consumer side first; each one's new input expand_shape is
    the reshape the next op up absorbs."""
    direct = reshape
    for k, (op, splits) in enumerate(plan):
        res_idx = _result_index(direct.operands[0])
        new, groups = expand_op(op, splits)
        replace_with_expanded(op, new, groups, {res_idx: direct})
        if k + 1 == len(plan):
            return
        direct = h.defining_op(_identity_chain_input(new))
        assert direct is not None and direct.name == "tensor.expand_shape"


def apply_sink(plan: list[tuple[ir.Operation, dict]]) -> ir.Operation:
    """Returns the rebuilt consumer."""
    new = None
    for op, splits in plan:
        new, groups = expand_op(op, splits)
        replace_with_expanded(op, new, groups)
    return new


# ---------------------------------------------------------------- consumer rewrites


def fold_copy_into_producer(copy: ir.Operation, elementwise: ir.Operation) -> ir.Operation:
    """E -> transpose copy C  ==>  E writing C's layout (C's init, composed output map)."""
    c_in, c_out = (_dims_or_none(m) for m in h.indexing_maps(copy))
    n_in = len(h.dps_inputs(elementwise))
    e_maps = h.indexing_maps(elementwise)
    e_out = _dims_or_none(e_maps[n_in])
    # E writes X[j] from its loop e_out[j]; C reads X[j] at its loop c_in[j] and writes that
    # loop to the output position p where c_out[p] == c_in[j].
    where_out = {d: p for p, d in enumerate(c_out)}
    new_out = [None] * len(c_out)
    for j, e_dim in enumerate(e_out):
        new_out[where_out[c_in[j]]] = e_dim
    maps = [ir.AffineMapAttr.get(m) for m in e_maps[:n_in]]
    maps.append(_map_attr(e_maps[0].n_dims, new_out))
    with ir.InsertionPoint(copy), copy.location:
        new = _new_generic(h.dps_inputs(elementwise), h.dps_inits(copy), maps,
                           _iterators(elementwise))
        block = _append_body_block(new, list(elementwise.operands))
        _clone_body(elementwise, block, list(range(len(elementwise.operands))))
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
    if not is_pure_copy(copy) or not path.ops:
        return None
    e = path.ops[-1]
    if e.name != "linalg.generic" or h.defining_op(path.value) != e:
        return None
    c_maps = [_dims_or_none(m) for m in h.indexing_maps(copy)]
    n = h.indexing_maps(copy)[0].n_dims
    if not all(d is not None and _is_permutation(d, n) for d in c_maps):
        return None
    e_out = _dims_or_none(h.indexing_maps(e)[len(h.dps_inputs(e))])
    if (len(e.results) != 1 or _single_user(e.results[0]) != copy or _out_arg_used(e)
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
        new = _new_generic(inputs, [v for v, _ in inits], in_maps + [m for _, m in inits],
                           ["parallel"] * n)
        block = _append_body_block(new, inputs + [v for v, _ in inits])
        yields: list = []
        k = n_inputs
        for c, amap in zip(consumers, arg_maps):
            n_out = len(h.dps_inits(c))
            _clone_body(c, block, amap + list(range(k, k + n_out)), yield_into=yields)
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
    dims = [_dims_or_none(m) for m in h.indexing_maps(op)] if dims is None else dims
    where = {old: new for new, old in enumerate(order)}
    n_in = len(h.dps_inputs(op))
    iters = _iterators(op)
    with ir.InsertionPoint(op), op.location:
        new = _new_generic(operands[:n_in], operands[n_in:],
                           [_map_attr(len(order), [where[d] for d in ds]) for ds in dims],
                           [iters[o] for o in order])
        block = _append_body_block(new, operands)
        _clone_body(op, block, list(range(len(operands))), where)
    return new


def interchange_order(consumer: ir.Operation, operand: int) -> list[int]:
    """New loop order making the operand's map (d0, d1, ...): its dims first, others after."""
    dims = _dims_or_none(h.indexing_maps(consumer)[operand])
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
    iters = _iterators(op)
    if len(ins) != 2 or "reduction" not in iters:
        return None
    maps = [_dims_or_none(m) for m in h.indexing_maps(op)]
    if any(m is None for m in maps):
        return None
    a, b = set(maps[0]), set(maps[1])
    groups = _loop_groups([d for d in order if iters[d] == "parallel"],
                          maps + [out_layout])
    if len(groups) < 2:
        return False
    kinds = []
    for g in groups[-2:]:
        d = g[0]
        kinds.append("m" if d in a and d not in b else "n" if d in b and d not in a else "x")
    return kinds == ["m", "n"]


def layout_plan(path: Path) -> dict | str:
    """Checks that P and the identity chain can compute in the layout C reads (so that C
    reads it with the identity map) and returns what apply_layout needs."""
    p, consumer = path.producer, path.consumer
    if not _is_structured(p) or len(p.results) != 1:
        return f"{p.name} cannot change its result layout"
    c = _dims_or_none(h.indexing_maps(consumer)[path.operand])
    ordered = sorted(c)
    pos = [ordered.index(d) for d in c]  # tail dim j -> new dim pos[j]
    pinv = [0] * len(pos)
    for j, k in enumerate(pos):
        pinv[k] = j
    n_in = len(h.dps_inputs(p))
    o = _dims_or_none(h.indexing_maps(p)[n_in])
    if o is None or expansion_blocker(p, {}) is not None:
        return f"{p.name} maps are not projected permutations"
    if not _init_can_be_recreated(h.dps_inits(p)[0]):
        return f"{p.name} accumulates into a tensor that is not a fill/empty"
    for e in path.ops:
        if len(h.dps_inits(e)) != 1 or _out_arg_used(e) or \
                h.defining_op(h.dps_inits(e)[0]) is None or \
                h.defining_op(h.dps_inits(e)[0]).name != "tensor.empty":
            return f"{describe_op(e)} cannot change its result layout"
    new_out = [o[pinv[k]] for k in range(len(o))]
    order = new_out + [d for d in range(len(_iterators(p))) if d not in new_out]
    return {"pos": pos, "pinv": pinv, "ordered": ordered, "order": order, "new_out": new_out}


def apply_layout(path: Path, plan: dict) -> ir.Operation | None:
    """P computes in C's read layout, the identity chain follows, C reads it with the
    identity map (a pure transpose copy C disappears). Returns the new consumer (or None)."""
    p, consumer = path.producer, path.consumer
    pinv = plan["pinv"]

    def permute(xs):  # a chain tensor's shape, or a map reading it, in the new layout
        return [xs[pinv[k]] for k in range(len(xs))]

    n_in = len(h.dps_inputs(p))
    init = h.dps_inits(p)[0]
    with ir.InsertionPoint(p), p.location:
        new_init = _recreated_init(init, permute(_static_shape(init)))
    dims = [_dims_or_none(m) for m in h.indexing_maps(p)]
    new_p = rebuild(p, plan["order"], list(h.dps_inputs(p)) + [new_init],
                    dims[:n_in] + [plan["new_out"]])
    prev_old, prev = p.results[0], new_p.results[0]
    dead = [p]
    for e in path.ops:
        e_in = len(h.dps_inputs(e))
        dims = [_dims_or_none(m) for m in h.indexing_maps(e)]
        operands = list(h.dps_inputs(e))
        for i, v in enumerate(operands):
            if v == prev_old:
                operands[i] = prev
                dims[i] = permute(dims[i])
        with ir.InsertionPoint(e), e.location:
            empty = tensor.EmptyOp(permute(_static_shape(e.results[0])),
                                   ir.RankedTensorType(e.results[0].type).element_type).result
        dims[e_in] = permute(dims[e_in])
        new_e = rebuild(e, dims[e_in], operands + [empty], dims)
        prev_old, prev = e.results[0], new_e.results[0]
        dead.append(e)
    c_dims = [_dims_or_none(m) for m in h.indexing_maps(consumer)]
    result = None
    if (is_pure_copy(consumer) and c_dims[1] == plan["ordered"]
            and consumer.results[0].type == prev.type):
        consumer.results[0].replace_all_uses_with(prev)
    else:
        operands = list(consumer.operands)
        for i, v in enumerate(list(h.dps_inputs(consumer))):
            if v == prev_old:
                operands[i] = prev
                c_dims[i] = permute(c_dims[i])
        result = rebuild(consumer, list(range(len(_iterators(consumer)))), operands, c_dims)
        for old, res in zip(consumer.results, result.results):
            old.replace_all_uses_with(res)
    consumer.erase()
    for op in reversed(dead):
        op.erase()
    return result


def erase_dead(block: ir.Block) -> None:
    """Erases the empties, fills and reshapes of `block` that have no users (a rewrite
    leaves the old inits and reshapes behind)."""
    while True:
        dead = [op.operation for op in block.operations
                if op.operation.name in ("tensor.empty", "linalg.fill", *RESHAPES)
                and all(not list(r.uses) for r in op.operation.results)]
        if not dead:
            return
        for op in reversed(dead):
            op.erase()


# ---------------------------------------------------------------- the pass


def _position_map(block: ir.Block) -> dict:
    return {op.operation: i for i, op in enumerate(block.operations)}


def _dominates_position(value: ir.Value, block: ir.Block, pos: int, positions: dict) -> bool:
    owner = h.defining_op(value)
    if owner is None:
        return True  # block argument of an enclosing region
    if owner.parent is None or owner not in positions:
        return True  # defined outside this block (enclosing region)
    return positions[owner] < pos


@dataclass
class Candidate:
    path: Path
    score: tuple


@dataclass(frozen=True)
class InterchangePermutedConsumers(FusionPass):
    name = "interchange-permuted-consumers"
    phase = "linalg"
    description = ("elementwise consumers reading a matmul/reduction result through a "
                   "permutation (behind reshapes, bias ops) are moved into its dispatch")

    # Move expand_shape/collapse_shape out of the producer->consumer path.
    propagate_reshapes: bool = True
    # Merge the elementwise readers of a multi-use value into one multi-result generic.
    merge_multi_use: bool = True
    # Fold a pure transpose copy into the elementwise op that feeds it.
    fold_transposes: bool = True
    # When the consumer's permutation moves into the producer (it computes in the layout
    # the consumer reads) instead of into the consumer's output map: "auto" (when that
    # gives a contraction whose innermost parallel loops are an M and an N loop and the
    # other form does not), "always" (whenever possible), "never".
    producer_layout: str = "auto"
    # Upper bound on rewrites per function (a guard against ping-pong).
    max_rewrites: int = 10000

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        for func in h.functions(module):
            for block in func.regions[0].blocks:
                self._run_on_block(block, report)

    # ------------------------------------------------------------ driver

    def _run_on_block(self, block: ir.Block, report: PassReport) -> None:
        # After a rewrite the sweep restarts (erased ops must not be looked at again); the
        # skip reasons of the last sweep, which changed nothing, are the ones reported.
        for _ in range(self.max_rewrites):
            skipped = []
            rewrote = False
            for op in list(block.operations):
                op = op.operation
                if op.name != "linalg.generic":
                    continue
                outcome = self._visit(op, block, report)
                if outcome is True:
                    rewrote = True
                    break
                if isinstance(outcome, str):
                    skipped.append((describe_op(op), outcome))
            if not rewrote:
                for where, reason in skipped:
                    report.skip(where, reason)
                return
        report.note(f"stopped after {self.max_rewrites} rewrites")

    # ------------------------------------------------------------ one consumer

    def _visit(self, consumer: ir.Operation, block: ir.Block, report: PassReport):
        """True: rewrote something; str: a skipped candidate (reason); None: not a candidate."""
        if not h.is_elementwise_generic(consumer):
            return None  # IREE fuses only all-parallel consumers into a root
        maps = h.indexing_maps(consumer)
        n = maps[0].n_dims
        permuted, identity = [], []
        for i, (v, m) in enumerate(zip(h.dps_inputs(consumer), maps)):
            dims = _dims_or_none(m)
            if dims is None or not _is_projected_permutation(dims, n):
                continue
            if h.is_identity_map(m) or dims == list(range(len(dims))):
                identity.append(i)
            else:
                permuted.append(i)
        if not permuted:
            return None
        traced = {i: p for i in permuted if (p := trace_path(consumer, i)).producer is not None}
        if not traced:
            return None
        if _body_captures(consumer):
            return "consumer reads a tensor inside its body"
        if any(_static_shape(v) is None for v in consumer.operands
               if isinstance(v.type, ir.RankedTensorType)):
            return "dynamic shapes"
        candidates, reasons = [], []
        for i, path in traced.items():
            verdict = self._feasible(path)
            if isinstance(verdict, str):
                reasons.append(f"operand {i} ({path.producer.name}): {verdict}")
            else:
                candidates.append(Candidate(path, verdict))
        if not candidates:
            return "; ".join(reasons)
        best = max(candidates, key=lambda c: c.score)
        for i in identity:
            path = trace_path(consumer, i)
            if path.producer is None or path.reshapes:
                continue
            verdict = self._feasible(path)
            if not isinstance(verdict, str) and verdict >= best.score:
                return (f"already reads {path.producer.name} (operand {i}) with the identity "
                        "map and fuses there")
        return self._rewrite(best.path, block, report)

    def _feasible(self, path: Path) -> tuple | str:
        """Score (higher is better) if C could join P's dispatch after the rewrite."""
        if path.reshapes and not self.propagate_reshapes:
            return "a reshape sits between producer and consumer (propagate-reshapes=false)"
        # Every value between P and C but the last must flow to the next op only.
        values = [path.producer.results[0]] if path.producer.results else []
        values += [op.results[0] for op in path.ops]
        chain_ops = path.ops + [path.consumer]
        for v, nxt in zip(values[:-1], chain_ops[:-1]):
            users = {u for u in h.users(v) if u.name != "tensor.dim"}
            if users != {nxt}:
                return (f"{h.defining_op(v).name} result has {len(users)} users (IREE fuses "
                        "consumers only into single-consumer producers)")
        if len(path.producer.results) != 1:
            return f"producer {path.producer.name} has several results"
        for r in path.reshapes:
            plan = (plan_bubble_expand(path, r) if r.name == "tensor.expand_shape"
                    else plan_sink_collapse(path, r))
            if isinstance(plan, str):
                return plan
            break  # later reshapes are planned after the first one is gone
        tail = path.value
        users = [u for u in h.users(tail) if u.name != "tensor.dim"]
        siblings = list(dict.fromkeys(users))
        if len(siblings) > 1:
            reason = self._siblings_blocker(siblings, tail)
            if reason:
                return reason
        dims = _dims_or_none(h.indexing_maps(path.consumer)[path.operand])
        full = len(dims) == h.indexing_maps(path.consumer)[0].n_dims
        return (1, _tensor_bytes(path.producer.results[0]), int(full),
                -len(path.reshapes), -path.operand)

    def _siblings_blocker(self, siblings: list[ir.Operation], value: ir.Value) -> str | None:
        if not self.merge_multi_use:
            return f"value has {len(siblings)} users (merge-multi-use=false)"
        rank = len(_static_shape(value) or [])
        for s in siblings:
            if not is_elementwise(s) or _body_captures(s):
                return (f"value has {len(siblings)} users, {s.name} is not a mergeable "
                        "elementwise op")
            maps = h.indexing_maps(s)
            n = maps[0].n_dims
            if n != rank:
                return "value has several users with different iteration spaces"
            for v, m in zip(h.dps_inputs(s), maps):
                d = _dims_or_none(m)
                if v == value and (d is None or not _is_permutation(d, n)):
                    return "value has several users, one reads it through a broadcast"
            for m in maps:
                if _dims_or_none(m) is None:
                    return "a sibling has a non-permutation map"
        block = siblings[0].parent
        if any(s.parent != block for s in siblings):
            return "siblings in different blocks"
        positions = _position_map(siblings[0].block)
        first = min(siblings, key=lambda s: positions[s])
        pos = positions[first]
        for s in siblings:
            for v in s.operands:
                if not _dominates_position(v, first.block, pos, positions):
                    return "siblings depend on each other or on values defined between them"
        return None

    # ------------------------------------------------------------ rewriting

    def _rewrite(self, path: Path, block: ir.Block, report: PassReport):
        consumer = path.consumer
        where = describe_op(consumer)
        producer_name = path.producer.name
        steps = []
        # 1. Reshapes out of the way, one at a time.
        for _ in range(8):
            if not path.reshapes:
                break
            r = path.reshapes[0]
            if r.name == "tensor.expand_shape":
                plan = plan_bubble_expand(path, r)
                if isinstance(plan, str):
                    return self._partial(report, block, where, steps, plan)
                names = ", ".join(op.name for op, _ in plan)
                apply_bubble(plan, r)
                steps.append(f"expand_shape moved above {names} (loops split)")
            else:
                plan = plan_sink_collapse(path, r)
                if isinstance(plan, str):
                    return self._partial(report, block, where, steps, plan)
                names = ", ".join(op.name for op, _ in plan)
                consumer = apply_sink(plan)
                steps.append(f"collapse_shape moved below {names} (loops split)")
            path = self._retrace(consumer, path)
            if path is None:
                report.change(f"{where}: {'; '.join(steps)} (consumer no longer permuted)")
                erase_dead(block)
                return True
        if path.reshapes:
            return self._partial(report, block, where, steps, "reshapes remain on the path")
        tail = path.value
        siblings = list(dict.fromkeys(u for u in h.users(tail) if u.name != "tensor.dim"))
        if len(siblings) > 1:
            merged = []
            for s in siblings:
                idx = [i for i, v in enumerate(h.dps_inputs(s)) if v == tail][0]
                dims = _dims_or_none(h.indexing_maps(s)[idx])
                if dims != list(range(len(dims))):
                    s = interchange(s, interchange_order(s, idx))
                merged.append(s)
            positions = _position_map(merged[0].block)
            merged.sort(key=lambda s: positions[s])
            new = merge_siblings(merged)
            steps.append(f"interchanged and merged {len(merged)} readers of the "
                         f"{producer_name} result into one {len(new.results)}-result generic")
        elif (plan := self._layout_plan(path)) is not None:
            name = path.producer.name
            apply_layout(path, plan)
            steps.append(f"{name} computes in the layout the consumer reads (loops "
                         f"{plan['order']}), consumer reads it with the identity map")
        else:
            folded = can_fold_copy(consumer, path) if self.fold_transposes else None
            if folded is not None:
                fold_copy_into_producer(consumer, folded)
                steps.append("folded the transpose copy into the elementwise op before it")
            else:
                interchange(consumer, interchange_order(consumer, path.operand))
                steps.append(f"interchanged the consumer (operand {path.operand} read with "
                             "the identity map)")
        report.change(f"{where} reading {producer_name}: {'; '.join(steps)}")
        erase_dead(block)
        return True

    def _layout_plan(self, path: Path) -> dict | None:
        """Change P's layout instead of interchanging C when that gives P the loop order
        matmul configurations handle well and interchanging C does not (see
        contraction_order_ok)."""
        if self.producer_layout == "never":
            return None
        p = path.producer
        if not _is_structured(p):
            return None
        plan = layout_plan(path)
        if isinstance(plan, str):
            return None
        if self.producer_layout == "always":
            return plan
        n_loops = len(_iterators(p))
        # Interchanging C: P keeps its loops; C stores P's result in its own output layout.
        c_maps = [_dims_or_none(m) for m in h.indexing_maps(path.consumer)]
        c_read = c_maps[path.operand]
        c_out = c_maps[len(h.dps_inputs(path.consumer))]
        p_out = _dims_or_none(h.indexing_maps(p)[len(h.dps_inputs(p))])
        loop_of_c = {c_read[j]: p_out[j] for j in range(len(c_read))}
        stored = [loop_of_c[d] for d in c_out if d in loop_of_c]
        if contraction_order_ok(p, list(range(n_loops)), stored) is not False:
            return None
        if contraction_order_ok(p, plan["order"], plan["new_out"]):
            return plan
        return None

    @staticmethod
    def _partial(report: PassReport, block: ir.Block, where: str, steps: list[str],
                 reason: str):
        """A later step failed after earlier reshape steps changed the IR (still correct)."""
        if not steps:
            return reason
        report.change(f"{where}: {'; '.join(steps)}; stopped: {reason}")
        erase_dead(block)
        return True

    def _retrace(self, consumer: ir.Operation, old: Path) -> Path | None:
        """The consumer's path through the same operand after a reshape step."""
        path = trace_path(consumer, old.operand)
        if path.producer is None:
            return None
        dims = _dims_or_none(h.indexing_maps(consumer)[old.operand])
        if dims is None or dims == list(range(len(dims))):
            return None
        return path
