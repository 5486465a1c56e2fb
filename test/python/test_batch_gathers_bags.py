"""batch-gathers and rewrite-embedding-bags: embedding_bag with run-time offsets, candidate
keys (skip / only)."""

# ruff: noqa: E501  (IR lines in the test programs)

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import reassociation_bound
from iree_fusions.harness import api
from iree_fusions.harness.numerics import compare_compilations
from support.batch_gathers import (BAGS, GATHERS, GATHERS_LOW, LOW, PASS, dense, lit_cases,
                                   run_pass, table_values)


# ------------------------------------------------- embedding_bag with run-time offsets


def offsets_bag_text(name: str, ids: str, offsets: str, table: str, bags: int, n: int,
                     rows: int, dim: int) -> str:
    """torch-mlir's F.embedding_bag(mode="sum") generic with offsets given at run time, as
    IREE 3.13 has it at global-optimization (B = 1: unit dims folded, 0-d offsets)."""
    if bags == 1:
        return f"""  %{name}_z = arith.constant 0.0 : f32
  %{name}_e = tensor.empty() : tensor<{dim}xf32>
  %{name}_f = linalg.fill ins(%{name}_z : f32) outs(%{name}_e : tensor<{dim}xf32>) -> tensor<{dim}xf32>
  %{name} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}} ins(%{ids}, %{offsets} : tensor<{n}xi64>, tensor<i64>) outs(%{name}_f : tensor<{dim}xf32>) {{
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %n = arith.constant {n} : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.cmpi slt, %in_0, %1 : i64
    %3 = arith.cmpi eq, %in_0, %1 : i64
    %4 = arith.ori %2, %3 : i1
    %5 = arith.cmpi slt, %1, %n : i64
    %6 = arith.andi %4, %5 : i1
    %7 = arith.index_cast %in : i64 to index
    %8 = linalg.index 1 : index
    %x = tensor.extract %{table}[%7, %8] : tensor<{rows}x{dim}xf32>
    %9 = arith.addf %x, %out : f32
    %10 = arith.select %6, %9, %out : f32
    linalg.yield %10 : f32
  }} -> tensor<{dim}xf32>"""
    return f"""  %{name}_z = arith.constant 0.0 : f32
  %{name}_e = tensor.empty() : tensor<{bags}x{dim}xf32>
  %{name}_f = linalg.fill ins(%{name}_z : f32) outs(%{name}_e : tensor<{bags}x{dim}xf32>) -> tensor<{bags}x{dim}xf32>
  %{name} = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}} ins(%{ids}, %{offsets} : tensor<{n}xi64>, tensor<{bags}xi64>) outs(%{name}_f : tensor<{bags}x{dim}xf32>) {{
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %c0 = arith.constant 0 : index
    %c1_i64 = arith.constant 1 : i64
    %cb = arith.constant {bags} : i64
    %n = arith.constant {n} : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %2, %cb : i64
    %5 = arith.select %4, %c0, %3 : index
    %next = tensor.extract %{offsets}[%5] : tensor<{bags}xi64>
    %6 = arith.select %4, %n, %next : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %x = tensor.extract %{table}[%14, %15] : tensor<{rows}x{dim}xf32>
    %16 = arith.addf %x, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  }} -> tensor<{bags}x{dim}xf32>"""


def offsets_model(tables: list[tuple[int, int]], bags: list[tuple[int, int]], batch: int
                  ) -> tuple[str, list[np.ndarray]]:
    """IR of a function of (ids, offsets) per bag feature (bags: [(table, ids count)]) and
    its tables' values."""
    vals = [table_values(r, d, k) for k, (r, d) in enumerate(tables)]
    lines = [f"  %t{k} = arith.constant {dense(v)} : tensor<{v.shape[0]}x{v.shape[1]}xf32>"
             for k, v in enumerate(vals)]
    args, results, types = [], [], []
    off_t = "tensor<i64>" if batch == 1 else f"tensor<{batch}xi64>"
    for f, (t, n) in enumerate(bags):
        rows, dim = tables[t]
        args += [f"%ids{f}: tensor<{n}xi64>", f"%offs{f}: {off_t}"]
        lines.append(offsets_bag_text(f"b{f}", f"ids{f}", f"offs{f}", f"t{t}", batch, n, rows,
                                      dim))
        results.append(f"%b{f}")
        types.append(f"tensor<{dim}xf32>" if batch == 1 else f"tensor<{batch}x{dim}xf32>")
    text = (f"util.func public @main({', '.join(args)}) -> ({', '.join(types)}) {{\n"
            + "\n".join(lines)
            + f"\n  util.return {', '.join(results)} : {', '.join(types)}\n}}\n")
    return text, vals


def bag_sums(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """torch's sum bags, in float32 and in order: bag b sums ids[offsets[b]:offsets[b+1]]
    (the last bag runs to the end), clamped to the ids as the generic does."""
    one_bag = np.ndim(offsets) == 0  # B = 1: a 0-d offsets tensor and a [D] result
    offsets = np.atleast_1d(offsets)
    n, out = len(ids), []
    for b, start in enumerate(offsets):
        end = offsets[b + 1] if b + 1 < len(offsets) else n
        acc = np.zeros(table.shape[1], np.float32)
        for j in range(max(start, 0), min(end, n)):
            acc = table[ids[j]] + acc
        out.append(acc)
    return out[0] if one_bag else np.stack(out)


def ragged_offsets(rng: np.random.Generator, batch: int, n: int) -> np.ndarray:
    """Variable-length bags over n ids (empty bags included), as a data loader makes them
    (torch requires offsets[0] = 0)."""
    offsets = np.sort(rng.integers(0, n + 1, batch)).astype(np.int64)
    offsets[0] = 0
    return offsets


def test_offsets_bags_ragged_match_stock():
    """Ragged bags (empty ones too) of the lit case: equal to stock and to the in-order
    float32 sums of NumPy, up to the order of the sums."""
    name = "offsets_bags"
    text = lit_cases()[name]
    rng = np.random.default_rng(3)
    ids0, ids1 = rng.integers(0, 10, 10), rng.integers(0, 10, 7)
    offs0, offs1 = np.array([0, 0, 4, 9]), np.array([0, 3, 3, 7])  # empty bags, last empty
    inputs = [x.astype(np.int64) for x in (ids0, offs0, ids1, offs1)]
    check = compare_compilations(text, inputs, fusions=GATHERS_LOW, function=name)
    # Stock's scan adds n = 10 terms (zeros outside the bag) in an order the target may
    # choose; the rows are positive: within 2 gamma(10) of the sum (1.2e-6), also of NumPy's.
    rtol = reassociation_bound(10)
    assert check.agreement.max_rel <= rtol, check.agreement
    t0, t1 = table_values(10, 4, 1), table_values(20, 4, 2)
    np.testing.assert_allclose(check.plugin[0], bag_sums(t0, ids0, offs0), rtol=rtol, atol=0)
    np.testing.assert_allclose(check.plugin[1], bag_sums(t1, ids1, offs1), rtol=rtol, atol=0)
    assert check.plugin_dispatches < check.stock_dispatches


def test_offsets_bag_unit_batch_rewritten_when_asked():
    """B = 1 is declined by the cost rule (a feasible candidate); applied anyway (as a
    decisions file would), it equals stock (up to the order of the sums)."""
    name = "offsets_bag_unit_batch"
    text = lit_cases()[name]
    _, reports = run_pass(text, GATHERS_LOW)
    skip, = reports[0].skipped
    assert reports[0].pass_name == BAGS and skip.feasible and "min-offsets-batch" in skip.reason
    inputs = [np.array([3, 0, 9, 9, 2], np.int64), np.array(1, np.int64)]
    check = compare_compilations(text, inputs, fusions=f"{BAGS}{{min-offsets-batch=1}},{PASS}",
                                 function=name)
    rtol = reassociation_bound(5)  # 5 positive rows summed in an order the target may choose
    assert check.changes() and check.agreement.max_rel <= rtol, check.agreement
    np.testing.assert_allclose(check.plugin[0],
                               bag_sums(table_values(10, 4, 1), inputs[0], inputs[1]),
                               rtol=rtol, atol=0)


@st.composite
def offsets_models(draw):
    n_tables = draw(st.integers(1, 3))
    tables = [(draw(st.integers(3, 20)), draw(st.sampled_from([4, 8]))) for _ in range(n_tables)]
    dim = tables[0][1]
    tables = [(r, dim) for r, _ in tables]  # one dim: the bags can merge
    batch = draw(st.sampled_from([1, 2, 5]))
    # At least 2 ids: with one, IREE folds the position loop away before the pass runs.
    bags = [(draw(st.integers(0, n_tables - 1)), draw(st.integers(2, 12)))
            for _ in range(draw(st.integers(1, 4)))]
    return tables, bags, batch, draw(st.booleans())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offsets_models(), st.integers(0, 2**16))
def test_random_offsets_bags_match_stock(model, seed):
    """Random tables (shared by chance), bag counts and id counts; offsets ragged (sorted,
    empty bags) or arbitrary (out of order, negative, past the end): the rewrite adds exactly
    what the stock scan adds, in the same order."""
    tables, bags, batch, ragged = model
    text, vals = offsets_model(tables, bags, batch)
    rng = np.random.default_rng(seed)
    inputs, expected = [], []
    for t, n in bags:
        ids = rng.integers(0, tables[t][0], n).astype(np.int64)
        offs = ragged_offsets(rng, batch, n) if ragged else \
            rng.integers(-2, n + 3, batch).astype(np.int64)
        offs = offs.reshape(()) if batch == 1 else offs
        inputs += [ids, offs]
        expected.append(bag_sums(vals[t], ids, offs))
    check = compare_compilations(text, inputs, fusions=f"{BAGS}{{min-offsets-batch=1}},{PASS}",
                                 count=False)
    assert check.changes(), check.reports
    # <= 12 positive rows a bag, summed in an order the target may choose.
    rtol = reassociation_bound(12)
    assert check.agreement.max_rel <= rtol, check.agreement
    for got, want in zip(check.plugin, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


def test_offsets_bags_out_of_range_id_like_stock():
    """Stock's bag generic has no bounds checks (torch-mlir emits none for embedding_bag),
    and the rewrite reads each member from its own table (no stacked table, no offsets
    added): an id past table 0 affects only its own bag, as in stock (the value read is
    undefined in both); every other element is identical."""
    name = "offsets_bags"
    text = lit_cases()[name]
    inputs = [np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 0]), np.array([0, 2, 5, 8]),
              np.array([1, 2, 3, 4, 5, 6, 7]), np.array([0, 2, 4, 6])]
    inputs = [x.astype(np.int64) for x in inputs]
    inputs[0][3] = 10  # t0 has 10 rows: in bag 1 (ids 2..4) of member 0
    stock = api.run(api.compile_str(text, stock=True).output, inputs, name)
    plugin = api.run(api.compile_str(text, fusions=GATHERS_LOW).output, inputs, name)
    rtol = reassociation_bound(10)  # scans of 10 positive rows, in an order the target picks
    np.testing.assert_allclose(stock[1], plugin[1], rtol=rtol, atol=0)
    mask = np.ones(stock[0].shape, bool)
    mask[1] = False
    np.testing.assert_allclose(stock[0][mask], plugin[0][mask], rtol=rtol, atol=0)


def test_expert_weight_gather_reason():
    """`W[ids]` of a static 3-d weight: the skip names what is unsupported (slices of a 3-d
    table), not "dynamic or unexpected shapes"."""
    _, reports = run_pass(lit_cases()["expert_weight_gather"])
    skip, = reports[0].skipped
    assert "whole [4x4] slices of a 3-d table" in skip.reason
    assert "dynamic" not in skip.reason


# ---------------------------------------------------------------- candidate keys


def keyed(reports) -> tuple[dict[str, str], dict[str, str]]:
    """(key -> what changed, key -> why skipped) of one pass report."""
    return ({c.key: c.what for c in reports[0].changes},
            {s.key: s.reason for s in reports[0].skipped})


def test_skip_and_only_select_candidates_by_key():
    """bags_into_concat has two candidates: the bags' cross-table group and the concat
    writer. Skipping one by its key leaves exactly that one unapplied; `only` the reverse.
    The writer's key is the same whether the bags were batched or not."""
    text = lit_cases()["bags_into_concat"]
    changes, _ = keyed(run_pass(text, LOW)[1])
    assert len(changes) == 2
    group, = [k for k, what in changes.items() if what.startswith("cross-table")]
    writer, = [k for k, what in changes.items() if what.startswith("concat")]
    low = "batch-gathers{min-sliced-indices=0 min-pooled-indices=0 %s}"

    out, reports = run_pass(text, low % f"skip={group}")
    changes, skipped = keyed(reports)
    assert list(changes) == [writer] and "0 from batched gathers" in changes[writer]
    assert skipped[group] == "skipped on request (skip=KEY)"
    assert "tensor<2x8x4xf32>" not in out

    out, reports = run_pass(text, low % f"only={group}")
    changes, skipped = keyed(reports)
    assert list(changes) == [group]
    assert skipped[writer] == f"not selected (only={group})"
    assert out.count("tensor.insert_slice") == 5 + 2  # the concat + the bags' two tables

    out, reports = run_pass(text, low % f"skip={writer}")
    changes, skipped = keyed(reports)
    assert list(changes) == [group]
    assert skipped[writer] == "skipped on request (skip=KEY)"


def renamed(text: str) -> str:
    """The same IR with other SSA and function names and an unrelated op first."""
    text = re.sub(r"%([A-Za-z_]\w*)", r"%renamed_\1", text)
    text = re.sub(r"@(\w+)\(", r"@other_\1(", text)
    return re.sub(r"(util\.func public @\w+\(.*\{\n)",
                  r"\1  %unrelated = arith.constant 7 : i32\n", text, count=1)


@pytest.mark.parametrize("name", ["bags_into_concat", "shared_table_dedup", "wrong_axis",
                                  "embedding_bag", "mixed_lengths", "absorbed_by_consumer",
                                  "offsets_bags", "offsets_bags_into_concat",
                                  "offsets_bag_unit_batch", "expert_weight_gather"])
@pytest.mark.parametrize("pipeline", [GATHERS_LOW, GATHERS])
def test_keys_describe_structure_only(name, pipeline):
    """The same structure in another file (other names, other lines) gets the same keys."""
    text = lit_cases()[name]
    other = renamed(text)
    assert other != text and "%unrelated" in other
    for a, b in zip(run_pass(text, pipeline)[1], run_pass(other, pipeline)[1], strict=True):
        assert [c.key for c in a.changes] == [c.key for c in b.changes]
        assert [s.key for s in a.skipped] == [s.key for s in b.skipped]
        assert [c.location for c in a.changes + a.skipped] != \
            [c.location for c in b.changes + b.skipped] or not a.changes + a.skipped
