"""Start-up of the compiler tools: numpy deferred until used, the process ended at once."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import tool
from iree_fusions.tools import deferred


def _python(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("command", [[tool("iree-fusions-compile"), "--help"],
                                     [tool("iree-fusions-opt"), "--help"],
                                     [sys.executable, "-m", "iree_fusions.tools.compile_cli",
                                      "--help"]])
def test_compiler_tool_starts_without_numpy(command):
    res = subprocess.run(command, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert res.returncode == 0, res.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()
                if line.startswith("import time:")]
    assert "iree.compiler.ir" in " ".join(imported)  # the profile is there
    assert not [m for m in imported if m.startswith("numpy")]


def test_scripts_importing_the_tools_get_numpy_as_usual():
    """Only a compiler tool's own process defers numpy: a script (or the bench, which imports
    torch and transformers) that imports these modules gets the real module at once."""
    out = _python("""
        import sys
        from iree_fusions.tools import compile_cli, bench, opt
        print(type(sys.modules["numpy"]).__name__)
    """)
    assert out == "module"


def test_numpy_loads_on_first_use_for_every_holder():
    out = _python("""
        import sys
        from iree_fusions.tools import deferred
        deferred.defer_import("numpy")  # as a compiler tool's process does at start-up
        from iree_fusions.tools import compile_cli
        import numpy as held  # the stand-in
        from iree.compiler import ir
        assert type(sys.modules["numpy"]).__name__ == "DeferredModule"
        import numpy.linalg  # a submodule import loads the real module
        real = sys.modules["numpy"]
        assert type(real).__name__ == "module" and held.ndarray is real.ndarray
        with ir.Context():  # iree.compiler.ir's builders hold the stand-in too
            print(ir.DenseElementsAttr.get(held.array([1.5], dtype=held.float32)))
    """)
    assert out == "dense<1.500000e+00> : tensor<1xf32>"


def test_deferred_module_stands_in_until_read(tmp_path, monkeypatch):
    (tmp_path / "deferred_probe").mkdir()
    (tmp_path / "deferred_probe" / "__init__.py").write_text(
        "VALUE = 7\nLOADS = [1]\ndef load():\n    return 'real load'\n")
    (tmp_path / "deferred_probe" / "sub.py").write_text("X = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "deferred_probe", raising=False)
    monkeypatch.delitem(sys.modules, "deferred_probe.sub", raising=False)
    deferred.defer_import("deferred_probe")
    stand_in = sys.modules["deferred_probe"]
    assert isinstance(stand_in, deferred.DeferredModule) and "VALUE" not in vars(stand_in)
    import deferred_probe
    assert deferred_probe is stand_in  # `import` alone does not load it
    assert deferred_probe.load() == "real load"  # the module's names, even the first read
    assert deferred_probe.VALUE == 7 and deferred_probe.LOADS == [1]
    assert not isinstance(sys.modules["deferred_probe"], deferred.DeferredModule)
    from deferred_probe import sub
    assert sub.X == 3 and stand_in.LOADS is sys.modules["deferred_probe"].LOADS


def test_submodule_first_touch_runs_each_module_once(tmp_path, monkeypatch):
    """`import pkg.sub` as the first touch of a deferred package whose __init__ imports
    pkg.sub: one pkg.sub (run once, with its own spec), not a second copy (numpy._core run
    twice broke scipy's numpy.testing)."""
    pkg = tmp_path / "deferred_twice"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import core\nfrom .core import RUNS\n")
    (pkg / "core.py").write_text("import builtins\n"
                                 "builtins.deferred_twice_runs = "
                                 "getattr(builtins, 'deferred_twice_runs', 0) + 1\n"
                                 "RUNS = builtins.deferred_twice_runs\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("deferred_twice", "deferred_twice.core"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    deferred.defer_import("deferred_twice")
    import deferred_twice.core
    import builtins
    try:
        assert builtins.deferred_twice_runs == 1
        assert sys.modules["deferred_twice.core"] is deferred_twice.core
        assert deferred_twice.core.__spec__.origin == str(pkg / "core.py")
        assert sys.modules["deferred_twice"].RUNS == 1
    finally:
        del builtins.deferred_twice_runs


def test_defer_import_leaves_imported_and_missing_modules_alone():
    before = sys.modules["json"] if "json" in sys.modules else __import__("json")
    deferred.defer_import("json")
    assert sys.modules["json"] is before
    deferred.defer_import("no_such_module_for_iree_fusions")
    assert "no_such_module_for_iree_fusions" not in sys.modules


@pytest.mark.parametrize("name", ["iree-fusions-compile", "iree-fusions-opt"])
def test_console_tool_output_complete_after_fast_exit(name, tmp_path):
    """The console scripts end with os._exit: what they print and write is all there."""
    src = tmp_path / "m.mlir"
    src.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  return %a : tensor<4xf32>\n}\n")
    args = ["--compile-to=input"] if name == "iree-fusions-compile" else []
    res = subprocess.run([tool(name), str(src), *args], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "@main" in res.stdout and res.stdout.rstrip().endswith("}")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %0 = foo.bar : i32\n}\n")
    res = subprocess.run([tool(name), str(bad), *args], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode != 0 and "foo.bar" in res.stderr


def test_reader_closing_the_pipe_early_ends_the_tool_quietly():
    """`iree-fusions-compile --fusions-list -v | head -1`: no traceback, status 141 (as a C
    tool killed by SIGPIPE). The reader here is gone before the tool starts writing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = subprocess.run([tool("iree-fusions-compile"), "--fusions-list", "-v"],
                             stdout=write_end,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert res.returncode == 141 and "Traceback" not in res.stderr, res.stderr
