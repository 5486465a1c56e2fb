"""Emission of the embedding_bag rewrites with the MLIR Python builders: a fixed-length bag
becomes a lookup and a pooled sum (which batch-gathers then batches with the other lookups);
bags with run-time offsets become one generic that sums each bag's ids. New ops take the
location of the op they replace."""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import arith, scf, tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h


from .match import EmbeddingBag, OffsetsBag
from .plan import OffsetsBagGroup


def rewrite_embedding_bag(bag: EmbeddingBag) -> str:
    """out[b, d] = sum_l table[idx[b*L + l], d]: a lookup over [B, L, D] and a sum over L
    (B = 1 with unit dims folded: a lookup over [L, D] and a sum over L)."""
    op = bag.op
    res_t = h.tensor_type(op.results[0])
    elem, dim = res_t.element_type, res_t.shape[-1]
    init = h.dps_inits(op)[0]
    ids_shape = [bag.bags, bag.length] if res_t.rank == 2 else [bag.length]
    rank = len(ids_shape) + 1
    its = ["parallel"] * rank
    its[rank - 2] = "reduction"
    with op.location, ir.InsertionPoint(op):
        ids = b.expand_mixed(bag.flat_index, [[0, 1]], ids_shape) if rank == 3 else \
            bag.flat_index
        empty = tensor.EmptyOp(ids_shape + [dim], elem).result
        def table_row(args: list[ir.Value]) -> ir.Value:
            row = arith.IndexCastOp(ir.IndexType.get(), args[0]).result
            col = linalg.IndexOp(rank - 1).result
            return tensor.ExtractOp(bag.table, [row, col]).result

        rows = b.generic([ids], [empty], [b.map_attr(rank, range(rank - 1)),
                                          b.map_attr(rank, range(rank))], ["parallel"] * rank,
                         table_row)
        total = b.generic([rows.results[0]], [init], [
            b.map_attr(rank, range(rank)),
            b.map_attr(rank, [i for i in range(rank) if i != rank - 2])], its,
            lambda a: arith.AddFOp(a[0], a[1]).result)
    b.replace_op(op, total)
    return (f"embedding_bag {bag.bags_text} bags x {bag.length} ids: quadratic scan -> lookup + "
            "pooled sum")


# ---------------------------------------------------------------- bags with run-time offsets


def emit_offsets_bags(plan: OffsetsBagGroup) -> str:
    """One generic writing [K, B, D] (B = 1 folded: [K, D]) for K embedding_bags with
    run-time offsets, sliced per member; the members are erased.

    Loops (b, k, d) with the output map -> (k, b, d); the body switches on k, and case k
    sums member k's bag b: table_k[ids_k[j], d] for j from offsets_k[b] to offsets_k[b+1]
    (N_k for the last bag), clamped to [0, N_k), from the fill value in increasing j: the
    additions of the quadratic scan it replaces, in the same order, without the scan.
    """
    members = plan.members
    first = members[0]
    count, dim, elem = len(members), first.dim, first.elem
    unit = h.static_type(first.result).rank == 1
    out_shape = [count, dim] if unit else [count, first.bags, dim]
    order = h.block_positions(first.op.block)
    anchor = batching.first_use_anchor(members, order)
    with first.op.location, ir.InsertionPoint(anchor):
        init = tensor.EmptyOp(out_shape, elem).result
        loops = len(out_shape)
        # Loops (k, d) at B = 1; (b, k, d) -> (k, b, d) otherwise.
        out_dims = list(range(loops)) if unit else [1, 0, 2]

        def bag_sum(args: list[ir.Value]) -> ir.Value:
            bag = None if unit else linalg.IndexOp(0).result
            member_idx = linalg.IndexOp(0 if unit else 1).result
            col = linalg.IndexOp(loops - 1).result
            if count == 1:
                val = _sum_bag(first, bag, col)
            else:
                switch = scf.IndexSwitchOp([elem], member_idx, list(range(1, count)))
                # Each region comes with its block; member 0 is the default case.
                regions = [switch.defaultRegion, *switch.caseRegions]
                for member, region in zip(members, regions):
                    with ir.InsertionPoint(region.blocks[0]):
                        scf.YieldOp([_sum_bag(member, bag, col)])
                val = switch.results[0]
            return val

        gen = b.generic([], [init], [b.map_attr(loops, out_dims)], ["parallel"] * loops, bag_sum)
        rank = len(out_shape)
        results = [b.slice_out(gen.results[0], [j] + [0] * (rank - 1), [1] + out_shape[1:],
                             out_shape[1:]) for j in range(count)]
    for bag_member, result in zip(members, results):
        bag_member.result.replace_all_uses_with(result)
        bag_member.op.erase()
    ids = sum(bag_member.n for bag_member in members)
    return (f"{count} embedding_bag(s) with run-time offsets ({first.bags} bags, dim {dim}, "
            f"{ids} ids) -> 1 generic summing each bag's ids (was: every id scanned for "
            "every bag)")


def _sum_bag(bag: OffsetsBag, bag_idx: ir.Value | None, col: ir.Value) -> ir.Value:
    """sum of bag.table[ids[j], col] over j in [offsets[bag_idx], next) clamped to [0, N), from
    the fill value in increasing j (`bag_idx` None: the one bag of a folded B = 1 generic)."""
    off_t = ir.RankedTensorType(bag.offsets.type).element_type
    id_count = arith.ConstantOp(off_t, bag.n).result
    zero = arith.ConstantOp(off_t, 0).result
    if bag_idx is None:
        start, end = tensor.ExtractOp(bag.offsets, []).result, id_count
    else:
        start = tensor.ExtractOp(bag.offsets, [bag_idx]).result
        following = arith.AddIOp(bag_idx, b.index_const(1)).result
        last = b.cmpi("eq", following, b.index_const(bag.bags))
        following = arith.SelectOp(last, b.index_const(0), following).result
        end = tensor.ExtractOp(bag.offsets, [following]).result
        end = arith.SelectOp(last, id_count, end).result
    start = arith.IndexCastOp(ir.IndexType.get(), arith.MaxSIOp(start, zero).result).result
    end = arith.IndexCastOp(ir.IndexType.get(), arith.MinSIOp(end, id_count).result).result
    fill = h.defining_op(bag.init)
    init = arith.ConstantOp(bag.elem, fill.operands[0].owner.attributes["value"]).result
    loop = scf.ForOp(start, end, b.index_const(1), [init])
    with ir.InsertionPoint(loop.body):
        row = tensor.ExtractOp(bag.ids, [loop.induction_variable]).result
        row = arith.IndexCastOp(ir.IndexType.get(), row).result
        elem = tensor.ExtractOp(bag.table, [row, col]).result
        acc = loop.inner_iter_args[0]
        scf.YieldOp([arith.AddFOp(elem, acc).result if bag.row_first else
                     arith.AddFOp(acc, elem).result])
    return loop.results[0]


