"""Start-up of the compiler tools: numpy deferred until used, the process ended at once."""

import subprocess
import sys
import textwrap

import pytest

from iree_fusions.tools import deferred


def _python(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_compile_tool_imports_without_numpy():
    out = _python("""
        import sys
        from iree_fusions.tools import compile_cli, opt
        print("numpy._core" in sys.modules)
    """)
    assert out == "False"


def test_numpy_loads_on_first_use_for_every_holder():
    out = _python("""
        import sys
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


def test_defer_import_leaves_imported_and_missing_modules_alone():
    before = sys.modules["json"] if "json" in sys.modules else __import__("json")
    deferred.defer_import("json")
    assert sys.modules["json"] is before
    deferred.defer_import("no_such_module_for_iree_fusions")
    assert "no_such_module_for_iree_fusions" not in sys.modules


@pytest.mark.parametrize("tool", ["iree-fusions-compile", "iree-fusions-opt"])
def test_console_tool_output_complete_after_fast_exit(tool, tmp_path):
    """The console scripts end with os._exit: what they print and write is all there."""
    src = tmp_path / "m.mlir"
    src.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  return %a : tensor<4xf32>\n}\n")
    args = ["--compile-to=input"] if tool == "iree-fusions-compile" else []
    res = subprocess.run([tool, str(src), *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "@main" in res.stdout and res.stdout.rstrip().endswith("}")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %0 = foo.bar : i32\n}\n")
    res = subprocess.run([tool, str(bad), *args], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "foo.bar" in res.stderr
