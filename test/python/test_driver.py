"""iree-fusions-compile: drop-in equivalence with iree-compile, hook points, failure policy."""

# ruff: noqa: E501  (IR lines in the test programs)

import io
import json
import os
import subprocess

import numpy as np
import pytest
from iree.compiler import ir

import iree_fusions
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.harness.api import CompilerToolError
from iree_fusions.harness.numerics import random_inputs
from iree_fusions.models import bundled_mlir_models
from conftest import CPU_FLAGS, tool

REDUCTION = """
func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> (tensor<8xf32>, tensor<16x8xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %f1 = linalg.fill ins(%cst : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<8x16xf32>) outs(%f1 : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<8x16xf32>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<16x8xf32>
  return %s, %t : tensor<8xf32>, tensor<16x8xf32>
}
"""

TORCH_INPUT = """
func.func @main(%arg0: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32> {
  %0 = torch.aten.relu %arg0 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>
  %1 = torch.aten.tanh %0 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>
  return %1 : !torch.vtensor<[4,8],f32>
}
"""


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, **kw)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("src")
    paths = dict(bundled_mlir_models())
    for name, text in (("reduction", REDUCTION), ("torch_relu_tanh", TORCH_INPUT)):
        p = d / f"{name}.mlir"
        p.write_text(text)
        paths[name] = str(p)
    with ir.Context():  # the same module as MLIR bytecode
        m = ir.Module.parse(REDUCTION)
        buf = io.BytesIO()
        m.operation.write_bytecode(buf)
    p = d / "reduction_bytecode.mlirbc"
    p.write_bytes(buf.getvalue())
    paths["reduction_bytecode"] = str(p)
    return paths


def _flags(name):
    return CPU_FLAGS + (["--iree-input-type=torch"] if name.startswith("torch") else [])


@pytest.mark.parametrize("name", ["reduction", "torch_relu_tanh", "reduction_bytecode",
                                  *bundled_mlir_models()])
def test_fusions_none_matches_iree_compile(sources, tmp_path, name):
    src, flags = sources[name], _flags(name)
    outs = {}
    for label, cmd in (("stock", [tool("iree-compile")]),
                       ("plugin", [tool("iree-fusions-compile"), "--fusions=none"])):
        vmfb, flow = tmp_path / f"{label}.vmfb", tmp_path / f"{label}.flow.mlir"
        assert _run(cmd + [src, *flags, "-o", str(vmfb)]).returncode == 0
        assert _run(cmd + [src, *flags, "--compile-to=flow", "-o", str(flow)]).returncode == 0
        outs[label] = (vmfb.read_bytes(), flow.read_text())
    assert outs["plugin"][1] == outs["stock"][1]  # same flow IR: same dispatches
    assert count_flow_ir(outs["plugin"][1]).total_dispatches >= 1
    assert outs["plugin"][0] == outs["stock"][0]  # the same module, byte for byte
    with open(src, "rb") as f:
        data = f.read()
    inputs = random_inputs(data)
    a = iree_fusions.run(outs["stock"][0], inputs)
    b = iree_fusions.run(outs["plugin"][0], inputs)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_stdin_and_split_input_file(sources, tmp_path):
    text = open(sources["reduction"]).read()
    out = tmp_path / "split.mlir"
    res = _run([tool("iree-fusions-compile"), "-", *CPU_FLAGS, "--split-input-file",
                "--compile-to=input", "--fusions=none", "-o", str(out)],
               input=(text + "\n// -----\n" + text).encode())
    assert res.returncode == 0, res.stderr.decode()
    assert out.read_text().count("func.func @main") + out.read_text().count(
        "util.func public @main") == 2


def test_hook_points_run_linalg_and_flow_passes(sources, support_on_path, tmp_path):
    out, report = tmp_path / "flow.mlir", tmp_path / "report.json"
    res = _run([tool("iree-fusions-compile"), sources["reduction"], *CPU_FLAGS,
                "--fusions-load=support.extra_passes", "--fusions=test-mark,test-mark-flow",
                "--fusions-keep-no-gain", "--compile-to=flow", f"--fusions-report-json={report}", "--fusions-report",
                "-o", str(out)])
    assert res.returncode == 0, res.stderr.decode()
    reports = json.loads(report.read_text())
    assert [r["pass"] for r in reports] == ["test-mark", "test-mark-flow"]
    assert [c["what"] for c in reports[0]["changes"]] == ["marked main"]
    assert "iree_fusions.test_marked" in out.read_text()
    assert "[test-mark] 1 change(s)" in res.stderr.decode()


def test_passes_do_not_run_when_compile_to_is_before_their_hook(sources, support_on_path,
                                                                   tmp_path):
    report = tmp_path / "report.json"
    res = _run([tool("iree-fusions-compile"), sources["reduction"], *CPU_FLAGS,
                "--fusions-load=support.extra_passes", "--fusions=test-mark",
                "--compile-to=preprocessing", f"--fusions-report-json={report}",
                "-o", os.devnull])
    assert res.returncode == 0
    assert json.loads(report.read_text()) == []


def test_compile_from_the_hook_phase_runs_its_passes(sources, support_on_path, tmp_path):
    go = tmp_path / "go.mlir"
    assert _run([tool("iree-compile"), sources["reduction"], *CPU_FLAGS,
                 "--compile-to=global-optimization", "-o", str(go)]).returncode == 0
    out = tmp_path / "out.mlir"
    res = _run([tool("iree-fusions-compile"), str(go), *CPU_FLAGS,
                "--fusions-load=support.extra_passes", "--fusions=test-mark",
                "--fusions-keep-no-gain", "--compile-from=global-optimization", "--compile-to=dispatch-creation",
                "-o", str(out)])
    assert res.returncode == 0, res.stderr.decode()
    assert "iree_fusions.test_marked" in out.read_text()


@pytest.mark.parametrize("broken", ["test-raise", "test-invalid-ir"])
def test_failing_pass_warns_and_keeps_previous_ir(sources, support_on_path, tmp_path, broken):
    vmfb, ref = tmp_path / "a.vmfb", tmp_path / "b.vmfb"
    base = [sources["reduction"], *CPU_FLAGS, "--fusions-load=support.extra_passes"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the reproducer is written there
    res = _run([tool("iree-fusions-compile"), *base, f"--fusions={broken}", "-o", str(vmfb)],
               env=env)
    assert res.returncode == 0
    err = res.stderr.decode()
    assert f"pass '{broken}' failed and was skipped" in err
    assert "reproduce with: iree-fusions-opt" in err
    repro = err.split("reproduce with: ")[1].split()[1]
    assert os.path.exists(repro) and repro.startswith(str(tmp_path))
    assert _run([tool("iree-fusions-compile"), *base, "--fusions=none", "-o",
                 str(ref)]).returncode == 0
    assert vmfb.read_bytes() == ref.read_bytes()
    strict = _run([tool("iree-fusions-compile"), *base, f"--fusions={broken}",
                   "--fusions-strict", "-o", os.devnull], env=env)
    assert strict.returncode == 1
    assert f"pass '{broken}'" in strict.stderr.decode()


def test_python_api_compile_run_compare(sources):
    stock = iree_fusions.compile_file(sources["reduction"], stock=True)
    fused = iree_fusions.compile_file(sources["reduction"], fusions="none")
    assert fused.command[1:3] == ["-m", "iree_fusions.tools.compile_cli"]
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    a = iree_fusions.run(stock.output, [x, w])
    b = iree_fusions.run(fused.output, [x, w])
    np.testing.assert_allclose(a[0], (x @ w).sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a[1], np.exp(x @ w).T, rtol=1e-4)
    assert iree_fusions.compare_outputs(a, b).within(0.0)


def test_python_api_error_carries_the_command():
    with pytest.raises(CompilerToolError) as e:
        iree_fusions.compile_str("func.func @main( {")
    assert "reproduce with:" in str(e.value) and "iree_fusions.tools.compile_cli" in str(e.value)


@pytest.mark.parametrize("name", ["torch_relu_tanh", *bundled_mlir_models()])
def test_counts_of_the_compile_itself_match_a_compile_to_flow(sources, name):
    """--fusions-counts-json (`flow_counts=True`): the one compile yields the same .vmfb as
    without it, and the counts `count_flow_ir` gives for its --compile-to=flow IR."""
    flags = _flags(name)
    counted = iree_fusions.compile_file(sources[name], flags=flags, flow_counts=True)
    plain = iree_fusions.compile_file(sources[name], flags=flags)
    flow = iree_fusions.compile_file(sources[name], flags=flags, compile_to="flow")
    assert counted.output == plain.output
    assert counted.flow_counts == count_flow_ir(flow.output)
    assert counted.flow_counts.total_dispatches >= 1
    with pytest.raises(ValueError, match="flow_counts"):
        iree_fusions.compile_file(sources[name], stock=True, flow_counts=True)


def test_each_pass_is_weighed_on_its_own():
    """Each unsure pass is weighed by the dispatches holding its changes' ops. forward-slices
    on a small RoPE (IREE clones the slices into their reader) leaves those dispatches as
    they were: it is reverted, alone and beside merge-sibling-generics on two returned
    siblings (sure: 2 dispatches -> 1, so the totals drop): another pass's gain does not
    carry a pass whose own dispatches did not change."""
    from iree_fusions.harness import api
    from support.passes import lit_cases

    rope = lit_cases("forward-slices")["rope_decode"]
    siblings = lit_cases("merge-sibling-generics")["returned_siblings"]
    for source, fusions in ((rope, "forward-slices"),
                            (rope + "\n" + siblings, "forward-slices,merge-sibling-generics")):
        out = api.compile_str(source, fusions=fusions, compile_to="flow")
        (report,) = [p for p in out.passes if p.name == "forward-slices"]
        assert not report.changed and any(s.feasible for s in report.skipped)
        assert all("reverted: this pass's changes reduced neither" in s.reason
                   and "unchanged, whatever the other passes gained" in s.reason
                   for s in report.skipped if s.feasible), report.skipped
    assert {p.name for p in out.passes if p.changed} == {"merge-sibling-generics"}
