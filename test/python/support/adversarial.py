"""Helpers shared by the adversarial test modules (test_adversarial*.py)."""

from __future__ import annotations

import os
import subprocess
import uuid

import numpy as np
import pytest

from conftest import CPU_FLAGS, HERE, tool
from iree_fusions.harness.bundle import BundleWriter


GOOD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# Line 6 of the file is line 2 of the second chunk.
SPLIT = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  %0 = foo.bar : i32\n}\n"
HANGING_PASS = """
import sys
import time
from dataclasses import dataclass
from iree_fusions.compiler.protocol import FusionPass
from iree_fusions.compiler.registry import register

@register
@dataclass(frozen=True)
class Hang(FusionPass):
    name = "test-hang"
    phase = "linalg"
    description = "sleeps (a pass that never returns)"

    def run(self, module, ctx):
        print(ENTERED, file=sys.stderr, flush=True)  # the test waits for this line
        time.sleep(600)
""".replace("ENTERED", repr("test-hang: entered"))
ENTERED = "test-hang: entered"
# A guard against a hang, not a speed check: no test asserts how long a command took (a loaded
# machine may be slow); a command that never ends fails its test after this long.
LIMIT = 600


def run_tool(cmd, **kw):
    kw.setdefault("timeout", LIMIT)
    res = subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)
    assert "Traceback" not in res.stderr, res.stderr
    return res


def cli_compile(*args, **kw):
    return run_tool([tool("iree-fusions-compile"), *map(str, args), *CPU_FLAGS], **kw)


def one_error_line(stderr: str, prog: str = "iree-fusions-compile") -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), stderr
    return lines[0]


def no_temp_files(folder) -> None:
    left = [n for n in os.listdir(folder) if n.endswith(".tmp") or n.startswith(".partial-")]
    assert not left, left


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.mlir"
    p.write_text(GOOD)
    return p


@pytest.fixture
def hang_module(tmp_path, monkeypatch):
    """A top-level module registering `test-hang`, importable by the tools started from the
    test; its name is the test's own (`hang_pass_<hex>`), so a process whose command line
    names it is one of this test's."""
    name = f"hang_pass_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(HANGING_PASS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), HERE, *filter(None, [os.environ.get("PYTHONPATH")])]))
    return name


def wait_until_entered(proc: subprocess.Popen) -> None:
    """Reads the tool's stderr up to the hanging pass's own line: the compile child is then
    inside the pass (an event, not a sleep)."""
    for line in proc.stderr:
        if line.strip() == ENTERED:
            return
    raise AssertionError(f"the tool ended before the pass ran (exit {proc.wait()})")


def add_model(writer: BundleWriter, name: str, tag: int) -> None:
    writer.add(name, inputs=[np.full(3, tag, np.float32)], stock_vmfb=b"S%d" % tag,
               plugin_vmfb=b"P%d" % tag, stock={"dispatches": 2}, plugin={"dispatches": 1})
