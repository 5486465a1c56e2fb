"""Bundles: `iree-fusions-bench --export DIR` here, `--from DIR` (or run_bundle.py) anywhere
the IREE runtime and numpy are installed, without iree.compiler or torch."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ROOT, tool
from iree_fusions.harness.bundle import runtime_files
from iree_fusions.runtime import machine
from iree_fusions.runtime.machine import cpu_info
from iree_fusions.runtime.manifest import FORMAT, load_manifest
from iree_fusions.runtime.run import failure_hint, run_model
from iree_fusions.models.catalog import torch_available

FUSIONS = "interchange-permuted-consumers,batch-gathers"
# The bundled model needs nothing; the DLRM part brings PyTorch reference outputs.
MODELS = ["attention_projection_transpose"] + (["dlrm-sparse-b8"] if torch_available() else [])
QUICK = ["--rounds=1", "--max-rounds=1", "--repetitions=2"]  # a timing, no verdict: fast


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert "Traceback" not in res.stderr, res.stderr
    return res


@pytest.fixture(scope="module")
def export_run(tmp_path_factory):
    """`iree-fusions-bench MODELS --export DIR`: (DIR, the finished process)."""
    folder = tmp_path_factory.mktemp("bundle") / "b"
    res = _run([tool("iree-fusions-bench"), *MODELS, f"--fusions={FUSIONS}",
                "--export", str(folder)])
    assert res.returncode == 0, res.stderr
    assert "bundle written to" in res.stderr and "run_bundle.py" in res.stderr
    return str(folder), res


@pytest.fixture(scope="module")
def bundle(export_run):
    return export_run[0]


@pytest.mark.skipif(not torch_available(), reason="needs torch")
def test_bench_output_of_a_torch_model_is_clean(export_run):
    """Only the tool's progress on stderr: torch.export's internal FutureWarning is gone."""
    _, res = export_run
    assert "LeafSpec" not in res.stderr and "Warning" not in res.stderr
    assert "dlrm-sparse-b8: compiling" in res.stderr and "dlrm-sparse-b8" in res.stdout


def test_export_writes_a_self_contained_bundle(bundle):
    manifest = json.loads(open(os.path.join(bundle, "manifest.json")).read())
    assert manifest["format"] == FORMAT
    assert manifest["device"] == "local-task" and manifest["fusions"] == FUSIONS
    assert manifest["tool_versions"]["iree-base-compiler"].startswith("3.13")
    # Where it was made: the exporting CPU, and per model the target IREE resolved.
    assert manifest["exported_on"] == cpu_info()
    assert [m["name"] for m in manifest["models"]] == MODELS
    attn = manifest["models"][0]
    assert attn["stock"]["dispatches"] == 2 and attn["plugin"]["dispatches"] == 1
    assert attn["stock"]["bytes_between"] > attn["plugin"]["bytes_between"]
    assert "--iree-hal-target-device=local" in attn["stock"]["flags"]
    assert f"--fusions={FUSIONS}" in attn["plugin"]["flags"]
    assert attn["plugin"]["changes"]
    cpu = os.environ["IREE_FUSIONS_CPU"]  # conftest: --cpu, host by default
    assert attn["compiled_for"]["target"].startswith("llvm-cpu:")
    assert cpu == "host" or attn["compiled_for"]["target"] == f"llvm-cpu:{cpu}"
    assert attn["compiled_for"]["native_vector_size"] in (16, 32, 64)
    here = os.path.join(bundle, attn["dir"])
    for name in ["stock.vmfb", "plugin.vmfb", *attn["inputs"]]:
        assert os.path.getsize(os.path.join(here, name)) > 0
    # the runner shipped in the bundle is this package's runtime, byte for byte
    shipped = sorted(os.listdir(os.path.join(bundle, "runtime")))
    assert shipped == sorted(os.path.basename(p) for p in runtime_files())
    assert {"__main__.py", "statistics.py", "manifest.py"} <= set(shipped)
    for path in runtime_files():
        with open(os.path.join(bundle, "runtime", os.path.basename(path))) as a, \
                open(path) as b:
            assert a.read() == b.read()
    assert os.path.isfile(os.path.join(bundle, "run_bundle.py"))
    if len(MODELS) > 1:  # PyTorch model: reference outputs are in the bundle
        dlrm = manifest["models"][1]
        assert dlrm["reference"] and dlrm["stock"]["dispatches"] > dlrm["plugin"]["dispatches"]


def test_from_runs_the_bundle_importing_neither_compiler_nor_torch(bundle, tmp_path):
    rows_path = tmp_path / "rows.json"
    script = textwrap.dedent(f"""
        import sys
        from iree_fusions.tools import bench
        code = bench.main(["--from", {bundle!r}, *{QUICK!r},
                           "--json", {str(rows_path)!r}])
        # The models package's __init__ and its form names (the --form choices) import
        # nothing; its other modules build models with torch.
        light = ("iree_fusions.models", "iree_fusions.models.form_names")
        heavy = sorted(m for m in sys.modules if m.startswith(("iree.compiler", "torch"))
                       or m == "torch" or m.startswith("iree_fusions.models") and m not in light)
        print("HEAVY", heavy)
        sys.exit(code)
    """)
    res = _run([sys.executable, "-c", script])
    assert res.returncode == 0, res.stderr
    assert "HEAVY []" in res.stdout
    rows = json.loads(rows_path.read_text())
    assert [r["model"] for r in rows] == MODELS
    for r in rows:
        assert r["ok"] and r["max_abs"] <= 1e-5 and r["stock_ms"] > 0 and r["ratio"] > 0
        assert r["stock_dispatches"] >= r["plugin_dispatches"]
        # One round: an interval of no confidence, so no verdict: within noise (undecided).
        assert r["verdict"] == "within noise" and r["rounds"] == 1 and not r["settled"]
        assert r["ratio_low"] == r["ratio_high"] and r["ratio_confidence"] == 0
        assert r["machine"] == cpu_info() and r["compiled_for"]["target"]
    if len(MODELS) > 1:
        assert rows[1]["reference_max_abs"] is not None
    assert "disp stock" in res.stdout and "attention_projection_transpose" in res.stdout
    assert "interval" in res.stdout and "measured on " in res.stdout


def test_from_with_plot(bundle, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bundle.png"
    res = _run([tool("iree-fusions-bench"), "--from", bundle, *QUICK,
                "--plot", str(out)])
    assert res.returncode == 0, res.stderr
    assert out.read_bytes()[:4] == b"\x89PNG" and "plot written to" in res.stderr


def test_run_bundle_script_needs_nothing_of_the_project(bundle, tmp_path):
    """run_bundle.py alone (run from elsewhere): no iree_fusions module gets imported."""
    script = textwrap.dedent(f"""
        import runpy, sys
        sys.argv = ["run_bundle.py", "--rounds=0", "--model=attention_projection_transpose"]
        try:
            runpy.run_path({os.path.join(bundle, "run_bundle.py")!r}, run_name="__main__")
        except SystemExit as e:
            code = e.code
        mods = sorted(m for m in sys.modules if m.startswith(("iree_fusions", "iree.compiler",
                                                               "torch")))
        print("IMPORTED", mods)
        sys.exit(code)
    """)
    res = _run([sys.executable, "-c", script], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "IMPORTED []" in res.stdout
    assert "attention_projection_transpose" in res.stdout and "yes" in res.stdout


def test_from_flags_wrong_outputs(bundle, tmp_path):
    """A reference the outputs do not match makes the row fail (exit 1)."""
    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    attn = manifest["models"][0]
    np.save(copy / attn["dir"] / "reference0.npy", np.zeros((12, 128, 32), np.float32))
    attn["reference"] = ["reference0.npy"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    res = _run([tool("iree-fusions-bench"), "--from", str(copy), "--rounds=0",
                "attention_projection_transpose"])
    assert res.returncode == 1
    assert "NO: outputs differ" in res.stdout


def test_from_errors_are_clear(tmp_path, bundle):
    res = _run([tool("iree-fusions-bench"), "--from", str(tmp_path)])
    assert res.returncode == 2 and "not a bundle" in res.stderr
    res = _run([tool("iree-fusions-bench"), "--from", bundle, "no-such-model"])
    assert res.returncode == 2 and "not in the bundle: no-such-model" in res.stderr
    res = _run([tool("iree-fusions-bench"), "--from", bundle, "--export", str(tmp_path)])
    assert res.returncode == 2 and "cannot be combined" in res.stderr


def test_missing_device_is_reported_with_a_hint(bundle, tmp_path):
    """No Vulkan device, on any machine: the Vulkan loader is pointed at a driver list that
    names none (VK_DRIVER_FILES / VK_ICD_FILENAMES), so the run fails here as it does where
    there is no GPU, and the error carries the hint."""
    none = tmp_path / "no-such-icd.json"
    env = {**os.environ, "VK_DRIVER_FILES": str(none), "VK_ICD_FILENAMES": str(none)}
    res = _run([tool("iree-fusions-bench"), "--from", bundle, "--device=vulkan", "--rounds=0",
                "attention_projection_transpose"], env=env)
    assert res.returncode != 0, res.stdout
    assert "no 'vulkan' device here?" in res.stderr


def test_vulkan_export_for_nvidia(tmp_path):
    """--target nvidia picks ampere (rdna3, the default, runs only on AMD GPUs)."""
    folder = tmp_path / "vk"
    res = _run([tool("iree-fusions-bench"), "attention_projection_transpose", "--device=vulkan",
                "--target=nvidia", "--fusions=interchange-permuted-consumers",
                "--export", str(folder)])
    assert res.returncode == 0, res.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["target"] == "ampere"
    assert "--iree-vulkan-target=ampere" in manifest["models"][0]["plugin"]["flags"]
    hint = failure_hint("No device found", "vulkan", "rdna3")
    assert "runs only on AMD" in hint and "--target ampere" in hint


def test_a_bundle_for_vector_features_this_cpu_lacks_is_refused(bundle, monkeypatch):
    """Modules compiled for AVX2 where the CPU has only SSE: the row says why (they would
    stop the process with an illegal instruction) before anything runs."""
    manifest = load_manifest(bundle)
    entry = dict(manifest["models"][0], compiled_for={
        "target": "llvm-cpu:haswell", "cpu_features": "+avx,+avx2,+fma,+sse2",
        "native_vector_size": 32})
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"sse", "sse2"})
    row = run_model(bundle, entry, manifest, device="local-task", rounds=0)
    assert not row["ok"] and "using avx, avx2, fma, which this CPU lacks" in row["error"]
    assert "--target" in row["error"]


def _link_distribution(name: str, site: str, done: set[str]) -> None:
    """Makes the installed distribution `name` (and what it requires, recursively) importable
    in the venv whose site-packages is `site`, by symlinks to this environment's files: no
    download. A namespace package (`iree`) is linked one level down, so that only this
    distribution's part of it (iree.runtime, not iree.compiler) is there."""
    import importlib.metadata as metadata
    import re

    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in done:
        return
    done.add(key)
    dist = metadata.distribution(name)
    here = str(dist.locate_file(""))
    units = set()
    for f in dist.files or ():
        parts = f.parts
        if parts[0] == "..":  # console scripts
            continue
        top = os.path.join(here, parts[0])
        namespace = os.path.isdir(top) and not os.path.exists(os.path.join(top, "__init__.py"))
        units.add(parts[:2] if namespace and len(parts) > 1 else parts[:1])
    for unit in sorted(units):
        os.makedirs(os.path.join(site, *unit[:-1]), exist_ok=True)
        os.symlink(os.path.join(here, *unit), os.path.join(site, *unit))
    for requirement in dist.requires or ():
        if "extra ==" not in requirement:
            _link_distribution(re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0], site,
                               done)


def _install_project(site: str, bin_dir: str, python: str) -> None:
    """The project as pyproject.toml lays it out (python/iree_fusions -> iree_fusions,
    mlir_passes -> iree_fusions.passes) and its console scripts, copied: no build, no
    package index."""
    import tomllib

    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(os.path.join(ROOT, "python", "iree_fusions"),
                    os.path.join(site, "iree_fusions"), ignore=ignore)
    shutil.copytree(os.path.join(ROOT, "mlir_passes"), os.path.join(site, "iree_fusions",
                                                                    "passes"), ignore=ignore)
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    for script, target in scripts.items():
        module, _, function = target.partition(":")
        path = os.path.join(bin_dir, script)
        with open(path, "w") as f:
            f.write(f"#!{python}\nimport sys\nfrom {module} import {function}\n"
                    f"sys.exit({function}())\n")
        os.chmod(path, 0o755)


def test_bundle_runs_in_a_compiler_free_venv(bundle, tmp_path):
    """A venv with only iree-base-runtime, numpy (and what they require) and the project:
    runs the bundle through iree-fusions-bench --from and through run_bundle.py. Nothing is
    downloaded: the packages are this environment's, linked in, the project copied."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    done: set[str] = set()
    for name in ("iree-base-runtime", "numpy"):
        _link_distribution(name, site, done)
    _install_project(site, str(venv / "bin"), py)
    for module in ("iree.compiler", "torch"):
        probe = subprocess.run([py, "-c", f"import {module}"], capture_output=True)
        assert probe.returncode != 0, f"{module} is importable in the compiler-free venv"
    rows_path = tmp_path / "rows.json"
    res = _run([str(venv / "bin" / "iree-fusions-bench"), "--from", bundle, *QUICK,
                "--json", str(rows_path)])
    assert res.returncode == 0, res.stderr
    rows = json.loads(rows_path.read_text())
    assert all(r["ok"] and r["ratio"] > 0 for r in rows) and len(rows) == len(MODELS)
    res = _run([py, os.path.join(bundle, "run_bundle.py"), *QUICK],
               cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert all(m in res.stdout for m in MODELS)


def test_the_runner_judges_a_decomposed_attention_by_the_stated_bound(bundle, monkeypatch):
    """A model whose plugin build rewrite-attention changed is judged as the bench judges it
    (16 unit roundoffs of the largest |output|, not atol 1e-5), and the row says which bound;
    other models by atol / rtol."""
    from iree_fusions.runtime import run as runner

    manifest = load_manifest(bundle)
    entry = manifest["models"][0]
    attention = dict(entry, plugin=dict(entry["plugin"], passes_changed=["rewrite-attention"]))
    # f16: one ulp at 100 is 0.0625, relative 6e-4: outside atol / rtol, inside 16 roundoffs.
    outputs = iter([[np.full(4, 100.0, np.float16)], [np.full(4, 100.0625, np.float16)]] * 2)
    monkeypatch.setattr(runner, "run_module", lambda *args, **kwargs: next(outputs))
    row = run_model(bundle, attention, manifest, device="local-task", rounds=0)
    assert row["ok"] and row["bound"].startswith("stated: |d| <= 16 unit roundoffs")
    row = run_model(bundle, entry, manifest, device="local-task", rounds=0)
    assert not row["ok"] and row["bound"] == "|d| <= 1e-05 or relative <= 0.0001"
    assert row["error"] == "outputs differ"
