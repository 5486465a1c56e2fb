"""Invariants a rewrite that moves or merges ops must keep, checked while planning, before
anything changes: each check raises the protocol's `NoMatch` with a reason that names it
(MLIR's notifyMatchFailure), so the candidate is reported as skipped instead of the pass
building a module that fails to verify or computes something else.

- `captured_values(op)`: the values an op's regions use that are defined outside it (a
  scalar a linalg body reads, a tensor it extracts from);
- `check_defined_before(values, index, positions, ...)`: every value a moved or merged op
  uses (its operands, what its body captures) exists at the point it is moved to;
- `reads_init(op)` / `check_init_unread(op, ...)`: a body that reads its `outs` block
  argument cannot be given a new init (a fresh `tensor.empty` holds garbage);
- `check_no_parameter_stack(values, what, allowed)`: resident memory never grows: tensors
  read from external parameters are not stacked at load (the stack would be a second
  resident copy beside the mapped parameter file) unless the pass's `stack-parameters`
  option says so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from iree.compiler import ir

from . import ir_helpers as h
from .protocol import NoMatch


def captured_values(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """The values that ops nested in `op`'s regions use and that are defined outside `op`,
    each once, in walk order (a body's block arguments and its own results are not)."""
    found: dict[ir.Value, None] = {}
    for inner in h.walk_ops(op.operation):
        for value in inner.operands:
            if not h.defined_inside(value, op):
                found.setdefault(value, None)
    return list(found)


def check_defined_before(values: Iterable[ir.Value], index: int, positions: h.Positions,
                         what: str, where: str,
                         moved: Collection[ir.Operation] = ()) -> None:
    """Raises NoMatch unless each of `values` is available before the op at `index` of the
    block of `positions` (the round's `block_positions`, taken before any change): defined
    by an op before it, outside the block (an argument of the block or of the function, a
    value of an enclosing region), or by one of `moved` (ops the rewrite moves there first,
    in block order). The reason: "<what> is defined by <op> after <where>"."""
    for value in values:
        if h.defined_before(value, index, positions):
            continue
        producer = h.defining_op(value)
        if producer in moved:
            continue
        raise NoMatch("defined-after", f"{what} is defined by {producer.name} after {where}")


def reads_init(op: ir.Operation | ir.OpView) -> bool:
    """The body of a destination-passing linalg op reads one of its `outs` block arguments
    (an accumulator, a residual added in place), not only its `ins`."""
    args = h.body_block(op).arguments
    inits = len(h.dps_inits(op))
    return any(list(args[i].uses) for i in range(len(args) - inits, len(args)))


def check_init_unread(op: ir.Operation | ir.OpView, what: str) -> None:
    """Raises NoMatch when `op`'s body reads its init: a rewrite that gives it a new init
    (a fresh `tensor.empty`) would change its result. The reason names `what` the op is."""
    if reads_init(op):
        raise NoMatch("reads-init",
                      f"{what} reads its init (outs) in its body: a new, empty init would "
                      "change its result")


STACK_PARAMETERS_RULE = (
    "{what} read from external parameters ({names}): stacked at load they would be a second "
    "resident copy beside the parameter file (resident memory never grows; measured on "
    "dlrm-b64 --form params: MiB held 4 -> 7); stack-parameters=true stacks them at load")


def check_no_parameter_stack(values: Iterable[ir.Value], what: str, allowed: bool) -> None:
    """Raises NoMatch when one of `values` (the tensors a plan stacks once at load, in an
    initializer) is read from an external parameter, through views, unless `allowed`."""
    if allowed:
        return
    names = [h.parameter_name(value) for value in values]
    names = [name for name in names if name is not None]
    if names:
        raise NoMatch("stacks-parameters",
                      STACK_PARAMETERS_RULE.format(what=what, names=parameter_names_text(names)))


def parameter_names_text(names: Iterable[str]) -> str:
    """The parameters a decline names, each once: the first three, then how many more."""
    names = list(dict.fromkeys(names))
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
