"""Outputs written atomically (`files.OutputSet`, issue 33 items 3 and 5): every name
iree-compile writes is accepted (its temporary fits the file-name limit too), and the
temporary a killed write leaves is removed by the next write of that output, while a running
writer's temporary is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conftest import CPU_FLAGS, tool
from iree_fusions.compiler import files

GOOD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# Stages OUTPUT (argv[1]), says so, and waits for stdin to close before discarding it: a
# write in progress, or, killed with SIGKILL, one that leaves its temporary behind.
WRITER = """import sys
from iree_fusions.compiler import files
outputs = files.OutputSet()
outputs.stage(sys.argv[1])
print("staged", flush=True)
sys.stdin.read()
outputs.discard()
"""


def _longest_name(folder) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


def _temps(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def test_item3_names_up_to_the_limit_are_written(tmp_path):
    limit = _longest_name(tmp_path)
    for n in (230, 240, limit):
        path = tmp_path / ("n" * n)
        files.write_file(str(path), "data")
        assert path.read_text() == "data"
        with files.OutputSet() as outputs:  # the temporary's own name is short
            assert len(os.path.basename(outputs.stage(str(path)))) < 60
    assert _temps(tmp_path) == []
    # One longer is refused, as iree-compile refuses it.
    with pytest.raises(files.OutputError, match="File name too long"):
        files.write_file(str(tmp_path / ("n" * (limit + 1))), "data")


def test_item3_compile_writes_the_names_iree_compile_writes(tmp_path):
    """Before the fix: `cannot open output file '...': File name too long` (exit 1) for the
    245- and 255-character names below, while iree-compile wrote them."""
    limit = _longest_name(tmp_path)
    source = tmp_path / "m.mlir"
    source.write_text(GOOD)
    stock, out, report = (tmp_path / (c * n) for c, n in
                          (("s", limit), ("o", limit - 10), ("r", limit)))
    res = subprocess.run([tool("iree-compile"), str(source), *CPU_FLAGS, "-o", str(stock)],
                         capture_output=True, text=True)
    assert res.returncode == 0 and stock.stat().st_size > 0, res.stderr
    for fusions in ("none", "all"):
        res = subprocess.run([tool("iree-fusions-compile"), str(source), *CPU_FLAGS,
                              f"--fusions={fusions}", "-o", str(out),
                              f"--fusions-report-json={report}"], capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr
        assert out.stat().st_size > 0 and report.read_text().startswith("[")
        out.unlink()
    assert _temps(tmp_path) == []


def _start_writer(path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "staged\n"
    return proc


def test_item5_a_killed_writes_temporary_is_removed_by_the_next_write(tmp_path):
    out, other = tmp_path / "m.vmfb", tmp_path / "other.json"
    proc = _start_writer(out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (left,) = _temps(tmp_path)  # what SIGKILL leaves
    assert str(proc.pid) in left
    files.write_file(str(other), "x")  # another output's write leaves it
    assert _temps(tmp_path) == [left]
    files.write_file(str(out), "new")  # the next write of the same output removes it
    assert _temps(tmp_path) == [] and out.read_text() == "new"


def test_item5_a_running_writers_temporary_is_left_alone(tmp_path):
    out = tmp_path / "m.vmfb"
    proc = _start_writer(out)
    try:
        (running,) = _temps(tmp_path)
        files.write_file(str(out), "new")
        assert _temps(tmp_path) == [running] and out.read_text() == "new"
    finally:
        proc.communicate("")  # it discards its temporary and ends
    assert proc.returncode == 0 and _temps(tmp_path) == []
