"""iree-fusions-bench: stock IREE vs iree-fusions, side by side, numerics checked.

    iree-fusions-bench [MODEL ...] [--device local-task|cuda|hip|vulkan] [--json FILE]
    iree-fusions-bench MODEL ... --device cuda --export DIR   # compile here, run elsewhere
    iree-fusions-bench --from DIR [--device cuda]             # run a bundle: runtime only
    iree-fusions-bench ... --plot FILE.png                    # dispatches and latency, drawn
    iree-fusions-bench dlrm-b8 --form params                  # weights in an .irpa file
    iree-fusions-bench MODEL --profile [--profile-json FILE]  # time per dispatch kind, losers first
    iree-fusions-bench model.mlirbc --parameters=model=w.irpa --flag=--iree-input-type=torch

For each model: compile with plain iree-compile and with iree-fusions-compile (same flags),
count dispatches and bytes passed between dispatches from `--compile-to=flow` IR, run both on
the device with the same inputs, check that the outputs agree by the bound of what changed
(`harness.bounds.judge_outputs`; and match the reference, e.g. PyTorch, where the model has
one), and time both alternately (median of rounds). Each ratio
comes with a confidence interval and a verdict that says what the interval shows
(`statistics.judge`): about the same (within `--margin` of 1), faster or slower (above or
below 1: a one-sided sign test over the rounds), else within noise (undecided: it straddles 1
and reaches beyond the margin), which gets more rounds, up to `--max-rounds` or `--budget`
seconds a model. Rows record the CPU and the target. No MODEL: the catalog's defaults (`--list`).

`--form` benchmarks the catalog's PyTorch models in the form users deploy instead of the
static, inline-weight export (models/forms.py: dynamic-batch, dynamic-seq, params: iree-turbine
parameters in an .irpa file, onnx, onnx-params); a MODEL that is an .mlir / .mlirbc file is
benchmarked on random inputs, its external weights read from `--parameters [SCOPE=]FILE`
(as iree-run-module). The runs, the timings and the load times read the parameter files.

`--export DIR` stops after compiling and writes a bundle (both .vmfb per model, inputs,
reference outputs, parameter files, manifest.json, run_bundle.py); `--from DIR` runs one with
nothing but numpy and iree.runtime (that path imports neither iree.compiler nor torch).

`--tune` tunes each model in the form benchmarked (`--form`), dynamic dims at `--size` sizes
(default: the example's, half and double it), with the `--parameters` files, into `--tune-dir`,
then compiles the plugin with those decisions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from ..compiler.files import OutputError, check_output, write_file
from ..harness import api, profiling
from ..harness.bounds import judge_outputs
from ..harness.timing import TimingOptions, compare_latency, save_input_files
from ..models.form_names import FORM_CHOICES
from ..runtime import machine, table
from ..runtime.benchmark import load_times_ms, resident_mib
from ..runtime.machine import cpu_info
from ..runtime.manifest import BundleError
from ..runtime.archives import resolve_parameters
from ..runtime.modules import add_parameters_argument, parameter_flags, parse_parameters
from ..runtime.run import failure_hint
from ..runtime.statistics import add_timing_arguments, timing_fields, timing_plan
from ..runtime.table import report, row_label
from .bench_bundle import add_to_bundle, bundle_note, run_from_bundle
from .progress import Progress

if TYPE_CHECKING:  # the --from path imports neither the catalog nor iree.compiler
    from ..harness.bundle import BundleWriter
    from ..models.catalog import BenchModel

PROG = "iree-fusions-bench"
MODEL_FILE_SUFFIXES = (".mlir", ".mlirbc")


@dataclass
class Row:
    model: str
    form: str | None = None  # the export form (--form), None for the catalog's static one
    parameter_bytes: int | None = None  # size of the parameter files the modules read
    stock_dispatches: int | None = None
    plugin_dispatches: int | None = None
    stock_bytes: int | None = None
    plugin_bytes: int | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    reference_max_abs: float | None = None
    stock_init_dispatches: int | None = None  # load-time (initializer) dispatches
    plugin_init_dispatches: int | None = None
    stock_load_ms: float | None = None  # loading the module, initializers included
    plugin_load_ms: float | None = None
    stock_resident_mib: float | None = None  # host memory held once loaded and called
    plugin_resident_mib: float | None = None  # (benchmark.resident_mib)
    stock_ms: float | None = None
    plugin_ms: float | None = None
    ratio: float | None = None
    ratio_low: float | None = None  # the confidence interval of the per-round ratio
    ratio_high: float | None = None
    ratio_confidence: float | None = None
    verdict: str | None = None  # faster, slower, about the same, within noise (judge)
    settled: bool | None = None
    rounds: int | None = None
    margin: float | None = None
    stock_rounds_ms: list[float] | None = None
    plugin_rounds_ms: list[float] | None = None
    machine: dict | None = None  # the CPU the figures were taken on (machine.cpu_info)
    compiled_for: dict | None = None  # target IREE resolved, vector features (compiled_for)
    ok: bool = True
    bound: str | None = None  # what the outputs were judged by (harness.bounds.judge_outputs)
    error: str | None = None
    changes: list[str] = field(default_factory=list)
    # Compile wall times of the .vmfb builds (seconds; `--jobs` compiles run side by side),
    # and the plugin's own part of its compile (its passes, --fusions-timing).
    stock_compile_s: float | None = None
    plugin_compile_s: float | None = None
    plugin_passes_s: float | None = None
    archive_bytes: int | None = None  # --parameter-archive: the plugin's archive
    # --profile: the time per dispatch kind, stock vs plugin (profiling.profile_summary).
    profile: dict | None = None


def _compile_all(path: str, model_flags: list[str], fusions: str, args, decisions: str | None,
                 plugin_flags: list[str] | None = None
                 ) -> tuple[dict[str, api.CompileOutput], dict[str, float]]:
    """Each build's output, and its wall time in seconds (`plugin_flags`: for the plugin's
    .vmfb build only)."""
    flags = [*model_flags, *args.flag]
    # The plugin's compile counts its own flow-phase IR on the way (no second plugin
    # compile); plain iree-compile cannot, so stock compiles to flow once more.
    jobs = {
        "stock": dict(stock=True),
        "plugin": dict(fusions=fusions, decisions=decisions, timing=True, flow_counts=True,
                       flags=[*flags, *(plugin_flags or [])]),
        "stock_flow": dict(stock=True, compile_to="flow"),
    }

    def timed(**kw) -> tuple[api.CompileOutput, float]:
        start = time.perf_counter()
        kw.setdefault("flags", flags)
        out = api.compile_file(path, device=args.device, target=args.target, **kw)
        return out, time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {k: pool.submit(timed, **kw) for k, kw in jobs.items()}
        done = {k: f.result() for k, f in futures.items()}
    return {k: out for k, (out, _) in done.items()}, {k: t for k, (_, t) in done.items()}


def bench_model(model: BenchModel, args, row: Row, progress: Progress | None = None,
                bundle: BundleWriter | None = None) -> Row:
    """Fills `row` step by step, so a failure late (e.g. no device) keeps the counts. With
    `bundle` the model is written to the bundle instead of run here."""
    with tempfile.TemporaryDirectory(prefix="iree-fusions-bench-") as tmp:
        return _bench_in(model, args, row, progress or Progress(1, bar=False), bundle, tmp)


def _bench_in(model: BenchModel, args, row: Row, progress: Progress,
              bundle: BundleWriter | None, tmp: str) -> Row:
    """bench_model with `tmp` for the model's files (its parameter files stay there until
    the runs are done)."""
    from ..compiler.counting import count_flow_ir
    from ..models.catalog import form_artifact
    from .parameter_archive import archive_flags

    form = args.form
    progress.note(f"{model.name}: building" + (f" ({form} form)" if form != "static" else ""))
    artifact = form_artifact(model, form, tmp)
    parameters = {**artifact.parameters, **args.parameter_files}
    if parameters:
        row.parameter_bytes = sum(os.path.getsize(p) for p in parameters.values())
    fusions = model.fusions if args.fusions == "model" else args.fusions
    path = artifact.write(tmp)
    decisions = args.decisions
    if args.tune:
        decisions = _tune(model.name, fusions, args, progress)
    progress.note(f"{model.name}: compiling stock and plugin (--fusions={fusions}"
                  + (f", --fusions-decisions={decisions})" if decisions else ")"))
    archive = os.path.join(tmp, "fusions.irpa") if args.parameter_archive and parameters else None
    outs, seconds = _compile_all(path, artifact.flags, fusions, args, decisions,
                                 archive_flags(parameters, archive) if archive else [])
    side_parameters = {"stock": parameters, "plugin": parameters}  # the files each reads
    if archive:  # a consolidated archive replaces the sources; both: runs of both sides
        side_parameters["plugin"] = resolve_parameters(outs["plugin"].output, {"+": archive})
        parameters = {**parameters, **side_parameters["plugin"]}
        row.archive_bytes = os.path.getsize(archive)
    # What the plugin compile said (e.g. a pass that failed and was skipped) stays visible.
    for line in outs["plugin"].stderr.strip().splitlines():
        progress.message(f"{model.name}: {line}")
    stock_counts = count_flow_ir(outs["stock_flow"].output)
    plugin_counts = outs["plugin"].flow_counts
    row.stock_dispatches, row.plugin_dispatches = (stock_counts.total_dispatches,
                                                   plugin_counts.total_dispatches)
    row.stock_bytes, row.plugin_bytes = (stock_counts.known_bytes_between,
                                         plugin_counts.known_bytes_between)
    row.stock_init_dispatches, row.plugin_init_dispatches = (
        stock_counts.initializer_dispatches, plugin_counts.initializer_dispatches)
    row.changes = [f"[{c['key']}] {c['what']}" for r in outs["plugin"].reports
                   for c in r.get("changes", [])]
    row.stock_compile_s = round(seconds["stock"], 3)
    row.plugin_compile_s = round(seconds["plugin"], 3)
    if outs["plugin"].timing is not None:
        row.plugin_passes_s = round(sum(s["seconds"] for s in outs["plugin"].timing["steps"]
                                        if s["depth"] == 0 and s["name"].startswith("plugin ")),
                                    3)
    row.compiled_for = machine.compiled_for(outs["stock_flow"].output)
    if bundle is not None:
        add_to_bundle(bundle, row_label(asdict(row)), artifact, outs, path,
                       (stock_counts, plugin_counts), fusions, decisions, row.changes,
                       row.compiled_for, parameters)
        return row
    if args.compile_only:
        return row
    row.machine = cpu_info()
    progress.note(f"{model.name}: running on {args.device}")
    stock = api.run(outs["stock"].output, artifact.inputs, artifact.function, args.device,
                    side_parameters["stock"])
    plugin = api.run(outs["plugin"].output, artifact.inputs, artifact.function, args.device,
                     side_parameters["plugin"])
    agreement = api.compare_outputs(stock, plugin)
    row.max_abs, row.max_rel = agreement.max_abs, agreement.max_rel
    changed = {c["pass"] for r in outs["plugin"].reports for c in r.get("changes", [])}
    row.ok, row.bound = judge_outputs(stock, plugin, changed, artifact.source, artifact.inputs,
                                      artifact.function, args.atol, args.rtol)
    if artifact.reference is not None:
        ref = api.compare_outputs(artifact.reference, plugin)
        row.reference_max_abs = ref.max_abs
        row.ok = row.ok and ref.within(artifact.reference_atol)
    if not row.ok:
        row.error = "outputs differ"
    if args.rounds > 0:
        plan = timing_plan(args.rounds, args.repetitions, args.max_rounds)
        progress.note(f"{model.name}: timing ({plan})")
        with tempfile.TemporaryDirectory(prefix="iree-fusions-load-") as tmp:
            paths = {}
            for side in ("stock", "plugin"):
                paths[side] = os.path.join(tmp, f"{side}.vmfb")
                with open(paths[side], "wb") as f:
                    f.write(outs[side].output)
            loads = load_times_ms(paths, args.device, parameters=parameters)
            input_paths = save_input_files(artifact.inputs, tmp)
            for side in ("stock", "plugin"):
                setattr(row, f"{side}_resident_mib", resident_mib(
                    paths[side], args.device, function=artifact.function,
                    input_paths=input_paths, parameters=side_parameters[side]))
        row.stock_load_ms, row.plugin_load_ms = loads["stock"], loads["plugin"]
        timing = TimingOptions.from_args(args, extra_flags=[
            *args.runtime_flag, *parameter_flags(parameters)])
        pair = compare_latency(outs["stock"].output, outs["plugin"].output, artifact.inputs,
                               timing, function=artifact.function, device=args.device)
        for key, value in timing_fields(pair.judged(args.margin)).items():
            setattr(row, key, value)
    if args.profile:  # after the timing, in runs of its own: its cost stays out of the ms
        progress.note(f"{model.name}: profiling {args.profile_calls} calls a side")
        row.profile = profiling.profile_builds(
            outs["stock"].output, outs["plugin"].output, artifact.inputs,
            function=artifact.function, device=args.device, calls=args.profile_calls,
            mode=args.profile_mode,
            extra_flags=[*args.runtime_flag, *parameter_flags(parameters)],
            model=row_label(asdict(row)))
    return row


def _tune(model: str, fusions: str, args, progress: Progress) -> str:
    """Tunes the model, in the bench's --form, at its --size sizes, with its --parameters,
    on the bench's device into the --tune-dir file (one per device and target, shared by the
    models of the run, resumed); returns its path."""
    from . import tune

    os.makedirs(args.tune_dir, exist_ok=True)
    path = os.path.join(args.tune_dir, f"{args.device}-{args.target or 'default'}.json")
    progress.note(f"{model}: tuning on {args.device} into {path}")
    argv = [model, f"--device={args.device}", "-o", path, "--resume", f"--fusions={fusions}",
            f"--form={args.form}", *[f"--size={s}" for s in args.size],
            *[f"--parameters={p}" for p in args.parameters],
            *([f"--budget={args.tune_budget}"] if args.tune_budget else []),
            *(["--target", args.target] if args.target else []),
            *[f"--runtime-flag={f}" for f in args.runtime_flag], *args.flag]
    if tune.main(argv) != 0:
        raise RuntimeError(f"tuning {model} failed")
    return path


def format_table(rows: list[Row]) -> str:
    """The results table (the same as a bundle's run prints)."""
    return table.format_table([asdict(r) for r in rows])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.strip().splitlines()[0])
    p.add_argument("models", nargs="*", help="model names (default: the default models; "
                   "with --from: the bundle's models), or .mlir / .mlirbc files (run on random "
                   "inputs; --flag gives their input type, e.g. --flag=--iree-input-type=torch)")
    p.add_argument("--form", default="static", choices=FORM_CHOICES,
                   help="export the PyTorch models in this form (default: static, weights "
                        "inline): dynamic-batch / dynamic-seq (torch.export Dim), params "
                        "(iree-turbine parameters in an .irpa file), onnx, onnx-params, and "
                        "their combinations (models/forms.py)")
    p.add_argument("--device", choices=sorted(api.DEVICE_FLAGS),
                   help="runtime device; selects the compile target too (default: local-task; "
                        "with --from: the device the bundle was compiled for)")
    p.add_argument("--target", help="compile target chip/CPU for the device (default: host CPU, "
                   "sm_80 for cuda (runs on A100/H100), gfx942 for hip, rdna3 for vulkan). "
                   "Vulkan code runs only on its vendor's GPUs: rdna3 on AMD; on NVIDIA use "
                   "--target ampere (alias: nvidia)")
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
                   help="tune each model on the device first, in --form, at the --size sizes "
                        "(iree-fusions-tune) and compile with the decisions")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N,N,...",
                   help="sizes of a dynamic dim (repeatable), e.g. --size batch=1,8,64: "
                        "--tune measures at each (default for a catalog form: the example's "
                        "size, half and double it); a file with dynamic dims runs at the first")
    p.add_argument("--tune-budget", type=float, default=0.0, metavar="SECONDS",
                   help="iree-fusions-tune --budget: stop measuring keys after this long "
                        "(0: no limit)")
    p.add_argument("--tune-dir", default="iree-fusions-decisions",
                   help="where --tune keeps its decisions file (default: %(default)s)")
    add_timing_arguments(p)
    add_parameters_argument(p)
    p.add_argument("--parameter-archive", action="store_true",
                   help="with parameter files (--form params, onnx-params, --parameters): the "
                        "plugin stacks parameters offline into an archive of its own "
                        "(iree-fusions-compile --fusions-parameter-archive: every parameter "
                        "it reads) that its runs read; MiB held counts the archive's pages")
    p.add_argument("--atol", type=float, default=1e-5, help="stock vs plugin abs tolerance")
    p.add_argument("--rtol", type=float, default=1e-4, help="stock vs plugin rel tolerance")
    p.add_argument("--compile-only", action="store_true",
                   help="compile and count only (no device needed)")
    p.add_argument("--export", metavar="DIR",
                   help="compile here and write a bundle to DIR (both .vmfb per model, inputs, "
                        "reference outputs, manifest.json, run_bundle.py); nothing runs here")
    p.add_argument("--from", dest="from_dir", metavar="DIR",
                   help="run the bundle in DIR (needs only numpy and iree-base-runtime)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw dispatches and latency, stock vs plugin, per model (matplotlib: "
                        "pip install 'iree-fusions[plot]')")
    profiling.add_profile_arguments(p)
    p.add_argument("--jobs", type=int, default=2, help="parallel compiles")
    p.add_argument("--json", help="write the rows as JSON to this file (- for stdout)")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    return p


def _finish(rows: list[dict], args, title: str) -> int:
    """Table, errors, JSON and plot of a run; the exit status."""
    to_file = args.json not in (None, "-")
    status = report(rows, None if to_file else args.json)
    if to_file:  # atomically: an interrupted or failed write leaves the old file
        try:
            write_file(args.json, json.dumps(list(rows), indent=2) + "\n")
        except OutputError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
    if args.profile:  # the profile tables after the usual output; --plot draws the profile
        try:
            profiling.report_profiles(rows, args.profile_json, args.plot, title)
        except (OutputError, profiling.ProfilePlotError) as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        if args.plot:
            print(f"{PROG}: profile plot written to {args.plot}", file=sys.stderr)
    elif args.plot:
        from .plot import PlotError, plot_rows

        try:
            plot_rows(rows, args.plot, title=title)
        except PlotError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        print(f"{PROG}: plot written to {args.plot}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:  # outputs that cannot be written fail now, not after the work
        for path in (args.json, args.plot, args.profile_json):
            if path:
                check_output(path)
    except OutputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    try:
        args.parameter_files = parse_parameters(args.parameters)
    except ValueError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    args.profile = args.profile or bool(args.profile_json)
    if args.profile and (args.from_dir or args.export or args.compile_only):
        print(f"{PROG}: error: --profile runs both builds here: it cannot be combined with "
              "--from, --export or --compile-only", file=sys.stderr)
        return 2
    if args.profile_calls < 1:
        print(f"{PROG}: error: --profile-calls must be at least 1", file=sys.stderr)
        return 2
    if args.from_dir:
        if args.export or args.tune or args.list:
            print(f"{PROG}: error: --from runs a bundle; it cannot be combined with --export, "
                  "--tune or --list", file=sys.stderr)
            return 2
        return run_from_bundle(args, _finish)
    from ..models.catalog import FormError, all_models, check_form, file_model

    args.device = args.device or "local-task"
    models = all_models()
    if args.list:
        for m in models.values():
            tag = "" if m.default else " [not default]"
            torch_tag = " [torch]" if m.needs_torch else ""
            print(f"{m.name:36s} {m.description}{torch_tag}{tag}")
        return 0
    names = args.models or [m.name for m in models.values() if m.default]
    for name in names:
        if name not in models and name.endswith(MODEL_FILE_SUFFIXES) and os.path.isfile(name):
            models[name] = file_model(name, args.size)
    unknown = [n for n in names if n not in models]
    if unknown:
        print(f"{PROG}: error: unknown model(s) {', '.join(unknown)}; see --list (or give "
              f"a {' / '.join(MODEL_FILE_SUFFIXES)} file)", file=sys.stderr)
        return 2
    try:
        for name in names:
            check_form(models[name], args.form)
    except FormError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    bundle = None
    if args.export:
        from ..harness.bundle import BundleWriter

        try:
            bundle = BundleWriter(args.export, device=args.device, target=args.target,
                                  fusions=args.fusions)
        except BundleError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
    progress = Progress(total=len(names))
    rows: list[Row] = []
    try:
        _bench_models(names, models, args, rows, progress, bundle)
    except KeyboardInterrupt:
        progress.close()
        print(f"{PROG}: interrupted" + (
            f"; the bundle in {args.export} holds {len(bundle.manifest['models'])} model(s), "
            "as its manifest lists" if bundle is not None else ""), file=sys.stderr)
        return 130
    progress.close()
    if bundle is not None:
        bundle_note(bundle, args)
    return _finish([asdict(r) for r in rows], args,
                   f"stock IREE vs iree-fusions (--fusions={args.fusions}) on {args.device}"
                   + (f", target {args.target}" if args.target else ""))


def _bench_models(names: list[str], models: dict, args, rows: list[Row], progress: Progress,
                  bundle: BundleWriter | None) -> None:
    """Each model in turn, its row appended to `rows` as it starts."""
    from ..models.catalog import torch_available

    with warnings.catch_warnings():
        warnings.showwarning = _warnings_above(progress)
        for name in names:
            model = models[name]
            progress.step(name)
            if model.needs_torch and not torch_available():
                rows.append(Row(name, ok=False,
                                error="needs torch (pip install iree-fusions[torch])"))
                continue
            row = Row(name, form=None if args.form == "static" else args.form)
            rows.append(row)
            try:
                bench_model(model, args, row, progress, bundle)
            except Exception as e:  # one model's failure is reported in its row
                row.ok, row.error = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
                if "create device" in str(e):
                    row.error += (f" (no '{args.device}' device here? --compile-only checks "
                                  "the target; --export compiles a bundle to run elsewhere)")
                else:
                    row.error += failure_hint(str(e), args.device, args.target)


def _warnings_above(progress: Progress):
    """A `warnings.showwarning` that prints Python warnings above the progress bar."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line)
        progress.message(text.rstrip())
    return show


if __name__ == "__main__":
    sys.exit(main())
