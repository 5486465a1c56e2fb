"""Running a bundle: each model's two modules run and compared on the device, then timed
(`run_model`), every model of the bundle (`run_bundle`), with hints for common failures."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from .benchmark import load_times_ms, resident_mib, time_pair
from .machine import cpu_info, missing_features
from .manifest import BundleError, empty_row, load_manifest
from .modules import compare_outputs, parameter_flags, run_module, within_stated_bound
from .statistics import BUDGET_S, MARGIN, MAX_ROUNDS, timing_fields, timing_plan


def failure_hint(error: str, device: str, target: str | None = None) -> str:
    """What to do about a failure on the device, in parentheses ("" if nothing to say)."""
    hints = []
    if "create device" in error or "No device found" in error:
        hints.append(f"no '{device}' device here?")
    if "'io_parameters' not registered" in error:
        hints.append("the module reads external parameters: give their file with "
                     "--parameters=SCOPE=FILE, as iree-run-module")
    target = target or ""
    if device.startswith("vulkan") and target.startswith("rdna"):
        hints.append(f"the modules were compiled for Vulkan target '{target}', which runs only "
                     "on AMD GPUs; export with --target ampere for NVIDIA")
    return f" ({'; '.join(hints)})" if hints else ""


def run_model(folder: str, entry: dict, manifest: dict, *, device: str, rounds: int = 5,
              repetitions: int = 10, atol: float = 1e-5, rtol: float = 1e-4,
              runtime_flags: Sequence[str] = (), max_rounds: int = MAX_ROUNDS,
              budget_s: float | None = BUDGET_S, margin: float = MARGIN,
              parameters: Mapping[str, str] | None = None,
              progress: Callable[[str], None] = lambda msg: None) -> dict:
    """One model of the bundle: run both modules, compare, time (`time_pair`: more rounds
    while the verdict is unsettled). The modules read the parameter files the bundle holds
    for the model, or those `parameters` gives for a scope (scope -> path: files already on
    this machine). Returns a result row; a failure is reported in the row (ok False, error),
    keeping the counts."""
    import numpy as np

    row = empty_row(entry["name"])
    stock, plugin = entry["stock"], entry["plugin"]
    row.update(stock_dispatches=stock.get("dispatches"), plugin_dispatches=plugin.get("dispatches"),
               stock_bytes=stock.get("bytes_between"), plugin_bytes=plugin.get("bytes_between"),
               stock_init_dispatches=stock.get("initializer_dispatches"),
               plugin_init_dispatches=plugin.get("initializer_dispatches"),
               changes=list(plugin.get("changes", [])), machine=cpu_info(),
               compiled_for=entry.get("compiled_for"))
    here = os.path.join(folder, entry["dir"])
    function = entry.get("function", "main")
    files = {scope: os.path.join(here, name)
             for scope, name in entry.get("parameters", {}).items()}
    files.update(parameters or {})
    try:
        missing = missing_features(row["compiled_for"]) if device.startswith("local") else []
        if missing:
            raise RuntimeError(
                f"compiled for {row['compiled_for']['target']}, using {', '.join(missing)}, "
                "which this CPU lacks (it would stop with an illegal instruction); export with "
                "--target naming this CPU or an older one (e.g. x86-64-v3, x86-64)")
        input_paths = [os.path.join(here, p) for p in entry["inputs"]]
        inputs = [np.load(p) for p in input_paths]
        progress(f"{entry['name']}: running on {device}")
        stock_out = run_module(os.path.join(here, stock["vmfb"]), inputs, function, device,
                               files)
        plugin_out = run_module(os.path.join(here, plugin["vmfb"]), inputs, function, device,
                                files)
        row["max_abs"], row["max_rel"], shapes = compare_outputs(stock_out, plugin_out)
        if "rewrite-attention" in plugin.get("passes_changed", []):
            row["ok"], row["bound"] = within_stated_bound(stock_out, plugin_out, atol)
        else:
            row["ok"] = shapes and (row["max_abs"] <= atol or row["max_rel"] <= rtol)
            row["bound"] = f"|d| <= {atol:g} or relative <= {rtol:g}"
        if entry.get("reference"):
            reference = [np.load(os.path.join(here, p)) for p in entry["reference"]]
            ref_abs, _, ref_shapes = compare_outputs(reference, plugin_out)
            row["reference_max_abs"] = ref_abs
            row["ok"] = row["ok"] and ref_shapes and ref_abs <= entry.get("reference_atol", 1e-5)
        if not row["ok"]:
            row["error"] = "outputs differ"
        if rounds > 0:
            progress(f"{entry['name']}: timing ({timing_plan(rounds, repetitions, max_rounds)})")
            loads = load_times_ms({"stock": os.path.join(here, stock["vmfb"]),
                                   "plugin": os.path.join(here, plugin["vmfb"])}, device,
                                  parameters=files)
            row["stock_load_ms"], row["plugin_load_ms"] = loads["stock"], loads["plugin"]
            for side, info in (("stock", stock), ("plugin", plugin)):
                row[f"{side}_resident_mib"] = resident_mib(
                    os.path.join(here, info["vmfb"]), device, function=function,
                    input_paths=input_paths, parameters=files)
            row.update(timing_fields(time_pair(
                os.path.join(here, stock["vmfb"]), os.path.join(here, plugin["vmfb"]),
                input_paths, function=function, device=device, rounds=rounds,
                repetitions=repetitions, extra_flags=[*runtime_flags, *parameter_flags(files)],
                max_rounds=max_rounds, budget_s=budget_s, margin=margin)))
    except Exception as e:  # one model's failure is reported in its row
        message = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row["ok"], row["error"] = False, f"{type(e).__name__}: {message}"
        row["error"] += failure_hint(str(e), device, manifest.get("target"))
    return row


def version_warning(manifest: dict) -> str | None:
    """A warning when the runtime is not the release line the modules were compiled by."""
    from importlib import metadata

    compiled = manifest.get("tool_versions", {}).get("iree-base-compiler", "")
    try:
        runtime = metadata.version("iree-base-runtime")
    except metadata.PackageNotFoundError:
        return None
    if compiled and compiled.split(".")[:2] != runtime.split(".")[:2]:
        return (f"the modules were compiled by iree-base-compiler {compiled}; this runtime is "
                f"iree-base-runtime {runtime}: use the same release line if loading fails")
    return None


def run_bundle(folder: str, *, device: str | None = None, models: Sequence[str] = (),
               rounds: int = 5, repetitions: int = 10, atol: float = 1e-5, rtol: float = 1e-4,
               runtime_flags: Sequence[str] = (), max_rounds: int = MAX_ROUNDS,
               budget_s: float | None = BUDGET_S, margin: float = MARGIN,
               parameters: Mapping[str, str] | None = None,
               progress: Callable[[str], None] | None = None) -> list[dict]:
    """Runs every model of a bundle (or those named) on `device` (default: the device it was
    compiled for); `parameters` (scope -> file) replace the bundle's parameter files of those
    scopes. Returns the rows, in the bundle's order."""
    manifest = load_manifest(folder)
    device = device or manifest.get("device", "local-task")
    progress = progress or _print_progress
    entries = manifest["models"]
    if models:
        known = {e["name"] for e in entries}
        unknown = [m for m in models if m not in known]
        if unknown:
            raise BundleError(f"not in the bundle: {', '.join(unknown)} "
                              f"(it holds: {', '.join(sorted(known))})")
        entries = [e for e in entries if e["name"] in models]
    warning = version_warning(manifest)
    if warning:
        progress(f"warning: {warning}")
    rows = []
    for i, entry in enumerate(entries, 1):
        progress(f"({i}/{len(entries)}) {entry['name']}")
        rows.append(run_model(folder, entry, manifest, device=device, rounds=rounds,
                              repetitions=repetitions, atol=atol, rtol=rtol,
                              runtime_flags=runtime_flags, max_rounds=max_rounds,
                              budget_s=budget_s, margin=margin, parameters=parameters,
                              progress=progress))
    return rows


def _print_progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
