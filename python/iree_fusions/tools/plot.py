"""A picture of a bench run: dispatches and latency, stock vs plugin, per model.

    iree-fusions-bench MODEL ... --plot bench.png            # the run's rows
    iree-fusions-bench --from DIR --plot bench.png           # a bundle's run
    python -m iree_fusions.tools.plot rows.json -o bench.png       # rows saved with --json

One figure, panels sharing the model axis: dispatches (stock and plugin bars), latency in ms
(log scale, stock and plugin bars, the ratio stock/plugin and its verdict written above each
pair) and, where the rows have them, the ratios with their confidence intervals against the
noise margin around 1, coloured by verdict (faster, slower, about the same, within noise; a
legend names the colours). The title's last line says where the figures were taken (CPU,
target IREE compiled for).
Needs matplotlib (`pip install 'iree-fusions[plot]'`); drawn off-screen (Agg).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence

from ..runtime.statistics import FASTER, MARGIN, NOISE, SAME, SLOWER
from ..runtime.table import row_label, where_measured

STOCK_COLOR, PLUGIN_COLOR = "#8c8c8c", "#1f77b4"
VERDICT_COLOR = {FASTER: "#006400", SLOWER: "#b00000", SAME: "#6a3d9a", NOISE: "#707070"}
VERDICT_TAG = {SAME: "same", NOISE: "noise"}  # written after the ratio: not its side of 1


class PlotError(RuntimeError):
    """matplotlib is missing, or nothing to draw."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotError("--plot needs matplotlib: pip install 'iree-fusions[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _verdict_color(row: dict) -> str:
    """The verdict's colour; rows from before verdicts existed: by the bare ratio."""
    if row.get("verdict") in VERDICT_COLOR:
        return VERDICT_COLOR[row["verdict"]]
    return VERDICT_COLOR[FASTER] if row["ratio"] >= 1 else VERDICT_COLOR[SLOWER]


def _ratio_label(row: dict) -> str:
    """`1.48x` with the verdict where it is not the ratio's side of 1 (`0.97x noise`,
    `1.01x same`)."""
    label = f"{row['ratio']:.2f}x"
    tag = VERDICT_TAG.get(row.get("verdict"))
    return f"{label} {tag}" if tag else label


def plot_rows(rows: Sequence[dict], path: str, title: str | None = None) -> str:
    """Draws the rows of a run (dicts with the bench's keys: model, stock_dispatches,
    plugin_dispatches, stock_ms, plugin_ms, ratio, ok; ratio_low, ratio_high, verdict,
    machine, compiled_for where measured) to `path` (.png, .svg, .pdf)."""
    rows = [r for r in rows if r.get("stock_dispatches") is not None
            or r.get("stock_ms") is not None]
    if not rows:
        raise PlotError("nothing to plot: no row has dispatch counts or latencies")
    plt = _pyplot()
    names = [row_label(r) + ("" if r.get("ok", True) else " (NOT ok)") for r in rows]
    x = list(range(len(rows)))
    w = 0.38
    timed = any(r.get("stock_ms") is not None for r in rows)
    judged = any(r.get("ratio_low") is not None for r in rows)
    panels = 1 + timed + judged
    fig, axes = plt.subplots(panels, 1, sharex=True, squeeze=False,
                             figsize=(max(6.0, 0.9 * len(rows) + 2.5), 1.0 + 2.8 * panels))
    ax = axes[0][0]
    for offset, key, label, color in ((-w / 2, "stock_dispatches", "stock IREE", STOCK_COLOR),
                                      (w / 2, "plugin_dispatches", "iree-fusions", PLUGIN_COLOR)):
        values = [r.get(key) or 0 for r in rows]
        bars = ax.bar([i + offset for i in x], values, w, label=label, color=color)
        ax.bar_label(bars, fontsize=7, padding=1)
    ax.set_ylabel("dispatches")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.margins(y=0.15)
    if timed:
        ax = axes[1][0]
        for offset, key, color in ((-w / 2, "stock_ms", STOCK_COLOR),
                                   (w / 2, "plugin_ms", PLUGIN_COLOR)):
            values = [r.get(key) or 0 for r in rows]
            ax.bar([i + offset for i in x], values, w, color=color)
        ax.set_yscale("log")
        ax.set_ylabel("latency, ms (log)")
        ax.spines[["top", "right"]].set_visible(False)
        for i, r in enumerate(rows):
            if r.get("ratio") is not None:
                top = max(r.get("stock_ms") or 0, r.get("plugin_ms") or 0)
                ax.annotate(_ratio_label(r), (i, top), xytext=(0, 3),
                            textcoords="offset points", ha="center", fontsize=7,
                            color=_verdict_color(r))
        ax.margins(y=0.2)
        ax.set_title("stock / plugin latency ratio above each pair (> 1: plugin faster)",
                     fontsize=8, loc="left")
    if judged:
        _draw_intervals(axes[panels - 1][0], rows)
    bottom = axes[-1][0]
    bottom.set_xticks(x)
    bottom.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    width = fig.get_size_inches()[0]
    heading = textwrap.fill(title or "stock IREE vs iree-fusions", int(width * 11))
    if timed:
        where = where_measured([r for r in rows if r.get("stock_ms") is not None])
        heading += "\n" + textwrap.fill(where, int(width * 13))
    fig.suptitle(heading, fontsize=10, x=0.02, ha="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _draw_intervals(ax, rows: Sequence[dict]) -> None:
    """Each ratio with its confidence interval (log scale), the margin band around 1."""
    margin = next((r["margin"] for r in rows if r.get("margin")), MARGIN)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhspan(1 / (1 + margin), 1 + margin, color="#d0d0d0", alpha=0.6, linewidth=0,
               label=f"within the {margin:.0%} margin")
    for i, r in enumerate(rows):
        if r.get("ratio") is None:
            continue
        color = _verdict_color(r)
        low, high = r.get("ratio_low"), r.get("ratio_high")
        if low is not None and high is not None:
            ax.errorbar([i], [r["ratio"]], yerr=[[max(r["ratio"] - low, 0)],
                                                 [max(high - r["ratio"], 0)]],
                        fmt="o", color=color, markersize=4, capsize=3, linewidth=1)
        else:
            ax.plot([i], [r["ratio"]], "o", color=color, markersize=4)
        if r.get("verdict"):
            ax.annotate(f"{r['verdict']} ({r.get('rounds')})", (i, high or r["ratio"]),
                        xytext=(0, 4), textcoords="offset points", ha="center", fontsize=7,
                        color=color)
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    low, high = ax.get_ylim()
    if high / low < 10:  # within a decade: label the minor ticks too (0.6, 0.8, 2, ...)
        ax.yaxis.set_minor_formatter(plain)
        ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_ylabel("stock / plugin (log)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.margins(y=0.25)
    shown = {r.get("verdict") for r in rows if r.get("ratio") is not None}
    for verdict, color in VERDICT_COLOR.items():  # a legend entry per verdict drawn
        if verdict in shown:
            ax.plot([], [], "o", color=color, markersize=4, label=verdict)
    ax.legend(loc="upper right", fontsize=7, frameon=False)
    ax.set_title("ratio and its confidence interval (per-round ratios, order statistics); "
                 "verdict (rounds)", fontsize=8, loc="left")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m iree_fusions.tools.plot", description=__doc__
                                .strip().splitlines()[0])
    p.add_argument("rows", help="rows as written by iree-fusions-bench --json (or run_bundle.py)")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    p.add_argument("--title", help="figure title")
    args = p.parse_args(argv)
    with open(args.rows) as f:
        rows = json.load(f)
    try:
        plot_rows(rows, args.output, args.title)
    except PlotError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
