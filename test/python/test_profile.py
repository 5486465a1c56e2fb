"""--profile: IREE's HAL profiler on the stock and the plugin build, the time per dispatch kind
side by side (runtime/profile.py, harness/profiling.py, iree-fusions-bench --profile,
bench/llm_report.py). Structure only, never timing values: the kinds present, the dispatches
per call equal to the dispatches the program has, shares summing to 1, the order of the rows."""

from __future__ import annotations

import json
import math
import os
import sys

import pytest

from iree_fusions.runtime import profile as P

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Real dispatch function names and their kinds: iree-profile keys of the bundled
# attention_projection_transpose (stock and plugin), flow-phase export names of catalog models
# compiled stock and with --fusions=all (llama-start_pos-s64 and -sdpa, -f16, dynamic-seq;
# dlrm-b8, -bag, -offsets, params; towers-silu-b1, moe-tokens-b1, mmoe-b1, bert-tiny-b1-s64)
# and of sharktank's toy Llama export (prefill_bs4 / decode_bs4, IREE 3.13.0, llvm-cpu).
REAL_NAMES = [
    ("main_dispatch_0_matmul_128x384x384_f32", "matmul"),
    ("main_dispatch_1_elementwise_transpose_12x128x32_f32", "elementwise_transpose"),
    ("main_dispatch_0_matmul_like_12x128x32x384_f32", "matmul_like"),
    ("main$async_dispatch_14_attention_8x64x32x32x64", "attention"),
    ("main$async_dispatch_0_batch_matmul_8x64x32x64_f16xf16xf32", "batch_matmul"),
    ("main$async_dispatch_3_batch_matmul_8xDxDx32_f32", "batch_matmul"),
    ("main$async_dispatch_2_matmul_Dx256x256_f32", "matmul"),
    ("main$async_dispatch_0_matvec_like_1536x256_f32", "matvec_like"),
    ("main$async_dispatch_4_matmul_like_8xDx32x256_f32", "matmul_like"),
    ("main$async_dispatch_19_slow_memcpy", "slow_memcpy"),
    ("main$async_dispatch_10_softmax_4x64x64xf32_dispatch_tensor_store", "softmax"),
    ("main$async_dispatch_15_softmax_8x64x64xf32_generic", "softmax"),
    ("main$async_dispatch_2_sort_1x16x8xf32", "sort"),
    ("main$async_dispatch_11_transpose_Dx8x32_f32", "transpose"),
    ("main$async_dispatch_5_elementwise_broadcast_Dx16_f32", "elementwise_broadcast"),
    ("main$async_dispatch_1_elementwise_broadcast_D_i64xi64xf32", "elementwise_broadcast"),
    ("main$async_dispatch_7_reduction_8x64x160_i64xi64xf32", "reduction"),
    ("main$async_dispatch_15_elementwise_8xD_f32", "elementwise"),
    ("main$async_dispatch_4_elementwise_2048_f32xf16", "elementwise"),
    ("main$async_dispatch_21_elementwise", "elementwise"),  # rank 0: no shape, no types
    ("_initializer_0_dispatch_0_elementwise_broadcast_128_i64", "elementwise_broadcast"),
]
# Sharktank's toy Llama export, stock and with merge-sibling-contractions{on-cpu=true}.
LLM_NAMES = [
    ("prefill_bs4$async_dispatch_21_attention_4x4x2xDx32x32xD", "attention"),
    ("decode_bs4$async_dispatch_23_attention_4x4x2x32x32xDx32", "attention"),
    ("prefill_bs4$async_dispatch_16_scatter_4xDx4x32x2x16xf16_dispatch_tensor_store",
     "scatter"),
    ("decode_bs4$async_dispatch_18_scatter_Dx2x16x1xf16_dispatch_tensor_store", "scatter"),
    ("prefill_bs4$async_dispatch_24_horizontal_multi_contract_Dx23x256_f16xf16xf16xf32xf32",
     "horizontal_multi_contract"),
    ("decode_bs4$async_dispatch_3_horizontal_multi_contract_4x128x256_f16xf16xf16xf32xf32",
     "horizontal_multi_contract"),
    ("decode_bs4$async_dispatch_5_batch_matmul_4x16x1x1_f32", "batch_matmul"),
    ("prefill_bs4$async_dispatch_1_reduction_Dx256_f32", "reduction"),
    ("decode_bs4$async_dispatch_10_slow_memcpy", "slow_memcpy"),
    ("decode_bs4$async_dispatch_3_matmul_4x128x256_f16xf16xf32", "matmul"),
    ("prefill_bs4$async_dispatch_25_matmul_Dx256x23_f16xf16xf32", "matmul"),
    ("decode_bs4$async_dispatch_22_elementwise_broadcast_4x8xD_f16", "elementwise_broadcast"),
    ("prefill_bs4$async_dispatch_4_elementwise_D_i64", "elementwise"),
    # with --fusions=all of the working tree of 2026-11-28 (its attention decomposed)
    ("decode_bs4$async_dispatch_15_gather_4xDx4x32x32xf16_generic", "gather"),
    ("decode_bs4$async_dispatch_18_matvec_like_32xDx32_f16xf16xf32", "matvec_like"),
]
# Summaries IREE's AnnotateDispatches writes that the catalog does not show (its source: the
# op kind, then loop ranges, then element types; pack/unpack name the source type only).
IREE_FORMS = [
    ("main_dispatch_3_pack_f32", "pack"),
    ("main_dispatch_4_unpack_matmul_DxDxD_f32", "unpack_matmul"),
    ("main_dispatch_5_elementwise_broadcast_8x49x32_f32_pack", "elementwise_broadcast"),
    ("main_dispatch_6_set_encoding_LHS_DxD", "set_encoding_LHS"),
    ("main_dispatch_7", P.UNNAMED),
]


@pytest.mark.parametrize("name, kind", REAL_NAMES + LLM_NAMES + IREE_FORMS)
def test_the_kind_of_a_dispatch_name(name, kind):
    assert P.dispatch_kind(name) == kind


def test_dispatch_names_split_into_entry_ordinal_and_summary():
    assert P.split_dispatch_name("prefill_bs4$async_dispatch_12_attention_4x8xDx32x32xD_f16") \
        == ("prefill_bs4$async", 12, "attention_4x8xDx32x32xD_f16")
    # the last `_dispatch_<n>`: a summary's `_dispatch_tensor_store` has no number
    assert P.split_dispatch_name("main$async_dispatch_1_softmax_8xf32_dispatch_tensor_store") \
        == ("main$async", 1, "softmax_8xf32_dispatch_tensor_store")
    assert P.split_dispatch_name("my_dispatch_2_fn_dispatch_3_reduction_64_f32")[:2] \
        == ("my_dispatch_2_fn", 3)
    assert P.split_dispatch_name("main_dispatch_7") == ("main", 7, "")
    assert P.is_load_time("_initializer_0") and not P.is_load_time("main$async")


def test_default_modes():
    assert P.default_mode("local-task") == P.default_mode("local-sync") == P.HOST_EXECUTION
    assert P.default_mode("cuda") == P.default_mode("hip") == P.DISPATCH_EVENTS


def _group(kind_of_row, key, count, total_ns, **extra):
    return json.dumps({"type": kind_of_row, "key": key, "count": count, "valid": count,
                       "total_ns": total_ns, **extra})


def test_the_reader_divides_by_the_calls_and_prefers_device_rows():
    host = [_group("host_dispatch_group", "main_dispatch_0_matmul_8x8x8_f32", 10, 5000)]
    device = [_group("dispatch_group", "main_dispatch_0_matmul_8x8x8_f32", 6, 3000,
                     physical_device_ordinal=0),
              _group("dispatch_group", "main_dispatch_0_matmul_8x8x8_f32", 4, 2000,
                     physical_device_ordinal=1),
              _group("dispatch_group", "_initializer_0_dispatch_0_slow_memcpy", 1, 9000)]
    summary = json.dumps({"type": "dispatch_summary", "total_dispatches": 11})
    rows = P.read_dispatch_rows("\n".join([summary, *host]), calls=5)
    assert [(r.kind, r.count, r.total_us, r.us_per_call) for r in rows] == \
        [("matmul", 2.0, 1.0, 0.5)]
    rows = P.read_dispatch_rows("\n".join([summary, *host, *device]), calls=5)
    matmul = next(r for r in rows if r.kind == "matmul")
    assert (matmul.count, matmul.total_us, matmul.dispatch, matmul.entry) == \
        (2.0, 1.0, 0, "main")  # both devices summed
    load = next(r for r in rows if r.load_time)
    assert load.kind == "slow_memcpy" and "slow_memcpy" not in P.by_kind(rows)
    with pytest.raises(ValueError):
        P.read_dispatch_rows("", calls=0)
    # Largest total first, then by name.
    rows = P.read_dispatch_rows("\n".join([
        _group("dispatch_group", "main_dispatch_1_reduction_8_f32", 1, 1000),
        _group("dispatch_group", "main_dispatch_2_matmul_8x8x8_f32", 1, 3000),
        _group("dispatch_group", "main_dispatch_0_elementwise_8_f32", 1, 1000)]), calls=1)
    assert [r.dispatch for r in rows] == [2, 0, 1]


def test_untimed_dispatches_count_at_the_timed_ones_mean():
    """iree-profile's `valid`: how many of a group's dispatches were timed. 10 ran, 4 timed
    in 4000 ns: each 1 us, 10 us in all over 2 calls; none timed: no time; no `valid`: all."""
    partial = _group("dispatch_group", "main_dispatch_3_reduction_8_f32", 10, 4000, valid=4)
    (row,) = P.read_dispatch_rows(partial, calls=2)
    assert (row.count, row.us_per_call, row.total_us) == (5.0, 1.0, 5.0)
    untimed = _group("dispatch_group", "main_dispatch_3_reduction_8_f32", 10, 0, valid=0)
    (row,) = P.read_dispatch_rows(untimed, calls=1)
    assert (row.count, row.us_per_call, row.total_us) == (10.0, 0.0, 0.0)
    whole = json.dumps({"type": "dispatch_group", "key": "main_dispatch_3_reduction_8_f32",
                        "count": 10, "total_ns": 4000})
    (row,) = P.read_dispatch_rows(whole, calls=1)
    assert (row.count, row.us_per_call, row.total_us) == (10.0, 0.4, 4.0)


FIELDS = ["model", "function", "kind", "count_stock", "count_plugin", "us_per_call_stock",
          "us_per_call_plugin", "total_us_stock", "total_us_plugin", "share_stock",
          "share_plugin", "delta_us", "ratio"]


def _row(kind, count, total_us, load_time=False):
    return {"kind": kind, "count": count, "total_us": total_us, "load_time": load_time}


def test_side_by_side_losers_first_with_named_fields():
    stock = [_row("matmul", 3, 300.0), _row("slow_memcpy", 4, 40.0),
             _row("elementwise", 2, 60.0), _row("elementwise", 1, 40.0),
             _row("attention", 1, 500.0), _row("elementwise", 1, 1e6, load_time=True)]
    plugin = [_row("matmul", 3, 290.0), _row("elementwise", 2, 150.0),
              _row("attention", 1, 560.0), _row("horizontal_multi_contract", 1, 20.0)]
    rows = P.side_by_side(stock, plugin, model="m", function="decode_bs4")
    assert [r["kind"] for r in rows] == ["attention", "elementwise", "horizontal_multi_contract",
                                         "matmul", "slow_memcpy"]
    assert [round(r["delta_us"], 6) for r in rows] == [60.0, 50.0, 20.0, -10.0, -40.0]
    assert all(list(r) == FIELDS for r in rows)
    ew = rows[1]
    assert (ew["count_stock"], ew["total_us_stock"], ew["us_per_call_stock"]) == (3, 100.0,
                                                                                 100 / 3)
    assert ew["ratio"] == pytest.approx(100 / 150)
    assert rows[2]["ratio"] is None and rows[2]["count_stock"] == 0  # plugin only
    assert rows[4]["ratio"] is None and rows[4]["share_plugin"] == 0  # stock only
    for side in ("stock", "plugin"):
        assert sum(r[f"share_{side}"] for r in rows) == pytest.approx(1.0)
    text = P.format_profile(rows, "heading")
    lines = text.splitlines()
    assert lines[0] == "heading"
    order = [next(i for i, line in enumerate(lines) if line.startswith(r["kind"]))
             for r in rows]
    assert order == sorted(order)
    assert lines[-1].startswith("all dispatches") and "+80.0" in lines[-1]


def test_the_table_prints_counts_times_and_what_each_side_left_out():
    """Fractional counts with two decimals, whole ones without; no time as "-"; with the
    sides: the calls, each wall time known, and the load-time dispatches left out, per side."""
    rows = P.side_by_side([_row("matmul", 1.5, 30.0)], [_row("matmul", 2, 0.0)])
    sides = {"stock": {"calls": 4, "wall_us": 12.25, "mode": "host-execution",
                       "device": "local-sync", "load_time": ["_initializer_0_dispatch_0"]},
             "plugin": {"calls": 4, "wall_us": None, "mode": "host-execution",
                        "device": "local-sync", "load_time": []}}
    lines = P.format_profile(rows, sides=sides).splitlines()
    matmul = next(line for line in lines if line.startswith("matmul"))
    assert matmul.split()[1:3] == ["1.50", "2"]
    assert matmul.split()[3:5] == ["20.0", "-"]  # us per dispatch: 30 / 1.5; none timed
    assert lines[-2] == ("4 / 4 calls profiled (host-execution on local-sync); wall time of a "
                         "call with the profiler on, us: stock 12.2")
    assert lines[-1] == "stock: load-time dispatches left out: _initializer_0_dispatch_0"


def test_a_failing_iree_profile_is_a_runtime_error_with_its_message(builds, monkeypatch,
                                                                    tmp_path):
    """iree-profile failing on the summary, or on the dispatch rows once the summary read
    fine: a RuntimeError naming the file and the tool's message (not a traceback of its
    exit status)."""
    real = P.profile_tool()
    fake = tmp_path / "iree-profile"
    fake.write_text(f"#!/bin/sh\nif [ \"$1\" = \"$FAIL_ON\" ]; then echo broken >&2; exit 3; fi\n"
                    f"exec {real} \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setattr(P, "profile_tool", lambda: str(fake))
    for step in ("summary", "dispatch"):
        monkeypatch.setenv("FAIL_ON", step)
        with pytest.raises(RuntimeError, match=r"iree-profile failed on .+: broken$"):
            P.profile_module(builds["paths"]["stock"], builds["inputs"], device="local-sync",
                             calls=1)


# ------------------------------------------------------------------ real profiles


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The bundled attention_projection_transpose compiled stock and with --fusions=all
    (.vmfb paths), its flow-phase dispatch counts and its inputs as .npy files."""
    from iree_fusions.compiler.counting import count_flow_ir
    from iree_fusions.harness import api
    from iree_fusions.harness.numerics import random_inputs
    from iree_fusions.harness.timing import save_input_files
    from iree_fusions.models import bundled_mlir_models

    tmp = tmp_path_factory.mktemp("profile")
    path = bundled_mlir_models()["attention_projection_transpose"]
    out = {"paths": {}, "dispatches": {}}
    for side, kw in (("stock", {"stock": True}), ("plugin", {"fusions": "all"})):
        flow = api.compile_file(path, device="local-sync", compile_to="flow", **kw)
        out["dispatches"][side] = count_flow_ir(flow.output).total_dispatches
        out["paths"][side] = str(tmp / f"{side}.vmfb")
        with open(out["paths"][side], "wb") as f:
            f.write(api.compile_file(path, device="local-sync", **kw).output)
    with open(path, "rb") as f:
        out["inputs"] = save_input_files(random_inputs(f.read()), str(tmp))
    return out


def test_a_real_profile_of_a_bundled_model(builds):
    sides = P.profile_pair(builds["paths"], builds["inputs"], device="local-sync", calls=3)
    kinds = {"stock": {"matmul", "elementwise_transpose"}, "plugin": {"matmul_like"}}
    for side, prof in sides.items():
        assert prof.calls == 3 and prof.mode == P.HOST_EXECUTION
        assert {r.kind for r in prof.rows} == kinds[side]
        assert all(r.count == 1 and r.entry == "main" and not r.load_time for r in prof.rows)
        assert sum(r.count for r in prof.rows) == builds["dispatches"][side]
        assert all(r.total_us > 0 and math.isclose(r.total_us, r.us_per_call * r.count)
                   for r in prof.rows)
        assert prof.wall_us > 0 and "--device_profiling_mode=host-execution" in prof.command
    rows = P.side_by_side(sides["stock"].rows, sides["plugin"].rows)
    assert {r["kind"] for r in rows} == kinds["stock"] | kinds["plugin"]
    assert rows[0]["kind"] == "matmul_like"  # plugin only: the one kind it spends more on
    for side in ("stock", "plugin"):
        assert sum(r[f"share_{side}"] for r in rows) == pytest.approx(1.0)


def test_a_profile_keeps_its_ireeprof_file_and_rejects_unknown_modes(builds, tmp_path):
    keep = str(tmp_path / "stock.ireeprof")
    P.profile_module(builds["paths"]["stock"], builds["inputs"], device="local-sync", calls=1,
                     keep=keep)
    assert os.path.getsize(keep) > 0
    with pytest.raises(ValueError, match="unknown profiling mode"):
        P.profile_module(builds["paths"]["stock"], builds["inputs"], mode="nope")
    with pytest.raises(RuntimeError, match="profiling failed") as refused:  # on a local HAL
        P.profile_module(builds["paths"]["stock"], builds["inputs"], device="local-sync",
                         calls=1, mode=P.DISPATCH_EVENTS)
    # Line one: the mode, the device and the tool's own last line of text.
    first = str(refused.value).splitlines()[0]
    assert first.startswith(f"profiling failed ({P.DISPATCH_EVENTS} on local-sync): ")
    why = first.split("): ", 1)[1]
    assert why and why != "no message" and not why.startswith("b'"), first


def test_calls_and_their_mean_wall_time_from_the_benchmark_output():
    """Iteration runs only (not the aggregates), each run's time in its own unit, weighted
    by its iterations."""
    out = {"benchmarks": [
        {"run_type": "iteration", "iterations": 3, "real_time": 2.0, "time_unit": "ms"},
        {"run_type": "iteration", "iterations": 1, "real_time": 6000.0, "time_unit": "ns"},
        {"run_type": "iteration", "iterations": 2, "real_time": 5.0},
        {"run_type": "aggregate", "iterations": 9, "real_time": 1e9, "time_unit": "s"}]}
    assert P.calls_and_mean_us(out) == (6, (3 * 2000.0 + 6.0 + 2 * 0.005) / 6)
    assert P.calls_and_mean_us({"benchmarks": [{"run_type": "iteration", "iterations": 1,
                                                "real_time": 1.5, "time_unit": "s"}]}) == \
        (1, 1.5e6)
    assert P.calls_and_mean_us({"benchmarks": []}) == (0, 0.0)


def test_dropped_records_are_read_from_the_summary():
    summary = "\n".join([
        json.dumps({"type": "summary", "file_records": 4110, "dropped_records": 8112}),
        json.dumps({"type": "device_summary", "dispatches": 0})])
    assert P.dropped_records(summary) == 8112
    assert P.dropped_records(json.dumps({"type": "summary", "dropped_records": 0})) == 0
    assert P.dropped_records(json.dumps({"type": "summary", "file_records": 9})) == 0
    with pytest.raises(RuntimeError, match="no summary row"):
        P.dropped_records(json.dumps({"type": "device_summary"}))


def test_a_profile_is_flushed_and_refused_when_records_were_dropped(builds, monkeypatch):
    """The profiler is flushed every FLUSH_INTERVAL_MS (it holds 8192 events between
    flushes); a profile that still lost records is an error, not a table that undercounts."""
    prof = P.profile_module(builds["paths"]["stock"], builds["inputs"], device="local-sync",
                            calls=1)
    assert f"--device_profiling_flush_interval_ms={P.FLUSH_INTERVAL_MS}" in prof.command
    monkeypatch.setattr(P, "dropped_records", lambda summary: 5)
    with pytest.raises(RuntimeError, match="dropped 5 records of 1 calls of main"):
        P.profile_module(builds["paths"]["stock"], builds["inputs"], device="local-sync",
                         calls=1)


def test_bench_profile_end_to_end(tmp_path, capsys):
    """iree-fusions-bench MODEL --profile --profile-json FILE --plot FILE on the smallest
    catalog model, the profile alone (--rounds 0)."""
    from iree_fusions.tools import bench

    rows_path, plot = tmp_path / "rows.json", tmp_path / "profile.png"
    argv = ["attention_projection_transpose", "--rounds=0", "--profile-calls=2",
            f"--profile-json={rows_path}", f"--json={tmp_path / 'bench.json'}"]
    has_plot = _has_matplotlib()
    assert bench.main(argv + ([f"--plot={plot}"] if has_plot else [])) == 0
    out = capsys.readouterr().out
    assert "where the time goes, attention_projection_transpose (main)" in out
    assert out.index("disp stock") < out.index("where the time goes")  # after the usual table
    rows = json.loads(rows_path.read_text())
    assert all(list(r) == FIELDS for r in rows)
    assert {r["kind"] for r in rows} == {"matmul", "elementwise_transpose", "matmul_like"}
    assert {r["model"] for r in rows} == {"attention_projection_transpose"}
    bench_rows = json.loads((tmp_path / "bench.json").read_text())
    for side in ("stock", "plugin"):
        assert sum(r[f"count_{side}"] for r in rows) == bench_rows[0][f"{side}_dispatches"]
        assert sum(r[f"share_{side}"] for r in rows) == pytest.approx(1.0)
    assert bench_rows[0]["profile"]["rows"] == rows
    assert bench_rows[0]["profile"]["stock"]["calls"] == 2
    if has_plot:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("extra", [["--compile-only"], ["--export=/nonexistent/x"],
                                   ["--profile-calls=0"]])
def test_bench_profile_refuses_what_it_cannot_do(extra, capsys):
    from iree_fusions.tools import bench

    assert bench.main(["attention_projection_transpose", "--profile", *extra]) == 2
    assert "--profile" in capsys.readouterr().err


def test_the_llm_report_renders_the_profile():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        from llm_report import markdown
    finally:
        sys.path.pop(0)
    rows = P.side_by_side([_row("attention", 3, 700.0), _row("matmul", 22, 100.0)],
                          [_row("attention", 3, 720.0), _row("matmul", 18, 90.0),
                           _row("horizontal_multi_contract", 2, 15.0)],
                          model="toy-llama", function="decode_bs4", seq_len=64)
    side = {"calls": 5, "wall_us": 900.0, "mode": P.HOST_EXECUTION, "device": "local-task",
            "load_time": []}
    model = {"model": "toy-llama", "errors": [], "notes": [], "functions": [
        {"model": "toy-llama", "function": "decode_bs4",
         "profile": {"rows": rows, "stock": side, "plugin": side}}]}
    text = markdown([model])
    table = text[text.index("Where the time goes, toy-llama decode_bs4 at S=64"):]
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0][2:] for line in lines[1:]] == [
        "attention", "horizontal_multi_contract", "matmul", "all dispatches"]
    assert "| 22 / 18 |" in lines[3] and "| 25 / 23 |" in lines[4]


def test_the_llm_report_lists_both_peak_rss_harnesses():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        from llm_report import markdown
    finally:
        sys.path.pop(0)
    model = {"model": "llama-gqa-32", "errors": [], "notes": [], "functions": [],
             "rss": {"stock@1024": 188.1, "plugin@1024": 231.2},
             "rss_tool": {"stock@1024": 160.4, "plugin@1024": 158.6}}
    lines = [line for line in markdown([model]).splitlines() if "peak RSS of a prefill" in line]
    assert lines == ["- llama-gqa-32: peak RSS of a prefill, plugin@1024: 231.2 MiB",
                     "- llama-gqa-32: peak RSS of a prefill, stock@1024: 188.1 MiB",
                     "- llama-gqa-32: peak RSS of a prefill by iree-run-module, plugin@1024: "
                     "158.6 MiB",
                     "- llama-gqa-32: peak RSS of a prefill by iree-run-module, stock@1024: "
                     "160.4 MiB"]
