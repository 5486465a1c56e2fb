"""Benchmark of batch-mlp-towers: stock IREE vs the pass (and pass variants), interleaved.

    python bench/batch_mlp_towers.py towers-silu-b1 mmoe-b8 \
        --variant default= --variant generic='{named-batch-matmul=0 weight-layout=keep}' \
        --rounds 20 --json out.json

For each model of the catalog (`iree-fusions-bench --list`): compiles stock and every
variant (`--fusions=batch-mlp-towers<options>`), counts dispatches from flow IR (main and
initializers apart), checks every variant against the PyTorch reference, then times all of
them in interleaved rounds (one `iree-benchmark-module` run of each per round, rotating the
order). It prints, per variant: the median and 20th percentile of the round medians, the
ratio stock/variant of the medians and the median of the per-round (paired) ratios. The
paired ratio is the figure to quote on a shared, noisy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import numpy as np

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models.catalog import all_models
from iree_fusions.harness.timing import save_inputs, median_latency_ms

PASS = "batch-mlp-towers"


def build(model_name: str, variants: dict[str, str], device: str, tmp: str) -> dict:
    model = all_models()[model_name]
    art = model.build()
    suffix = ".mlirbc" if art.source[:4] == b"ML\xefR" else ".mlir"
    src = os.path.join(tmp, model_name + suffix)
    with open(src, "wb") as f:
        f.write(art.source)
    out = {"inputs": art.inputs, "rows": {}}
    configs = {"stock": None, **variants}
    for name, options in configs.items():
        kw = dict(stock=True) if options is None else dict(fusions=PASS + options)
        vmfb = api.compile_file(src, device=device, flags=art.flags, **kw).output
        flow = count_flow_ir(api.compile_file(src, device=device, flags=art.flags,
                                              compile_to="flow", **kw).output)
        path = os.path.join(tmp, f"{model_name}.{name}.vmfb")
        with open(path, "wb") as f:
            f.write(vmfb)
        err = None
        if art.reference is not None and device.startswith("local"):
            got = api.run(vmfb, art.inputs, device=device)
            err = max(float(np.max(np.abs(r - g))) for r, g in zip(art.reference, got))
        out["rows"][name] = dict(path=path, dispatches=flow.total_dispatches,
                                 init_dispatches=flow.initializer_dispatches, ref_err=err,
                                 times=[])
    return out


def time_interleaved(model: dict, rounds: int, device: str, reps: int, tmp: str) -> None:
    flags = save_inputs(model["inputs"], tmp)
    names = list(model["rows"])
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            row = model["rows"][name]
            row["times"].append(median_latency_ms(row["path"], flags, device=device,
                                                  repetitions=reps, min_time="0.02s"))


def report(model_name: str, model: dict) -> list[dict]:
    base = model["rows"]["stock"]["times"]
    out = []
    for name, row in model["rows"].items():
        t = row["times"]
        med = statistics.median(t) if t else None
        paired = statistics.median(b / x for b, x in zip(base, t)) if t else None
        out.append(dict(model=model_name, variant=name, dispatches=row["dispatches"],
                        init_dispatches=row["init_dispatches"], ref_err=row["ref_err"],
                        median_ms=med, p20_ms=float(np.quantile(t, 0.2)) if t else None,
                        ratio=(statistics.median(base) / med) if t else None,
                        paired_ratio=paired, rounds=len(t)))
    return out


def fmt(rows: list[dict]) -> str:
    lines = [f"{'model':24s} {'variant':12s} {'disp':>5s} {'init':>5s} {'err vs torch':>12s} "
             f"{'median ms':>10s} {'p20 ms':>8s} {'ratio':>6s} {'paired':>6s}"]
    for r in rows:
        def f(v, spec):
            return format(v, spec) if v is not None else "-"
        lines.append(f"{r['model']:24s} {r['variant']:12s} {r['dispatches']:5d} "
                     f"{r['init_dispatches']:5d} {f(r['ref_err'], '12.2e')} "
                     f"{f(r['median_ms'], '10.4f')} {f(r['p20_ms'], '8.4f')} "
                     f"{f(r['ratio'], '6.3f')} {f(r['paired_ratio'], '6.3f')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--variant", action="append", default=[],
                   help="name=options, e.g. generic='{named-batch-matmul=0}' (default: default=)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--repetitions", type=int, default=10)
    p.add_argument("--device", default="local-task")
    p.add_argument("--json")
    args = p.parse_args(argv)
    variants = dict(v.split("=", 1) for v in args.variant) or {"default": ""}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-towers-") as tmp:
        for name in args.models:
            print(f"[{name}] compiling {1 + len(variants)} configurations", file=sys.stderr)
            model = build(name, variants, args.device, tmp)
            if args.rounds:
                print(f"[{name}] timing {args.rounds} rounds", file=sys.stderr)
                time_interleaved(model, args.rounds, args.device, args.repetitions, tmp)
            rows += report(name, model)
            print(fmt([r for r in rows if r["model"] == name]), flush=True)
    print()
    print(fmt(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
