"""Parameterized models through the bench and bundles (issue 19, item 6): weights read from an
external parameter file (.irpa) at run time, as `iree-run-module --parameters=scope=FILE`.

The model is the `parameter_weights` case of test/passes/batch-mlp-towers-parameters.mlir (two
towers whose first-layer weights are `#flow.parameter.named<"model"::"w0">` / `"w1"`): with
`stack-parameters=true` the plugin stacks the two parameters at load time, so the runs only work
when the file is read (by default it leaves them alone: the stack would be a second resident
copy)."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import tool
from iree_fusions.runtime.benchmark import resident_mib
from iree_fusions.runtime.manifest import BundleError, load_manifest
from iree_fusions.runtime.modules import parameter_flags, parse_parameters
from iree_fusions.models.catalog import torch_available
from support import passes

STACKED = "--fusions=batch-mlp-towers{stack-parameters=true}"
QUICK = ["--rounds=1", "--max-rounds=1", "--repetitions=2"]  # a timing, no verdict: fast


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(folder, model.mlir, w.irpa): the lit case as @main, its two weights in an .irpa."""
    import iree.runtime as rt

    folder = tmp_path_factory.mktemp("params")
    text = passes.lit_cases("batch-mlp-towers-parameters")["parameter_weights"]
    path = folder / "model.mlir"
    path.write_text(text.replace("@parameter_weights", "@main"))
    rng = np.random.default_rng(3)
    rt.save_archive_file({name: rng.standard_normal((8, 16)).astype(np.float32)
                          for name in ("w0", "w1")}, str(folder / "w.irpa"))
    return folder, str(path), str(folder / "w.irpa")


def _bench(*args, cwd=None):
    res = subprocess.run([tool("iree-fusions-bench"), *args], capture_output=True, text=True,
                         cwd=cwd)
    assert "Traceback" not in res.stderr, res.stderr
    return res


def test_parse_parameters():
    assert parse_parameters(["model=a.irpa", "b.gguf"]) == {
        "model": "a.irpa", "": "b.gguf"}
    assert parameter_flags({"model": "a.irpa", "": "b.gguf"}) == [
        "--parameters=model=a.irpa", "--parameters=b.gguf"]
    for bad in (["model="], ["model=a.irpa", "model=b.irpa"]):
        with pytest.raises(ValueError):
            parse_parameters(bad)


def test_bench_runs_a_model_file_with_its_parameters(model, tmp_path):
    folder, path, irpa = model
    rows_path = tmp_path / "rows.json"
    res = _bench(path, f"--parameters=model={irpa}", STACKED,
                 *QUICK, f"--json={rows_path}")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(rows_path.read_text())
    assert row["ok"] and row["max_abs"] == 0.0, row
    assert row["parameter_bytes"] == os.path.getsize(irpa)
    # The plugin stacked the two parameters at load time: fewer dispatches per call.
    assert row["plugin_dispatches"] < row["stock_dispatches"], row
    assert row["stock_ms"] > 0 and row["plugin_load_ms"] > 0


def test_bench_without_the_parameter_file_says_what_is_missing(model):
    _, path, _ = model
    res = _bench(path, STACKED, "--rounds=0")
    assert res.returncode == 1
    assert "reads external parameters" in res.stdout and "--parameters=SCOPE=FILE" in res.stdout


def test_bundle_carries_the_parameter_file(model, tmp_path):
    """Exported with --parameters, the bundle holds the file and runs where the original
    is gone; the runner's --parameters replaces the bundle's file for that scope."""
    folder, path, irpa = model
    bundle = tmp_path / "bundle"
    res = _bench(path, f"--parameters=model={irpa}", STACKED,
                 "--export", str(bundle))
    assert res.returncode == 0, res.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    (entry,) = manifest["models"]
    assert entry["parameters"] == {"model": "parameters-model.irpa"}
    held = bundle / entry["dir"] / "parameters-model.irpa"
    assert held.read_bytes() == open(irpa, "rb").read()

    moved = tmp_path / "elsewhere"
    shutil.copytree(bundle, moved)
    runner = str(moved / "run_bundle.py")
    rows_path = tmp_path / "rows.json"
    res = subprocess.run([sys.executable, runner, *QUICK, f"--json={rows_path}"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(rows_path.read_text())
    assert row["ok"] and row["max_abs"] == 0.0 and row["stock_ms"] > 0, row

    res = subprocess.run([sys.executable, runner, "--rounds=0",
                          f"--parameters=model={tmp_path / 'missing.irpa'}"],
                         capture_output=True, text=True)
    assert res.returncode == 1 and "missing.irpa" in res.stdout, res.stdout + res.stderr


def test_manifest_parameter_paths_stay_inside_the_bundle(model, tmp_path):
    _, path, irpa = model
    bundle = tmp_path / "bundle"
    assert _bench(path, f"--parameters=model={irpa}", STACKED,
                  "--export", str(bundle)).returncode == 0
    manifest_path = bundle / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["models"][0]["parameters"] = {"model": "../../w.irpa"}
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="parameters"):
        load_manifest(str(bundle))


def test_a_form_needs_a_pytorch_model():
    # Refused before any work, in one line (issue 34: a form a model lacks).
    res = _bench("attention_projection_transpose", "--form=params", "--rounds=0")
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "iree-fusions-bench: error: attention_projection_transpose is IR only: it has the "
        "static form alone (--form params needs a PyTorch model)"], res.stderr


@pytest.mark.skipif(not torch_available(), reason="needs torch")
def test_bench_form_params_exports_and_reads_an_irpa(tmp_path):
    """`--form params`: the catalog model exported by iree-turbine with its weights in an
    .irpa file; both builds read it, agree bit for bit and match PyTorch."""
    pytest.importorskip("iree.turbine")  # the params form's exporter (extra `turbine`)
    rows_path = tmp_path / "rows.json"
    res = _bench("towers-silu-b1", "--form=params", STACKED, "--rounds=0", f"--json={rows_path}")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(rows_path.read_text())
    assert row["form"] == "params" and row["parameter_bytes"] > 100_000, row
    assert row["ok"] and row["max_abs"] == 0.0 and row["reference_max_abs"] <= 1e-5, row
    assert row["plugin_dispatches"] < row["stock_dispatches"]
    assert "towers-silu-b1@params" in res.stdout


def test_resident_mib_counts_the_weights_held(tmp_path):
    """A module reading a 16 MiB parameter holds at least the 15 MiB of weights more than one
    reading a 1 MiB parameter (the runtime loads a parameter whole on llvm-cpu, and the matmul
    reads every element), and the probe says so. Only that lower bound, set by the data: what
    else a process holds (allocator, libraries) is the machine's, so no upper bound."""
    import iree.runtime as rt

    from iree_fusions.harness import api

    def module(n: int) -> str:
        return f"""
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<{n}x{n}xf32>
func.func @main(%x: tensor<1x{n}xf32>) -> tensor<1x{n}xf32> {{
  %w = util.global.load @w : tensor<{n}x{n}xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x{n}xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x{n}xf32>) -> tensor<1x{n}xf32>
  %m = linalg.matmul ins(%x, %w : tensor<1x{n}xf32>, tensor<{n}x{n}xf32>)
                     outs(%f : tensor<1x{n}xf32>) -> tensor<1x{n}xf32>
  return %m : tensor<1x{n}xf32>
}}"""

    held = {}
    for n in (2048, 512):
        irpa = str(tmp_path / f"w{n}.irpa")
        rt.save_archive_file({"w": np.ones((n, n), np.float32)}, irpa)
        np.save(tmp_path / f"x{n}.npy", np.ones((1, n), np.float32))
        vmfb = tmp_path / f"m{n}.vmfb"
        vmfb.write_bytes(api.compile_str(module(n), stock=True).output)
        held[n] = resident_mib(
            str(vmfb), "local-sync", function="main", input_paths=[str(tmp_path / f"x{n}.npy")],
            parameters={"model": irpa})
    assert held[2048] is not None and held[512] is not None, held
    weights_mib = (2048 * 2048 - 512 * 512) * 4 / 2**20  # 15 MiB
    assert held[2048] - held[512] >= 0.9 * weights_mib, held  # pages of 4 KiB: rounding only

