"""Error paths and help of the command-line tools: clear message, non-zero exit, no traceback."""

import json
import re
import subprocess

import pytest

from conftest import CPU_FLAGS, TRANSPOSED_EPILOGUE, tool

GOOD = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.mlir"
    p.write_text(GOOD)
    return str(p)


def _run(*cmd):
    res = subprocess.run(list(cmd), capture_output=True, text=True)
    assert "Traceback" not in res.stderr, res.stderr
    return res


@pytest.mark.parametrize("args, rc, message", [
    (["/no/such/file.mlir"], 2, "cannot read input file '/no/such/file.mlir'"),
    (["{good}", "--bogus-flag"], 1, "Unknown command line argument '--bogus-flag'"),
    (["{good}", "--fusions=no-such-pass"], 2, "--fusions: unknown pass 'no-such-pass'"),
    (["{good}", "--fusions=fusions-report{x=1}"], 2, "has no option 'x'"),
    (["{good}", "--compile-to=nowhere"], 2, "unknown phase 'nowhere'"),
    (["{good}", "{good}"], 2, "more than one input file"),
    (["{good}", "--fusions-load=no.such.module"], 2, "cannot import 'no.such.module'"),
    (["{good}", "--fusions-bogus"], 2, "unknown option '--fusions-bogus'"),
    ([], 2, "no input file"),
])
def test_compile_errors(good, args, rc, message):
    res = _run(tool("iree-fusions-compile"), *[a.replace("{good}", good) for a in args], *CPU_FLAGS,
               "-o", "/dev/null")
    assert res.returncode == rc
    assert message in res.stderr


def test_unwritable_output_is_a_clear_error(good):
    res = _run(tool("iree-fusions-compile"), good, *CPU_FLAGS, "-o", "/no/such/dir/out.vmfb")
    assert res.returncode == 1
    assert "cannot open output file '/no/such/dir/out.vmfb'" in res.stderr


def test_bad_mlir_prints_the_diagnostic_with_its_location(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text("func.func @main() {\n  %0 = foo.bar : i32\n}\n")
    res = _run(tool("iree-fusions-compile"), str(p), *CPU_FLAGS, "-o", "/dev/null")
    assert res.returncode == 1
    assert "bad.mlir:2:" in res.stderr and "foo.bar" in res.stderr


def test_compile_help_lists_passes():
    res = _run(tool("iree-fusions-compile"), "--help")
    assert res.returncode == 0
    assert "--fusions=all|none" in res.stdout and "fusions-report" in res.stdout


def test_plain_iree_compile_flags_are_delegated():
    res = _run(tool("iree-fusions-compile"), "--iree-hal-list-target-backends")
    assert res.returncode == 0 and "llvm-cpu" in res.stdout


@pytest.mark.parametrize("args, message", [
    (["/no/such.mlir", "-p", "cse"], "cannot read input file '/no/such.mlir'"),
    (["{good}", "-p", "no-such-pass"], "neither an iree-fusions pass"),
    (["{good}", "-p", "cse,("], "unbalanced"),
    ([], "no input file"),
])
def test_opt_errors(good, args, message):
    res = _run(tool("iree-fusions-opt"), *[a.replace("{good}", good) for a in args])
    assert res.returncode != 0
    assert message in res.stderr


def test_opt_lists_passes_and_writes_output(good, tmp_path):
    listing = _run(tool("iree-fusions-opt"), "--list-passes")
    assert "fusions-report (linalg): counts the candidate ops" in listing.stdout
    out = tmp_path / "out.mlir"
    res = _run(tool("iree-fusions-opt"), good, "-p", "canonicalize", "-o", str(out))
    assert res.returncode == 0 and "func.func @main" in out.read_text()


def test_bench_lists_models_and_rejects_unknown():
    assert "attention_projection_transpose" in _run(tool("iree-fusions-bench"), "--list").stdout
    res = _run(tool("iree-fusions-bench"), "no-such-model")
    assert res.returncode == 2 and "unknown model(s) no-such-model" in res.stderr


def test_bench_runs_a_bundled_model_and_writes_json(tmp_path):
    out = tmp_path / "rows.json"
    res = _run(tool("iree-fusions-bench"), "attention_projection_transpose", "--rounds=1",
               "--repetitions=2", f"--json={out}")
    assert res.returncode == 0, res.stderr
    assert "attention_projection_transpose" in res.stdout and "ratio" in res.stdout
    (row,) = json.loads(out.read_text())
    assert row["ok"] and row["stock_dispatches"] >= row["plugin_dispatches"] >= 1
    assert row["max_abs"] <= 1e-5 and row["stock_ms"] > 0 and row["plugin_ms"] > 0
    # Load-time work is shown apart from the per-call figures.
    assert row["stock_init_dispatches"] == row["plugin_init_dispatches"] == 0
    assert row["stock_load_ms"] > 0 and row["plugin_load_ms"] > 0
    assert "load: disp" in res.stdout and "0->0" in res.stdout


def test_bench_passes_runtime_flags_to_the_timing_tool(monkeypatch):
    from iree_fusions.tools import bench
    from iree_fusions.harness.timing import LatencyPair

    seen = {}

    def fake_compare_latency(stock, plugin, inputs, options=None, **kwargs):
        seen.update(kwargs, options=options)
        return LatencyPair(2.0, 1.0, [2.0], [1.0])

    monkeypatch.setattr(bench, "compare_latency", fake_compare_latency)
    flag = "--task_topology_max_group_count=1"
    assert bench.main(["attention_projection_transpose", "--rounds=1",
                       f"--runtime-flag={flag}"]) == 0
    assert seen["options"].extra_flags == (flag,) and seen["options"].rounds == 1


def test_keep_or_revert_is_judged_per_function(tmp_path):
    """One module, two functions: the pass's change pays in one (minilm_query: the transpose
    copy fused away) and not in the other (seed_matmul_transpose: IREE interchanges it the same
    way). It is kept in the first and reverted in the second alone (`skip-functions`): the
    gain does not hide the function where it bought nothing, and the report says per function
    what changed."""
    from support.passes import lit_cases, merge_modules

    cases = lit_cases("interchange-permuted-consumers")
    seed = tmp_path / "two.mlir"
    seed.write_text(merge_modules(cases["seed_matmul_transpose"], cases["minilm_query"]))
    flags = [str(seed), *CPU_FLAGS, "--fusions=interchange-permuted-consumers{leave-to-stock=0}",
             "--fusions-report", "--compile-to=flow", "-o", str(tmp_path / "b.mlir")]
    res = _run(tool("iree-fusions-compile"), *flags)
    assert "[interchange-permuted-consumers] 1 change(s)" in res.stderr, res.stderr
    assert re.search(r"note: reverted in one function, kept in the others: in "
                     r"seed_matmul_transpose, the 1 dispatch\(es\) holding its changes' ops .* "
                     r"\(all passes: dispatches 3 -> 2 \(minilm_query 2 -> 1, "
                     r"seed_matmul_transpose 1 -> 1\)", res.stderr), res.stderr
    # The one change kept is in minilm_query (the merged module lists it second).
    starts = [i + 1 for i, line in enumerate(seed.read_text().splitlines())
              if "util.func public @" in line]
    changed = re.findall(r"changed \[interchange-permuted-consumers-[0-9a-f]+\] .*two\.mlir:(\d+):",
                         res.stderr)
    assert len(starts) == 2 and len(changed) == 1 and int(changed[0]) > starts[1], res.stderr


def test_changes_that_buy_nothing_are_reverted_and_reported(tmp_path):
    """--fusions-report compares dispatches and bytes with stock IREE's. Linalg changes that
    reduce neither (here: a rewrite IREE itself makes the same way) are reverted, each becoming
    a skip that says so, and the output equals stock's; --fusions-keep-no-gain keeps them."""
    from iree_fusions.models import bundled_mlir_models
    from support.passes import lit_cases

    model = bundled_mlir_models()["attention_projection_transpose"]
    res = _run(tool("iree-fusions-compile"), model,
               *CPU_FLAGS, "--fusions=interchange-permuted-consumers", "--fusions-report", "-o",
               str(tmp_path / "a.vmfb"))
    assert "note: dispatches 2 -> 1, bytes between dispatches 196608 -> 0 (vs stock IREE)" \
        in res.stderr
    seed = tmp_path / "seed.mlir"
    seed.write_text(lit_cases("interchange-permuted-consumers")["seed_matmul_transpose"])
    flags = [str(seed), *CPU_FLAGS, "--fusions=interchange-permuted-consumers{leave-to-stock=0}",
             "--fusions-report", "--compile-to=flow"]
    res = _run(tool("iree-fusions-compile"), *flags, "-o", str(tmp_path / "b.mlir"))
    assert "0 change(s), 1 skipped" in res.stderr
    assert re.search(r"note: reverted: this pass's changes reduced neither dispatches nor bytes "
                     r"between dispatches \(the \d+ dispatch\(es\) holding its changes' ops and "
                     r"the \d+ bytes they pass on are unchanged, whatever the other passes "
                     r"gained; all passes: dispatches 1 -> 1", res.stderr), res.stderr
    assert re.search(r"skipped \[interchange-permuted-consumers-[0-9a-f]{10}\] .*: reverted: ",
                     res.stderr)
    _run(tool("iree-compile"), str(seed), *CPU_FLAGS, "--compile-to=flow", "-o",
         str(tmp_path / "s.mlir"))
    assert (tmp_path / "b.mlir").read_text() == (tmp_path / "s.mlir").read_text()
    res = _run(tool("iree-fusions-compile"), *flags, "--fusions-keep-no-gain", "-o",
               str(tmp_path / "c.mlir"))
    assert "1 change(s)" in res.stderr
    assert "note: the changes reduced neither dispatches nor bytes: dispatches 1 -> 1" \
        in res.stderr


def test_compile_remarks_at_the_ops(tmp_path):
    src = tmp_path / "permuted.mlir"
    src.write_text(TRANSPOSED_EPILOGUE)
    cmd = [tool("iree-fusions-compile"), str(src), *CPU_FLAGS, "--compile-to=flow",
           "--fusions=interchange-permuted-consumers", "-o", "/dev/null"]
    with_remarks = _run(*cmd, "--fusions-remarks")
    assert with_remarks.returncode == 0, with_remarks.stderr
    # the skip, at the transposing generic (line 9 of the file)
    assert re.search(r"permuted\.mlir:9:\d+: remark: \[Missed\] skipped \| "
                     r"Category:interchange-permuted-consumers \| Remark=\"IREE's own",
                     with_remarks.stderr), with_remarks.stderr
    assert "remark:" not in _run(*cmd).stderr
