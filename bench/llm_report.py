"""The report of `bench/llm_suite.py`: its results as markdown tables, worst row first (per
function: dispatches, bit-identity, latency and verdict; per model: compile time, peak RSS,
errors), with --profile the time per dispatch kind of each function (losers first), then the
notes and errors."""

from __future__ import annotations


VERDICT_ORDER = {"slower": 0, "within noise": 1, "about the same": 2, "faster": 3, None: 1}


def badness(row: dict, model: dict) -> tuple:
    """Sort key, worst first: outputs not bit-identical, then errors, then slower, noise,
    same, faster, then the lowest latency ratio, then the fewest dispatches saved."""
    bits = row.get("bits", {})
    identical = bool(bits) and all(v == "identical" for v in bits.values())
    saved = (row.get("stock_dispatches") or 0) - (row.get("plugin_dispatches") or 0)
    return (identical, not model["errors"], VERDICT_ORDER.get(row.get("verdict"), 1),
            row.get("ratio") or 0.0, saved)


def _n(v, spec="") -> str:
    return "-" if v is None else format(v, spec)


def markdown(models: list[dict]) -> str:
    """Two tables (per function, per model), worst row first, then notes and errors."""
    rows = sorted(((row, m) for m in models for row in m["functions"]),
                  key=lambda rm: badness(*rm))
    out = ["| model | function | dispatches stock / plugin | with LLM flags | bit-identical "
           "(logits, cache) | latency stock / plugin ms (S) | ratio [interval] | verdict | "
           "vs pipeline: ms, ratio [interval], verdict |",
           "|---|---|---|---|---|---|---|---|---|"]
    for row, _ in rows:
        bits = row.get("bits", {})
        same = [k for k, v in bits.items() if v == "identical"]
        bit_text = ("-" if not bits else "yes " + ", ".join(sorted({k.split("@")[1] for k in bits}))
                    if len(same) == len(bits) else
                    "NO: " + "; ".join(f"{k} {v}" for k, v in bits.items() if v != "identical"))
        lat = ("-" if row.get("stock_ms") is None else
               f"{row['stock_ms']:.3g} / {row['plugin_ms']:.3g} ({row['latency_seq_len']}, "
               f"{row['rounds']}x{row['repetitions']})")
        ratio = ("-" if row.get("ratio") is None else
                 f"{row['ratio']:.3f} [{row['ratio_low']:.3f}, {row['ratio_high']:.3f}]")
        pipe = row.get("vs_pipeline")
        pipe_text = ("-" if not pipe else
                     f"{pipe['stock_ms']:.3g} / {pipe['plugin_ms']:.3g}, {pipe['ratio']:.3f} "
                     f"[{pipe['ratio_low']:.3f}, {pipe['ratio_high']:.3f}], {pipe['verdict']}")
        out.append(f"| {row['model']} | {row['function']} | {_n(row.get('stock_dispatches'))} / "
                   f"{_n(row.get('plugin_dispatches'))} | {_n(row.get('stock_dispatches_llm'))} / "
                   f"{_n(row.get('plugin_dispatches_llm'))} | {bit_text} | {lat} | {ratio} | "
                   f"{row.get('verdict') or '-'} | {pipe_text} |")
    out += ["", "| model | compile s stock / plugin (rounds) | ratio stock/plugin | peak RSS MiB "
            "stock / plugin / pipeline (prefill S) | errors |", "|---|---|---|---|---|"]
    for m in sorted(models, key=lambda m: (not m["errors"], m.get("compile_ratio") or 0)):
        comp = ("-" if m.get("stock_compile_s") is None else
                f"{m['stock_compile_s']:.1f} / {m['plugin_compile_s']:.1f} ({m['compile_rounds']})")
        rss = (f"{_n(m.get('stock_peak_rss_mib'))} / {_n(m.get('plugin_peak_rss_mib'))} / "
               f"{_n(m.get('pipeline_peak_rss_mib'))} ({m.get('rss_seq_len', '-')})")
        out.append(f"| {m['model']} | {comp} | {_n(m.get('compile_ratio'), '.3f')} | {rss} | "
                   f"{len(m['errors'])} |")
    for m in models:
        for row in m["functions"]:
            if row.get("profile", {}).get("rows"):
                out += ["", *profile_markdown(row["profile"], m["model"], row["function"])]
    for m in models:
        for key, mib in sorted(m.get("rss", {}).items(), key=lambda kv: kv[0].split("@")[::-1]):
            out.append(f"\n- {m['model']}: peak RSS of a prefill, {key}: {mib} MiB")
        for key, mib in sorted(m.get("rss_tool", {}).items(),
                               key=lambda kv: kv[0].split("@")[::-1]):
            out.append(f"\n- {m['model']}: peak RSS of a prefill by iree-run-module, {key}: "
                       f"{mib} MiB")
    for m in models:
        for row in m["functions"]:
            if row.get("faults_per_call"):
                sides = row["faults_per_call"]
                out.append(f"\n- {m['model']} {row['function']}: minor page faults per call "
                           f"(S={row.get('latency_seq_len', '-')}), "
                           + ", ".join(f"{k} {v}" for k, v in sides.items()))
    for m in models:
        for row in m["functions"]:
            for key, verdict in sorted(row.get("bits_pipeline", {}).items()):
                if verdict != "identical":
                    out.append(f"\n- {m['model']} {row['function']}: pipeline vs stock, {key}: "
                               f"{verdict}")
    for m in models:
        for n in m["notes"]:
            out.append(f"\n- {m['model']}: note: {n}")
        for e in m["errors"]:
            out.append(f"\n- {m['model']}: ERROR: {e}")
    return "\n".join(out) + "\n"


def _us(v: float) -> str:
    return "-" if not v else f"{v:.1f}"


def _count(v: float) -> str:
    return f"{v:g}" if v == int(v) else f"{v:.2f}"


def profile_markdown(profile: dict, model: str, function: str) -> list[str]:
    """The lines of one function's profile table (`profiling.profile_summary`: rows per
    dispatch kind, per call, losers first; the sides' calls and mode)."""
    rows = profile["rows"]
    stock, plugin = profile.get("stock", {}), profile.get("plugin", {})
    seq = f" at S={rows[0]['seq_len']}" if rows and rows[0].get("seq_len") else ""
    out = [(f"Where the time goes, {model} {function}{seq}: per dispatch kind, us per call, "
            f"losers first ({stock.get('calls', '-')} / {plugin.get('calls', '-')} calls, "
            f"{stock.get('mode', '-')} on {stock.get('device', '-')})"), "",
           ("| kind | dispatches stock / plugin | us per dispatch stock / plugin | us per call "
            "stock / plugin | share stock / plugin | plugin - stock us | stock / plugin |"),
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['kind']} | {_count(r['count_stock'])} / {_count(r['count_plugin'])} | "
                   f"{_us(r['us_per_call_stock'])} / {_us(r['us_per_call_plugin'])} | "
                   f"{_us(r['total_us_stock'])} / {_us(r['total_us_plugin'])} | "
                   f"{r['share_stock']:.0%} / {r['share_plugin']:.0%} | {r['delta_us']:+.1f} | "
                   f"{_n(r.get('ratio'), '.2f')} |")
    total = {side: sum(r[f"total_us_{side}"] for r in rows) for side in ("stock", "plugin")}
    count = {side: sum(r[f"count_{side}"] for r in rows) for side in ("stock", "plugin")}
    out.append(f"| all dispatches | {_count(count['stock'])} / {_count(count['plugin'])} | | "
               f"{_us(total['stock'])} / {_us(total['plugin'])} | | "
               f"{total['plugin'] - total['stock']:+.1f} | "
               f"{total['stock'] / total['plugin'] if total['plugin'] else 0:.2f} |")
    return out
