"""Linalg-phase rewrites: factory values recomputed inside their consuming generics, the ones
that stay materialized computed by one generic from indices and leaves (compaction)."""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_CONSTANT, LINALG_INDEX, TENSOR_EMPTY,
                                              TENSOR_EXTRACT, op_location)

from .analysis import FactoryAnalysis, built_size
from .roots import CompactPlan, ForwardPlan
from .scalarize import Scalarizer


def forward_roots(plans: list[ForwardPlan]) -> list[str]:
    """Forwards the roots of `plans` (found together: one analysis) into their consumers, one
    rebuild per consumer for all the roots it reads. Returns what each plan changed. Chain ops
    are left for `erase_dead_chains`."""
    texts = []
    per_consumer: dict[ir.Operation, dict[int, ir.Value]] = {}
    for plan in plans:
        root = plan.root
        text = (f"forwarded {root.value.type} from {op_location(root.op)} "
                f"({len(root.factory.ops)} op chain) into {len(root.consumers)} consuming "
                f"generic(s); {plan.detail}")
        if root.blocked:
            text += "; kept materialized for: " + "; ".join(sorted(set(root.blocked)))
        texts.append(text)
        for consumer, operand in root.consumers:
            per_consumer.setdefault(consumer, {})[operand] = root.value
    rebuilds = list(per_consumer.items())
    per_consumer.clear()  # its keys are erased below: never hash them again
    for consumer, forwarded in rebuilds:
        forward_into_generic(consumer, forwarded, plans[0].analysis)
    return texts


def forward_into_generic(consumer: ir.Operation, forwarded: dict[int, ir.Value],
                         analysis: FactoryAnalysis) -> ir.Operation:
    """Rebuilds `consumer` without the forwarded ins; its body recomputes them."""
    n_in = len(h.dps_inputs(consumer))
    maps = h.indexing_maps(consumer)
    old_args = list(h.body_block(consumer).arguments)
    new, _ = b.rebuild_generic_inputs(consumer, [i for i in range(n_in) if i not in forwarded],
                                      [])
    first = list(h.body_block(new).operations)[0]
    loc = consumer.location
    scalarizer = Scalarizer(analysis, ir.InsertionPoint(first), loc)
    with ir.InsertionPoint(first), loc:
        loops = [linalg.IndexOp(dim).result for dim in range(maps[0].n_dims)]
    for i, value in sorted(forwarded.items()):
        if list(old_args[i].uses):
            idx = [scalarizer.affine(expr, loops) for expr in maps[i].results]
            old_args[i].replace_all_uses_with(scalarizer.value_at(value, idx))
    b.replace_op(consumer, new)
    return extracts_to_inputs(new)


def compact(plan: CompactPlan) -> str:
    """Materializes the roots of one shape with one input-less generic (one dispatch), inserted
    before their first reader; readers outside the block keep the old values."""
    values = [member.value for member in plan.roots]
    positions = h.block_positions(plan.block)
    readers = [ancestor for value in values for use_op in h.users(value)
               if (ancestor := h.block_ancestor(use_op, positions)) is not None]
    first = min(readers, key=positions.__getitem__)
    # Readers to switch, found before any is edited: an op's hash follows its operands.
    switch = [[use_op for use_op in h.users(member.value)
               if use_op not in member.chain_users and
               h.block_ancestor(use_op, positions) is not None]
              for member in plan.roots]
    gen = extracts_to_inputs(build_factory_generic(values, first, plan.analysis))
    for root, new, readers in zip(plan.roots, gen.results, switch):
        for user in readers:
            user.replace_uses_of_with(root.value, new)
    ops = sum(len(member.factory.ops) for member in plan.roots)
    why = list(dict.fromkeys(member.not_forwarded for member in plan.roots if member.not_forwarded))
    return (f"compacted {len(values)} materialized factory value(s) "
            f"{', '.join(str(value.type) for value in values)} ({ops} chain ops) into one "
            f"linalg.generic reading {len(h.dps_inputs(gen))} leaf input(s)"
            + "".join(f"; not forwarded: {reason}" for reason in why))


def build_factory_generic(values: list[ir.Value], before: ir.Operation,
                          analysis: FactoryAnalysis) -> ir.Operation:
    """One input-less generic, inserted before `before`, whose results are `values` (factory
    values of one shape) computed from loop indices and leaves only."""
    rank = h.tensor_type(values[0]).rank
    loc = before.location
    ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))

    def elements(args: list[ir.Value]) -> list[ir.Value]:
        loops = [linalg.IndexOp(dim).result for dim in range(rank)]
        scalarizer = Scalarizer(analysis, ir.InsertionPoint.current, loc)
        return [scalarizer.value_at(value, loops) for value in values]

    with loc, ir.InsertionPoint(before):
        shape = [built_size(values[0], dim) for dim in range(rank)]
        empties = [tensor.EmptyOp(shape, value.type.element_type).result for value in values]
        return b.generic([], empties, [ident] * len(values), ["parallel"] * rank, elements)


def _index_dim(value: ir.Value, body: ir.Block) -> ir.AffineExpr | None:
    """d_k if value is `linalg.index k` of this body, a constant expr for an index constant."""
    op = h.defining_op(value)
    if op is None:
        return None
    if op.name == LINALG_INDEX and op.block == body:
        return ir.AffineDimExpr.get(ir.IntegerAttr(op.attributes["dim"]).value)
    if op.name == ARITH_CONSTANT and isinstance(op.attributes["value"], ir.IntegerAttr):
        return ir.AffineConstantExpr.get(ir.IntegerAttr(op.attributes["value"]).value)
    return None


def extracts_to_inputs(gen: ir.Operation) -> ir.Operation:
    """`tensor.extract %leaf[index(i), ...]` of a value defined outside the body becomes an
    input read through an indexing map: a plain operand instead of a gather."""
    body = h.body_block(gen)
    n_dims = h.indexing_maps(gen)[0].n_dims
    extra: list[tuple[ir.Value, ir.AffineMap]] = []
    reads: list[tuple[ir.Operation, int]] = []
    for op in body.operations:
        op = op.operation
        if op.name != TENSOR_EXTRACT or op.operands[0].owner == gen:
            continue
        source = op.operands[0]
        if isinstance(source.owner, ir.Block) and source.owner == body:
            continue
        exprs = [_index_dim(val, body) for val in list(op.operands)[1:]]
        if any(expr is None for expr in exprs):
            continue
        amap = ir.AffineMap.get(n_dims, 0, exprs)
        key = next((idx for idx, (val, map_) in enumerate(extra)
                    if val == source and map_ == amap), None)
        if key is None:
            key = len(extra)
            extra.append((source, amap))
        reads.append((op, key))
    if not extra:
        return gen
    n_in = len(h.dps_inputs(gen))
    new, args = b.rebuild_generic_inputs(gen, list(range(n_in)), extra)
    for op, key in reads:
        op.results[0].replace_all_uses_with(args[key])
        op.erase()
    b.replace_op(gen, new)
    return new


def erase_dead_chains(chain_ops: list[ir.Operation]) -> None:
    """Erases the chain ops left without uses and the tensor.empty inits they leave unused."""
    chain = set(chain_ops)
    b.erase_dead(chain_ops, lambda op: op in chain or op.name == TENSOR_EMPTY)
