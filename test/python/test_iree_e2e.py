"""IREE's own e2e tests (tests/e2e: test/iree_e2e/, vendored) hold with the plugin: each file
compiled for llvm-cpu with stock IREE and with `--fusions=all --fusions-strict` and run, IREE's
checks hold for the plugin's results, which equal stock's (bit for bit where the plugin
changed nothing, else within the check's tolerance), and no file stock compiles fails with
the plugin, for the CPU and (slow) for cuda sm_80 and hip gfx942. The default run takes a few
files, among them regression/associative_reordering.mlir (rewrite-embedding-bags raised an
IndexError on it); `-m slow` takes every file, one case each. The whole suite with a summary
table: `python -m iree_fusions.tools.iree_e2e` (test/iree_e2e/README.md)."""

from __future__ import annotations

import numpy as np
import pytest

from iree_fusions.tools import iree_e2e
from iree_fusions.tools.iree_e2e_checks import (Check, differs_from_stock, failed_check,
                                                rewrite_checks, updated_source)

SUITE = iree_e2e.SUITE
# Quick to compile and run (seconds each), and what they are there for: the file of the
# rewrite-embedding-bags IndexError; attention with dynamic shapes (rewrite-attention changes
# it on x86: compared within the checks' tolerance); gathers (batch-gathers' op).
FAST = ["regression/associative_reordering.mlir", "linalg_ext_ops/dynamic_attention.mlir",
        "linalg/gather_like_ops.mlir"]
FILES = [p.relative_to(SUITE).as_posix() for p in iree_e2e.suite_files()]


def _explain(result: iree_e2e.FileResult) -> str:
    return "\n".join([*result.failures, *result.gpu_failures, *result.excluded])


def test_every_file_reads_and_its_checks_become_results(tmp_path):
    """The folders of IREE's tests/e2e the suite takes, whole (test/iree_e2e/README.md: 159
    files, 481 test functions); IREE 3.13 reads every file (after the runner's syntax
    updates) and every check call becomes results of its function."""
    assert {f.split("/")[0] for f in FILES} == {
        "linalg", "linalg_ext_ops", "regression", "stablehlo_ops", "subbyte_types",
        "tensor_ops", "tosa_ops"}
    functions = 0
    for name in FILES:
        src = tmp_path / name.replace("/", "+")
        src.write_text(updated_source((SUITE / name).read_text()))
        text, tests = rewrite_checks(str(src))
        assert tests and "check.expect" not in text, name
        for checks in tests.values():
            assert checks and all(c.results and c.where.startswith(src.name) for c in checks)
        functions += len(tests)
    assert (len(FILES), functions) == (159, 481) and set(FAST) <= set(FILES)


def test_the_python_check_module_compares_as_iree_does():
    eq, almost = Check("eq", (0, 1), "f:1:1"), Check("almost_eq", (0, 1), "f:1:1")
    a = np.array([1.0, 0.0, np.nan], np.float32)
    assert failed_check(eq, [a, a.copy()]) is None  # NaN against the same NaN: equal bytes
    assert "1 element(s) differ, first at (1,)" in failed_check(eq, [a, np.array(
        [1.0, -0.0, np.nan], np.float32)])  # -0 and +0 are different bytes
    assert failed_check(almost, [a, a + np.float32(9e-5)]) is None  # default atol 1e-4
    assert failed_check(almost, [a, a + np.float32(2e-4)]) is not None
    assert failed_check(almost, [np.float32([np.inf]), np.float32([np.inf])]) is None
    assert failed_check(almost, [np.float32([1e30]), np.float32([np.inf])]) is not None
    assert "int32[2] vs int32[3]" in failed_check(eq, [np.zeros(2, np.int32),
                                                       np.zeros(3, np.int32)])
    assert failed_check(Check("true", (0,), "f:1:1"), [np.array(3)]) is None
    assert failed_check(Check("false", (0,), "f:1:1"), [np.array(3)]) is not None
    assert failed_check(Check("all_true", (0,), "f:1:1"), [np.int8([1, 0])]) is not None


def test_results_agree_with_stock_bit_for_bit_unless_the_plugin_changed_something():
    almost = [Check("almost_eq", (0, 1), "f:1:1")]
    stock = [np.float32([1.0]), np.float32([1.0])]
    near = [np.float32([1.00005]), np.float32([1.0])]
    assert differs_from_stock(almost, stock, stock, exact=True) is None
    assert "bit for bit" in differs_from_stock(almost, near, stock, exact=True)
    assert differs_from_stock(almost, near, stock, exact=False) is None
    eq = [Check("eq", (0, 1), "f:1:1")]
    assert "bit for bit" in differs_from_stock(eq, near, stock, exact=False)


@pytest.mark.numerics
@pytest.mark.parametrize("name", FAST)
def test_iree_e2e_cpu(name):
    """A few files of the suite, compiled and run on the CPU: no failure the plugin causes,
    and stock passes them (nothing excluded)."""
    result = iree_e2e.check_file(SUITE / name, gpus=())
    assert result.ok and not result.excluded, _explain(result)
    assert len(result.passed) == result.functions > 0


@pytest.mark.slow
@pytest.mark.numerics
@pytest.mark.parametrize("name", FILES)
def test_iree_e2e(name):
    """Every file: CPU compiled and run, compiled for cuda sm_80 and hip gfx942 (what stock
    fails is excluded, with the reason in the summary of `python -m
    iree_fusions.tools.iree_e2e`)."""
    result = iree_e2e.check_file(SUITE / name)
    assert result.ok, _explain(result)
