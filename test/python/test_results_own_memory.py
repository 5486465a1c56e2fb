"""Issue 20, item 1: every result a numerics check compares owns its memory.

`iree.runtime` results map device buffers; an array that views one changes when the runtime
hands the memory to a later call. Every path that returns results (api.run, LoadedModule,
the bundle runner) copies them out while the buffer is alive, so two byte-identical builds
compare equal, always, and a changed build is caught.
"""

import os

import numpy as np
import pytest

from iree_fusions.harness import api
from iree_fusions.runtime.modules import compare_outputs, run_module
from iree_fusions.harness.numerics import compare_compilations

HERE = os.path.dirname(__file__)
GATHERS_LIT = os.path.join(HERE, "..", "passes", "batch-gathers.mlir")
# Options under which batch-gathers declines both candidates of @dependent_gathers: the two
# builds are the same program.
NO_CHANGE = ("rewrite-embedding-bags{min-offsets-batch=1},"
             "batch-gathers{min-sliced-indices=0 min-pooled-indices=0}")


def lit_case(path: str, function: str) -> str:
    """The `// -----` chunk of a lit file that defines @function."""
    with open(path) as f:
        chunks = f.read().split("// -----")
    return next(c for c in chunks if f"@{function}(" in c)


def two_results() -> str:
    return """
util.func public @main(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.constant 1.0 : f32
    %r = arith.addf %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  util.return %a, %b : tensor<64xf32>, tensor<64xf32>
}
"""


def test_results_own_their_memory_and_survive_later_calls(tmp_path):
    vmfb = api.compile_str(two_results(), stock=True).output
    x = np.arange(64, dtype=np.float32)
    first = api.run(vmfb, [x])
    assert all(r.flags.owndata for r in first), "results must not view runtime buffers"
    kept = [r.copy() for r in first]
    # Later calls (new contexts) reuse the runtime's memory: the first results stay as they were.
    for k in range(20):
        api.run(vmfb, [np.full(64, -k, np.float32)])
    for r, k in zip(first, kept):
        np.testing.assert_array_equal(r, k)
    np.testing.assert_array_equal(first[0], x + 1)
    np.testing.assert_array_equal(first[1], x * x)
    loaded = api.load(vmfb)
    assert all(r.flags.owndata for r in loaded("main", x))
    path = tmp_path / "m.vmfb"
    path.write_bytes(vmfb)
    assert all(r.flags.owndata for r in run_module(str(path), [x]))


def test_identical_builds_compare_equal_and_a_changed_build_is_caught():
    source = lit_case(GATHERS_LIT, "dependent_gathers")
    for _ in range(4):
        check = compare_compilations(source, fusions=NO_CHANGE, function="dependent_gathers",
                                     count=False)
        assert check.changes() == []
        assert check.agreement.max_abs == 0.0 and check.agreement.shapes_match
    # The second table's value changed (2.0 -> 2.5): the comparison must see it.
    changed = source.replace("dense<2.0> : tensor<20x4xf32>", "dense<2.5> : tensor<20x4xf32>")
    assert changed != source
    inputs = [np.arange(8, dtype=np.int64) % 8]
    a = api.run(api.compile_str(source, stock=True).output, inputs, "dependent_gathers")
    b = api.run(api.compile_str(changed, stock=True).output, inputs, "dependent_gathers")
    assert api.compare_outputs(a, b).max_abs == pytest.approx(0.5)


def test_compare_outputs_integers_exactly_and_infinities():
    big = np.array([2**53, 2**62], np.int64)
    assert api.compare_outputs([big], [big + 1]).max_abs == 1.0  # float64 would call it 0
    assert api.compare_outputs([big], [big.copy()]).within(0.0)
    flags = np.array([True, False])
    assert not api.compare_outputs([flags], [~flags]).within(0.0)
    inf = np.array([np.inf, -np.inf], np.float32)
    # The bundle runner and the API are one comparison: equal infinities agree in both.
    assert compare_outputs([inf], [inf.copy()]) == (0.0, 0.0, True)
    assert compare_outputs([inf], [-inf])[0] == float("inf")
