"""`--profile` of iree-fusions-bench and bench/llm_suite.py: IREE's HAL profiler on the stock
and the plugin build, the time per dispatch kind side by side (`runtime.profile`), its table,
its JSON rows and its picture.

    iree-fusions-bench MODEL --profile [--profile-json FILE] [--plot FILE.png]
    python bench/llm_suite.py --profile [--profile-json FILE]

A profile is `--profile-calls` calls of the function in one `iree-benchmark-module` run per
side, after the latency comparison and apart from it (the profiler's own cost stays out of
the latency figures); `--rounds 0` skips the timing and keeps the profile.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np

from ..runtime.profile import MODES, format_profile, profile_pair, side_by_side
from ..runtime.table import row_label, where_measured
from .timing import save_input_files

# As tools/plot.py draws stock and plugin (the harness imports nothing of the tools).
STOCK_COLOR, PLUGIN_COLOR = "#8c8c8c", "#1f77b4"
LOSS_COLOR, GAIN_COLOR = "#b00000", "#006400"  # tools/plot.py's slower and faster
DEFAULT_CALLS = 20


class ProfilePlotError(RuntimeError):
    """matplotlib is missing, or nothing to draw."""


def add_profile_arguments(p: argparse.ArgumentParser, calls: int = DEFAULT_CALLS) -> None:
    """--profile, --profile-json, --profile-mode, --profile-calls."""
    p.add_argument("--profile", action="store_true",
                   help="after the comparison, profile both builds with IREE's HAL profiler and "
                        "print the time per dispatch kind, stock vs plugin, losers first "
                        "(iree-fusions-bench --plot then draws it instead of the latency chart)")
    p.add_argument("--profile-json", metavar="FILE",
                   help="write the profile's rows (per model, function and kind) as JSON "
                        "(implies --profile)")
    p.add_argument("--profile-mode", choices=MODES,
                   help="HAL profiling data family (default: host-execution on local-task and "
                        "local-sync, where it is the one supported; dispatch-events, the "
                        "device's timestamps, on GPU devices)")
    p.add_argument("--profile-calls", type=int, default=calls, metavar="N",
                   help="calls of the function a side profiles (default: %(default)s)")


def profile_summary(sides: Mapping, **fields) -> dict:
    """A JSON-ready profile of both sides ({"stock": Profile, "plugin": Profile}): `rows`
    (`side_by_side`, each with `fields` first) and each side's `summary()`."""
    return {"rows": side_by_side(sides["stock"].rows, sides["plugin"].rows, **fields),
            **{side: prof.summary() for side, prof in sides.items()}}


def profile_builds(stock: bytes, plugin: bytes, inputs: Sequence[np.ndarray], *,
                   function: str, device: str, calls: int = DEFAULT_CALLS,
                   mode: str | None = None, extra_flags: Sequence[str] = (), **fields
                   ) -> dict:
    """Profiles `calls` calls of `function` of both compiled modules on `device` with the
    same inputs (`extra_flags` to iree-benchmark-module: runtime and parameter flags);
    `profile_summary` of them, its rows headed by `fields` and `function`."""
    with tempfile.TemporaryDirectory(prefix="iree-fusions-profile-") as tmp:
        paths = {}
        for side, blob in (("stock", stock), ("plugin", plugin)):
            paths[side] = os.path.join(tmp, f"{side}.vmfb")
            with open(paths[side], "wb") as f:
                f.write(blob)
        sides = profile_pair(paths, save_input_files(inputs, tmp), function=function,
                             device=device, calls=calls, mode=mode, extra_flags=extra_flags)
    return profile_summary(sides, **fields, function=function)


def format_summary(summary: Mapping, heading: str = "") -> str:
    """The table of one `profile_summary`."""
    return format_profile(summary["rows"], heading,
                          {side: summary[side] for side in ("stock", "plugin")})


def profile_heading(label: str, function: str) -> str:
    return (f"where the time goes, {label} ({function}): per dispatch kind, per call; "
            "losers first")


def report_profiles(rows: Sequence[Mapping], json_path: str | None = None,
                    plot_path: str | None = None, title: str | None = None) -> None:
    """The end of a bench run with --profile: each profiled row's table (stdout), all their
    rows as JSON to `json_path` ("-": stdout), their picture to `plot_path`. Raises
    OutputError (a file that cannot be written) or ProfilePlotError."""
    from ..compiler.files import write_file  # atomically: a failed write leaves the old file

    profiled = [(row_label(r), r["profile"]) for r in rows if r.get("profile")]
    for label, summary in profiled:
        print()
        print(format_summary(summary, profile_heading(label, summary["rows"][0]["function"]
                                                      if summary["rows"] else "-")))
    if json_path:
        write_file(json_path, json.dumps([row for _, s in profiled for row in s["rows"]],
                                         indent=2) + "\n")
    if plot_path:
        timed = [r for r in rows if r.get("machine")]
        plot_profiles([(_panel_label(label, s["rows"]), s["rows"])
                       for label, s in profiled if s["rows"]], plot_path,
                      f"time per dispatch kind, {title}" if title else None,
                      where_measured(timed) if timed else None)


def _panel_label(label: str, rows: Sequence[Mapping]) -> str:
    """`model (function): all dispatches, us per call: stock X, plugin Y`."""
    stock = sum(r["total_us_stock"] for r in rows)
    plugin = sum(r["total_us_plugin"] for r in rows)
    return (f"{label} ({rows[0]['function']}): all dispatches, us per call: stock "
            f"{stock:.1f}, plugin {plugin:.1f}")


def plot_profiles(panels: Sequence[tuple[str, Sequence[Mapping]]], path: str,
                  title: str | None = None, where: str | None = None) -> str:
    """One horizontal bar chart per (label, side-by-side rows): each kind's time per call,
    stock and plugin bars, losers at the top (the rows' order), plugin - stock written at
    the right of each pair (red where the plugin spends more, green where less)."""
    panels = [(label, list(rows)) for label, rows in panels if rows]
    if not panels:
        raise ProfilePlotError("nothing to plot: no profile rows")
    try:
        import matplotlib
    except ImportError:
        raise ProfilePlotError("--plot needs matplotlib: pip install 'iree-fusions[plot]'"
                               ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heights = [0.45 * len(rows) + 0.9 for _, rows in panels]
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, figsize=(8.0, sum(heights) + 1.0),
                             gridspec_kw={"height_ratios": heights})
    h = 0.38
    for (label, rows), (ax,) in zip(panels, axes):
        y = list(range(len(rows)))
        for offset, key, name, color in ((-h / 2, "total_us_stock", "stock IREE", STOCK_COLOR),
                                         (h / 2, "total_us_plugin", "iree-fusions",
                                          PLUGIN_COLOR)):
            ax.barh([i + offset for i in y], [r[key] for r in rows], h, label=name,
                    color=color)
        top = max(max(r["total_us_stock"], r["total_us_plugin"]) for r in rows) or 1.0
        for i, r in enumerate(rows):
            ax.annotate(f"{r['delta_us']:+.1f} us", (max(r["total_us_stock"],
                                                         r["total_us_plugin"]), i),
                        xytext=(4, 0), textcoords="offset points", va="center", fontsize=7,
                        color=LOSS_COLOR if r["delta_us"] > 0 else GAIN_COLOR)
        ax.set_xlim(0, top * 1.25)
        ax.set_yticks(y)
        ax.set_yticklabels([r["kind"] for r in rows], fontsize=8)
        ax.invert_yaxis()  # the first row (the worst loser) at the top
        ax.set_xlabel("us per call of the function (dispatch time of the kind)", fontsize=8)
        ax.set_title(label, fontsize=9, loc="left")
        ax.spines[["top", "right"]].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    heading = textwrap.fill(title or "where the time goes: stock IREE vs iree-fusions", 90)
    if where:
        heading += "\n" + textwrap.fill(where, 100)
    fig.suptitle(heading, fontsize=10, x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0.35 / (sum(heights) + 1.0), 1, 1))  # room for the legend
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
