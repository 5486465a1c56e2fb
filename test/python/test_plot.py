"""--plot: dispatches and latency, stock vs plugin, per model, in one picture."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from iree_fusions.tools.plot import PlotError, plot_rows  # noqa: E402

ROWS = [
    dict(model="dlrm-b8", stock_dispatches=36, plugin_dispatches=5, stock_ms=0.154,
         plugin_ms=0.095, ratio=1.62, ok=True),
    dict(model="towers-silu-b64", stock_dispatches=24, plugin_dispatches=4, stock_ms=0.864,
         plugin_ms=0.661, ratio=1.31, ok=True),
    dict(model="attention_projection_transpose", stock_dispatches=2, plugin_dispatches=1,
         stock_ms=0.40, plugin_ms=0.55, ratio=0.73, ok=False),
    dict(model="bert-tiny-b1-s64", stock_dispatches=20, plugin_dispatches=18, stock_ms=0.30,
         plugin_ms=0.299, ratio=1.004, ok=True),
    dict(model="needs-torch", ok=False, error="needs torch"),  # nothing to draw: left out
]
# Rows as the bench writes them now: with the verdict, its interval and where they were taken.
MACHINE = {"model": "Test CPU", "cores": 2, "vector": "avx2"}
TARGET = {"target": "llvm-cpu:haswell", "native_vector_size": 32, "cpu_features": "+avx2"}
JUDGED = [dict(r, ratio_low=lo, ratio_high=hi, verdict=v, rounds=n, margin=0.02,
               machine=MACHINE, compiled_for=TARGET)
          for r, (lo, hi, v, n) in zip(ROWS, [(1.5, 1.7, "faster", 5),
                                              (0.9, 1.4, "within noise", 21),
                                              (0.7, 0.76, "slower", 5),
                                              (0.995, 1.01, "about the same", 9)])] + ROWS[4:]


def _is_png(path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_rows_draws_both_panels(tmp_path):
    """The picture itself, not its file size: the figure's size in pixels (two panels for
    four plotted rows: 6.1 x 6.6 in at 110 dpi) and both bar colours drawn."""
    import numpy as np
    from matplotlib import colors, image

    from iree_fusions.tools.plot import PLUGIN_COLOR, STOCK_COLOR

    out = tmp_path / "bench.png"
    plot_rows(ROWS, str(out), title="test")
    assert _is_png(out)
    pixels = image.imread(str(out))[..., :3]
    assert pixels.shape[:2] == (round(6.6 * 110), round(6.1 * 110))
    for color in (STOCK_COLOR, PLUGIN_COLOR):
        rgb = np.array(colors.to_rgb(color))
        drawn = np.all(np.abs(pixels - rgb) < 1.5 / 255, axis=-1)
        assert drawn.sum() > 5000, f"no bars of colour {color}"  # 8 bars of it: ~30000 px


def test_plot_counts_only_and_nothing_to_plot(tmp_path):
    counts = [dict(r, stock_ms=None, plugin_ms=None, ratio=None) for r in ROWS[:2]]
    out = tmp_path / "counts.svg"
    plot_rows(counts, str(out))
    assert "<svg" in out.read_text()
    with pytest.raises(PlotError, match="nothing to plot"):
        plot_rows(ROWS[4:], str(tmp_path / "none.png"))


def test_plot_module_reads_bench_json(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(ROWS))
    out = tmp_path / "from-json.png"
    res = subprocess.run([sys.executable, "-m", "iree_fusions.tools.plot", str(rows),
                          "-o", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert _is_png(out)


def test_plot_shows_intervals_verdicts_and_the_machine(tmp_path):
    out = tmp_path / "judged.svg"
    plot_rows(JUDGED, str(out), title="test")
    svg = out.read_text()
    for text in ("within noise (21)", "faster (5)", "slower (5)", "1.31x noise",
                 "about the same (9)", "1.00x same", "measured on Test CPU", "llvm-cpu:haswell",
                 "within the 2% margin"):
        assert text in svg, text
    # Each verdict has its own colour, and the legend names it.
    from iree_fusions.tools.plot import VERDICT_COLOR
    assert len(set(VERDICT_COLOR.values())) == 4
    for verdict, color in VERDICT_COLOR.items():
        assert svg.count(f"<!-- {verdict} -->") == 1, verdict  # the legend entry
        assert color in svg, verdict
