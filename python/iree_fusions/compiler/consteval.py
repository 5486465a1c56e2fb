"""Fold the load-time initializers the plugin's passes create into compile-time constants.

A pass that stacks constant weights or tables (batch-mlp-towers, batch-gathers) writes the
stack in a `util.initializer` (`ir_build.hoist_to_initializer`): at this phase IREE's own
const-eval has already run. Left to load time, the stack is a second copy of the weights next
to the originals, which stay in the .vmfb's read-only data for the initializer to read: twice
the resident weights of stock IREE, and load-time work. This step evaluates those
initializers at compile time with IREE's const-eval (the `global-optimization` phase, run on a
small module holding only them, the globals they read and the target device), so that the
stacked global carries its value and the originals, with no other reader, are dropped:

    util.global private @stack : tensor<6x256x256xf32>        util.global private @stack =
    util.initializer {                                   =>       dense<...> : tensor<6x256x256xf32>
      %w0 = arith.constant dense_resource<w0> ...
      ... insert_slice / transpose ...
      util.global.store %s, @stack
    }

Initializers that read external parameters (`#flow.parameter.named`) cannot be evaluated at
compile time: the parameters are only known at load. They stay initializers: the parameter
file stays mapped (read once, at load) and the stack is the one copy in device memory.
`--iree-opt-const-eval=false` (IREE's own flag) keeps every stack at load time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import util

from . import ir_helpers as h

# The unit attribute `ir_build.hoist_to_initializer` puts on the initializers it creates.
LOAD_TIME_ATTR = "iree_fusions.load_time"
_KEEPER = "__iree_fusions_consteval_keep"


@dataclass
class FoldResult:
    folded: dict[str, int]  # global -> bytes: stacks that now carry their value
    kept: dict[str, tuple[str, int]]  # global -> (why it is built at load time, bytes)

    def keep(self, stored: list[str], symbols: dict[str, ir.Operation], why: str) -> None:
        for g in stored:
            t = symbols[g].attributes["type"].value
            self.kept[g] = (why, h.static_tensor_bytes(t) or 0)

    def note_for(self, pass_name: str) -> str:
        """What became of the stacks of one pass (its globals are named after it:
        `__batch_mlp_towers_stack_1` for batch-mlp-towers); "" if it made none."""
        prefix = "__" + pass_name.replace("-", "_")
        folded = {g: n for g, n in self.folded.items() if g.startswith(prefix)}
        parts = []
        if folded:
            parts.append(f"{len(folded)} stacked constant(s), {sum(folded.values())} bytes, "
                         "evaluated at compile time (their originals, with no other reader, "
                         "are dropped: the weights are held once)")
        by_reason: dict[str, list[int]] = {}
        for g, (why, nbytes) in self.kept.items():
            if g.startswith(prefix):
                by_reason.setdefault(why, []).append(nbytes)
        parts += [f"{len(sizes)} stack(s), {sum(sizes)} bytes, built once at load ({why}): "
                  "one copy in device memory, the sources read once" for why, sizes in
                  by_reason.items()]
        return "; ".join(parts)


def plugin_initializers(module: ir.Operation) -> list[ir.Operation]:
    """The load-time initializers the plugin's passes created in `module`."""
    ops = (op.operation for op in module.regions[0].blocks[0].operations)
    return [op for op in ops if op.name == h.UTIL_INITIALIZER and LOAD_TIME_ATTR in op.attributes]


def _reads_parameters(init: ir.Operation) -> bool:
    return any(h.is_parameter(op.results[0])
               for op in h.walk_ops(init, (h.FLOW_TENSOR_CONSTANT,)))


def fold_initializers(module: ir.Operation,
                      evaluate: Callable[[ir.Operation], ir.Operation | None]) -> FoldResult:
    """Evaluates the plugin's load-time initializers of `module` at compile time.

    `evaluate(small_module)` runs IREE's global-optimization phase on a module and returns
    the result (None if IREE failed). Globals it gave an initial value are set in `module`
    and their initializers erased; the others stay, with the reason."""
    result = FoldResult({}, {})
    inits = plugin_initializers(module)
    if not inits:
        return result
    top = module.regions[0].blocks[0]
    symbols = {op.operation.attributes["sym_name"].value: op.operation
               for op in top.operations if "sym_name" in op.operation.attributes}
    candidates = []
    for init in inits:
        stored = h.stored_globals(init)
        if _reads_parameters(init):
            result.keep(stored, symbols, "from external parameters, known only at load")
        else:
            candidates.append((init, stored))
    if not candidates:
        return result
    small = _small_module(module, symbols, candidates)
    evaluated = evaluate(small)
    values = {} if evaluated is None else _initial_values(evaluated)
    for init, stored in candidates:
        if all(g in values for g in stored):
            for g in stored:
                symbols[g].attributes["initial_value"] = values[g]
                result.folded[g] = h.static_tensor_bytes(values[g].type) or 0
            init.erase()
        else:
            result.keep(stored, symbols, "IREE's const-eval failed" if evaluated is None
                        else "IREE's const-eval did not evaluate it")
    return result


def _small_module(module: ir.Operation, symbols: dict[str, ir.Operation],
                  candidates: list[tuple[ir.Operation, list[str]]]) -> ir.Operation:
    """A module with the target devices, the globals the initializers read and write, the
    initializers, and a public function that keeps the written globals alive."""
    with module.context, ir.Location.unknown():
        small = ir.Module.create()
        for name in h.attr_names(module):
            small.operation.attributes[name] = module.attributes[name]
        needed = [name for name, op in symbols.items() if _is_device_global(op)]
        for init, stored in candidates:
            needed += [g for g in h.loaded_globals(init) + stored if g not in needed]
        body = ir.InsertionPoint(small.body)
        for name in needed:
            symbols[name].clone(body)
        for init, _ in candidates:
            init.clone(body)
        kept = [(g, symbols[g].attributes["type"].value) for _, stored in candidates
                for g in stored]
        keeper = util.FuncOp(_KEEPER, ir.TypeAttr.get(ir.FunctionType.get(
            [], [t for _, t in kept])), ip=body)
        keeper.operation.attributes["sym_visibility"] = ir.StringAttr.get("public")
        with ir.InsertionPoint(keeper.regions[0].blocks.append()):
            util.ReturnOp([util.GlobalLoadOp(t, g).result for g, t in kept])
    return small.operation


def _is_device_global(op: ir.Operation) -> bool:
    return op.name == h.UTIL_GLOBAL and str(op.attributes["type"]).startswith(
        "!hal.device")


def _initial_values(module: ir.Operation) -> dict[str, ir.Attribute]:
    out = {}
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == h.UTIL_GLOBAL and "initial_value" in op.attributes:
            out[op.attributes["sym_name"].value] = op.attributes["initial_value"]
    return out
