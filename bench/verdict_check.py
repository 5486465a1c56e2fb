"""Do the bench's default-run verdicts hold? The same models timed twice: as the README's
command times them (5 rounds, more while unsettled) and with 21 rounds; one table, per model.

    python bench/verdict_check.py [MODEL ...] [--out DIR] [--device local-task] [--repeat N]

Compiles the models once (`iree-fusions-bench MODEL... --export DIR/bundle`), then runs the
bundle twice with `iree-fusions-bench --from` (the same timing and verdict code as the
plain bench): with the default settings (`--rounds 5`, up to `--max-rounds 21` within
`--budget 60` s a model while the verdict is unsettled), and with `--rounds 21 --max-rounds
21`, model by model, back to back (the 21-round run between a model's default runs).
`--repeat N` runs the default setting N times (each against the one 21-round run), for
how often a verdict flips. Writes DIR/default-<i>.json, DIR/r21.json and DIR/verdicts.md
(the table, the CPU, the load average before and after) and prints the table; exits 1 when a
default-run verdict disagrees with the 21-round one (the verdict strings differ). The
summary also says how many of those disagreements are two decided verdicts (faster, slower,
about the same) that differ (`**no**` in the table; `no (undecided)`: one side within noise)
and, apart, how many default-run rows were *within noise*, still undecided when their rounds
(--max-rounds) or budget ran out. Needs a quiet machine: it says so when the 1-minute load
average is above 0.5 at the start or the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from iree_fusions.runtime.table import where_measured
from iree_fusions.runtime.statistics import NOISE

MODELS = [  # the 5 default models, then batching wins and a model within a few percent
    "attention_projection_transpose", "llama-start_pos-s64", "dlrm-sparse-b8",
    "towers-silu-b1", "bert-tiny-b1-s64", "towers-silu-b8", "towers-silu-b64", "dlrm-b8",
    "mmoe-b8", "minilm-b1-s128",
]
BENCH = os.path.join(os.path.dirname(sys.executable), "iree-fusions-bench")


def _bench(*args: str) -> None:
    cmd = [BENCH if os.path.exists(BENCH) else "iree-fusions-bench", *args]
    print(f"$ {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    sys.stderr.write(proc.stdout)
    if proc.returncode not in (0, 1):  # 1: a row not ok, reported in its row
        raise SystemExit(f"verdict_check: {cmd[0]} failed (exit {proc.returncode})")


def _rows(path: str) -> dict[str, dict]:
    with open(path) as f:
        return {r["model"]: r for r in json.load(f)}


def _write_rows(path: str, rows: dict[str, dict]) -> None:
    with open(path, "w") as f:
        json.dump(list(rows.values()), f, indent=1)


def _load() -> float:
    return os.getloadavg()[0]


def _cell(row: dict) -> str:
    if row.get("verdict") is None:
        return f"- ({row.get('error') or 'not timed'})"
    return (f"{row['ratio']:.2f} [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}] "
            f"{row['verdict']} ({row['rounds']})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("models", nargs="*", default=MODELS, help="catalog models (default: 10)")
    p.add_argument("--out", default="verdict-check", help="folder for the bundle and results")
    p.add_argument("--device", default="local-task")
    p.add_argument("--repeat", type=int, default=1, help="default-setting runs (default 1)")
    args = p.parse_args(argv)
    started, load_before = time.time(), _load()
    if load_before > 0.5:
        print(f"verdict_check: warning: 1-minute load average {load_before:.2f}: the machine "
              "is not quiet, timings will be noisy", file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    bundle = os.path.join(args.out, "bundle")
    _bench(*args.models, f"--device={args.device}", "--export", bundle)
    # Per model, back to back: the default runs with the 21-round run between them, so that
    # each default run is next to the run it is compared with. The machine's speed drifts
    # over minutes (run 5: towers-silu-b8 1.04-1.06 in the default runs, 1.01 in the 21-round
    # run 2-4 minutes later); this checks the rule, not that drift.
    defaults: list[dict[str, dict]] = [{} for _ in range(args.repeat)]
    long_run: dict[str, dict] = {}
    for name in args.models:
        order = [f"default-{i}" for i in range(args.repeat)]
        order.insert((args.repeat + 1) // 2, "r21")
        for run in order:
            path = os.path.join(args.out, f"{run}-{name}.json")
            if run == "r21":
                _bench("--from", bundle, name, "--rounds=21", "--max-rounds=21", "--json", path)
                long_run.update(_rows(path))
            else:
                _bench("--from", bundle, name, "--json", path)
                defaults[int(run.split("-")[1])].update(_rows(path))
            os.remove(path)
    for i, rows in enumerate(defaults):
        _write_rows(os.path.join(args.out, f"default-{i}.json"), rows)
    _write_rows(os.path.join(args.out, "r21.json"), long_run)
    load_after = _load()

    lines = ["| model | default run: ratio [interval] verdict (rounds) | 21 rounds | agree |",
             "| --- | --- | --- | --- |"]
    disagree = conflict = undecided = 0
    for name in args.models:
        want = long_run.get(name, {}).get("verdict")
        for runs in defaults:
            row = runs.get(name, {})
            same = row.get("verdict") is not None and row.get("verdict") == want
            open_ = NOISE in (row.get("verdict"), want)  # one of them undecided
            disagree += not same
            conflict += not same and not open_ and None not in (row.get("verdict"), want)
            undecided += row.get("verdict") == NOISE  # rounds or budget ran out
            agree = "yes" if same else "no (undecided)" if open_ else "**no**"
            lines.append(f"| {name} | {_cell(row)} | {_cell(long_run.get(name, {}))} | "
                         f"{agree} |")
    timed = [r for r in long_run.values() if r.get("machine")]
    text = "\n".join([
        f"# Bench verdicts: default run vs 21 rounds ({time.strftime('%Y-%m-%d %H:%M')})", "",
        where_measured(timed) if timed else "nothing was timed", "",
        f"1-minute load average {load_before:.2f} before, {load_after:.2f} after; "
        f"{time.time() - started:.0f} s in all; device {args.device}.", "", *lines, "",
        f"{disagree} of {len(args.models) * args.repeat} default-run verdicts disagree with "
        f"the 21-round run. Two decided verdicts (faster, slower, about the same) that differ: "
        f"{conflict}; the other disagreements have one side within noise (undecided) or no "
        "verdict. Default-run rows within noise (undecided when their rounds or budget ran "
        f"out): {undecided}.", ""])
    with open(os.path.join(args.out, "verdicts.md"), "w") as f:
        f.write(text)
    print(text)
    if max(load_before, load_after) > 0.5:
        print("verdict_check: warning: the machine was not quiet (load above 0.5)",
              file=sys.stderr)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
