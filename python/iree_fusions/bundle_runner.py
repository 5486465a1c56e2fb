"""Runs an iree-fusions bundle: stock vs plugin on a device, with only the IREE runtime.

A bundle is a folder written by `iree-fusions-bench MODEL... --export DIR`:

    DIR/manifest.json         compile flags, dispatch counts, bytes between dispatches, versions
    DIR/run_bundle.py         a copy of this file
    DIR/<model>/stock.vmfb    plain iree-compile
    DIR/<model>/plugin.vmfb   iree-fusions-compile
    DIR/<model>/input<i>.npy  the inputs; reference<i>.npy: reference outputs (PyTorch), if any

For each model this runs both modules on the device with the same inputs, checks that the
outputs agree (stock vs plugin, and plugin vs the reference), times both alternately with
`iree-benchmark-module` (median of rounds, ratio stock/plugin) and prints the table of
`iree-fusions-bench`. It imports nothing but the standard library, numpy and iree.runtime, so
it runs where only `iree-base-runtime` and numpy are installed, with or without iree-fusions:

    python DIR/run_bundle.py [DIR] [--device cuda] [--json rows.json]
    iree-fusions-bench --from DIR [--device cuda]          # the same code

Keep this file self-contained: no imports from iree_fusions, iree.compiler or torch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

MANIFEST = "manifest.json"
FORMAT = "iree-fusions-bundle/1"

# The columns of a result row (iree-fusions-bench's rows have the same keys).
ROW_KEYS = ("model", "stock_dispatches", "plugin_dispatches", "stock_bytes", "plugin_bytes",
            "stock_init_dispatches", "plugin_init_dispatches", "stock_load_ms", "plugin_load_ms",
            "max_abs", "max_rel", "reference_max_abs", "stock_ms", "plugin_ms", "ratio", "ok",
            "error", "changes")

_MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


class BundleError(RuntimeError):
    """The folder is not a readable bundle."""


def load_manifest(folder: str, *, require_models: bool = True) -> dict:
    """The bundle's manifest, checked: its format, the shape of every entry, and that every
    file it names lies inside the bundle (no absolute paths, no `..`, no link leading out).
    A bundle without models is an error unless `require_models` is False."""
    path = os.path.join(folder, MANIFEST)
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read(_MANIFEST_LIMIT + 1).decode())
    except OSError as e:
        raise BundleError(f"not a bundle: cannot read {path}: {e.strerror}") from None
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, or nested too deep
        raise BundleError(f"not a bundle: {path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise BundleError(f"{path}: unknown format {found!r} (expected {FORMAT})")
    _check_manifest(manifest, folder, path)
    if require_models and not manifest["models"]:
        raise BundleError(f"{path}: the bundle holds no models (an export that wrote none?)")
    return manifest


_MANIFEST_LIMIT = 64 << 20
# (key, type, required) of each model entry and of its stock / plugin builds.
_ENTRY_SCHEMA = (("name", str, True), ("dir", str, True), ("function", str, False),
                 ("inputs", list, True), ("reference", list, False),
                 ("reference_atol", (int, float), False), ("stock", dict, True),
                 ("plugin", dict, True))


def _check_manifest(manifest: dict, folder: str, path: str) -> None:
    """Raises BundleError naming the first entry of the wrong shape or a file outside."""
    for key, kind in (("device", str), ("target_flags", list), ("tool_versions", dict)):
        if key in manifest and manifest[key] is not None and not isinstance(manifest[key], kind):
            raise BundleError(f"{path}: '{key}' must be a {kind.__name__}")
    models = manifest.get("models")
    if not isinstance(models, list):
        raise BundleError(f"{path}: 'models' must be a list")
    names = set()
    for i, entry in enumerate(models):
        where = f"{path}: models[{i}]"
        if not isinstance(entry, dict):
            raise BundleError(f"{where} must be an object")
        for key, kind, required in _ENTRY_SCHEMA:
            if (required or key in entry) and (isinstance(entry.get(key), bool) or
                                               not isinstance(entry.get(key), kind)):
                name = kind.__name__ if isinstance(kind, type) else "number"
                raise BundleError(f"{where}: '{key}' must be a {name}")
        if entry["name"] in names:
            raise BundleError(f"{where}: model '{entry['name']}' is listed twice")
        names.add(entry["name"])
        here = _inside(folder, entry["dir"], f"{where}.dir")
        files = [(f"inputs[{j}]", p) for j, p in enumerate(entry["inputs"])]
        files += [(f"reference[{j}]", p) for j, p in enumerate(entry.get("reference", []))]
        for side in ("stock", "plugin"):
            files.append((f"{side}.vmfb", entry[side].get("vmfb")))
            count = entry[side].get("dispatches")
            if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
                raise BundleError(f"{where}.{side}: 'dispatches' must be an integer")
        for key, name in files:
            if not isinstance(name, str):
                raise BundleError(f"{where}.{key} must be a file name")
            _inside(here, name, f"{where}.{key}", root=folder)


def _inside(base: str, name: str, where: str, root: str | None = None) -> str:
    """`base/name` when it stays inside the bundle (`root`, default `base`), links
    resolved; else BundleError."""
    root = root or base
    if not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise BundleError(f"{where}: '{name}' is not a path inside the bundle")
    path = os.path.join(base, name)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise BundleError(f"{where}: '{name}' leads outside the bundle")
    return path


def empty_row(model: str) -> dict:
    row = dict.fromkeys(ROW_KEYS)
    row.update(model=model, ok=True, changes=[])
    return row


# ------------------------------------------------------------------ numerics


def compare_outputs(expected: Sequence, actual: Sequence) -> tuple[float, float, bool]:
    """(max abs error, max rel error, shapes and dtypes match) over all outputs.

    Equal values agree: equal infinities and NaN against NaN included; NaN on one side is an
    infinite error. Integers are compared exactly (never through float64, which cannot tell
    apart int64 values above 2**53)."""
    import numpy as np

    if len(expected) != len(actual):
        return float("inf"), float("inf"), False
    max_abs = max_rel = 0.0
    for e, a in zip(expected, actual):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype:
            return float("inf"), float("inf"), False
        if e.size == 0:
            continue
        if e.dtype.kind in "biu":
            err_abs, err_rel = _integer_errors(e, a)
        else:
            ef, af = e.astype(np.float64), a.astype(np.float64)
            same = (ef == af) | (np.isnan(ef) & np.isnan(af))
            if (~same & (np.isnan(ef) | np.isnan(af))).any():  # NaN on one side only
                return float("inf"), float("inf"), True
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.where(same, 0.0, np.abs(ef - af))
                rel = np.where(same, 0.0, diff / np.maximum(np.abs(ef), 1e-30))
            err_abs, err_rel = float(diff.max()), float(np.nan_to_num(rel, nan=np.inf).max())
        max_abs, max_rel = max(max_abs, err_abs), max(max_rel, err_rel)
    return max_abs, max_rel, True


def _integer_errors(e, a) -> tuple[float, float]:
    """Max abs / rel difference of two integer (or bool) arrays, computed exactly."""
    import numpy as np

    differ = np.flatnonzero(e.ravel() != a.ravel())
    if differ.size == 0:
        return 0.0, 0.0
    ev = e.ravel()[differ].astype(object)
    av = a.ravel()[differ].astype(object)
    diffs = [abs(int(x) - int(y)) for x, y in zip(ev, av)]
    rels = [d / max(abs(int(x)), 1) for d, x in zip(diffs, ev)]
    return float(max(diffs)), float(max(rels))


def host_arrays(result) -> list:
    """A function's result (None, one value or a tuple) as numpy arrays that own their memory.

    `to_host()` maps the result's device buffer: the array views memory the runtime releases
    with the call's context and hands out again to later allocations, so a result kept after
    the context is gone can change under the caller (two identical builds compared equal or
    not by chance). Each result is copied out while its buffer is alive."""
    import numpy as np

    if result is None:
        return []
    results = result if isinstance(result, (tuple, list)) else [result]
    return [np.array(r.to_host() if hasattr(r, "to_host") else r, copy=True) for r in results]


def parse_parameters(specs: Sequence[str]) -> dict[str, str]:
    """`--parameters` values as iree-run-module takes them (`scope=FILE` or `FILE`, the
    empty scope) -> {scope: file}."""
    out: dict[str, str] = {}
    for spec in specs:
        scope, sep, path = spec.partition("=")
        scope, path = (scope, path) if sep else ("", spec)
        if not path:
            raise ValueError(f"--parameters={spec}: expected [SCOPE=]FILE")
        out.setdefault(scope, path)
        if out[scope] != path:
            raise ValueError(f"--parameters: scope '{scope}' given twice")
    return out


def parameters_module(instance, parameters):
    """The `io_parameters` module that serves a compiled module's external parameters:
    `parameters` maps a scope (the `"model"` of `#flow.parameter.named<"model"::"w">`) to a
    parameter file (.irpa, .gguf, .safetensors) or to {name: numpy array}."""
    import numpy as np
    import iree.runtime as rt

    providers = []
    for scope, source in parameters.items():
        index = rt.ParameterIndex()
        if isinstance(source, dict):
            for name, array in source.items():
                index.add_buffer(name, np.ascontiguousarray(array).tobytes())
        else:
            path = os.fspath(source)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"parameter file for scope '{scope}' not found: {path}")
            index.load(path)
        providers.append(index.create_provider(scope=scope))
    return rt.create_io_parameters_module(instance, *providers)


def _load(vmfb_path: str, device: str):
    """(context, module name): the .vmfb loaded on the device, its initializers run."""
    import iree.runtime as rt

    config = rt.Config(device)
    with open(vmfb_path, "rb") as f:
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
    context = rt.SystemContext(config=config)
    context.add_vm_module(vm_module)
    return context, vm_module.name


def run_module(vmfb_path: str, inputs: Sequence, function: str = "main",
               device: str = "local-task") -> list:
    """Loads a .vmfb on a runtime device, calls `function` once; results as numpy arrays."""
    context, name = _load(vmfb_path, device)
    return host_arrays(context.modules[name][function](*inputs))


# ------------------------------------------------------------------ timing


def load_times_ms(paths: dict[str, str], device: str, rounds: int = 5) -> dict[str, float]:
    """Median time to load each module (its load-time initializers included: weights
    stacked at load, for instance), alternating; the device is created outside the timing."""
    import iree.runtime as rt

    rt.Config(device)  # the first device creation is not the module's cost
    times: dict[str, list[float]] = {name: [] for name in paths}
    for r in range(rounds):
        for name in (list(paths) if r % 2 == 0 else list(paths)[::-1]):
            t0 = time.perf_counter()
            _load(paths[name], device)
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def benchmark_tool() -> str:
    """iree-benchmark-module as shipped inside the iree-base-runtime package (so that it is
    found after `pip install --target DIR` too), else from PATH."""
    try:
        from iree._runtime import libs

        exe = os.path.join(libs.library_path, "iree-benchmark-module")
        if os.access(exe, os.X_OK):
            return exe
    except ImportError:
        pass
    return shutil.which("iree-benchmark-module") or "iree-benchmark-module"


def repetition_times_ms(vmfb_path: str, input_paths: Sequence[str], *, function: str,
                        device: str, repetitions: int, extra_flags: Sequence[str] = ()
                        ) -> list[float]:
    """Real time (ms) of each repetition of one iree-benchmark-module run."""
    cmd = [benchmark_tool(), f"--module={vmfb_path}", f"--device={device}",
           f"--function={function}", *[f"--input=@{p}" for p in input_paths],
           f"--benchmark_repetitions={repetitions}", "--benchmark_min_time=0.05s",
           "--benchmark_format=json", *extra_flags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
    data = json.loads(proc.stdout)
    times = [b["real_time"] * _MS_PER_UNIT[b.get("time_unit", "ns")]
             for b in data["benchmarks"] if b.get("run_type") == "iteration"]
    if not times:
        raise RuntimeError(f"no repetitions in the output of {' '.join(cmd)}")
    return times


def time_pair(stock_vmfb: str, plugin_vmfb: str, input_paths: Sequence[str], *,
              function: str = "main", device: str = "local-task", rounds: int = 5,
              repetitions: int = 10, extra_flags: Sequence[str] = ()) -> tuple[float, float]:
    """Stock and plugin alternately (B first on odd rounds); medians over rounds of each
    round's median repetition, in ms (as iree_fusions.timing.compare_latency)."""
    times: dict[str, list[float]] = {"stock": [], "plugin": []}
    paths = {"stock": stock_vmfb, "plugin": plugin_vmfb}
    for r in range(rounds):
        for name in (("stock", "plugin") if r % 2 == 0 else ("plugin", "stock")):
            reps = repetition_times_ms(paths[name], input_paths, function=function,
                                       device=device, repetitions=repetitions,
                                       extra_flags=extra_flags)
            times[name].append(statistics.median(reps))
    return statistics.median(times["stock"]), statistics.median(times["plugin"])


# ------------------------------------------------------------------ running a bundle


def _hint(error: str, device: str, manifest: dict) -> str:
    """What to do about a failure on the device, in parentheses ("" if nothing to say)."""
    hints = []
    if "create device" in error or "No device found" in error:
        hints.append(f"no '{device}' device here?")
    target = manifest.get("target") or ""
    if device.startswith("vulkan") and target.startswith("rdna"):
        hints.append(f"the modules were compiled for Vulkan target '{target}', which runs only "
                     "on AMD GPUs; export with --target ampere for NVIDIA")
    return f" ({'; '.join(hints)})" if hints else ""


def run_model(folder: str, entry: dict, manifest: dict, *, device: str, rounds: int = 5,
              repetitions: int = 10, atol: float = 1e-5, rtol: float = 1e-4,
              runtime_flags: Sequence[str] = (),
              progress: Callable[[str], None] = lambda msg: None) -> dict:
    """One model of the bundle: run both modules, compare, time. Returns a result row; a
    failure is reported in the row (ok False, error), keeping the counts."""
    import numpy as np

    row = empty_row(entry["name"])
    stock, plugin = entry["stock"], entry["plugin"]
    row.update(stock_dispatches=stock.get("dispatches"), plugin_dispatches=plugin.get("dispatches"),
               stock_bytes=stock.get("bytes_between"), plugin_bytes=plugin.get("bytes_between"),
               stock_init_dispatches=stock.get("initializer_dispatches"),
               plugin_init_dispatches=plugin.get("initializer_dispatches"),
               changes=list(plugin.get("changes", [])))
    here = os.path.join(folder, entry["dir"])
    function = entry.get("function", "main")
    try:
        input_paths = [os.path.join(here, p) for p in entry["inputs"]]
        inputs = [np.load(p) for p in input_paths]
        progress(f"{entry['name']}: running on {device}")
        stock_out = run_module(os.path.join(here, stock["vmfb"]), inputs, function, device)
        plugin_out = run_module(os.path.join(here, plugin["vmfb"]), inputs, function, device)
        row["max_abs"], row["max_rel"], shapes = compare_outputs(stock_out, plugin_out)
        row["ok"] = shapes and (row["max_abs"] <= atol or row["max_rel"] <= rtol)
        if entry.get("reference"):
            reference = [np.load(os.path.join(here, p)) for p in entry["reference"]]
            ref_abs, _, ref_shapes = compare_outputs(reference, plugin_out)
            row["reference_max_abs"] = ref_abs
            row["ok"] = row["ok"] and ref_shapes and ref_abs <= entry.get("reference_atol", 1e-5)
        if not row["ok"]:
            row["error"] = "outputs differ"
        if rounds > 0:
            progress(f"{entry['name']}: timing ({rounds} rounds x {repetitions} reps)")
            loads = load_times_ms({"stock": os.path.join(here, stock["vmfb"]),
                                   "plugin": os.path.join(here, plugin["vmfb"])}, device)
            row["stock_load_ms"], row["plugin_load_ms"] = loads["stock"], loads["plugin"]
            row["stock_ms"], row["plugin_ms"] = time_pair(
                os.path.join(here, stock["vmfb"]), os.path.join(here, plugin["vmfb"]),
                input_paths, function=function, device=device, rounds=rounds,
                repetitions=repetitions, extra_flags=runtime_flags)
            row["ratio"] = (row["stock_ms"] / row["plugin_ms"] if row["plugin_ms"] > 0
                            else float("inf"))
    except Exception as e:  # one model's failure is reported in its row
        message = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row["ok"], row["error"] = False, f"{type(e).__name__}: {message}"
        row["error"] += _hint(str(e), device, manifest)
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
               runtime_flags: Sequence[str] = (),
               progress: Callable[[str], None] | None = None) -> list[dict]:
    """Runs every model of a bundle (or those named) on `device` (default: the device it was
    compiled for). Returns the rows, in the bundle's order."""
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
                              runtime_flags=runtime_flags, progress=progress))
    return rows


def _print_progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the table


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


def format_table(rows: Sequence[dict]) -> str:
    """The results table of iree-fusions-bench (rows as dicts with ROW_KEYS)."""
    header = (f"{'model':32s} {'disp stock':>10s} {'disp plug':>10s} {'MB stock':>9s} "
              f"{'MB plug':>9s} {'max abs err':>11s} {'ms stock':>9s} {'ms plug':>9s} "
              f"{'ratio':>6s}  {'load: disp':>10s} {'ms':>13s}  ok")
    lines = [header, "-" * len(header)]
    for r in rows:
        def mb(key):
            return None if r.get(key) is None else r[key] / 2**20

        lines.append(
            f"{r['model']:32s} {_fmt(r.get('stock_dispatches'), '10d')} "
            f"{_fmt(r.get('plugin_dispatches'), '10d')} "
            f"{_fmt(mb('stock_bytes'), '9.3f')} {_fmt(mb('plugin_bytes'), '9.3f')} "
            f"{_fmt(r.get('max_abs'), '11.2e')} {_fmt(r.get('stock_ms'), '9.4f')} "
            f"{_fmt(r.get('plugin_ms'), '9.4f')} {_fmt(r.get('ratio'), '6.2f')}  "
            f"{_pair(r, 'init_dispatches', 'd'):>10s} {_pair(r, 'load_ms', '.1f'):>13s}  "
            f"{'yes' if r.get('ok') else 'NO: ' + (r.get('error') or '')}"
        )
    return "\n".join(lines)


def report(rows: Sequence[dict], json_path: str | None = None) -> int:
    """Prints the table (stdout) and each row's error (stderr); writes the rows as JSON to
    `json_path` ("-": stdout). Returns the exit status: 0 when every row is ok."""
    print(format_table(rows))
    for r in rows:
        if r.get("error") and r["error"] != "outputs differ":
            print(f"{r['model']}: {r['error']}", file=sys.stderr)
    if json_path:
        payload = json.dumps(list(rows), indent=2)
        if json_path == "-":
            print(payload)
        else:
            with open(json_path, "w") as f:
                f.write(payload + "\n")
    return 0 if all(r.get("ok") for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(
        prog="run_bundle.py", description="Run an iree-fusions bundle: stock vs plugin, "
        "numerics checked, latency ratio (needs only numpy and iree-base-runtime).")
    p.add_argument("folder", nargs="?",
                   default=here if os.path.exists(os.path.join(here, MANIFEST)) else None,
                   help="the bundle (default: the folder of this script)")
    p.add_argument("--device", help="runtime device (default: the one the bundle was "
                   "compiled for), e.g. local-task, local-sync, cuda, hip, vulkan")
    p.add_argument("--model", action="append", default=[], help="run only this model "
                   "(repeatable)")
    p.add_argument("--rounds", type=int, default=5, help="alternating timing rounds (0: none)")
    p.add_argument("--repetitions", type=int, default=10, help="repetitions per round")
    p.add_argument("--atol", type=float, default=1e-5, help="stock vs plugin abs tolerance")
    p.add_argument("--rtol", type=float, default=1e-4, help="stock vs plugin rel tolerance")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag for both timings (repeatable)")
    p.add_argument("--json", help="write the rows as JSON to this file (- for stdout); "
                   "`python -m iree_fusions.plot FILE -o plot.png` draws them")
    args = p.parse_args(argv)
    if args.folder is None:
        p.error("no bundle folder given")
    try:
        rows = run_bundle(args.folder, device=args.device, models=args.model,
                          rounds=args.rounds, repetitions=args.repetitions, atol=args.atol,
                          rtol=args.rtol, runtime_flags=args.runtime_flag)
    except BundleError as e:
        print(f"run_bundle.py: error: {e}", file=sys.stderr)
        return 2
    return report(rows, args.json)


if __name__ == "__main__":
    sys.exit(main())
