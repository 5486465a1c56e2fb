"""Every pass keeps stock's non-finite pattern: inputs with +inf, -inf and NaN at random
positions give, with and without the pass, NaN at the same positions and infinities of the
same sign at the same positions (`np.isnan`, `np.isposinf`, `np.isneginf` equal); the finite
values agree as in each pass's own numerics tests (1e-5 here: these cases sum at most 64
terms of N(0, 1) inputs times weights with sum |w| < 8, so a reordered f32 sum differs by
< 2 gamma(64) * 8 = 6.1e-5 in the worst case and by ~1e-6 in practice; 1e-5 fails a real
error of the size of one weight).

A padded or batched rewrite is where this breaks: zero padding multiplies an infinity by 0
(NaN), and a batched contraction that sums over padded lanes carries it into real ones.
Each case is one the pass changes (asserted, so the test cannot pass with the pass idle);
the seed of each injection is printed with a failure and derived from the case's name."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import re

from iree_fusions.harness import api
from iree_fusions.harness.numerics import random_inputs
from support import passes
from test_batch_gathers import GATHERS_LOW, inputs_for
from test_batch_gathers import lit_cases as gathers_lit_cases
from test_batch_mlp_towers import dense, towers_ir

FINITE_TOL = 1e-5
# f16 results of f32 sums that may be added in another order (test_merge_sibling_contractions
# derives it: 2 gamma_f32(256) * 6400 + one f16 ulp at 128).
FINITE_TOLS = {"kv_projections": 0.33}
SLOW = pytest.mark.slow  # the default run keeps one to three cases per pass
PAD = "batch-mlp-towers{max-padding-waste=0.9}"
# Dynamic rows are declined on llvm-cpu by default (batch-mlp-towers' rule); turned on here.
TOWERS_DYNAMIC = "batch-mlp-towers{cpu-dynamic-rows=true}"
PAD_DYNAMIC = "batch-mlp-towers{max-padding-waste=0.9 cpu-dynamic-rows=true}"
FORWARD = "forward-factory-ops,forward-factory-dispatches"

# (lit file, case, pipeline, dynamic size or None): cases each pass changes, with float
# inputs (batch-gathers' and rewrite-embedding-bags' tables are constants: GATHER_CASES).
LIT_CASES = [
    ("batch-mlp-towers", "basic_two_towers", "batch-mlp-towers", None),
    pytest.param(*("batch-mlp-towers", "bias_silu", "batch-mlp-towers", None), marks=SLOW),
    pytest.param(*("batch-mlp-towers", "separate_inputs", "batch-mlp-towers", None), marks=SLOW),
    pytest.param(*("batch-mlp-towers", "dynamic_rows", TOWERS_DYNAMIC, 5), marks=SLOW),
    ("batch-mlp-towers-padding", "padded_heads", PAD, None),
    ("batch-mlp-towers-padding", "dynamic_rows", PAD_DYNAMIC, 6),
    ("interchange-permuted-consumers", "minilm_query", "interchange-permuted-consumers", None),
    pytest.param(*("interchange-permuted-consumers", "multi_use", "interchange-permuted-consumers", None), marks=SLOW),
    pytest.param(*("interchange-permuted-consumers", "attention_producer", "interchange-permuted-consumers",
     None), marks=SLOW),
    ("forward-factory-ops", "mask_used_by_two_dispatches", FORWARD, None),
    ("forward-slices", "rope_interleaved", "forward-slices", 5),
    ("merge-sibling-contractions", "kv_projections",
     "merge-sibling-contractions{on-cpu=true}", 5),
    ("merge-sibling-generics", "returned_siblings", "merge-sibling-generics", 5),
    pytest.param(*("forward-factory-ops", "rope_concat", FORWARD, None), marks=SLOW),
]


# Cases of batch-gathers and rewrite-embedding-bags (all-distinct tables, as their own tests
# use): the tables are constants, so the infinities and NaNs go into the tables' elements.
GATHER_CASES = ["cross_table_offsets", "concat_writer", "embedding_bag", "offsets_bags",
                *(pytest.param(case, marks=SLOW) for case in
                  ("shared_table_dedup", "mixed_lengths", "pooled_bags", "bags_into_concat"))]
HEX_NONFINITE = ["0x7F800000", "0xFF800000", "0x7FC00000"]  # f32 +inf, -inf, NaN


def poison_tables(text: str, seed: int) -> str:
    """`text` with 3 elements of each constant f32 table set to +inf, -inf and NaN (hex
    literals, as MLIR writes them)."""
    rng = np.random.default_rng(seed)

    def poison(m: re.Match) -> str:
        numbers = list(re.finditer(r"-?\d+\.\d+(?:e[-+]?\d+)?", m.group(0)))
        picks = rng.choice(len(numbers), size=min(3, len(numbers)), replace=False)
        out, last = [], 0
        for k, pick in enumerate(sorted(picks)):
            number = numbers[pick]
            out += [m.group(0)[last:number.start()], HEX_NONFINITE[k]]
            last = number.end()
        return "".join(out) + m.group(0)[last:]

    return re.sub(r"arith\.constant dense<\[\[[^>]*> : tensor<\d+x\d+xf32>", poison, text)


def nonfinite_variants(inputs: list[np.ndarray], seed: int) -> list[list[np.ndarray]]:
    """Copies of `inputs` with up to 3 random positions of each float input set to +inf,
    -inf, NaN, and one copy mixing the three."""
    rng = np.random.default_rng(seed)
    kinds = [[np.inf], [-np.inf], [np.nan], [np.inf, -np.inf, np.nan]]
    variants = []
    for values in kinds:
        variant = []
        for array in inputs:
            array = np.array(array, copy=True)
            if np.issubdtype(array.dtype, np.floating) and array.size:
                flat = array.reshape(-1)
                picks = rng.choice(flat.size, size=min(3, flat.size), replace=False)
                flat[picks] = [values[i % len(values)] for i in range(len(picks))]
            variant.append(array)
        variants.append(variant)
    return variants


def assert_same_nonfinite(stock: list[np.ndarray], plugin: list[np.ndarray], what: str,
                          tol: float = FINITE_TOL) -> None:
    assert len(stock) == len(plugin), what
    for i, (a, b) in enumerate(zip(stock, plugin)):
        assert a.shape == b.shape and a.dtype == b.dtype, what
        if not np.issubdtype(a.dtype, np.floating):
            assert np.array_equal(a, b), what
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        for test in (np.isnan, np.isposinf, np.isneginf):
            diff = np.argwhere(test(a64) != test(b64))
            assert not diff.size, (f"{what}: result {i}: {test.__name__} differs at "
                                   f"{diff[:4].tolist()} (stock {a64[tuple(diff[0])]}, "
                                   f"plugin {b64[tuple(diff[0])]})")
        finite = np.isfinite(a64)
        assert np.all(np.abs(a64[finite] - b64[finite]) <= tol), what


def check_nonfinite(text: str, function: str, pipeline: str, inputs: list[np.ndarray],
                    seed: int, tol: float = FINITE_TOL) -> None:
    """Compiles `text` with and without `pipeline` (which must change it) and compares the
    non-finite patterns of the outputs for each injected variant of `inputs`."""
    stock = api.compile_str(text, stock=True)
    plugin = api.compile_str(text, fusions=pipeline, keep_no_gain=True)
    assert any(p.changes for p in plugin.passes), f"{pipeline} left {function} alone"
    for k, variant in enumerate(nonfinite_variants(inputs, seed)):
        assert_same_nonfinite(api.run(stock.output, variant, function),
                              api.run(plugin.output, variant, function),
                              f"{function} with {pipeline}, seed {seed}, variant {k}", tol)


@pytest.mark.parametrize("lit_file, case, pipeline, dynamic_size", LIT_CASES,
                         ids=lambda v: v if isinstance(v, str) and "{" not in v and "," not in v else None)
def test_nonfinite_inputs_keep_stock_pattern(lit_file, case, pipeline, dynamic_size):
    seed = zlib.crc32(f"{lit_file}:{case}".encode())
    text = passes.lit_cases(lit_file)[case]
    inputs = random_inputs(text, case, seed=seed, dynamic_size=dynamic_size)
    assert any(np.issubdtype(x.dtype, np.floating) for x in inputs), "no float input"
    check_nonfinite(text, case, pipeline, inputs, seed, FINITE_TOLS.get(case, FINITE_TOL))


@pytest.mark.parametrize("case", GATHER_CASES)
def test_nonfinite_tables_keep_stock_pattern(case):
    seed = zlib.crc32(f"gathers:{case}".encode())
    text = poison_tables(gathers_lit_cases()[case], seed)
    assert text.count("0x7FC00000") >= 1, "no table poisoned"
    check_nonfinite(text, case, GATHERS_LOW, inputs_for(text, case, seed=seed), seed)


@pytest.mark.parametrize("batch", [pytest.param(1, marks=SLOW), 4])
def test_padded_heads_with_infinite_inputs(batch):
    """Issue 33's reproducer: four heads Linear(16, w) -> ReLU -> Linear(w, 1) with
    w = 32/64/96/128 padded into one group. An infinite input made the padded columns
    inf * 0 = NaN, which the second layer's zero rows carried into every real head."""
    text = towers_ir(batch, [[16, w, 1] for w in (32, 64, 96, 128)], ["relu"] * 4, seed=3)
    rng = np.random.default_rng(3)

    def negative_feature_5(m: re.Match) -> str:  # every head's weights of x[:, 5] < 0
        weights = rng.standard_normal((int(m.group(1)), 16)).astype(np.float32) / 4
        weights[:, 5] = -np.abs(weights[:, 5]) - 0.01
        return f"arith.constant {dense(weights)} : tensor<{m.group(1)}x16xf32>"

    text = re.sub(r"arith\.constant dense<[^>]*> : tensor<(\d+)x16xf32>", negative_feature_5,
                  text)
    stock = api.compile_str(text, stock=True)
    plugin = api.compile_str(text, fusions=PAD, keep_no_gain=True)
    assert any("padded to 128x1" in c.what for p in plugin.passes for c in p.changes), \
        plugin.reports
    x = np.random.default_rng(batch).standard_normal((batch, 16)).astype(np.float32)
    x[batch - 1, 5] = np.inf
    a = api.run(stock.output, [x], "main")
    b = api.run(plugin.output, [x], "main")
    # Stock keeps finite values in the row with the infinity (a ReLU zeroes the -inf terms):
    # the case can tell a leak from a NaN stock computes as well.
    assert any(np.isfinite(out[batch - 1]).any() for out in a), a
    assert_same_nonfinite(a, b, f"padded heads, batch {batch}")
