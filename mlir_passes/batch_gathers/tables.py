"""Stacked tables: constant tables stacked once per run, at module load (`TablePool`), and the
tables left unread once their rows are in a stack (`erase_dead_tables`)."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import ARITH_CONSTANT, TENSOR_EXTRACT

TABLE_SYMBOL = "__batch_gathers_table"


@dataclass
class _Stack:
    """One stacked table: its global, the function's load of it, and per entry (in row order)
    the source's key (`_source_key`), the source cloned in the stack's initializer, and its
    first row."""

    symbol: str
    load: ir.Value
    keys: list[tuple]
    sources: list[ir.Value]
    starts: list[int]
    rows: int


def _source_key(table: ir.Value) -> tuple:
    """What a constant-like table is, independent of the op that holds it (two loads of one
    global, two uses of one parameter, equal constants: one key): its op, attributes, type."""
    op = h.defining_op(table)
    attrs = (op.attributes[i] for i in range(len(op.attributes)))
    return (op.name, tuple(sorted((attr.name, attr.attr) for attr in attrs
                                  if attr.name != "is_immutable")), str(table.type))


class TablePool:
    """Stacks constant tables once, at module load (one util.global per stack).

    With `share` (the pass's `dedup`), a table is stacked at most once per run: a table list
    whose tables all sit in a stack reads that stack; one that shares tables with a stack
    extends it (the new tables appended, the stack's rows and every reader's offsets kept)
    while the stack stays within `max_bytes`. Without it, each table list gets its own stack,
    repeated entries included (dedup=0 measurements)."""

    def __init__(self, module: ir.Operation, block: ir.Block, share: bool = True,
                 max_bytes: int = 1 << 62):
        self.module, self.block = module, block
        self.share, self.max_bytes = share, max_bytes
        self.loads: dict[tuple, tuple[_Stack, list[int]]] = {}
        self.stacks: list[_Stack] = []
        # (bytes, parameter tables, global tables) of each stack built or extended, in order.
        self.built: list[tuple[int, int, int]] = []

    def note_since(self, start: int) -> str:
        """What the stacks built since `self.built[start]` cost at load, for a change's
        text, where they read external parameters or globals (inline constants: "")."""
        built = self.built[start:]
        params, globs = sum(stack[1] for stack in built), sum(stack[2] for stack in built)
        if not params and not globs:
            return ""
        what = " and ".join(part for part in (f"{params} parameter table(s)" if params else "",
                                         f"{globs} global table(s)" if globs else "") if part)
        return (f"; {sum(stack[0] for stack in built)} bytes stacked once at load from {what} "
                "(read once at load; the stack stays resident)")

    def stacked(self, tables: list[ir.Value]) -> tuple[ir.Value, list[int]]:
        """(stacked table, first row of each entry of `tables`), built once per table list;
        entries are constant-like [rows, D] tables of one D and element type."""
        key = tuple(tables)
        if key not in self.loads:
            keys = [_source_key(table) for table in tables]
            stack = self._sharing(tables, keys) if self.share else None
            if stack is None:
                stack = self._build(None, [], [], tables, keys)
            elif not all(k in stack.keys for k in keys):
                stack = self._build(stack, stack.sources, stack.keys, tables, keys)
            # Without sharing the stack is `tables` itself, a repeated entry read at its copy.
            self.loads[key] = (stack, [stack.starts[stack.keys.index(k)] for k in keys]
                               if self.share else stack.starts)
        stack, starts = self.loads[key]
        return stack.load, starts

    def _sharing(self, tables: list[ir.Value], keys: list[tuple]) -> _Stack | None:
        """The stack sharing the most rows with `tables` (same D and element type) that can
        take the rest: within max_bytes, read only by tensor.extract (its type grows)."""
        table_t = ir.RankedTensorType(tables[0].type)
        best, best_rows = None, 0
        for stack in self.stacks:
            stack_t = ir.RankedTensorType(stack.load.type)
            if stack_t.shape[1:] != table_t.shape[1:] or \
                    stack_t.element_type != table_t.element_type:
                continue
            shared = sum(ir.RankedTensorType(table.type).shape[0]
                         for table, k in zip(tables, keys) if k in stack.keys)
            extra = sum(ir.RankedTensorType(table.type).shape[0]
                        for i, (table, k) in enumerate(zip(tables, keys))
                        if k not in stack.keys and k not in keys[:i])
            row_bytes = table_t.shape[1] * h.element_bytes(table_t.element_type)
            fits = (stack.rows + extra) * row_bytes <= self.max_bytes
            extends = all(use.owner.name == TENSOR_EXTRACT for use in stack.load.uses)
            if shared > best_rows and (extra == 0 or (fits and extends)):
                best, best_rows = stack, shared
        return best

    def _build(self, old: _Stack | None, kept: list[ir.Value], kept_keys: list[tuple],
               tables: list[ir.Value], keys: list[tuple]) -> _Stack:
        """A stack of `kept` (sources in `old`'s initializer, rows first, unmoved) and the
        entries of `tables` not among them (all of them when not sharing); `old`'s global,
        initializer and load are replaced by it."""
        added = [(table, k) for i, (table, k) in enumerate(zip(tables, keys))
                 if not self.share or (k not in kept_keys and k not in keys[:i])]
        inputs = kept + [table for table, _ in added]
        types = [ir.RankedTensorType(table.type) for table in inputs]
        total = sum(table_t.shape[0] for table_t in types)
        dim, elem = types[0].shape[1], types[0].element_type
        starts = [sum(table_t.shape[0] for table_t in types[:i]) for i in range(len(types))]
        sources: list[ir.Value] = []

        def build(cloned: list[ir.Value]) -> ir.Value:
            sources.extend(cloned)
            return b.concat_by_slices(cloned)

        before = h.defining_op(old.load) if old is not None else \
            next(iter(self.block.operations)).operation
        value = b.hoist_to_initializer(self.module, before, inputs, build,
                                       f"{TABLE_SYMBOL}_{dim}x{elem}")
        _initialize_after_sources(self.module, h.defining_op(value))
        symbol = h.global_symbol(h.defining_op(value))
        if old is not None:
            old.load.replace_all_uses_with(value)
            _erase_stack(self.module, old)
            symbol = _rename_global(self.module, h.defining_op(value), old.symbol)
        stack = _Stack(symbol, value, kept_keys + [k for _, k in added], sources, starts, total)
        if old is not None:
            self.stacks[self.stacks.index(old)] = stack
            for key, (was, starts_of) in self.loads.items():
                if was is old:
                    self.loads[key] = (stack, starts_of)
        else:
            self.stacks.append(stack)
        added_tables = [table for table, _ in added]
        self.built.append((sum(table_t.shape[0] for table_t in types[len(kept):]) * dim
                           * h.element_bytes(elem),
                           sum(map(h.is_parameter, added_tables)),
                           sum(h.defining_op(table).name == h.UTIL_GLOBAL_LOAD
                               for table in added_tables)))
        return stack


def _global_and_initializer(module: ir.Operation, symbol: str
                            ) -> tuple[ir.Operation, ir.Operation]:
    """The `util.global` named `symbol` and the `util.initializer` that stores it (one pass
    over the module's top-level ops)."""
    glob = init = None
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == h.UTIL_GLOBAL and ir.StringAttr(op.attributes["sym_name"]).value == symbol:
            glob = op
        elif op.name == h.UTIL_INITIALIZER and symbol in h.stored_globals(op):
            init = op
    return glob, init


def _rename_global(module: ir.Operation, load: ir.Operation, to: str) -> str:
    """Renames the global `load` reads, its one load and its initializer's store to `to` (a
    name now free)."""
    symbol = h.global_symbol(load)
    glob, init = _global_and_initializer(module, symbol)
    glob.attributes["sym_name"] = ir.StringAttr.get(to)
    for access in [load] + [store for store in h.walk_ops(init, (h.UTIL_GLOBAL_STORE,))
                            if h.global_symbol(store) == symbol]:
        access.attributes["global"] = ir.FlatSymbolRefAttr.get(to)
    return to


def _erase_stack(module: ir.Operation, stack: _Stack) -> None:
    """Erases a replaced stack: its load (no reader left), its initializer and its global."""
    h.defining_op(stack.load).erase()
    for op in _global_and_initializer(module, stack.symbol):
        op.erase()


def _initialize_after_sources(module: ir.Operation, load: ir.Operation) -> None:
    """Moves the initializer that stacks the tables of `load`'s global after the
    initializers of the globals it reads (tables IREE hoisted into globals, or that a
    program initializes itself): initializers run in module order."""
    symbol = h.global_symbol(load)
    top = [op.operation for op in module.regions[0].blocks[0].operations]
    inits = [op for op in top if op.name == h.UTIL_INITIALIZER]
    ours = next(op for op in inits if symbol in h.stored_globals(op))
    sources = set(h.loaded_globals(ours))
    writers = [op for op in inits if op != ours and sources.intersection(h.stored_globals(op))]
    if writers and top.index(writers[-1]) > top.index(ours):
        ours.move_after(writers[-1])


def erase_dead_tables(tables: list[ir.Value]) -> None:
    """The tables no op reads any more (their rows are in a stacked table): a parameter
    left in the function would be read at load for nothing."""
    b.erase_dead(tables, b.of_kind(h.FLOW_TENSOR_CONSTANT, ARITH_CONSTANT,
                                   h.UTIL_GLOBAL_LOAD))
