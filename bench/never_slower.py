"""Never slower than stock, after tuning: tune each model on a device, then measure stock vs
the plugin with its default rules and vs the plugin with the tuned decisions.

    python bench/never_slower.py towers-silu-b64 dlrm-b8 zoo-gpt2-b1 --device local-sync \\
        --out bench/results/never-slower-local-sync.json [--rounds 9] [--repetitions 20]

Per model: the model is built once (PyTorch export) into a temp dir; `iree-fusions-tune`
measures its keys on DEVICE into `--decisions-dir/<model>.json`; then stock, default plugin
and tuned plugin are compiled and timed in alternating rounds (stock vs default, stock vs
tuned; medians). Rows are appended to `--out` as they finish (rerun to resume). `--table`
prints the Markdown table of an output file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from iree_fusions.harness import api
from iree_fusions.tools import tune
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models.catalog import all_models
from iree_fusions.harness.timing import compare_latency


def measure(name: str, args) -> dict:
    artifact = all_models()[name].build()
    row: dict = {"model": name, "device": args.device}
    with tempfile.TemporaryDirectory(prefix="iree-fusions-ns-") as tmp:
        path = artifact.write(tmp)
        decisions = os.path.join(args.decisions_dir, f"{name}-{args.device}.json")
        t0 = time.time()
        rc = tune.main([path, *artifact.flags, f"--label={name}", f"--device={args.device}",
                        "-o", decisions,
                        f"--rounds={args.tune_rounds}",
                        *[f"--runtime-flag={f}" for f in args.runtime_flag]])
        row["tune_s"] = round(time.time() - t0, 1)
        if rc != 0:
            row["error"] = "tuning failed"
            return row
        with open(decisions) as f:
            data = json.load(f)
        row["keys"] = len(data["decisions"])
        row["skipped_keys"] = sum(not d["apply"] for d in data["decisions"].values())
        builds = {}
        for label, kw in (("stock", dict(stock=True)), ("default", dict()),
                          ("tuned", dict(decisions=decisions))):
            vmfb = api.compile_file(path, device=args.device, flags=artifact.flags, **kw)
            flow = api.compile_file(path, device=args.device, flags=artifact.flags,
                                    compile_to="flow", **kw)
            counts = count_flow_ir(flow.output)
            builds[label] = vmfb.output
            row[f"{label}_dispatches"] = counts.total_dispatches
            row[f"{label}_init_dispatches"] = counts.initializer_dispatches
        for label in ("default", "tuned"):
            pair = compare_latency(builds["stock"], builds[label], artifact.inputs,
                                   function=artifact.function, device=args.device,
                                   rounds=args.rounds, repetitions=args.repetitions,
                                   extra_flags=args.runtime_flag)
            row[f"stock_ms_vs_{label}"] = round(pair.stock_ms, 5)
            row[f"{label}_ms"] = round(pair.plugin_ms, 5)
            row[f"{label}_ratio"] = round(pair.ratio, 4)
    return row


def table(rows: list[dict]) -> str:
    out = ["| model | device | dispatches stock / default / tuned | keys (skipped) | "
           "ms stock | ms default | ms tuned | default ratio | tuned ratio | tune s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: r.get("tuned_ratio", 0)):
        if "error" in r:
            out.append(f"| {r['model']} | {r['device']} | {r['error']} | | | | | | | |")
            continue
        out.append(
            f"| {r['model']} | {r['device']} | {r['stock_dispatches']} / "
            f"{r['default_dispatches']} / {r['tuned_dispatches']} | {r['keys']} "
            f"({r['skipped_keys']}) | {r['stock_ms_vs_tuned']:.4g} | {r['default_ms']:.4g} | "
            f"{r['tuned_ms']:.4g} | {r['default_ratio']:.2f} | **{r['tuned_ratio']:.2f}** | "
            f"{r['tune_s']:.0f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("models", nargs="*")
    p.add_argument("--device", default="local-task")
    p.add_argument("--out", required=True)
    p.add_argument("--decisions-dir", default=os.path.join(tempfile.gettempdir(),
                                                           "iree-fusions-ns-decisions"))
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--repetitions", type=int, default=20)
    p.add_argument("--tune-rounds", type=int, default=7)
    p.add_argument("--runtime-flag", action="append", default=[])
    p.add_argument("--table", action="store_true", help="print the table of --out and exit")
    args = p.parse_args(argv)
    rows = json.load(open(args.out)) if os.path.exists(args.out) else []
    if args.table:
        print(table(rows))
        return 0
    os.makedirs(args.decisions_dir, exist_ok=True)
    done = {(r["model"], r["device"]) for r in rows}
    for name in args.models:
        if (name, args.device) in done:
            continue
        print(f"== {name} on {args.device}", file=sys.stderr, flush=True)
        try:
            row = measure(name, args)
        except Exception as e:  # recorded, the run goes on
            row = {"model": name, "device": args.device,
                   "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
