"""A failing pass's reproducer: one file per distinct IR (its name is the content's hash),
however many compiles hit the failure, and the warning says how to save none."""

from __future__ import annotations

import os
import subprocess

from conftest import CPU_FLAGS, tool

GOOD = """util.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
       iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  util.return %r : tensor<4xf32>
}
"""


def _compile(src, out, *flags):
    return subprocess.run([tool("iree-fusions-compile"), str(src), *CPU_FLAGS, "-o", str(out),
                           "--fusions-load=support.extra_passes", "--fusions=test-raise",
                           *flags], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(out.parent)})


def test_one_reproducer_per_distinct_ir(tmp_path, support_on_path):
    src = tmp_path / "good.mlir"
    src.write_text(GOOD)
    for i in range(3):
        res = _compile(src, tmp_path / f"m{i}.vmfb")
        assert res.returncode == 0, res.stderr
        assert "--fusions-reproducer-dir=none saves none" in res.stderr
    saved = [n for n in os.listdir(tmp_path) if n.endswith(".mlirbc")]
    assert len(saved) == 1, saved
    assert saved[0].startswith("iree-fusions-test-raise-")
    # Other IR, another file.
    src.write_text(GOOD.replace("arith.negf", "math.exp"))
    assert _compile(src, tmp_path / "m3.vmfb").returncode == 0
    assert len([n for n in os.listdir(tmp_path) if n.endswith(".mlirbc")]) == 2


def test_reproducer_dir_none_saves_nothing(tmp_path, support_on_path):
    src = tmp_path / "good.mlir"
    src.write_text(GOOD)
    res = _compile(src, tmp_path / "m.vmfb", "--fusions-reproducer-dir=none")
    assert res.returncode == 0, res.stderr
    assert "pass 'test-raise' failed and was skipped" in res.stderr
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".mlirbc")]
