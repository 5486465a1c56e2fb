"""The numerics harness, output comparison and flow-IR counting that every pass test uses."""

import numpy as np
import pytest

from iree_fusions import api
from iree_fusions.counting import count_flow_ir
from iree_fusions.models import bundled_mlir_models
from iree_fusions.numerics import compare_compilations, function_arg_specs, random_inputs


def test_compare_outputs_semantics():
    a = [np.array([1.0, 2.0, np.nan], np.float32)]
    assert api.compare_outputs(a, [a[0].copy()]).within(0.0)  # NaN == NaN position-wise
    b = [np.array([1.0, 2.5, np.nan], np.float32)]
    agreement = api.compare_outputs(a, b)
    assert agreement.max_abs == pytest.approx(0.5) and agreement.max_rel == pytest.approx(0.25)
    assert not agreement.within(0.1) and agreement.within(0.5)
    one_nan = [np.array([1.0, np.nan, 3.0], np.float32)]
    assert not api.compare_outputs(a, one_nan).within(1e9)
    # Equal infinities agree (half-precision overflow on both sides); opposite ones do not.
    inf = [np.array([np.inf, -np.inf, 1.0], np.float16)]
    assert api.compare_outputs(inf, [inf[0].copy()]).within(0.0)
    assert not api.compare_outputs(inf, [-inf[0]]).within(1e9)
    assert not api.compare_outputs(inf, [np.array([np.inf, 0.0, 1.0], np.float16)]).within(1e9)
    assert not api.compare_outputs(a, [np.zeros(4, np.float32)]).shapes_match
    assert not api.compare_outputs(a, [a[0].astype(np.float64)]).shapes_match
    assert not api.compare_outputs(a, a + a).shapes_match


def test_arg_specs_builtin_and_torch():
    builtin = "func.func @main(%a: tensor<2x3xf32>, %b: tensor<5xi64>) { return }"
    torch = ("func.func @main(%a: !torch.vtensor<[4,2],f16>, %b: !torch.vtensor<[7],si32>)"
             " { return }")
    assert [(s.shape, s.dtype) for s in function_arg_specs(builtin)] == [
        ((2, 3), np.float32), ((5,), np.int64)]
    assert [(s.shape, s.dtype) for s in function_arg_specs(torch)] == [
        ((4, 2), np.float16), ((7,), np.int32)]
    x, idx = random_inputs(builtin, int_high=3)
    assert x.dtype == np.float32 and idx.dtype == np.int64 and idx.max() < 3
    with pytest.raises(ValueError, match="no function @other"):
        function_arg_specs(builtin, "other")


def test_counts_and_bytes_between_dispatches_from_flow_ir():
    path = bundled_mlir_models()["attention_projection_transpose"]
    out = api.compile_file(path, stock=True, compile_to="flow")
    counts = count_flow_ir(out.output)
    # matmul -> (expand_shape) -> transposing bias add: two dispatches, the [128,384] f32
    # matmul result passes between them.
    assert counts.dispatches == {"main": 2}
    assert counts.bytes_between == {"main": 128 * 384 * 4}
    assert counts.initializer_dispatches == 0


def test_compare_compilations_reports_both_sides():
    path = bundled_mlir_models()["attention_projection_transpose"]
    check = compare_compilations(path, fusions="none")
    assert check.agreement.within(0.0)
    assert check.stock_dispatches == check.plugin_dispatches == 2
    assert [a.shape for a in check.plugin] == [(12, 128, 32)]


def test_compare_latency_gives_each_module_its_own_inputs():
    # Two programs of different signatures timed side by side (bench/towers_kernel_bound.py).
    import iree.compiler as ireec

    from iree_fusions.timing import compare_latency

    def module(n_args: int) -> bytes:
        args = ", ".join(f"%a{i}: tensor<4xf32>" for i in range(n_args))
        body = "%a0" if n_args == 1 else "%s"
        add = "" if n_args == 1 else "  %s = arith.addf %a0, %a1 : tensor<4xf32>\n"
        src = (f"func.func @main({args}) -> tensor<4xf32> {{\n{add}"
               f"  return {body} : tensor<4xf32>\n}}")
        return ireec.compile_str(src, target_backends=["llvm-cpu"],
                                 extra_args=["--iree-llvmcpu-target-cpu=host"])

    one, two = module(1), module(2)
    x = np.ones(4, np.float32)
    pair = compare_latency(one, two, [x], plugin_inputs=[x, x], device="local-sync", rounds=2,
                           repetitions=2)
    assert len(pair.stock_rounds) == len(pair.plugin_rounds) == 2 and pair.plugin_ms > 0
    with pytest.raises(RuntimeError, match="benchmark failed"):  # one input for two args
        compare_latency(one, two, [x], device="local-sync", rounds=1, repetitions=1)
