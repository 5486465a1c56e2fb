"""Flow phase: a dispatch that only builds a factory tensor from tiny operands is cloned into
the dispatches whose reading op (an attention's mask) could not take it at the linalg phase."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import op_location
from iree_fusions.compiler.protocol import Candidate, NoMatch, structural_key

from .analysis import FactoryAnalysis
from .forward import extracts_to_inputs
from .scalarize import Scalarizer


@dataclass(frozen=True)
class DispatchOptions:
    """The options of forward-factory-dispatches that finding and weighing clones read."""

    ops_per_byte: float
    ops_per_dispatch: float
    max_element_ops: int
    max_leaf_elements: int
    ignore_cost: bool
    consumers: tuple[str, ...]


WORKGROUPS = h.FLOW_DISPATCH_WORKGROUPS
_LOAD, _STORE, _RESHAPE = h.DISPATCH_TENSOR_LOAD, h.DISPATCH_TENSOR_STORE, h.FLOW_TENSOR_RESHAPE


def _full_access(op: ir.Operation, shape: list[int]) -> bool:
    """A dispatch.tensor.load/store of the whole tensor: zero offsets, full sizes, unit strides."""
    if len(op.operands) != (2 if op.name == _STORE else 1):
        return False  # dynamic offsets/sizes/dims
    return (all(offset == 0 for offset in h.i64_array(op, "static_offsets"))
            and h.i64_array(op, "static_sizes") == shape
            and all(stride == 1 for stride in h.i64_array(op, "static_strides")))


def _entry_block(op: ir.Operation) -> ir.Block:
    return op.regions[0].blocks[0]


@dataclass
class FactoryDispatch:
    """A dispatch whose results are factory values of its (tiny) operands."""

    op: ir.Operation
    stored: list[ir.Value]  # per result: the value stored into it, inside the body
    loads: dict[ir.Value, ir.Value]  # body load result -> operand (outside)
    analysis: FactoryAnalysis


@dataclass
class CloneForward:
    """Clone the producer's computation into the consumer, for the consumer's reads of it."""

    producer: FactoryDispatch
    consumer: ir.Operation
    reads: list[tuple[int, int, ir.Type]]  # (consumer operand #, producer result #, view type)


def match_factory_dispatch(op: ir.Operation, max_leaf_elements: int,
                           max_element_ops: int) -> FactoryDispatch | None:
    """The dispatch as a FactoryDispatch if it stores only factory values of tiny operands."""
    dispatch = h.Workgroups(op)
    if dispatch.workload or dispatch.argument_dim_values or dispatch.result_dims or \
            any(tied_to != -1 for tied_to in h.tied_operands(op)):
        return None
    operands = dispatch.arguments  # (no workload, no dims: every operand)
    for value in operands:
        shape = h.static_shape(value)
        if shape is None or h.numel(shape) > max_leaf_elements:
            return None
    body = _entry_block(op)
    args = dispatch.body_arguments
    inputs, outputs = args[:len(operands)], args[len(operands):]
    loads: dict[ir.Value, ir.Value] = {}
    stored: list[ir.Value | None] = [None] * len(op.results)
    analysis = FactoryAnalysis(max_leaf_elements, max_element_ops, isolated=True)
    for body_op in body.operations:
        body_op = body_op.operation
        if body_op.name == _LOAD:
            src = h.DispatchTensorAccess(body_op).tensor
            if src not in inputs:
                return None
            operand = operands[inputs.index(src)]
            if not _full_access(body_op, h.static_shape(operand)):
                return None
            loads[body_op.results[0]] = operand
        elif body_op.name == _STORE:
            store = h.DispatchTensorAccess(body_op)
            if store.tensor not in outputs:
                return None
            result_idx = outputs.index(store.tensor)
            if not _full_access(body_op, list(op.results[result_idx].type.shape)):
                return None
            stored[result_idx] = store.value
    if any(value is None for value in stored):
        return None
    if any(analysis.info(value) is None for value in stored):
        return None
    return FactoryDispatch(op, stored, loads, analysis)


def factory_dispatches(block: ir.Block, options: DispatchOptions
                       ) -> list[FactoryDispatch]:
    """The factory dispatches of the block that no other one feeds (a producer fed by another
    one could be rebuilt as its consumer: chains are left to the first producer only)."""
    producers = [producer for op in block.operations if op.operation.name == WORKGROUPS
                 if (producer := match_factory_dispatch(op.operation, options.max_leaf_elements,
                                                 options.max_element_ops)) is not None]
    ops = [producer.op for producer in producers]
    return [producer for producer in producers
            if not any(src is not None and src in ops
                       for src in map(h.defining_op, producer.op.operands))]


def dynamic_generators(block: ir.Block, options: DispatchOptions
                       ) -> Iterator[Candidate[CloneForward]]:
    """Blocked candidates for dispatches that generate a tensor of dynamic shape (from index
    operands and tiny leaves only, read by another dispatch): a clone would need the
    producer's sizes inside the consumer, which this pass does not build. The reason names the
    dynamic dims."""
    for op in block.operations:
        op = op.operation
        if op.name != WORKGROUPS or not _read_by(op, options.consumers):
            continue
        tensors = [val for val in op.operands if isinstance(val.type, ir.RankedTensorType)]
        if any(h.static_shape(val) is None or
               h.numel(h.static_shape(val)) > options.max_leaf_elements for val in tensors):
            continue
        if any(not isinstance(val.type, (ir.RankedTensorType, ir.IndexType))
               for val in op.operands):
            continue
        dynamic = [(res, [dim for dim, size in enumerate(res.type.shape)
                          if ir.ShapedType.is_dynamic_size(size)])
                   for res in op.results if isinstance(res.type, ir.RankedTensorType)]
        dynamic = [(res, dims) for res, dims in dynamic if dims]
        if not dynamic:
            continue
        what = "; ".join(f"{res.type}: dim(s) {', '.join(map(str, dims))} dynamic"
                         for res, dims in dynamic)
        reason = (f"a generated tensor of dynamic shape ({what}): a clone would need its "
                  "sizes inside the consuming dispatch (only static ones are cloned)")
        key = structural_key("forward-factory-dispatches", h.op_signature(op), "dynamic generator")
        yield Candidate.refused(key, op, f"{len(dynamic)} dynamic result(s)",
                                NoMatch("dynamic-generator", reason))


def _read_by(producer: ir.Operation, names: tuple[str, ...]) -> bool:
    """Some dispatch reads a result of `producer` (directly or through flow.tensor.reshape)
    in one of the ops `names` (the ops forward-factory-dispatches may clone into)."""
    values = list(producer.results)
    values += [reshape.results[0] for res in producer.results for reshape in h.users(res)
               if reshape.name == _RESHAPE]
    for value in values:
        for use in value.uses:
            user = h.use_owner(use)
            if user.name != WORKGROUPS:
                continue
            dispatch = h.Workgroups(user)
            if dispatch.argument_number(use.operand_number) is None:
                continue
            arg = dispatch.body_argument(use.operand_number)
            # Loads read the argument; a store into it (a tied, in-place result such as a
            # KV cache written by a scatter) has no result and reads nothing.
            readers = [res for load in h.users(arg) if load.name == _LOAD
                       for res in h.users(load.results[0])]
            if any(res.name in names for res in readers):
                return True
    return False


def _producer_signature(producer: FactoryDispatch) -> tuple:
    chains = tuple(tuple(h.op_signature(chain_op) for chain_op in producer.analysis.info(value).ops)
                   for value in producer.stored)
    return (h.op_signature(producer.op), chains)


def _reading_ops(consumer: ir.Operation, operand: int, view: ir.Type) -> str | list[str]:
    """The names of the ops that read operand # inside the consumer, or why it cannot take a
    clone (a partial or repeated load)."""
    arg = h.Workgroups(consumer).body_argument(operand)
    loads = h.users(arg)
    if len(loads) != 1 or loads[0].name != _LOAD or \
            not _full_access(loads[0], list(view.shape)):
        return "reads the factory tensor partially or more than once"
    return sorted({reader.name for reader in h.users(loads[0].results[0])}) or ["nothing"]


def consumer_candidates(producer: FactoryDispatch, options: DispatchOptions
                        ) -> Iterator[Candidate[CloneForward]]:
    """A candidate per consumer dispatch of the producer (through static reshapes), blocked
    ones first, in the order of the producer's uses."""
    allowed = options.consumers
    reads: dict[ir.Operation, list[tuple[int, int, ir.Type]]] = {}
    names: dict[ir.Operation, list[tuple[str, list[str]]]] = {}
    signature = _producer_signature(producer)
    for user, operand, result, view in _dispatch_reads(producer.op):
        dispatch = h.Workgroups(user)
        if dispatch.workload or operand >= len(dispatch.arguments) or \
                h.tied_operands(user).count(operand):
            continue
        readers = _reading_ops(user, operand, view)
        problem = readers if isinstance(readers, str) else None
        if problem is None and any(reader not in allowed for reader in readers):
            problem = (f"reads the factory tensor in {', '.join(readers)} (not in "
                       f"consumers={','.join(allowed)})")
        if problem is not None:
            key = structural_key("forward-factory-dispatches", signature, str(view), problem)
            yield Candidate.refused(key, user, f"a read of {view}",
                                    NoMatch("unclonable-read", problem))
            continue
        reads.setdefault(user, []).append((operand, result, view))
        names.setdefault(user, []).append((str(view), readers))
    for consumer, forwarded in reads.items():
        key = structural_key("forward-factory-dispatches", signature,
                             tuple(sorted(names[consumer])),
                             tuple(h.type_text(reader) for reader in consumer.results))
        views = ", ".join(str(view_t) for _, _, view_t in forwarded)
        yield Candidate.of(key, consumer, f"{op_location(producer.op)} ({views}) read here",
                           lambda consumer=consumer, forwarded=forwarded:
                           _plan(producer, consumer, forwarded, options))


def _dispatch_reads(producer: ir.Operation
                    ) -> Iterator[tuple[ir.Operation, int, int, ir.Type]]:
    """(dispatch, operand #, producer result #, the type it reads) of each dispatch reading a
    result, directly or through a static flow.tensor.reshape."""
    for result_idx, result in enumerate(producer.results):
        for use in result.uses:
            user = h.use_owner(use)
            if user.name == _RESHAPE and len(user.operands) == 1 and \
                    h.static_shape(user.results[0]) is not None:
                # A reshape of a static tensor: the consumer sees another shape.
                for use2 in user.results[0].uses:
                    user2 = h.use_owner(use2)
                    if user2.name == WORKGROUPS:
                        yield user2, use2.operand_number, result_idx, user.results[0].type
                continue
            if user.name == WORKGROUPS:
                yield user, use.operand_number, result_idx, result.type


def _plan(producer: FactoryDispatch, consumer: ir.Operation,
          reads: list[tuple[int, int, ir.Type]], options: DispatchOptions
          ) -> CloneForward:
    elements = sum(h.numel(list(view.shape)) for _, _, view in reads)
    cost = max(producer.analysis.info(producer.stored[res_no]).cost for _, res_no, _ in reads)
    nbytes = sum(h.static_tensor_bytes(view) or 0 for _, _, view in reads)
    # Each element is computed once in the consumer (its codegen fuses the producer into
    # the reading op's tiles); the saving is the write and the read of the tensor.
    budget = options.ops_per_byte * 2 * nbytes
    if not options.ignore_cost and cost * elements > budget + options.ops_per_dispatch:
        raise NoMatch("recompute-costs-more",
                      f"recomputing {elements} elements x {cost:g} ops costs more than moving "
                      f"{nbytes} bytes")
    return CloneForward(producer, consumer, reads)


def clone_into(plan: CloneForward) -> str:
    """Rebuilds the consumer dispatch: it loads the producer's operands and recomputes the
    tensors it read; the producer (and its reshapes) go once nothing reads them."""
    producer, consumer, forwarded = plan.producer, plan.consumer, plan.reads
    old_args = list(_entry_block(consumer).arguments)
    drop = {operand_idx for operand_idx, _, _ in forwarded}
    leaves = list(dict.fromkeys(producer.loads.values()))
    arguments = h.Workgroups(consumer).arguments
    kept = [i for i in range(len(arguments)) if i not in drop]
    kept_values = [arguments[i] for i in kept]
    new_leaves = [val for val in leaves if val not in kept_values]
    leaf_arg_types = {operand: h.DispatchTensorAccess(h.defining_op(load)).tensor.type
                      for load, operand in producer.loads.items()}
    new, added_args = b.rebuild_workgroups(consumer, kept, new_leaves,
                                           [leaf_arg_types[val] for val in new_leaves])
    body = new.regions[0].blocks[0]
    arg_of = dict(zip(new_leaves, added_args))
    for value, arg in zip(kept_values, body.arguments):
        arg_of.setdefault(value, arg)
    # Leaves: load them in the consumer as the producer did.
    first = list(body.operations)[0]
    leaf_map = {}
    for load, operand in producer.loads.items():
        with ir.InsertionPoint(first):
            clone = h.defining_op(load).clone()
        clone.operands[0] = arg_of[operand]
        leaf_map[load] = clone.results[0]
    for operand, result, view in forwarded:
        old_load = h.users(old_args[operand])[0]
        value = _emit_view(producer, result, view, old_load, leaf_map)
        old_load.results[0].replace_all_uses_with(value)
        old_load.erase()
    b.replace_op(consumer, new)
    text = (f"cloned {op_location(producer.op)} ({', '.join(str(val) for _, _, val in forwarded)}) "
            f"into the dispatch at {op_location(new)}; it now reads "
            f"{', '.join(str(val.type) for val in leaves) or 'nothing'} instead")
    _erase_if_unused(producer.op)
    return text


def _erase_if_unused(producer: ir.Operation) -> None:
    """The producer's reshapes without readers, then the producer if nothing reads it."""
    for user in [use_op for result in producer.results for use_op in h.users(result)]:
        if user.name == _RESHAPE and not list(user.results[0].uses):
            user.erase()
    if all(not list(result.uses) for result in producer.results):
        producer.erase()


def _emit_view(producer: FactoryDispatch, result: int, view: ir.Type,
               before: ir.Operation, leaf_map: dict) -> ir.Value:
    """The producer's result `result`, as the consumer views it (a row-major reshape),
    computed by an input-less generic inserted before `before`."""
    stored = producer.stored[result]
    src_shape = list(stored.type.shape)
    shape = list(view.shape)
    rank = len(shape)
    loc = before.location
    ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))

    def element(args: list[ir.Value]) -> ir.Value:
        loops = [linalg.IndexOp(dim).result for dim in range(rank)]
        scalarizer = Scalarizer(producer.analysis, ir.InsertionPoint.current, loc, leaf_map)
        idx = loops
        if src_shape != shape:
            flat = scalarizer.linearize(loops, shape)
            idx = scalarizer.delinearize(flat, src_shape)
        return scalarizer.value_at(stored, idx)

    with loc, ir.InsertionPoint(before):
        empty = tensor.EmptyOp(shape, view.element_type).result
        gen = b.generic([], [empty], [ident], ["parallel"] * rank, element)
    return extracts_to_inputs(gen).results[0]
