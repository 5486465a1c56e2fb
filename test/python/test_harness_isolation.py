"""The harness runs each module in a process of its own (`harness.isolated`): an output element
a module never writes cannot hold what an earlier run computed, whichever side ran first."""

from __future__ import annotations

import re

import numpy as np
import pytest

from iree_fusions.harness import api, isolated
from iree_fusions.harness.numerics import compare_compilations
from support import passes


def _one_row_short(text: str) -> str:
    """rewrite-attention's output for `text`, its query-block loop stopping one row early:
    the module's last query row is never written."""
    out, _ = passes.run_pass(text, "rewrite-attention")
    loop = re.search(r"scf\.for (%\w+) = (%\w+) to (%[\w#]+) step", out)
    assert loop, out
    line = out.rfind("\n", 0, loop.start()) + 1
    indent = out[line:loop.start()].split("%")[0]
    short = (f"{indent}%short_one = arith.constant 1 : index\n"
             f"{indent}%short_upper = arith.subi {loop.group(3)}, %short_one : index\n")
    return (out[:line] + short + out[line:loop.start()]
            + f"scf.for {loop.group(1)} = {loop.group(2)} to %short_upper step"
            + out[loop.end():])


def test_an_unwritten_row_never_holds_the_result_of_an_earlier_run():
    """Stock's module runs first, then one whose last query row is never written: that row is
    not stock's (in one process IREE's runtime hands the second module the memory of the
    first one's result, and the row matched stock to the bit)."""
    text = passes.lit_cases("rewrite-attention")["prefill"]
    stock = api.compile_str(text, stock=True).output
    short = api.compile_str(_one_row_short(text), stock=True).output
    rng = np.random.default_rng(0)
    rows = 65
    inputs = [rng.standard_normal(shape).astype(np.float16) for shape in
              ((32, rows, 32), (32, rows, 32), (32, 32, rows))]
    inputs.append(np.zeros((32, rows, rows), np.float16))
    (want,) = api.run(stock, inputs, "prefill")
    (got,) = api.run(short, inputs, "prefill")
    written = np.abs(got[:, :-1].astype(np.float32) - want[:, :-1]).max()
    assert written < 1e-2, written  # the rows it writes are right ...
    assert not np.allclose(got[:, -1], want[:, -1])  # ... the one it does not is not stock's


def test_compare_compilations_runs_outside_the_callers_process(monkeypatch):
    """Neither side is loaded in the caller's process (a load here fails the test)."""
    def no_load(*args, **kwargs):
        raise AssertionError("a module was loaded in the caller's process")

    monkeypatch.setattr(api, "load", no_load)
    text = passes.lit_cases("rewrite-attention")["boolean_mask"]
    check = compare_compilations(text, fusions="rewrite-attention", function="boolean_mask",
                                 count=False)
    assert len(check.stock) == len(check.plugin) == 1


def test_errors_of_the_run_are_raised_in_the_caller():
    source = """func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
      %0 = arith.addf %x, %x : tensor<8xf32>
      return %0 : tensor<8xf32>
    }"""
    vmfb = api.compile_str(source, stock=True).output
    (out,) = api.run(vmfb, [np.arange(8, dtype=np.float32)])
    assert out.tolist() == [2.0 * i for i in range(8)]
    with pytest.raises(KeyError, match="nope"):
        api.run(vmfb, [np.zeros(8, np.float32)], function="nope")
    with pytest.raises(ValueError, match="mismatch"):
        api.run(vmfb, [np.zeros(5, np.float32)])


def test_a_run_that_dies_is_an_error_and_the_next_run_works(monkeypatch):
    reply = isolated._server.call(("not a module", [], "main", "local-task", None))
    assert reply[0] == "error"
    monkeypatch.setattr(isolated._server, "call", lambda request: ("died", "signal 11"))
    with pytest.raises(isolated.RunCrashed, match="signal 11"):
        isolated.run_alone(b"", [], "main")
