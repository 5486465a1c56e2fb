"""--plot: dispatches and latency, stock vs plugin, per model, in one picture."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from iree_fusions.plot import PlotError, plot_rows  # noqa: E402

ROWS = [
    dict(model="dlrm-b8", stock_dispatches=36, plugin_dispatches=5, stock_ms=0.154,
         plugin_ms=0.095, ratio=1.62, ok=True),
    dict(model="towers-silu-b64", stock_dispatches=24, plugin_dispatches=4, stock_ms=0.864,
         plugin_ms=0.661, ratio=1.31, ok=True),
    dict(model="attention_projection_transpose", stock_dispatches=2, plugin_dispatches=1,
         stock_ms=0.40, plugin_ms=0.55, ratio=0.73, ok=False),
    dict(model="needs-torch", ok=False, error="needs torch"),  # nothing to draw: left out
]


def _is_png(path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_rows_draws_both_panels(tmp_path):
    out = tmp_path / "bench.png"
    plot_rows(ROWS, str(out), title="test")
    assert _is_png(out) and 5_000 < out.stat().st_size < 200_000


def test_plot_counts_only_and_nothing_to_plot(tmp_path):
    counts = [dict(r, stock_ms=None, plugin_ms=None, ratio=None) for r in ROWS[:2]]
    out = tmp_path / "counts.svg"
    plot_rows(counts, str(out))
    assert "<svg" in out.read_text()
    with pytest.raises(PlotError, match="nothing to plot"):
        plot_rows(ROWS[3:], str(tmp_path / "none.png"))


def test_plot_module_reads_bench_json(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(ROWS))
    out = tmp_path / "from-json.png"
    res = subprocess.run([sys.executable, "-m", "iree_fusions.plot", str(rows), "-o", str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert _is_png(out)
