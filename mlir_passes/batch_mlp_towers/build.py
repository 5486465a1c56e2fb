"""Building a planned group: stacked operands, one batched contraction and batched epilogue
generics per trie node, slices of the batched values where tower results are used, the stack
replaced, the towers erased."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_ADDF, ARITH_ADDI, ARITH_CONSTANT, ARITH_MULF,
                                              ARITH_MULI, LINALG_FILL, LINALG_YIELD, RESHAPES,
                                              TENSOR_EMPTY, TENSOR_INSERT_SLICE, op_location)
from iree_fusions.compiler.target import is_llvm_cpu

from .match import EpilogueOp, Layer, trace_constant
from .arrange import MTN, TMN, TN
from .plan import GroupPlan, NodePlan

# Dead ops left behind by a rewrite that are erased with it.
CLEANUP_OPS = (TENSOR_EMPTY, LINALG_FILL, ARITH_CONSTANT, h.UTIL_GLOBAL_LOAD,
               h.FLOW_TENSOR_CONSTANT,
               TENSOR_INSERT_SLICE) + RESHAPES
# Bodies of a linalg.matmul without casts: what linalg.batch_matmul computes.
PLAIN_MATMUL_BODIES = ([ARITH_MULF, ARITH_ADDF, LINALG_YIELD],
                       [ARITH_MULI, ARITH_ADDI, LINALG_YIELD])
STACK_SYMBOL = "__batch_mlp_towers_stack"


@dataclass(frozen=True)
class BuildOptions:
    named_batch_matmul: bool  # linalg.batch_matmul / batch_vecmat where layouts allow
    weight_layout: str  # stacked constant weights: "auto", "keep", "kn" or "nk"


def auto_weight_layout(plan: GroupPlan, target) -> str:
    """The stacked weights' layout `weight-layout=auto` picks: [T, K, N] (kn: measured faster
    than [T, N, K] on llvm-cpu with rows), but [T, N, K] (nk) for a group without rows (batch
    1) on llvm-cpu, where [T, K, N]'s batch_vecmat is slower than stock and [T, N, K]'s
    batch_matvec is not (bench/results/code-costs.md, batch-mlp-towers). With no target
    (iree-fusions-opt) and on GPUs (measured with kn): kn."""
    return "nk" if plan.rowless and is_llvm_cpu(target) else "kn"


# ---------------------------------------------------------------- stacked tensors


def layout_dims(layout: str) -> list[int]:
    """Domain (t, m, n) -> positions of a stacked tensor in `layout`; (t, n) for TN."""
    return {TMN: [0, 1, 2], MTN: [1, 0, 2], TN: [0, 1]}[layout]


def layout_shape(layout: str, towers: int, rows: b.Size, cols: int) -> list[b.Size]:
    return {TMN: [towers, rows, cols], MTN: [rows, towers, cols], TN: [towers, cols]}[layout]


def slice_tower(stacked: ir.Value, layout: str, index: int, result_type: ir.Type,
                width: int | None = None) -> ir.Value:
    """Tower `index` of a stacked tensor, as `result_type` (rank-reduced where it is); its
    first `width` columns when the stack is padded wider."""
    sizes = b.mixed_shape(stacked)
    offsets: list[b.Size] = [0] * len(sizes)
    pos = 1 if layout == MTN else 0
    offsets[pos], sizes[pos] = index, 1
    if width is not None:
        sizes[-1] = width
    return b.extract_slice(stacked, offsets, sizes, result_type)


def zero_padded_columns(stacked: ir.Value, layout: str, widths: list[int]) -> ir.Value:
    """`stacked` with tower t's columns from widths[t] on set to zero (one elementwise generic,
    fused with the epilogue before it). A padded column holds act(x . 0 + 0), which is NaN
    where x holds an infinity (inf * 0); the next layer's zero weight rows would carry that
    NaN into every real column (0 * NaN), so padded lanes must hold zeros whatever x holds:

        %m = linalg.generic ins(%a : [T,M,N]) outs(%e)  // n < width(t) ? a : 0
    """
    rank = stacked.type.rank
    elt = stacked.type.element_type
    tower_dim = layout_dims(layout)[0]
    empty = tensor.EmptyOp(b.mixed_shape(stacked), elt).result
    identity = b.map_attr(rank, range(rank))

    def zero_padded(args: list[ir.Value]) -> ir.Value:
        body = b.BodyBuilder(ir.InsertionPoint.current, ir.Location.current)
        tower, column = linalg.IndexOp(tower_dim).result, linalg.IndexOp(rank - 1).result
        limit = body.const(widths[-1])
        for index in reversed(range(len(widths) - 1)):
            is_tower = arith.CmpIOp(arith.CmpIPredicate.eq, tower, body.const(index)).result
            limit = arith.SelectOp(is_tower, body.const(widths[index]), limit).result
        real = arith.CmpIOp(arith.CmpIPredicate.ult, column, limit).result
        zero = arith.ConstantOp(elt, 0.0 if isinstance(elt, ir.FloatType) else 0).result
        return arith.SelectOp(real, args[0], zero).result

    return b.generic([stacked], [empty], [identity, identity], ["parallel"] * rank,
                     zero_padded).results[0]


def split_rows_like(row_view: ir.Operation, value: ir.Value) -> ir.Value:
    """`value` ([M, N]) expanded as `row_view` expands its source (the rows split into
    tokens), in `value`'s element type."""
    static = list(ir.DenseI64ArrayAttr(row_view.attributes["static_output_shape"]))
    dynamic = iter(list(row_view.operands)[1:])
    sizes = [next(dynamic) if ir.ShapedType.is_dynamic_size(size) else size for size in static]
    return b.expand_mixed(value, h.reassociation(row_view), sizes)


def slice_towers(stacked: ir.Value, layout: str, start: int, count: int) -> ir.Value:
    """Towers [start, start + count) of a stacked tensor, still stacked."""
    pos = 1 if layout == MTN else 0
    if start == 0 and count == stacked.type.shape[pos]:
        return stacked
    sizes = b.mixed_shape(stacked)
    offsets: list[b.Size] = [0] * len(sizes)
    offsets[pos], sizes[pos] = start, count
    return b.extract_slice(stacked, offsets, sizes)


def transpose_inner(value: ir.Value) -> ir.Value:
    """[T, A, B] -> [T, B, A]."""
    count, rows, cols = value.type.shape
    empty = tensor.EmptyOp([count, cols, rows], value.type.element_type).result
    return b.first_result(b.linalg_builders().transpose(value, outs=[empty], permutation=[0, 2, 1]))


def hoist_stack(module: ir.Operation, anchor: ir.Operation, values: list[ir.Value],
                transpose: bool = False, pad_shape: list[int] | None = None) -> ir.Value:
    """The towers' constant `values` stacked (zero-padded to `pad_shape`, transposed
    [T,B,A]) once, at load time."""
    traced = [trace_constant(value) for value in values]
    roots: list[ir.Value] = []
    for root, _ in traced:
        if root not in roots:
            roots.append(root)

    def build(cloned: list[ir.Value]) -> ir.Value:
        outs = []
        for root, reshapes in traced:
            value = cloned[roots.index(root)]
            for op in reshapes:
                new = op.clone()
                new.operands[0] = value
                value = new.results[0]
            outs.append(value)
        stacked = b.stack_by_slices(outs, pad_shape)
        return transpose_inner(stacked) if transpose else stacked

    return b.hoist_to_initializer(module, anchor, roots, build, STACK_SYMBOL)


# ---------------------------------------------------------------- one batched layer


def stacked_operands(module: ir.Operation, anchor: ir.Operation, node: NodePlan,
                     weight_layout: str) -> tuple[list[ir.Value], str]:
    """The weight then each parameter, one tensor for all towers; and the stacked weight's
    layout ("kn" / "nk")."""
    stacked = []
    w_layout = node.layers[0].weight_layout
    pads = node.pad_shapes or [None] * len(node.slots)
    for j, (values, kind, pad) in enumerate(zip(node.slots, node.slot_kinds, pads)):
        if kind == "shared":
            stacked.append(values[0])
        elif kind == "const":
            transpose = (j == 0 and weight_layout in ("kn", "nk") and weight_layout != w_layout)
            if transpose:
                w_layout = weight_layout
            stacked.append(hoist_stack(module, anchor, values, transpose, pad))
        else:
            with ir.InsertionPoint(anchor):
                stacked.append(b.stack_by_slices(values))
    return stacked, w_layout


def batched_lhs(node: NodePlan, lhs: ir.Value | None, lhs_layout: str | None) -> ir.Value:
    """The contraction's input: separate inputs stacked, a shared [1, K] input as [K]
    without rows (at the current insertion point)."""
    rowless = node.node.layout == TN
    if node.stack_inputs is not None:
        lhs = b.stack_by_slices(node.stack_inputs)
        if rowless:
            lhs = b.reshape_to(lhs, [len(node.layers), lhs.type.shape[-1]])
    elif rowless and lhs_layout is None:
        lhs = b.reshape_to(lhs, [lhs.type.shape[-1]])
    return lhs


def _contraction_dims(layout: str, lhs_layout: str | None, w_layout: str,
                      shared_weight: bool) -> tuple[int, list[int], list[int]]:
    """(loops, lhs dims, weight dims) of the batched contraction: loops (t, m, n, k), or
    (t, n, k) without rows."""
    if layout == TN:
        n_dims, k_loop = 3, 2
        lhs_dims = [k_loop] if lhs_layout is None else [0, k_loop]
        w_dims = [1, k_loop] if w_layout == "nk" else [k_loop, 1]
    else:
        n_dims, k_loop = 4, 3
        lhs_dims = [1, k_loop] if lhs_layout is None else (
            [0, 1, k_loop] if lhs_layout == TMN else [1, 0, k_loop])
        w_dims = [2, k_loop] if w_layout == "nk" else [k_loop, 2]
    if not shared_weight:
        w_dims = [0] + w_dims
    return n_dims, lhs_dims, w_dims


def batched_contraction(node: NodePlan, lhs: ir.Value, lhs_layout: str | None,
                        weight: ir.Value, w_layout: str, named: bool, rows: b.Size
                        ) -> ir.Value:
    """One contraction for the node's matmuls: batch_vecmat / batch_matmul where the
    layouts allow and `named`, else a linalg.generic with the matmul's body."""
    first = node.layers[0]
    layout = node.node.layout
    out_rows, out_cols = rows, node.width
    elt = first.result_type.element_type
    shared_weight = node.slot_kinds[0] == "shared"
    types = {str(operand.type.element_type) for operand in (lhs, weight)} | {str(elt)}
    plain = (named and len(types) == 1 and not shared_weight
             and h.body_op_names(first.mm) in PLAIN_MATMUL_BODIES)
    out_shape = layout_shape(layout, len(node.layers), out_rows, out_cols)
    init = b.fill(first.fill_scalar, tensor.EmptyOp(out_shape, elt).result)
    n_dims, lhs_dims, w_dims = _contraction_dims(layout, lhs_layout, w_layout, shared_weight)
    if plain and layout == TN and lhs_layout == TN and w_layout == "kn":
        return b.first_result(b.linalg_builders().batch_vecmat(lhs, weight, outs=[init]))
    if plain and layout == TMN and lhs_layout in (None, TMN):
        maps = [b.dims_map(4, dims) for dims in (lhs_dims, w_dims, [0, 1, 2])]
        return b.first_result(b.linalg_builders().batch_matmul(lhs, weight, outs=[init],
                                                                 indexing_maps=maps))
    maps = [b.map_attr(n_dims, dims) for dims in (lhs_dims, w_dims, layout_dims(layout))]
    return b.cloned_generic(first.mm, [lhs, weight], [init], maps,
                            ["parallel"] * (n_dims - 1) + ["reduction"]).results[0]


def batched_epilogue(epi: EpilogueOp, first: Layer, node: NodePlan, chain: list[ir.Value],
                     params: list[ir.Value], rows: b.Size) -> ir.Value:
    """One generic for the node's copies of epilogue op `epi`, on the stacked chain."""
    layout = node.node.layout
    out_dims = layout_dims(layout)
    e_dims = len(out_dims)
    ins, in_maps = [], []
    for (role, index), amap in zip(epi.roles, h.indexing_maps(epi.op)):
        if role == "chain":
            ins.append(chain[index])
            in_maps.append(b.map_attr(e_dims, out_dims))
            continue
        if layout == TN:  # the row dim (of size 1) is read at 0
            dims = [1 if epi.dims[dim] == 1 else None for dim in h.map_dim_positions(amap)]
        else:
            dims = [1 + epi.dims[dim] for dim in h.map_dim_positions(amap)]
        if node.slot_kinds[1 + index] != "shared":
            dims = [0] + dims
        ins.append(params[index])
        in_maps.append(b.map_attr(e_dims, dims))
    out_shape = layout_shape(layout, len(node.layers), rows, node.width)
    empty = tensor.EmptyOp(out_shape, epi.op.results[0].type.element_type).result
    return b.cloned_generic(epi.op, ins, [empty], in_maps + [b.map_attr(e_dims, out_dims)],
                            ["parallel"] * e_dims).results[0]


def build_node(module: ir.Operation, anchor: ir.Operation, node: NodePlan,
               lhs: ir.Value | None, lhs_layout: str | None, options: BuildOptions,
               rows: b.Size) -> list[ir.Value]:
    """The batched layer of a node, before `anchor`; returns its chain (the stacked
    counterpart of each tower's Layer.chain)."""
    first = node.layers[0]
    stacked, w_layout = stacked_operands(module, anchor, node, options.weight_layout)
    weight, params = stacked[0], stacked[1:]
    epilogue = {epi.op: epi for epi in first.epilogue}
    with ir.InsertionPoint(anchor):
        lhs = batched_lhs(node, lhs, lhs_layout)
        chain = [batched_contraction(node, lhs, lhs_layout, weight, w_layout,
                                     options.named_batch_matmul, rows)]
        for op in first.chain_ops[1:]:
            if op in epilogue:
                chain.append(batched_epilogue(epilogue[op], first, node, chain, params, rows))
            else:  # a view (unit dims dropped, rows split): the batched value is the same
                chain.append(chain[first.chain.index(op.operands[0])])
    return chain


# ---------------------------------------------------------------- the group


def build_group(plan: GroupPlan, module: ir.Operation, options: BuildOptions) -> None:
    """Builds the batched layers, rewires the towers' users and erases the towers."""
    with plan.group.first_mm.location:
        chains = _build_nodes(plan, module, options)
        if plan.stack is not None:
            _replace_stack(plan, chains[-1][-1])
        _replace_tower_uses(plan, chains)
    for op in plan.sink:
        op.move_before(plan.anchor)
    _erase_towers(plan)


def _build_nodes(plan: GroupPlan, module: ir.Operation, options: BuildOptions
                 ) -> list[list[ir.Value]]:
    """Each node's chain, parents first; a child reads its towers' slice of the parent's."""
    chains: list[list[ir.Value]] = []
    with ir.InsertionPoint(plan.anchor):
        rows = b.size_of(plan.towers[0].input, 0)  # M: batch or tokens, maybe dynamic
    for node_plan in plan.nodes:
        node = node_plan.node
        if node_plan.parent is None:
            lhs = node_plan.shared_lhs
            lhs_layout = None if plan.group.shared else (TN if plan.rowless else TMN)
        else:
            parent = plan.nodes[node_plan.parent].node
            tail = plan.layer(node.lo, parent.depth).tail_index
            parent_plan = plan.nodes[node_plan.parent]
            with ir.InsertionPoint(plan.anchor):
                lhs = chains[node_plan.parent][tail]
                if parent_plan.padded:
                    lhs = zero_padded_columns(lhs, parent.layout, parent_plan.widths)
                lhs = slice_towers(lhs, parent.layout, node.lo - parent.lo, node.size)
            lhs_layout = parent.layout
        chains.append(build_node(module, plan.anchor, node_plan, lhs, lhs_layout, options,
                                 rows))
    return chains


def _replace_stack(plan: GroupPlan, result: ir.Value) -> None:
    """The stack of the towers' results becomes the batched result (reshaped)."""
    stacked = plan.stack.inserts[-1].results[0]
    with ir.InsertionPoint(plan.anchor):
        if stacked.type.has_static_shape:
            value = b.reshape_to(result, list(stacked.type.shape))
        else:  # flattened, then expanded to the stack's sizes (its tensor.empty's)
            dynamic = iter(plan.stack.empty.operands)
            sizes = [next(dynamic) if ir.ShapedType.is_dynamic_size(size) else size
                     for size in stacked.type.shape]
            rank = result.type.rank
            flat = b.collapse(result, [list(range(rank))], ir.RankedTensorType.get(
                [ir.ShapedType.get_dynamic_size()], result.type.element_type))
            value = b.expand_mixed(flat, [list(range(len(sizes)))], sizes)
    stacked.replace_all_uses_with(value)


def _replace_tower_uses(plan: GroupPlan, chains: list[list[ir.Value]]) -> None:
    """Uses of a batched tower value outside the group read a slice of the batched value."""
    removed = plan.removed
    for node_plan, chain in zip(plan.nodes, chains):
        node = node_plan.node
        for pos, i in enumerate(range(node.lo, node.hi)):
            for chain_idx, value in enumerate(plan.layer(i, node.depth).chain):
                uses = [(h.use_owner(use), use.operand_number) for use in value.uses
                        if h.use_owner(use) not in removed]
                if not uses:
                    continue
                width = node_plan.widths[pos] if node_plan.padded else None
                layer = plan.layer(i, node.depth)
                with ir.InsertionPoint(plan.anchor):
                    if layer.after_row_view(chain_idx):  # [M, N] sliced out, rows split again
                        rows_cols = ir.RankedTensorType.get(layer.result_type.shape,
                                                            value.type.element_type)
                        sliced = split_rows_like(layer.row_view, slice_tower(
                            chain[chain_idx], node.layout, pos, rows_cols, width))
                    else:
                        sliced = slice_tower(chain[chain_idx], node.layout, pos, value.type, width)
                for owner, operand_idx in uses:
                    owner.operands[operand_idx] = sliced


def _erase_towers(plan: GroupPlan) -> None:
    """Erases the towers' ops and the stack, then what they leave dead."""
    doomed = sorted(plan.removed, key=lambda op: h.position(op, plan.positions), reverse=True)
    dead = {result for op in doomed for result in op.results}
    operands = [operand for op in doomed for operand in op.operands if operand not in dead]
    if plan.stack is not None:
        operands.append(plan.stack.empty.results[0])
    for op in doomed:
        if any(len(list(result.uses)) for result in op.results):
            raise RuntimeError(f"internal: {op_location(op)} still used after rewrite")
        op.erase()
    b.erase_dead(operands, b.of_kind(*CLEANUP_OPS))


def change_text(plan: GroupPlan) -> str:
    """What batching the group changes, in words (for the report)."""
    towers, depth = plan.towers, plan.batched_depth
    nodes = [node_plan.node for node_plan in plan.nodes]
    n_mm = sum(depth[i] + 1 for i in range(len(towers)))
    n_epi = sum(len(plan.layer(i, level).epilogue)
                for i in range(len(towers)) for level in range(depth[i] + 1))
    new_epi = sum(len(plan.layer(node.lo, node.depth).epilogue) for node in nodes)
    kinds = "/".join(sorted({plan.layer(node.lo, node.depth).kind for node in nodes}))
    text = (f"{plan.group.describe()}: {n_mm} linalg.matmul -> {len(nodes)} batched "
            f"contraction(s), {n_epi} epilogue generic(s) -> {new_epi} ({kinds})")
    if plan.stack is not None:
        text += (f"; the {len(towers)}-way stack ({len(plan.stack.inserts)} insert_slice) is "
                 f"the batched result ({plan.stack.layout})")
    if plan.runtime_bytes:
        text += f"; {plan.runtime_bytes} bytes of run-time tensors stacked per call"
    if plan.group.padded:
        text += ("; padded to " + "x".join(str(node_plan.width) for node_plan in plan.nodes)
                 + " with zeros")
    return text + "; " + plan.gain.describe()
