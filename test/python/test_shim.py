"""The IREE_TOOL_PATH shim: code that calls iree.compiler.compile_file / compile_str compiles
with the plugin, unchanged. Every shim here lives under tmp_path (IREE_FUSIONS_SHIM_DIR)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import iree.compiler as ireec
import iree_fusions
from iree_fusions.tools import shim
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.harness.numerics import random_inputs
from iree_fusions.models import bundled_mlir_models
from conftest import tool

MODEL = bundled_mlir_models()["attention_projection_transpose"]  # 2 dispatches; 1 with the plugin
PASS = "interchange-permuted-consumers"
CPU = dict(target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=host"])


@pytest.fixture
def shim_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(shim.ENV_DIR, str(tmp_path / "shim"))
    res = subprocess.run([tool("iree-fusions-compile"), "--print-shim-dir"], capture_output=True,
                         text=True, env=os.environ)
    assert res.returncode == 0, res.stderr
    folder = res.stdout.strip()
    assert folder == str(tmp_path / "shim")
    return folder


def _flow_dispatches(**kw) -> int:
    extra = [*CPU["extra_args"], "--compile-to=flow"]
    flow = ireec.compile_file(MODEL, target_backends=CPU["target_backends"], extra_args=extra,
                              **kw)
    return count_flow_ir(flow).total_dispatches


def test_print_shim_dir_writes_an_executable_iree_compile(shim_dir):
    exe = os.path.join(shim_dir, "iree-compile")
    assert os.access(exe, os.X_OK)
    text = open(exe).read()
    assert "-m iree_fusions.tools.shim" in text
    # The script runs the interpreter of the process that wrote it: the console script's
    # (python3) where pytest runs as `python -m pytest` (python): the same binary.
    written, expected = text.splitlines(), shim.script_text().splitlines()
    assert written[:-1] == expected[:-1]
    interpreter = written[-1].split(" exec ")[1].split(" -m ")[0]
    assert os.path.realpath(interpreter) == os.path.realpath(sys.executable)
    assert written[-1].replace(interpreter, "PY") == expected[-1].replace(
        expected[-1].split(" exec ")[1].split(" -m ")[0], "PY")
    # a stale shim (another version, edited, not executable) is rewritten
    with open(exe, "w") as f:
        f.write("#!/bin/sh\nexit 1\n")
    assert shim.shim_dir() == shim_dir
    assert open(exe).read() == shim.script_text() and os.access(exe, os.X_OK)


def test_default_dir_is_a_per_user_cache(tmp_path, monkeypatch):
    monkeypatch.delenv(shim.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = shim.default_dir()
    assert folder.startswith(str(tmp_path / "cache" / "iree-fusions" / "shim-"))
    assert iree_fusions.__version__ in os.path.basename(folder)


def test_iree_compiler_compile_file_runs_the_plugin_through_the_shim(shim_dir, monkeypatch,
                                                                     tmp_path):
    monkeypatch.setenv("IREE_TOOL_PATH", shim_dir)
    assert ireec.tools.binaries.find_tool("iree-compile") == os.path.join(shim_dir,
                                                                          "iree-compile")
    monkeypatch.setenv(shim.ENV_PASSES, "none")
    assert _flow_dispatches() == 2
    monkeypatch.setenv(shim.ENV_PASSES, PASS)
    report = tmp_path / "report.json"
    monkeypatch.setenv(shim.ENV_FLAGS, f"--fusions-report-json={report}")
    assert _flow_dispatches() == 1
    assert json.loads(report.read_text())[0]["changes"]
    monkeypatch.delenv(shim.ENV_FLAGS)
    # a whole compile to .vmfb (compile_str: the source comes on stdin), and it runs right
    fused = ireec.compile_str(open(MODEL).read(), **CPU)
    monkeypatch.delenv("IREE_TOOL_PATH")
    stock = ireec.compile_file(MODEL, **CPU)
    assert fused != stock
    inputs = random_inputs(open(MODEL).read())
    a, b = iree_fusions.run(stock, inputs), iree_fusions.run(fused, inputs)
    assert np.array_equal(a[0], b[0])


def test_shim_with_none_is_plain_iree_compile(shim_dir, monkeypatch):
    plain = ireec.compile_file(MODEL, **CPU)
    monkeypatch.setenv("IREE_TOOL_PATH", shim_dir)
    monkeypatch.setenv(shim.ENV_PASSES, "none")
    assert ireec.compile_file(MODEL, **CPU) == plain


def test_shim_errors_reach_the_caller(shim_dir, monkeypatch):
    monkeypatch.setenv("IREE_TOOL_PATH", shim_dir)
    monkeypatch.setenv(shim.ENV_PASSES, "no-such-pass")
    with pytest.raises(ireec.CompilerToolError, match="unknown pass 'no-such-pass'"):
        ireec.compile_file(MODEL, **CPU)


def test_shim_main_passes_every_argument_on(monkeypatch):
    """Default passes: all; IREE_FUSIONS picks them; IREE_FUSIONS_FLAGS adds flags first, so
    that an explicit flag of the caller still wins."""
    from iree_fusions.tools import compile_cli

    seen = []
    monkeypatch.setattr(compile_cli, "main", lambda argv: seen.append(argv) or 0)
    args = ["-", "--iree-input-type=auto", "-o=out.vmfb", "--mlir-print-debuginfo"]
    monkeypatch.delenv(shim.ENV_PASSES, raising=False)
    monkeypatch.delenv(shim.ENV_FLAGS, raising=False)
    assert shim.main(list(args)) == 0
    monkeypatch.setenv(shim.ENV_PASSES, "batch-gathers")
    monkeypatch.setenv(shim.ENV_FLAGS, "--fusions-report --fusions-strict")
    assert shim.main(list(args)) == 0
    assert seen == [["--fusions=all", *args],
                    ["--fusions=batch-gathers", "--fusions-report", "--fusions-strict", *args]]


def test_shim_takes_itself_off_path(monkeypatch, tmp_path):
    """iree-compile looked up on PATH below the shim must not be the shim again."""
    folder = tmp_path / "s"
    folder.mkdir()
    monkeypatch.setenv("PATH", os.pathsep.join([str(folder), "/usr/bin"]))
    monkeypatch.setenv("IREE_FUSIONS_SHIM_SELF", str(folder / "iree-compile"))
    shim._without_shim_on_path()
    assert os.environ["PATH"] == "/usr/bin"
    assert os.access(shim.real_iree_compile(), os.X_OK)
