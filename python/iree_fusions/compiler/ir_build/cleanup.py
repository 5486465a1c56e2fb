"""Dead-op erasure after a rewrite."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from iree.compiler import ir

from .. import ir_helpers as h

# ---------------------------------------------------------------- cleanup


def erase_dead(roots: Iterable[ir.Operation | ir.Value],
               erasable: Callable[[ir.Operation], bool]) -> None:
    """Erases the ops of `roots` (or defining `roots`) that `erasable` accepts once none of
    their results is used, then, recursively, the erasable ops that fed them.

    Dead ops are all found first and erased afterwards, users before producers: a Python
    handle of an erased op is unusable (not even for hashing), so none is touched after."""
    work: list[ir.Operation] = []
    for r in roots:
        op = h.defining_op(r) if isinstance(r, ir.Value) else r.operation
        if op is not None:
            work.append(op)
    dead: dict[ir.Operation, None] = {}  # insertion order: users before their producers
    while work:
        op = work.pop()
        if not erasable(op) or op in dead:
            continue
        if all(u in dead for r in op.results for u in h.users(r)):
            dead[op] = None
            work += [f for f in map(h.defining_op, op.operands) if f is not None]
    for op in dead:
        op.erase()


def of_kind(*names: str) -> Callable[[ir.Operation], bool]:
    """An `erasable` predicate for erase_dead: ops with one of these names."""
    return lambda op: op.name in names
