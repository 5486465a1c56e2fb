"""iree-fusions-bench: stock IREE vs iree-fusions, side by side, numerics checked.

    iree-fusions-bench [MODEL ...] [--device local-task|cuda|hip|vulkan] [--json FILE]

For each model: compile with plain iree-compile and with iree-fusions-compile (same flags),
count dispatches and bytes passed between dispatches from `--compile-to=flow` IR, run both on
the device with the same inputs, check that the outputs agree (and match the reference, e.g.
PyTorch, where the model has one), and time both alternately (median of rounds). With no
MODEL it runs the default models of the catalog (`--list` shows them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from . import api
from .counting import count_flow_ir
from .models.catalog import BenchModel, all_models, torch_available
from .timing import compare_latency

PROG = "iree-fusions-bench"


@dataclass
class Row:
    model: str
    stock_dispatches: int | None = None
    plugin_dispatches: int | None = None
    stock_bytes: int | None = None
    plugin_bytes: int | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    reference_max_abs: float | None = None
    stock_ms: float | None = None
    plugin_ms: float | None = None
    ratio: float | None = None
    ok: bool = True
    error: str | None = None
    changes: list[str] = field(default_factory=list)


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _compile_all(path: str, model_flags: list[str], fusions: str,
                 args, decisions: str | None) -> dict[str, api.CompileOutput]:
    flags = [*model_flags, *args.flag]
    jobs = {
        "stock": dict(stock=True),
        "plugin": dict(fusions=fusions, decisions=decisions),
        "stock_flow": dict(stock=True, compile_to="flow"),
        "plugin_flow": dict(fusions=fusions, compile_to="flow", decisions=decisions),
    }
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {k: pool.submit(api.compile_file, path, device=args.device,
                                  target=args.target, flags=flags, **kw)
                   for k, kw in jobs.items()}
        return {k: f.result() for k, f in futures.items()}


def bench_model(model: BenchModel, args, row: Row) -> Row:
    """Fills `row` step by step, so a failure late (e.g. no device) keeps the counts."""
    _progress(f"{model.name}: building")
    artifact = model.build()
    fusions = model.fusions if args.fusions == "model" else args.fusions
    with tempfile.TemporaryDirectory(prefix="iree-fusions-bench-") as tmp:
        suffix = ".mlirbc" if artifact.source[:4] == b"ML\xefR" else ".mlir"
        path = os.path.join(tmp, "model" + suffix)
        with open(path, "wb") as f:
            f.write(artifact.source)
        decisions = args.decisions
        if args.tune:
            decisions = _tune(model.name, fusions, args)
        _progress(f"{model.name}: compiling stock and plugin (--fusions={fusions}"
                  + (f", --fusions-decisions={decisions})" if decisions else ")"))
        outs = _compile_all(path, artifact.flags, fusions, args, decisions)
    stock_counts = count_flow_ir(outs["stock_flow"].output)
    plugin_counts = count_flow_ir(outs["plugin_flow"].output)
    row.stock_dispatches, row.plugin_dispatches = (stock_counts.total_dispatches,
                                                   plugin_counts.total_dispatches)
    row.stock_bytes, row.plugin_bytes = (stock_counts.total_bytes_between,
                                         plugin_counts.total_bytes_between)
    row.changes = [f"[{c['key']}] {c['what']}" for r in outs["plugin"].reports
                   for c in r.get("changes", [])]
    if args.compile_only:
        return row
    _progress(f"{model.name}: running on {args.device}")
    stock = api.run(outs["stock"].output, artifact.inputs, artifact.function, args.device)
    plugin = api.run(outs["plugin"].output, artifact.inputs, artifact.function, args.device)
    agreement = api.compare_outputs(stock, plugin)
    row.max_abs, row.max_rel = agreement.max_abs, agreement.max_rel
    row.ok = agreement.within(args.atol, args.rtol)
    if artifact.reference is not None:
        ref = api.compare_outputs(artifact.reference, plugin)
        row.reference_max_abs = ref.max_abs
        row.ok = row.ok and ref.within(artifact.reference_atol)
    if not row.ok:
        row.error = "outputs differ"
    if args.rounds > 0:
        _progress(f"{model.name}: timing ({args.rounds} rounds x {args.repetitions} reps)")
        pair = compare_latency(outs["stock"].output, outs["plugin"].output, artifact.inputs,
                               function=artifact.function, device=args.device,
                               rounds=args.rounds, repetitions=args.repetitions,
                               extra_flags=args.runtime_flag)
        row.stock_ms, row.plugin_ms, row.ratio = pair.stock_ms, pair.plugin_ms, pair.ratio
    return row


def _tune(model: str, fusions: str, args) -> str:
    """Tunes the model on the bench's device into the --tune-dir file (one per device and
    target, shared by the models of the run, resumed); returns its path."""
    from . import tune

    os.makedirs(args.tune_dir, exist_ok=True)
    path = os.path.join(args.tune_dir, f"{args.device}-{args.target or 'default'}.json")
    _progress(f"{model}: tuning on {args.device} into {path}")
    argv = [model, f"--device={args.device}", "-o", path, "--resume", f"--fusions={fusions}",
            *(["--target", args.target] if args.target else []),
            *[f"--runtime-flag={f}" for f in args.runtime_flag], *args.flag]
    if tune.main(argv) != 0:
        raise RuntimeError(f"tuning {model} failed")
    return path


def _fmt(value, spec: str) -> str:
    if value is None:
        width = spec.split(".")[0].rstrip("defg")
        return "-".rjust(int(width) if width else 1)
    return format(value, spec)


def format_table(rows: list[Row]) -> str:
    header = (f"{'model':32s} {'disp stock':>10s} {'disp plug':>10s} {'MB stock':>9s} "
              f"{'MB plug':>9s} {'max abs err':>11s} {'ms stock':>9s} {'ms plug':>9s} "
              f"{'ratio':>6s}  ok")
    lines = [header, "-" * len(header)]
    for r in rows:
        mb = lambda b: None if b is None else b / 2**20  # noqa: E731
        lines.append(
            f"{r.model:32s} {_fmt(r.stock_dispatches, '10d')} {_fmt(r.plugin_dispatches, '10d')} "
            f"{_fmt(mb(r.stock_bytes), '9.3f')} {_fmt(mb(r.plugin_bytes), '9.3f')} "
            f"{_fmt(r.max_abs, '11.2e')} {_fmt(r.stock_ms, '9.4f')} {_fmt(r.plugin_ms, '9.4f')} "
            f"{_fmt(r.ratio, '6.2f')}  {'yes' if r.ok else 'NO: ' + (r.error or '')}"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.strip().splitlines()[0])
    p.add_argument("models", nargs="*", help="model names (default: the default models)")
    p.add_argument("--device", default="local-task", choices=sorted(api.DEVICE_FLAGS),
                   help="runtime device; selects the compile target too")
    p.add_argument("--target", help="compile target chip/CPU for the device (default: host CPU, "
                   "sm_80 for cuda, gfx942 for hip, rdna3 for vulkan)")
    p.add_argument("--flag", action="append", default=[],
                   help="extra iree-compile flag for both compiles (repeatable), e.g. "
                        "--flag=--iree-cuda-target=sm_80")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag for both timings (repeatable), e.g. "
                        "--runtime-flag=--task_topology_max_group_count=1")
    p.add_argument("--fusions", default="all",
                   help="plugin passes (default: all; 'model': only the pass the model was "
                        "built to show, e.g. batch-gathers for dlrm-*)")
    p.add_argument("--decisions", help="compile the plugin with this decisions file "
                   "(iree-fusions-tune)")
    p.add_argument("--tune", action="store_true",
                   help="tune each model on the device first (iree-fusions-tune) and compile "
                        "with the decisions")
    p.add_argument("--tune-dir", default="iree-fusions-decisions",
                   help="where --tune keeps its decisions file (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=5, help="alternating timing rounds (0: none)")
    p.add_argument("--repetitions", type=int, default=10, help="repetitions per round")
    p.add_argument("--atol", type=float, default=1e-5, help="stock vs plugin abs tolerance")
    p.add_argument("--rtol", type=float, default=1e-4, help="stock vs plugin rel tolerance")
    p.add_argument("--compile-only", action="store_true",
                   help="compile and count only (no device needed)")
    p.add_argument("--jobs", type=int, default=2, help="parallel compiles")
    p.add_argument("--json", help="write the rows as JSON to this file (- for stdout)")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    models = all_models()
    if args.list:
        for m in models.values():
            tag = "" if m.default else " [not default]"
            torch_tag = " [torch]" if m.needs_torch else ""
            print(f"{m.name:36s} {m.description}{torch_tag}{tag}")
        return 0
    names = args.models or [m.name for m in models.values() if m.default]
    unknown = [n for n in names if n not in models]
    if unknown:
        print(f"{PROG}: error: unknown model(s) {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    rows = []
    for i, name in enumerate(names, 1):
        model = models[name]
        _progress(f"({i}/{len(names)}) {name}")
        if model.needs_torch and not torch_available():
            rows.append(Row(name, ok=False, error="needs torch (pip install iree-fusions[torch])"))
            continue
        row = Row(name)
        rows.append(row)
        try:
            bench_model(model, args, row)
        except Exception as e:  # one model's failure is reported in its row
            row.ok, row.error = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
            if "create device" in str(e):
                row.error += f" (no '{args.device}' device here? --compile-only checks the target)"
    print(format_table(rows))
    for r in rows:
        if r.error and r.error != "outputs differ":
            print(f"{r.model}: {r.error}", file=sys.stderr)
    if args.json:
        payload = json.dumps([asdict(r) for r in rows], indent=2)
        if args.json == "-":
            print(payload)
        else:
            with open(args.json, "w") as f:
                f.write(payload)
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
