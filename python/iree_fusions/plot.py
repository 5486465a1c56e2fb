"""A picture of a bench run: dispatches and latency, stock vs plugin, per model.

    iree-fusions-bench MODEL ... --plot bench.png            # the run's rows
    iree-fusions-bench --from DIR --plot bench.png           # a bundle's run
    python -m iree_fusions.plot rows.json -o bench.png       # rows saved with --json

One figure, two panels sharing the model axis: dispatches (stock and plugin bars) and latency
in ms (log scale, stock and plugin bars, the ratio stock/plugin written above each pair).
Needs matplotlib (`pip install 'iree-fusions[plot]'`); drawn off-screen (Agg).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence

STOCK_COLOR, PLUGIN_COLOR = "#8c8c8c", "#1f77b4"


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


def plot_rows(rows: Sequence[dict], path: str, title: str | None = None) -> str:
    """Draws the rows of a run (dicts with the bench's keys: model, stock_dispatches,
    plugin_dispatches, stock_ms, plugin_ms, ratio, ok) to `path` (.png, .svg, .pdf)."""
    rows = [r for r in rows if r.get("stock_dispatches") is not None
            or r.get("stock_ms") is not None]
    if not rows:
        raise PlotError("nothing to plot: no row has dispatch counts or latencies")
    plt = _pyplot()
    names = [r["model"] + ("" if r.get("ok", True) else " (NOT ok)") for r in rows]
    x = list(range(len(rows)))
    w = 0.38
    timed = any(r.get("stock_ms") is not None for r in rows)
    fig, axes = plt.subplots(2 if timed else 1, 1, sharex=True, squeeze=False,
                             figsize=(max(6.0, 0.9 * len(rows) + 2.5), 6.5 if timed else 3.8))
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
                ax.annotate(f"{r['ratio']:.2f}x", (i, top), xytext=(0, 3),
                            textcoords="offset points", ha="center", fontsize=7,
                            color="#006400" if r["ratio"] >= 1 else "#b00000")
        ax.margins(y=0.2)
        ax.set_title("stock / plugin latency ratio above each pair (> 1: plugin faster)",
                     fontsize=8, loc="left")
    bottom = axes[-1][0]
    bottom.set_xticks(x)
    bottom.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    width = fig.get_size_inches()[0]
    fig.suptitle(textwrap.fill(title or "stock IREE vs iree-fusions", int(width * 11)),
                 fontsize=10, x=0.02, ha="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m iree_fusions.plot", description=__doc__
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
