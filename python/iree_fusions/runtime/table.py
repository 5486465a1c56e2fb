"""The results table of iree-fusions-bench and run_bundle.py, its legend, and the report
(the table on stdout, errors on stderr, the rows as JSON)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence

from .machine import describe_cpu
from .statistics import MARGIN, SIGN_LEVEL


def _fmt(value, spec: str) -> str:
    if value is None:
        width = spec.split(".")[0].rstrip("defg")
        return "-".rjust(int(width) if width else 1)
    return format(value, spec)


def _pair(row: dict, key: str, spec: str) -> str:
    """`stock -> plugin` of a load-time figure (the per-call ones have their own columns)."""
    a, b = row.get(f"stock_{key}"), row.get(f"plugin_{key}")
    if a is None and b is None:
        return "-"
    return f"{_fmt(a, spec)}->{_fmt(b, spec)}"


def _interval(row: dict) -> str:
    low, high = row.get("ratio_low"), row.get("ratio_high")
    if low is None or high is None or math.isnan(low):
        return "-"
    return f"[{low:.2f}, {high:.2f}]"


def _verdict(row: dict) -> str:
    return "-" if row.get("verdict") is None else f"{row['verdict']} ({row.get('rounds')})"


def row_label(row: dict) -> str:
    """A row's model, with its export form when not the static one (`dlrm-b8@params`)."""
    return f"{row['model']}@{row['form']}" if row.get("form") else row["model"]


def format_table(rows: Sequence[dict]) -> str:
    """The results table of iree-fusions-bench (rows as dicts with ROW_KEYS)."""
    header = (f"{'model':32s} {'disp stock':>10s} {'disp plug':>10s} {'MB stock':>9s} "
              f"{'MB plug':>9s} {'max abs err':>11s} {'ms stock':>9s} {'ms plug':>9s} "
              f"{'ratio':>6s} {'interval':>14s} {'verdict (rounds)':19s} "
              f"{'load: disp':>10s} {'ms':>13s} {'MiB held':>11s}  ok")
    lines = [header, "-" * len(header)]
    for r in rows:
        def mb(key):
            return None if r.get(key) is None else r[key] / 2**20

        lines.append(
            f"{row_label(r):32s} {_fmt(r.get('stock_dispatches'), '10d')} "
            f"{_fmt(r.get('plugin_dispatches'), '10d')} "
            f"{_fmt(mb('stock_bytes'), '9.3f')} {_fmt(mb('plugin_bytes'), '9.3f')} "
            f"{_fmt(r.get('max_abs'), '11.2e')} {_fmt(r.get('stock_ms'), '9.4f')} "
            f"{_fmt(r.get('plugin_ms'), '9.4f')} {_fmt(r.get('ratio'), '6.2f')} "
            f"{_interval(r):>14s} {_verdict(r):19s} "
            f"{_pair(r, 'init_dispatches', 'd'):>10s} {_pair(r, 'load_ms', '.1f'):>13s} "
            f"{_pair(r, 'resident_mib', '.0f'):>11s}  "
            f"{'yes' if r.get('ok') else 'NO: ' + (r.get('error') or '')}"
        )
    return "\n".join(lines)


def legend(rows: Sequence[dict]) -> list[str]:
    """What the timing columns mean, and where the figures were taken (lines under the
    table; none when nothing was timed)."""
    timed = [r for r in rows if r.get("verdict") is not None]
    if not timed:
        return []
    margin = timed[0].get("margin") or MARGIN
    lines = ["ratio: median over the rounds of stock/plugin (> 1: the plugin is faster); "
             "interval: confidence interval of the per-round ratio (order statistics, >= 90% "
             "from 5 rounds on); verdict: what the interval shows: about the same when it "
             f"lies within {margin:.0%} of 1, else faster (slower) when it lies above (below) "
             "1, i.e. a one-sided sign test at 5% over the rounds, else within noise "
             "(undecided); rounds taken in parentheses; load: dispatches of the load-time "
             "initializers, time to load the module, MiB held: host memory a fresh process "
             "gains loading it and calling it once (weights as the runtime keeps them)"]
    few = [r["model"] for r in timed if (r.get("ratio_confidence") or 0) < 1 - 2 * SIGN_LEVEL]
    if few:
        lines.append(f"fewer than 5 rounds (interval below 90% confidence): {', '.join(few)}")
    lines.append(where_measured(timed))
    return lines


def where_measured(rows: Sequence[dict]) -> str:
    """`measured on <CPU>; compiled for <target> (native vector N bytes)` of timed rows."""
    machines = sorted({describe_cpu(r["machine"]) for r in rows if r.get("machine")})
    targets = sorted({_describe_target(r.get("compiled_for")) for r in rows})
    return (f"measured on {'; '.join(machines) or 'an unrecorded CPU'}; compiled for "
            f"{', '.join(targets)}")


def _describe_target(target: dict | None) -> str:
    if not target:
        return "an unrecorded target"
    size = target.get("native_vector_size")
    return target["target"] + (f" (native vector {size} bytes)" if size else "")


def report(rows: Sequence[dict], json_path: str | None = None) -> int:
    """Prints the table (stdout) and each row's error (stderr); writes the rows as JSON to
    `json_path` ("-": stdout). Returns the exit status: 0 when every row is ok."""
    print(format_table(rows))
    for line in legend(rows):
        print(line)
    for r in rows:
        if r.get("error") and r["error"] != "outputs differ":
            print(f"{r['model']}: {r['error']}", file=sys.stderr)
        elif r.get("bound") and not r["bound"].startswith("|d|"):  # (attention decomposed)
            print(f"{r['model']}: outputs {'within' if r.get('ok') else 'outside'} "
                  f"{r['bound']}", file=sys.stderr)
    if json_path:
        payload = json.dumps(list(rows), indent=2)
        if json_path == "-":
            print(payload)
        else:
            with open(json_path, "w") as f:
                f.write(payload + "\n")
    return 0 if all(r.get("ok") for r in rows) else 1
