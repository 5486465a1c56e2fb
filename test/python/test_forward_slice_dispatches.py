"""forward-slice-dispatches: the pass only changes which buffer a load reads (the copy, or the
copy's source at the copy's offsets and strides), so every output is bit-identical to stock
IREE's, NaN and infinities included.

- Every lit case is compiled with stock IREE and with the pass (same flow-phase IR, compiled
  from the start: IREE's phases before the plugin's flow hook leave the dispatches as written,
  and the pass's changes in the compile are asserted to be the lit file's), run on the same
  inputs with +inf, -inf and NaN in them (a dynamic dim at a size no lit case names), and
  compared bit for bit; the cases the pass changes compile to fewer dispatches, the declined
  ones to as many. The two cases whose loads are out of bounds are rejected by stock IREE:
  the pass must leave them as invalid as they were (not turn one into a valid module that
  reads other elements).
- The invariant checks of the plan, called on views they must reject (element-count's
  static fractions are implied by the placement rules and own-view-dim: no lit case reaches
  them; its run-time dims are the lit case `other_run_time_dims`).
- Properties: random copies (unit dims dropped, strides, offsets) read through random reshapes
  and parts, the module before and after the pass interpreted with numpy (loads, stores,
  reshapes): every change loads the elements the copy held, and the pass fires on the
  reshapes it is built for (whole dims changed on one side of the sliced ones).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.harness import api
from iree_fusions.harness.numerics import compare_compilations, function_arg_specs
from iree_fusions.passes import forward_slice_dispatches as fsd
from support import passes

PASS = "forward-slice-dispatches"
DYN = ir.ShapedType.get_dynamic_size()

# name -> (copy dispatches the pass folds, dispatches stock IREE makes, the start of the reason
# it declines the case with in the compile, as in the lit file)
EXPECTED = {
    "even_odd_static": (2, 3, None),
    "odd_through_reshape": (1, 2, None),
    "copy_returned": (0, 2, "reader-not-dispatch"),  # util.return, before IREE's ABI
    "mla_rope_split": (1, 2, None),
    "part_of_the_copy": (1, 2, None),
    "split_off_rows": (0, 2, "reshape-splits-slice"),
    "two_unit_dims_one_view_dim": (0, 2, "own-view-dim"),
    "unit_dims_swapped": (0, 2, "view-dim-order"),
    "strided_unit_dim_is_whole": (1, 2, None),
    "other_run_time_dims": (0, 2, "element-count-dims"),
    "run_time_offset": (0, 1, "runtime-slice-dim"),
}
# Loads out of bounds: stock IREE rejects them when it compiles the dispatch.
INVALID = {"part_outside_source": "part-in-source", "reader_outside_copy": "reader-part-in-copy"}
PAGES = 3  # odd_through_reshape: 3 pages of 32 tokens (96 rows); other_run_time_dims: 7


def with_nonfinite(array: np.ndarray) -> np.ndarray:
    """A copy with +inf, -inf and NaN spread over it (every 7th, 11th and 13th element): every
    slice of a case holds some."""
    out = np.array(array, copy=True)
    flat = out.reshape(-1)
    flat[::7], flat[3::11], flat[5::13] = np.inf, -np.inf, np.nan
    return out


def lit_inputs(name: str) -> list:
    """The case's inputs: N(0, 1) with non-finite values; dynamic dims at sizes the lit file
    never names, with the index arguments that size them."""
    rng = np.random.default_rng(len(name))
    text = passes.lit_cases(PASS)[name]
    if name == "odd_through_reshape":
        k = rng.standard_normal((4, 32 * PAGES, 4, 32)).astype(np.float16)
        return [with_nonfinite(k), 32 * PAGES, PAGES]
    if name == "run_time_offset":  # a column offset the compiler never sees
        return [with_nonfinite(rng.standard_normal((4, 16)).astype(np.float32)), 5]
    if name == "other_run_time_dims":
        return [with_nonfinite(rng.standard_normal((4, 7, 64)).astype(np.float32)), 7, 7]
    return [with_nonfinite(rng.standard_normal(spec.shape).astype(spec.dtype))
            for spec in function_arg_specs(text, name)]


def bits(array: np.ndarray) -> np.ndarray:
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def test_lit_cases_are_all_covered():
    assert set(passes.lit_cases(PASS)) == set(EXPECTED) | set(INVALID)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_lit_case_bit_identical_with_nonfinite_inputs(name):
    folded, stock_dispatches, code = EXPECTED[name]
    inputs = lit_inputs(name)
    check = compare_compilations(passes.lit_cases(PASS)[name], inputs, fusions=PASS,
                                 function=name)
    assert check.agreement.shapes_match, check.agreement
    for stock, plugin in zip(check.stock, check.plugin, strict=True):
        assert np.array_equal(bits(stock), bits(plugin)), check.agreement
        # The inputs' non-finite values reach the output (the test is not vacuous).
        assert np.isnan(stock).any() and np.isposinf(np.abs(stock)).any()
    assert len(check.changes()) == folded, check.reports
    skipped = [(s.code, s.reason) for p in check.passes for s in p.skipped]
    assert (code is None) == (not skipped) and all(c == code for c, _ in skipped), skipped
    assert check.stock_dispatches == stock_dispatches
    assert check.plugin_dispatches == stock_dispatches - folded


@pytest.mark.parametrize("name", sorted(INVALID))
def test_out_of_bounds_case_stays_invalid(name):
    text = passes.lit_cases(PASS)[name]
    errors = []
    for options in ({"stock": True}, {"fusions": PASS}):
        with pytest.raises(api.CompilerToolError) as failed:
            api.compile_str(text, **options)
        errors.append(failed.value.stderr)
    assert all("runs out-of-bounds" in e for e in errors), errors
    stock = count_flow_ir(api.compile_str(text, stock=True, compile_to="flow").output)
    plugin = api.compile_str(text, fusions=PASS, compile_to="flow")
    assert [s.code for p in plugin.passes for s in p.skipped] == [INVALID[name]]
    assert count_flow_ir(plugin.output).dispatches == stock.dispatches


# ---------------------------------------------------------------- the checks, called directly

def _plan_parts(text: str):
    """The module (kept alive by the caller's context), its copy and its reshape."""
    module = ir.Module.parse(text)
    ops = [op.operation for op in
           next(iter(module.body.operations)).regions[0].blocks[0].operations]
    copy = fsd.match_copy(next(op for op in ops if op.name == h.FLOW_DISPATCH_WORKGROUPS))
    reshape = next(op for op in ops if op.name == h.FLOW_TENSOR_RESHAPE)
    return module, copy, reshape


def test_element_count_rejects_the_old_view():
    """The view the pass built before the check (4x5x64 for a 4x3x5x64 source) fails
    element-count; the right one (4x15x64 would not be a placement, but has the count)
    passes."""
    with ir.Context():
        _module, copy, reshape = _plan_parts(passes.lit_cases(PASS)["two_unit_dims_one_view_dim"])
        with pytest.raises(NoMatch, match=r"^the widened view \[4, 5, 64\] has 5 times") as failed:
            fsd.check_element_count(copy, reshape, [4, 5, 64])
        assert failed.value.code == "element-count"
        fsd.check_element_count(copy, reshape, [4, 15, 64])


def test_own_view_dim_and_order_on_placements():
    """Placements of the repro's two sliced dims: on one view dim (own-view-dim), swapped
    (view-dim-order); on a split, a dim inside another's span is its too."""
    one, two = fsd.ViewSlice(3, 1, 1, 1), fsd.ViewSlice(5, 2, 1, 2)
    with pytest.raises(NoMatch, match="^sliced dims 1 and 2 both become dim 1") as failed:
        fsd.check_own_view_dims([(1, one), (1, two)], [4, 1, 64])
    assert failed.value.code == "own-view-dim"
    with pytest.raises(NoMatch) as failed:
        fsd.check_own_view_dims([(0, fsd.ViewSlice(3, 1, 1, 1, span=2)), (1, two)], [1, 1, 4])
    assert failed.value.code == "own-view-dim"
    fsd.check_own_view_dims([(1, one), (2, two)], [4, 1, 1, 64])
    with pytest.raises(NoMatch, match="^sliced dims 1 and 2 become dims 2 and 1") as failed:
        fsd.check_view_order([(2, one), (1, two)], [4, 1, 1, 64])
    assert failed.value.code == "view-dim-order"
    fsd.check_view_order([(1, one), (2, two)], [4, 1, 1, 64])


def test_split_placement():
    """MLA's rope columns [512, 576) of 576, viewed as 1x32x2: the sliced dim becomes view dims
    2-4, the first widened to the 9 rows of 64 of the source, the part starting at row 8."""
    with ir.Context():
        _module, copy, reshape = _plan_parts(passes.lit_cases(PASS)["mla_rope_split"])
        placed = fsd.reshaped_slices(copy, reshape)
        assert placed == [(2, fsd.ViewSlice(9, 8, 1, 2, 3))]
        fsd.check_own_view_dims(placed, [4, 1, 1, 32, 2])
        fsd.check_element_count(copy, reshape, [4, 1, 9, 32, 2])


# ---------------------------------------------------------------- properties

def _tensor(shape: list[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _binding(shape: list[int], mode: str) -> str:
    return f"!iree_tensor_ext.dispatch.tensor<{mode}:{_tensor(shape)}>"


def _dispatch(name: str, operand: str, source: list[int], part, result: list[int]) -> str:
    """A dispatch that loads `part` ((offset, size, stride) per dim) of its operand and
    stores it whole."""
    offsets, sizes, strides = ([p[i] for p in part] for i in range(3))
    return f"""  %{name} = flow.dispatch.workgroups(%{operand}) : ({_tensor(source)}) -> {_tensor(result)} =
      (%a: {_binding(source, 'readonly')}, %o: {_binding(result, 'writeonly')}) {{
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = {offsets}, sizes = {sizes}, strides = {strides} : {_binding(source, 'readonly')} -> {_tensor(result)}
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = {[0] * len(result)}, sizes = {result}, strides = {[1] * len(result)} : {_tensor(result)} -> {_binding(result, 'writeonly')}
    flow.return
  }}
"""


def case_ir(source, part, copied, view, read) -> str:
    """A copy of `part` of the source (its result `copied`: the part's sizes, some unit dims
    dropped), reshaped to `view`, read (`read`: a part of the view) by a dispatch; with
    view None, read directly."""
    out = [p[1] for p in read]
    operand = "c" if view is None else "view"
    reshape = "" if view is None else \
        f"  %view = flow.tensor.reshape %c : {_tensor(copied)} -> {_tensor(view)}\n"
    return (f"util.func public @case(%x: {_tensor(source)}) -> {_tensor(out)} {{\n"
            + _dispatch("c", "x", source, part, copied) + reshape
            + _dispatch("r", operand, copied if view is None else view, read, out)
            + f"  util.return %r : {_tensor(out)}\n}}\n")


class Invalid(Exception):
    """The module is not valid: a load out of bounds, a reshape that changes the count."""


def _load(bound: np.ndarray, load: ir.Operation) -> np.ndarray:
    offsets, sizes, strides = (h.i64_array(load, f"static_{n}")
                               for n in ("offsets", "sizes", "strides"))
    if len(offsets) != bound.ndim:
        raise Invalid(f"a rank-{len(offsets)} load of a rank-{bound.ndim} tensor")
    for o, n, s, extent in zip(offsets, sizes, strides, bound.shape):
        if o < 0 or n < 1 or s < 1 or o + (n - 1) * s >= extent:
            raise Invalid(f"load {offsets} {sizes} {strides} of {bound.shape}")
    part = bound[tuple(slice(o, o + (n - 1) * s + 1, s)
                       for o, n, s in zip(offsets, sizes, strides))]
    return part.reshape(list(load.results[0].type.shape))


def interpret(text: str, x: np.ndarray) -> np.ndarray:
    """Runs a module of flow.dispatch.workgroups that load and store (static shapes) and
    flow.tensor.reshape ops on `x`, with numpy. Raises Invalid for an invalid module."""
    with ir.Context():
        module = ir.Module.parse(text)
        if not module.operation.verify():
            raise Invalid("the module does not verify")
        body = next(iter(module.body.operations)).regions[0].blocks[0]
        values = {body.arguments[0]: x}
        for op in (o.operation for o in body.operations):
            if op.name == h.FLOW_TENSOR_RESHAPE:
                shape = list(op.results[0].type.shape)
                if math.prod(shape) != values[op.operands[0]].size:
                    raise Invalid(f"reshape of {values[op.operands[0]].shape} to {shape}")
                values[op.results[0]] = values[op.operands[0]].reshape(shape)
            elif op.name == h.FLOW_DISPATCH_WORKGROUPS:
                seg = h.segment_sizes(op)
                block = op.regions[0].blocks[0]
                inner = {block.arguments[i]: values[op.operands[seg[0] + i]]
                         for i in range(seg[1])}
                for inner_op in (o.operation for o in block.operations):
                    if inner_op.name == h.DISPATCH_TENSOR_LOAD:
                        inner[inner_op.results[0]] = _load(inner[inner_op.operands[0]], inner_op)
                    elif inner_op.name == h.DISPATCH_TENSOR_STORE:
                        values[op.results[0]] = inner[inner_op.operands[0]].reshape(
                            list(op.results[0].type.shape))
            elif op.name == "util.return":
                return values[op.operands[0]]
    raise AssertionError("no util.return")


def _whole(part: tuple[int, int, int], extent: int) -> bool:
    """The part is the whole dim (a unit dim loaded at 0 is, whatever its stride)."""
    return part[:2] == (0, extent) and (part[2] == 1 or extent == 1)


def _part(rng: random.Random, extent: int, whole: float) -> tuple[int, int, int]:
    if rng.random() < whole:
        return (0, extent, 1)
    stride = rng.choice([1, 1, 2])
    size = 1 if rng.random() < 0.5 else rng.randint(1, (extent - 1) // stride + 1)
    return (rng.randint(0, extent - 1 - (size - 1) * stride), size, stride)


def _reshape_dims(rng: random.Random, dims: list[int], steps: int) -> list[int]:
    """`dims` reshaped by a few random steps: a unit dim added or removed, two neighbours
    merged, one split."""
    dims = list(dims)
    for _ in range(steps):
        k = rng.random()
        if k < 0.3:
            dims.insert(rng.randint(0, len(dims)), 1)
        elif k < 0.5 and 1 in dims:
            dims.remove(1)
        elif k < 0.75 and len(dims) > 1:
            i = rng.randint(0, len(dims) - 2)
            dims[i:i + 2] = [dims[i] * dims[i + 1]]
        elif dims:
            i = rng.randint(0, len(dims) - 1)
            a = rng.choice([f for f in range(1, dims[i] + 1) if dims[i] % f == 0])
            dims[i:i + 1] = [a, dims[i] // a]
    return dims


def random_case(rng: random.Random, foldable: bool):
    """(source, part, copied, view, read): a random copy and its reader. `foldable`: the view
    changes the whole dims on one side of the sliced ones only (the reshapes the pass is
    built for, e.g. prefill's pages; after them only where no sliced dim is a unit dim);
    else anything (unit dims moved, sliced dims merged)."""
    source = [rng.choice([1, 1, 2, 3, 4, 5]) for _ in range(rng.randint(1, 6))]
    part = [_part(rng, e, 0.4) for e in source]
    if all(_whole(p, e) for p, e in zip(part, source)):
        d = max(range(len(source)), key=lambda d: source[d])
        source[d] = max(source[d], 2)
        part[d] = (source[d] - 1, 1, 1)
    shape = [p[1] for p in part]
    copied = [n for n in shape if n != 1 or rng.random() < 0.5] or [1]
    if rng.random() < 0.2:
        view = None
    elif foldable:
        sliced = [d for d, (p, e) in enumerate(zip(part, source)) if not _whole(p, e)]
        first, last = sliced[0], sliced[-1] + 1
        # After the sliced dims, sliced unit dims could be placed on one unit dim of the view
        # (each dim is placed on its own: the first rule that fits, by its tail or its head).
        if rng.random() < 0.5 or any(shape[d] == 1 for d in sliced):
            view = _reshape_dims(rng, shape[:first], 3) + shape[first:]
        else:
            view = shape[:last] + _reshape_dims(rng, shape[last:], 3)
        view = view or [1]
    else:
        view = _reshape_dims(rng, copied, rng.randint(0, 3)) or [1]
    read = [_part(rng, e, 0.5) for e in (copied if view is None else view)]
    return source, part, copied, view, read


def _fold_and_compare(case) -> bool:
    """The pass on the case: True if it changed it, the changed module computing what the
    original does (asserted); else the module is the same."""
    text = case_ir(*case)
    x = np.arange(math.prod(case[0]), dtype=np.float32).reshape(case[0])
    want = interpret(text, x)
    out, reports = passes.run_pass(text, PASS)
    copy_changed = any(c.location.endswith(":2:8") for c in reports[0].changes)
    if copy_changed:
        assert np.array_equal(interpret(out, x), want), (case, out)
    return copy_changed


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_property_any_reshape_sound_or_declined(rng):
    _fold_and_compare(random_case(rng, foldable=False))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_property_one_sided_reshape_folds(rng):
    case = random_case(rng, foldable=True)
    assert _fold_and_compare(case), case


@pytest.mark.parametrize("case", [
    # a stride-2 copy read from its second element (offset 1 * stride 2), and every other
    # one of it (stride 2 * 2)
    ([5, 4], [(0, 3, 2), (0, 4, 1)], [3, 4], None, [(1, 2, 1), (1, 2, 1)]),
    ([7, 4], [(1, 3, 2), (0, 4, 1)], [3, 4], None, [(0, 2, 2), (0, 4, 1)]),
    ([9, 2], [(2, 3, 3), (1, 1, 1)], [3], None, [(1, 2, 1)]),  # a unit dim dropped
    # through a reshape of the whole dims before it: its view dim read from offset 1
    ([2, 3, 6], [(0, 2, 1), (0, 3, 1), (1, 2, 2)], [2, 3, 2], [6, 2], [(1, 3, 1), (1, 1, 1)]),
    ([2, 3, 7], [(0, 2, 1), (0, 3, 1), (0, 3, 3)], [2, 3, 3], [6, 3], [(1, 5, 1), (0, 2, 2)]),
], ids=["offset", "stride", "dropped-unit-dim", "reshaped-offset", "reshaped-stride"])
def test_strided_copies_read_at_offsets_fold_exactly(case):
    """The reader's part of a strided copy's part, composed: offset = the copy's offset + the
    reader's offset x the copy's stride, stride = their product (random cases seldom give a
    strided copy read at an offset)."""
    assert _fold_and_compare(case), case


# ---------------------------------------------------------------- declines, each at its check

def _decline_case(result=(4, 8), store="[0, 0], sizes = [4, 8], strides = [1, 1]",
                  read="[0, 0], sizes = [4, 8], strides = [1, 1]", tied=False) -> str:
    """A copy of the odd columns of a 4x16 source (its result `result`, the loaded 4x8 stored
    at `store`'s offsets, sizes and strides) read by a second dispatch (its load of the copy at
    `read`; `tied`: the copy is the operand it writes in place)."""
    src, copied = _binding([4, 16], "readonly"), _tensor(list(result))
    out, dst = _binding(list(result), "writeonly"), _binding([4, 8], "writeonly")
    reader = (f"(%c, %i) : ({copied}, index) -> %c =\n"
              f"      (%b: {_binding(list(result), 'readwrite')}, %j: index) {{") if tied else \
        (f"(%c, %i) : ({copied}, index) -> tensor<4x8xf32> =\n"
         f"      (%b: {_binding(list(result), 'readonly')}, %j: index, %p: {dst}) {{")
    target = (f"%b, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : tensor<4x8xf32> -> "
              f"{_binding(list(result), 'readwrite')}") if tied else \
        f"%p, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : tensor<4x8xf32> -> {dst}"
    returned = copied if tied else "tensor<4x8xf32>"
    return f"""util.func public @case(%x: tensor<4x16xf32>, %i: index) -> {returned} {{
  %c = flow.dispatch.workgroups(%x) : (tensor<4x16xf32>) -> {copied} =
      (%a: {src}, %o: {out}) {{
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 1], sizes = [4, 8], strides = [1, 2] : {src} -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = {store} : tensor<4x8xf32> -> {out}
    flow.return
  }}
  %r = flow.dispatch.workgroups{reader}
    %w = iree_tensor_ext.dispatch.tensor.load %b, offsets = {read} : {_binding(list(result), 'readwrite' if tied else 'readonly')} -> tensor<4x8xf32>
    %n = arith.negf %w : tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %n, {target}
    flow.return
  }}
  util.return %r : {returned}
}}
"""


@pytest.mark.parametrize("kwargs, reason", [
    ({}, None),  # the case as built: folded
    ({"result": (8, 8), "store": "[4, 0], sizes = [4, 8], strides = [1, 1]"},
     "a copy that writes part of its result"),
    ({"result": (8, 8), "store": "[0, 0], sizes = [4, 8], strides = [2, 1]"},
     "a copy that writes part of its result"),
    ({"result": (8, 8)}, "a copy that writes part of its result"),  # rows 4-7 unwritten
    # every element's size, written out of bounds (invalid: left as invalid as it was)
    ({"store": "[1, 0], sizes = [4, 8], strides = [1, 1]"}, "a copy that writes part of its result"),
    ({"store": "[0, 0], sizes = [4, 8], strides = [2, 1]"}, "a copy that writes part of its result"),
    ({"read": "[0, %j], sizes = [4, 8], strides = [1, 1]"},
     "a reading dispatch loads it at offsets known only at run time"),
    ({"read": "[0, 0], sizes = [4, 8], strides = [1, %j]"},
     "a reading dispatch loads it at offsets known only at run time"),
    ({"tied": True}, "read by a dispatch operand tied to its result"),
])
def test_declines_at_the_check_that_fails(kwargs, reason):
    """Each check of match_copy and find_reads on a case that fails it alone: the pass leaves
    the module as it was and reports that check's reason; the case as built folds."""
    text = _decline_case(**kwargs)
    out, reports = passes.run_pass(text, PASS)
    (report,) = reports
    if reason is None:
        assert [c.what for c in report.changes] and not report.skipped
        return
    assert not report.changes and [s.reason[:len(reason)] for s in report.skipped] == [reason]
    with ir.Context():
        assert out == str(ir.Module.parse(text))


def test_a_reader_that_passes_the_copy_on_is_declined():
    """A reading dispatch whose binding has a user other than a load (an op of another
    dialect, which could read it anywhere): find_reads declines."""
    from iree_fusions.passes.forward_slice_dispatches.match import find_reads

    text = _decline_case().replace(
        "    %n = arith.negf %w", '    "test.pass_on"(%b) : (' +
        _binding([4, 8], "readonly") + ") -> ()\n    %n = arith.negf %w")
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        ops = [op.operation for op in
               next(iter(module.body.operations)).regions[0].blocks[0].operations]
        copy = fsd.match_copy(ops[0])
        with pytest.raises(NoMatch, match="loads it at offsets known only at run time, or "
                           "passes it on"):
            find_reads(copy)


DYNAMIC_DIMS = """util.func public @case(%x: tensor<2x?x8x?xf32>, %n: index, %k: index, %k3: index,
                           %t: index, %m: index) -> tensor<2x?x4x?x?xf32> {
  %c = flow.dispatch.workgroups(%x, %n, %k) : (tensor<2x?x8x?xf32>{%n, %k}, index, index) -> tensor<2x?x4x?xf32>{%n, %k} =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x?x8x?xf32>>, %an: index, %ak: index, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x?x4x?xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 1, 0], sizes = [2, %an, 4, %ak], strides = [1, 1, 2, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x?x8x?xf32>>{%an, %ak} -> tensor<2x?x4x?xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0, 0, 0], sizes = [2, %an, 4, %ak], strides = [1, 1, 1, 1] : tensor<2x?x4x?xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x?x4x?xf32>>{%an, %ak}
    flow.return
  }
  %view = flow.tensor.reshape %c : tensor<2x?x4x?xf32>{%n, %k} -> tensor<2x?x4x?x?xf32>{ROWS, %k3, %t}
  %r = flow.dispatch.workgroups(%view, ROWS, %k3, %t) : (tensor<2x?x4x?x?xf32>{ROWS, %k3, %t}, index, index, index) -> tensor<2x?x4x?x?xf32>{ROWS, %k3, %t} =
      (%b: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x?x4x?x?xf32>>, %bn: index, %bk: index, %bt: index, %p: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x?x4x?x?xf32>>) {
    %w = iree_tensor_ext.dispatch.tensor.load %b, offsets = [0, 0, 0, 0, 0], sizes = [2, %bn, 4, %bk, %bt], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x?x4x?x?xf32>>{%bn, %bk, %bt} -> tensor<2x?x4x?x?xf32>
    iree_tensor_ext.dispatch.tensor.store %w, %p, offsets = [0, 0, 0, 0, 0], sizes = [2, %bn, 4, %bk, %bt], strides = [1, 1, 1, 1, 1] : tensor<2x?x4x?x?xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x?x4x?x?xf32>>{%bn, %bk, %bt}
    flow.return
  }
  util.return %r : tensor<2x?x4x?x?xf32>
}
"""


@pytest.mark.parametrize("rows, folds", [("%n", True), ("%m", False)])
def test_run_time_dims_before_the_sliced_dim_are_compared_not_those_after(rows, folds):
    """A copy of rows 1, 3, 5, 7 of dim 2 of a [2, ?, 8, ?] source, its last dim split by the
    reshape (whole dims after the sliced one: run-time sizes %k -> %k3 x %t, so the reshape
    has more run-time dims than its source). Dim 2 keeps its
    place when the run-time dim before it is the same value on both sides (%n): placed, the
    view widened to 8 rows, folded; another value (%m) is not proven the same: declined."""
    with ir.Context():
        _module, copy, reshape = _plan_parts(DYNAMIC_DIMS.replace("ROWS", rows))
        if folds:
            assert fsd.reshaped_slices(copy, reshape) == [(2, fsd.ViewSlice(8, 1, 2, 2))]
            (read,) = fsd.plan_fold(copy).reads
            assert read.wide == [2, DYN, 8, DYN, DYN]
        else:
            with pytest.raises(NoMatch, match=r"the reshape to \[2, -\d+, 4, -\d+, -\d+\] moves "
                               "sliced dim 2"):
                fsd.reshaped_slices(copy, reshape)
    out, reports = passes.run_pass(DYNAMIC_DIMS.replace("ROWS", rows), PASS)
    assert bool(reports[0].changes) is folds


@pytest.mark.parametrize("case, reason", [
    # the sliced dim split with a whole dim after it (576 -> its rows [512, 576) as 2 x 32)
    (([4, 576, 2], [(0, 4, 1), (512, 64, 1), (0, 2, 1)], [4, 64, 2], [4, 2, 32, 2],
      [(0, 4, 1), (1, 1, 1), (3, 8, 2), (0, 2, 1)]), None),
    # the dims before the sliced one differ, and so do those after: moved, not split
    (([4, 6], [(0, 4, 1), (0, 3, 2)], [4, 3], [3, 4], [(0, 3, 1), (1, 2, 1)]),
     "the reshape to [3, 4] moves sliced dim 1"),
    # the dims before it the same, those after not: moved, not split
    (([4, 8, 6], [(0, 4, 1), (0, 4, 2), (0, 6, 1)], [4, 4, 6], [4, 2, 12],
      [(0, 4, 1), (0, 2, 1), (0, 12, 1)]), "the reshape to [4, 2, 12] moves sliced dim 1"),
    # split where the part is not whole rows of the split
    (([4, 8], [(0, 4, 1), (1, 4, 1)], [4, 4], [4, 2, 2], [(0, 4, 1), (0, 2, 1), (0, 2, 1)]),
     "the reshape to [4, 2, 2] splits sliced dim 1 where the slice does not fall on whole rows "
     "of the split"),
], ids=["split-before-a-whole-dim", "moved", "moved-after", "split-off-rows"])
def test_reshape_placements_fold_or_decline_with_their_reason(case, reason):
    text = case_ir(*case)
    if reason is None:
        assert _fold_and_compare(case), case
        return
    _out, (report,) = passes.run_pass(text, PASS)
    assert not report.changes  # (the reader, a copy too, read by util.return: skipped)
    assert [s.reason for s in report.skipped if s.location.endswith(":2:8")] == [reason]


@pytest.mark.parametrize("part, extent, inside", [
    ((0, 4, 1), 4, True), ((1, 4, 1), 4, False),  # ends at the extent / one past it
    ((0, 2, 3), 4, True), ((1, 2, 3), 4, False), ((0, 2, 3), 3, False),  # strided: 0, 3
    ((2, 1, 5), 3, True), ((3, 1, 1), 3, False),  # one element: its stride unread
    ((3, DYN, 1), 4, True), ((4, DYN, 1), 4, False),  # a run-time size: its start only
    ((-1, 1, 1), 4, False), ((0, 1, 0), 4, False), ((0, 0, 1), 4, False),
])
def test_a_part_is_inside_its_extent_to_the_last_element(part, extent, inside):
    """part-in-source and reader-part-in-copy's bound: the part's first and last elements
    (offset + (size - 1) x stride) in [0, extent); a size of 0, a stride below 1 are not."""
    from iree_fusions.passes.forward_slice_dispatches.plan import _inside

    assert _inside(*part, extent) is inside


def test_a_copy_of_the_whole_source_is_not_a_slice_and_not_reported():
    """A copy dispatch of its whole operand (IREE makes them for other reasons): neither
    changed nor reported as a skipped slice."""
    text = case_ir([4, 6], [(0, 4, 1), (0, 6, 1)], [4, 6], None, [(0, 4, 1), (0, 6, 1)])
    out, (report,) = passes.run_pass(text, PASS)
    assert not report.changes and not report.skipped, report
