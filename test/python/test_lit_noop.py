"""test/check_lit_noop.py: a chunk that its pass changes and whose checks still pass with a
no-op pass in its place is named (and fails the script); checks that see the change, a report
header or a changed-IR CHECK, make it pass; a failing RUN line that is not FileCheck's
(an expected remark) does not. (.ci/run runs the script on
every lit file.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "test", "check_lit_noop.py")

# A matmul read through a transposing generic: interchange-permuted-consumers{leave-to-stock=0}
# rewrites it (the generic then reads the matmul with the identity map).
CASE = """util.func public @{name}(%a: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x8xf32> {{
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%mm : tensor<8x16xf32>) outs(%e2 : tensor<16x8xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }} -> tensor<16x8xf32>
  util.return %t : tensor<16x8xf32>
}}
"""
PIPE = "'interchange-permuted-consumers{leave-to-stock=0}'"
RUN = f"// RUN: iree-fusions-opt %s --split-input-file -p {PIPE} --mlir-print-local-scope " \
      "| filecheck %s\n"
REPORT = f"// RUN: iree-fusions-opt %s --split-input-file -p {PIPE} -o /dev/null " \
         "--fusions-report 2>&1 | filecheck %s --check-prefix=REPORT\n"
SEEN = ("// CHECK-LABEL: @seen\n"
        "// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
        "affine_map<(d0, d1) -> (d1, d0)>]\n")


def _check(tmp_path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "case.mlir"
    path.write_text(text)
    return subprocess.run([sys.executable, SCRIPT, str(path), "-j", "2"], capture_output=True,
                          text=True, timeout=600)


def test_a_label_only_chunk_survives_the_noop(tmp_path):
    text = (RUN + SEEN + CASE.format(name="seen") + "\n// -----\n"
            + "// CHECK-LABEL: @label_only\n" + CASE.format(name="label_only"))
    res = _check(tmp_path, text)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 survive the no-op" in res.stdout
    assert "@label_only (line 19)" in res.stdout and "SURVIVES the no-op" in res.stdout
    assert "@seen" not in res.stdout


def test_report_checks_need_the_header(tmp_path):
    """A report check without `[pass] N change(s)` passes with one change more: named."""
    text = (REPORT + "// REPORT: changed [\n" + CASE.format(name="no_header"))
    res = _check(tmp_path, text)
    assert res.returncode == 1
    assert "lack the header `[interchange-permuted-consumers] N change(s)`" in res.stdout
    text = (REPORT + "// REPORT: [interchange-permuted-consumers] 1 change(s), 0 skipped\n"
            + CASE.format(name="header"))
    res = _check(tmp_path, text)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok: " in res.stdout and "0 survive the no-op" in res.stdout


def test_a_checked_change_fails_the_noop(tmp_path):
    res = _check(tmp_path, RUN + SEEN + CASE.format(name="seen"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "changed by 'interchange-permuted-consumers{leave-to-stock=0}' 1; 0 survive" in \
        res.stdout


def test_only_failing_check_lines_count(tmp_path):
    """An expected remark fails its -verify-diagnostics line under any no-op: the chunk's
    CHECK lines must fail themselves (here they check the label only: it survives)."""
    remark = f"// RUN: iree-fusions-opt %s --split-input-file -p {PIPE} -verify-diagnostics " \
             "-o /dev/null\n"
    case = CASE.format(name="remarked").replace(
        "  %t = linalg.generic", "  // expected-remark@+1 {{[Passed] changed}}\n"
        "  %t = linalg.generic")
    res = _check(tmp_path, remark + RUN + "// CHECK-LABEL: @remarked\n" + case)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "@remarked" in res.stdout and "SURVIVES the no-op" in res.stdout
    res = _check(tmp_path, remark + case)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "no FileCheck RUN line of this pipeline checks anything in it" in res.stdout
