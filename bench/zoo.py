"""The zoo (python/iree_fusions/models/zoo.py) through the plugin: numerics, dispatches, which
passes fired, and compiles for GPU targets.

    python bench/zoo.py [--models zoo-bert-b1 ...] [--out bench/results/zoo.json] [--table]

Per model (default: every zoo model, B = 1 and 4): stock and plugin (`--fusions=all`) built
for llvm-cpu, run on local-task with the same inputs and compared (bit-identical is the
bar); dispatch counts and bytes between dispatches from `--compile-to=flow`; the passes that
changed something; and stock and plugin compiles for cuda (sm_80) and vulkan (ampere, and
rdna3 the default): a plugin failure is new only where stock compiles. `test_zoo.py` (slow)
checks the same per model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models.catalog import all_models

GPU_TARGETS = [("cuda", "sm_80"), ("vulkan", "ampere"), ("vulkan", "rdna3")]


def _compile(path: str, flags: list[str], **kw) -> tuple[api.CompileOutput | None, str | None]:
    try:
        return api.compile_file(path, flags=flags, **kw), None
    except api.CompilerToolError as e:
        lines = [line for line in e.stderr.splitlines() if "error" in line]
        return None, (lines[0] if lines else e.stderr.strip().splitlines()[-1])[:200]


def check_model(name: str, gpu: bool = True) -> dict:
    """Everything the zoo table and test need about one model."""
    artifact = all_models()[name].build()
    row: dict = {"model": name}
    with tempfile.TemporaryDirectory(prefix="iree-fusions-zoo-") as tmp:
        path = artifact.write(tmp)
        jobs = {"stock": dict(stock=True), "plugin": dict(),
                "stock_flow": dict(stock=True, compile_to="flow"),
                "plugin_flow": dict(compile_to="flow")}
        with ThreadPoolExecutor(max_workers=2) as pool:
            outs = dict(zip(jobs, pool.map(lambda kw: _compile(path, artifact.flags, **kw),
                                           jobs.values())))
        errors = {k: e for k, (_, e) in outs.items() if e}
        if errors:
            row["cpu_errors"] = errors
            return row
        stock = api.run(outs["stock"][0].output, artifact.inputs, artifact.function)
        plugin = api.run(outs["plugin"][0].output, artifact.inputs, artifact.function)
        agreement = api.compare_outputs(stock, plugin)
        row["max_abs"] = agreement.max_abs if agreement.shapes_match else None
        if artifact.reference is not None:
            row["torch_max_abs"] = api.compare_outputs(artifact.reference, plugin).max_abs
        for side in ("stock", "plugin"):
            counts = count_flow_ir(outs[f"{side}_flow"][0].output)
            row[f"{side}_dispatches"] = counts.total_dispatches
            row[f"{side}_bytes"] = counts.total_bytes_between
            row[f"{side}_init_dispatches"] = counts.initializer_dispatches
        changes = Counter(r["pass"] for r in outs["plugin"][0].reports for _ in r["changes"])
        row["changes"] = dict(changes)
        if gpu:
            row["gpu"] = {}
            for device, target in GPU_TARGETS:
                results = {}
                for side, kw in (("stock", dict(stock=True)), ("plugin", dict())):
                    _, err = _compile(path, artifact.flags, device=device, target=target,
                                      compile_to="flow", **kw)
                    results[side] = err or "ok"
                row["gpu"][f"{device}:{target}"] = results
    return row


def new_failures(row: dict) -> list[str]:
    """GPU targets where the plugin fails and stock compiles."""
    return [t for t, r in row.get("gpu", {}).items()
            if r["plugin"] != "ok" and r["stock"] == "ok"]


def table(rows: list[dict]) -> str:
    out = ["| model | dispatches stock -> plugin | MB between dispatches | load-time dispatches "
           "| passes that changed it | stock vs plugin max abs | GPU compiles (stock/plugin) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "cpu_errors" in r:
            out.append(f"| {r['model']} | llvm-cpu compile failed: {r['cpu_errors']} | | | | | |")
            continue
        changes = ", ".join(f"{p} x{n}" for p, n in sorted(r["changes"].items())) or "none"
        gpu = "; ".join(f"{t}: {v['stock']}/{v['plugin']}" if v["stock"] != v["plugin"] or
                        v["stock"] != "ok" else f"{t}: ok" for t, v in r.get("gpu", {}).items())
        mb = f"{r['stock_bytes'] / 2**20:.3f} -> {r['plugin_bytes'] / 2**20:.3f}"
        out.append(f"| {r['model']} | {r['stock_dispatches']} -> {r['plugin_dispatches']} | "
                   f"{mb} | {r['stock_init_dispatches']} -> {r['plugin_init_dispatches']} | "
                   f"{changes} | {r['max_abs']:.3g} | {gpu} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--models", nargs="*")
    p.add_argument("--out", default="bench/results/zoo.json")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU-target compiles")
    p.add_argument("--table", action="store_true", help="print the table of --out and exit")
    args = p.parse_args(argv)
    rows = json.load(open(args.out)) if os.path.exists(args.out) else []
    if args.table:
        print(table(rows))
        return 0
    names = args.models or [n for n in all_models() if n.startswith("zoo-")]
    done = {r["model"] for r in rows}
    for i, name in enumerate(names, 1):
        if name in done:
            continue
        print(f"[{i}/{len(names)}] {name}", file=sys.stderr, flush=True)
        rows.append(check_model(name, gpu=not args.no_gpu))
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
