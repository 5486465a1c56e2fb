"""Runs an iree-fusions bundle: stock vs plugin on a device, with only the IREE runtime.

A bundle is a folder written by `iree-fusions-bench MODEL... --export DIR`:

    DIR/manifest.json         compile flags, dispatch counts, bytes between dispatches, versions
    DIR/run_bundle.py         a copy of this file
    DIR/<model>/stock.vmfb    plain iree-compile
    DIR/<model>/plugin.vmfb   iree-fusions-compile
    DIR/<model>/input<i>.npy  the inputs; reference<i>.npy: reference outputs (PyTorch), if any
    DIR/<model>/parameters-<scope>.irpa   the external weights both modules read, if any
                              (`--form params`; `--parameters SCOPE=FILE` replaces one here)

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
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

MANIFEST = "manifest.json"
FORMAT = "iree-fusions-bundle/1"

# The columns of a result row (iree-fusions-bench's rows have the same keys).
ROW_KEYS = ("model", "stock_dispatches", "plugin_dispatches", "stock_bytes", "plugin_bytes",
            "stock_init_dispatches", "plugin_init_dispatches", "stock_load_ms", "plugin_load_ms",
            "stock_resident_mib", "plugin_resident_mib", "max_abs", "max_rel",
            "reference_max_abs", "stock_ms", "plugin_ms", "ratio",
            "ratio_low", "ratio_high", "ratio_confidence", "verdict", "settled", "rounds", "margin",
            "stock_rounds_ms", "plugin_rounds_ms", "machine", "compiled_for", "ok", "error",
            "changes")

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
                 ("plugin", dict, True), ("parameters", dict, False))


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
        files += [(f"parameters[{scope!r}]", p)
                  for scope, p in entry.get("parameters", {}).items()]
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
    empty scope) -> {scope: file}; ValueError for an empty file or a scope given twice."""
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


def add_parameters_argument(p: argparse.ArgumentParser) -> None:
    """`--parameters [SCOPE=]FILE`, as iree-run-module takes it (repeatable)."""
    p.add_argument("--parameters", action="append", default=[], metavar="[SCOPE=]FILE",
                   help="a parameter file (.irpa, .gguf, .safetensors) the modules read their "
                        "external weights from, as iree-run-module --parameters (repeatable; "
                        "for a bundle: replaces the file it holds for that scope)")


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


def parameter_flags(parameters: Mapping[str, str] | None) -> list[str]:
    """`--parameters=scope=FILE` flags (iree-run-module, iree-benchmark-module) for
    parameter files (scope -> path; the empty scope is written `--parameters=FILE`)."""
    return [f"--parameters={scope}={path}" if scope else f"--parameters={path}"
            for scope, path in (parameters or {}).items()]


def _load(vmfb_path: str, device: str, parameters: Mapping[str, str] | None = None):
    """(context, module name): the .vmfb loaded on the device with its parameter files
    (scope -> path), its initializers run."""
    import iree.runtime as rt

    config = rt.Config(device)
    with open(vmfb_path, "rb") as f:
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
    context = rt.SystemContext(config=config)
    if parameters:
        context.add_vm_module(parameters_module(config.vm_instance, parameters))
    context.add_vm_module(vm_module)
    return context, vm_module.name


def run_module(vmfb_path: str, inputs: Sequence, function: str = "main",
               device: str = "local-task", parameters: Mapping[str, str] | None = None
               ) -> list:
    """Loads a .vmfb on a runtime device (with its parameter files), calls `function` once;
    results as numpy arrays."""
    context, name = _load(vmfb_path, device, parameters)
    return host_arrays(context.modules[name][function](*inputs))


# ------------------------------------------------------------------ statistics
#
# The one place where alternating timings become a verdict: iree-fusions-bench, bundles (this
# file is their run_bundle.py) and iree-fusions-tune all decide with these functions.

SIGN_LEVEL = 0.05  # the one-sided sign test's level
# Relative: an interval within this far of 1 is the bench's "about the same"; the tuner's
# `clearly_better` needs the medians this far apart.
MARGIN = 0.02
MAX_ROUNDS = 21  # an unsettled verdict gets more rounds up to this many
BUDGET_S = 60.0  # ... and while a model's timing has taken less than this
FASTER, SLOWER, SAME, NOISE = "faster", "slower", "about the same", "within noise"


def rounds_needed(n: int, level: float = SIGN_LEVEL) -> int:
    """The fewest of n rounds that must agree for a one-sided sign test at `level` (more
    than n when n rounds cannot reach it: 5 of 5, 7 of 7, 8 of 9, 9 of 11, 15 of 21)."""
    tail = 0.0
    for k in range(n, -1, -1):
        tail += math.comb(n, k) / 2 ** n
        if tail > level:
            return k + 1
    return 0


def clearly_better(round_ratios: Sequence[float], median_ratio: float,
                   margin: float = MARGIN, level: float = SIGN_LEVEL) -> bool:
    """Whether the second build beats the first (ratios: first/second time, per round and
    of the medians): by more than `margin` in the medians and in enough rounds (sign test)."""
    wins = sum(r > 1 for r in round_ratios)
    return median_ratio > 1 + margin and wins >= rounds_needed(len(round_ratios), level)


def split_verdict(round_ratios: Sequence[float], median_ratio: float,
                  margin: float = MARGIN) -> bool:
    """The medians favour the second build beyond `margin`, but too few rounds agree to say
    so: more rounds may settle it."""
    return median_ratio > 1 + margin and not clearly_better(round_ratios, median_ratio, margin)


def round_ratios(first_rounds: Sequence[float], second_rounds: Sequence[float]
                 ) -> list[float]:
    """first/second per round (rounds where either time is not positive are left out)."""
    return [a / b for a, b in zip(first_rounds, second_rounds) if a > 0 and b > 0]


def ratio_interval(round_ratios: Sequence[float], level: float = SIGN_LEVEL
                   ) -> tuple[float, float, float]:
    """(low, high, confidence): a distribution-free confidence interval of the median
    per-round ratio, by order statistics. With c = rounds_needed(n), low is the (n+1-c)-th
    smallest ratio and high the c-th: low > 1 exactly when c rounds favour the second build,
    i.e. when the one-sided sign test at `level` does, so each bound is that test and the
    interval covers with 1 - 2 P(Binomial(n, 1/2) >= c) >= 1 - 2 level (e.g. 94% of 5
    rounds, 92% of 21). Fewer than 5 rounds cannot reach that: their range, with its lower
    confidence (0 for one round)."""
    ratios = sorted(round_ratios)
    n = len(ratios)
    if n == 0:
        return math.nan, math.nan, 0.0
    c = min(rounds_needed(n, level), n)
    tail = sum(math.comb(n, k) for k in range(c, n + 1)) / 2 ** n
    return ratios[n - c], ratios[c - 1], max(0.0, 1 - 2 * tail)


def judge(stock_rounds: Sequence[float], plugin_rounds: Sequence[float],
          margin: float = MARGIN, level: float = SIGN_LEVEL) -> dict:
    """The verdict on alternating rounds (each side's figure per round, paired by round).

    ratio: the median of the per-round stock/plugin ratios (> 1: the plugin is faster), the
    point its interval is about (the ratio of the two medians, taken from different rounds,
    can lie outside it when the machine's speed drifts); ratio_low, ratio_high,
    ratio_confidence: `ratio_interval` of the per-round ratios. The verdict says what that
    interval shows, once it has its full confidence (>= 1 - 2 level: 5 rounds or more):

    - SAME ("about the same"): the whole interval lies within the margin,
      1/(1+margin) <= low and high <= 1+margin (before the two below: a consistent 1%
      difference is the same for the bench's purpose);
    - FASTER: low > 1, the interval lies above 1, which is the one-sided sign test at
      `level` (`ratio_interval`); SLOWER: high < 1. However small the difference, as long as
      the interval reaches beyond the margin;
    - NOISE ("within noise"): anything else, i.e. the interval straddles 1 and reaches
      beyond the margin (or there are too few rounds for its confidence): undecided.

    settled: SAME, and FASTER or SLOWER whose median lies beyond the margin. A smaller
    difference (median within the margin) is called on the evidence of all the rounds the
    budget allows, not settled early: at equal speeds all 5 of 5 rounds fall on one side 1
    time in 16, and a 1-2% drift between runs would then decide the first run's verdict.
    `alternate` takes more rounds while a verdict is not settled. `clearly_better` and
    `split_verdict`, the tuner's rule, are not this one."""
    stock_ms = statistics.median(stock_rounds) if stock_rounds else math.nan
    plugin_ms = statistics.median(plugin_rounds) if plugin_rounds else math.nan
    ratios = round_ratios(stock_rounds, plugin_rounds)
    if ratios:
        ratio = statistics.median(ratios)
    else:
        ratio = stock_ms / plugin_ms if plugin_ms > 0 else math.inf
    low, high, confidence = ratio_interval(ratios, level)
    within = 1 / (1 + margin) <= ratio <= 1 + margin  # the median: a small difference
    if confidence < 1 - 2 * level:  # too few rounds (none: low and high are NaN)
        verdict = NOISE
    elif 1 / (1 + margin) <= low and high <= 1 + margin:
        verdict = SAME
    elif low > 1:
        verdict = FASTER
    elif high < 1:
        verdict = SLOWER
    else:
        verdict = NOISE
    return {"stock_ms": stock_ms, "plugin_ms": plugin_ms, "ratio": ratio, "ratio_low": low,
            "ratio_high": high, "ratio_confidence": confidence, "verdict": verdict,
            "settled": verdict == SAME or (verdict != NOISE and not within),
            "rounds": len(ratios), "margin": margin,
            "stock_rounds_ms": list(stock_rounds), "plugin_rounds_ms": list(plugin_rounds)}


def timing_fields(judgement: dict) -> dict:
    """The part of a `judge` result that goes into a result row."""
    return {k: v for k, v in judgement.items() if k in ROW_KEYS}


def timing_plan(rounds: int, repetitions: int, max_rounds: int) -> str:
    """What a timing does, for progress lines: `5 rounds x 10 reps, up to 21 if unsettled`."""
    more = f", up to {max_rounds} if unsettled" if max_rounds > rounds else ""
    return f"{rounds} rounds x {repetitions} reps{more}"


def add_timing_arguments(p: argparse.ArgumentParser) -> None:
    """The timing options of iree-fusions-bench and run_bundle.py."""
    p.add_argument("--rounds", type=int, default=5,
                   help="alternating timing rounds (0: none); the verdict may take more")
    p.add_argument("--max-rounds", type=int, default=MAX_ROUNDS,
                   help="while a verdict is unsettled, take --rounds more rounds, up to this "
                   "many (default %(default)s; = --rounds: never more)")
    p.add_argument("--budget", type=float, default=BUDGET_S, metavar="SECONDS",
                   help="no further rounds once a model's timing took this long "
                   "(default %(default)g)")
    p.add_argument("--margin", type=float, default=MARGIN,
                   help="an interval of the ratio within this far of 1 is 'about the same' "
                   "(default %(default)g)")
    p.add_argument("--repetitions", type=int, default=10, help="repetitions per round")


# ------------------------------------------------------------------ timing


def load_times_ms(paths: dict[str, str], device: str, rounds: int = 5,
                  parameters: Mapping[str, str] | None = None) -> dict[str, float]:
    """Median time to load each module (its load-time initializers included: weights
    stacked at load, for instance; with `parameters`, reading its parameter files too),
    alternating; the device is created outside the timing."""
    import iree.runtime as rt

    rt.Config(device)  # the first device creation is not the module's cost
    times: dict[str, list[float]] = {name: [] for name in paths}
    for r in range(rounds):
        for name in (list(paths) if r % 2 == 0 else list(paths)[::-1]):
            t0 = time.perf_counter()
            _load(paths[name], device, parameters)
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def _rss_mib() -> dict[str, float]:
    """RssAnon and RssFile of this process in MiB ({} where /proc has no status)."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("RssAnon", "RssFile"):
                    out[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return out


def memory_probe(vmfb_path: str, device: str, function: str, input_paths: Sequence[str],
                 parameters: Mapping[str, str] | None = None) -> dict:
    """In this process (a fresh one: `resident_mib`): RSS (MiB, anonymous / file-backed)
    with the runtime imported and the device created, after loading the module (its
    initializers run: weights stacked at load time), and after one call."""
    import numpy as np
    import iree.runtime as rt

    rt.Config(device)
    inputs = [np.load(p) for p in input_paths]
    before = _rss_mib()
    context, name = _load(vmfb_path, device, parameters)
    loaded = _rss_mib()
    host_arrays(context.modules[name][function](*inputs))
    return {"before": before, "loaded": loaded, "called": _rss_mib()}


def resident_mib(vmfb_path: str, device: str, *, function: str, input_paths: Sequence[str],
                 parameters: Mapping[str, str] | None = None) -> float | None:
    """What a module holds in host memory once loaded and called once: the growth of a
    fresh process's RSS (anonymous + file-backed, MiB) from loading it (with its parameter
    files) and calling it once. Weights inline in the .vmfb or mapped from a parameter file
    count as far as they are touched; a copy made at load time (a stacked table) counts
    whole. Measured from before loading (runtime imported, device created) to after the
    call. None where it cannot be measured (no /proc)."""
    spec = {"vmfb_path": vmfb_path, "device": device, "function": function,
            "input_paths": list(input_paths), "parameters": dict(parameters or {})}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), _PROBE, json.dumps(spec)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    if not probe["before"]:
        return None
    return round(sum(probe["called"].values()) - sum(probe["before"].values()), 1)


_PROBE = "--memory-probe"  # this file run as a script: memory_probe(**JSON), for resident_mib


def benchmark_tool() -> str:
    """iree-benchmark-module as shipped inside the iree-base-runtime package (so that it is
    found after `pip install --target DIR` too), else next to the interpreter, else PATH."""
    try:
        from iree._runtime import libs

        exe = os.path.join(libs.library_path, "iree-benchmark-module")
        if os.access(exe, os.X_OK):
            return exe
    except ImportError:
        pass
    exe = os.path.join(os.path.dirname(sys.executable), "iree-benchmark-module")
    if os.access(exe, os.X_OK):
        return exe
    return shutil.which("iree-benchmark-module") or "iree-benchmark-module"


# At most this many usable cores: local-task timings run with one worker group (below).
SMALL_HOST_CORES = 2


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def topology_flags(device: str, extra_flags: Sequence[str] = ()) -> list[str]:
    """Flags the timings add for `device`: on a host with at most SMALL_HOST_CORES cores,
    local-task gets one worker group (`--task_topology_group_count=1`) unless the caller set
    a `--task_topology...` flag. IREE's default there is one worker per core beside the
    calling thread, and each iree-benchmark-module process then runs either fast or slow as
    a whole: measured on a 2-core VM, six processes timing one module gave medians 1.60-1.99
    ms (towers-silu-b64) and 0.104-0.195 ms (towers-silu-b1) with the default, 1.52-1.55 and
    0.130-0.130 ms with one group, so per-round ratios scattered 0.6-2.2x and verdicts
    flipped between runs (bench/results/verdict-check.md, run 3)."""
    if device != "local-task" or usable_cores() > SMALL_HOST_CORES or any(
            f.startswith("--task_topology") for f in extra_flags):
        return []
    return ["--task_topology_group_count=1"]


def benchmark_ms(vmfb_path: str, input_flags: Sequence[str], *, function: str = "main",
                 device: str = "local-task", repetitions: int = 10, min_time: str = "0.05s",
                 extra_flags: Sequence[str] = ()) -> list[float]:
    """Real time (ms) of each repetition of one iree-benchmark-module run (`input_flags`:
    its `--input=...` flags; `extra_flags` go to the tool as they are, after
    `topology_flags`)."""
    cmd = [benchmark_tool(), f"--module={vmfb_path}", f"--device={device}",
           f"--function={function}", *input_flags, f"--benchmark_repetitions={repetitions}",
           f"--benchmark_min_time={min_time}", "--benchmark_format=json",
           *topology_flags(device, extra_flags), *extra_flags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
    data = json.loads(proc.stdout)
    times = [b["real_time"] * _MS_PER_UNIT[b.get("time_unit", "ns")]
             for b in data["benchmarks"] if b.get("run_type") == "iteration"]
    if not times:
        raise RuntimeError(f"no repetitions in the output of {' '.join(cmd)}")
    return times


def repetition_times_ms(vmfb_path: str, input_paths: Sequence[str], *, function: str,
                        device: str, repetitions: int, extra_flags: Sequence[str] = ()
                        ) -> list[float]:
    """Real time (ms) of each repetition of one iree-benchmark-module run."""
    return benchmark_ms(vmfb_path, [f"--input=@{p}" for p in input_paths], function=function,
                        device=device, repetitions=repetitions, extra_flags=extra_flags)


def alternate(time_side: Callable[[str], float], *, rounds: int = 5,
              max_rounds: int | None = None, budget_s: float | None = None,
              unsettled: Callable[[list[float], list[float]], bool] | None = None
              ) -> tuple[list[float], list[float]]:
    """Alternating rounds of stock and plugin: (stock's figures, plugin's), one per round.

    `time_side(side)` ("stock" or "plugin") times one side once (e.g. its median
    repetition); stock goes first on even rounds, plugin on odd ones, so a drift of the
    machine touches both. After `rounds` rounds, while `unsettled(stock, plugin)` (default:
    `judge` says the verdict is not settled), `rounds` more are taken, up to `max_rounds` in
    all (default `rounds`: never more) and only while fewer than `budget_s` seconds went."""
    max_rounds = rounds if max_rounds is None else max_rounds
    unsettled = unsettled or (lambda s, p: not judge(s, p)["settled"])
    times: dict[str, list[float]] = {"stock": [], "plugin": []}
    started = time.monotonic()
    goal = rounds
    while True:
        for r in range(len(times["stock"]), goal):
            for side in (("stock", "plugin") if r % 2 == 0 else ("plugin", "stock")):
                times[side].append(time_side(side))
        if (goal >= max_rounds or rounds <= 0
                or (budget_s is not None and time.monotonic() - started >= budget_s)
                or not unsettled(times["stock"], times["plugin"])):
            return times["stock"], times["plugin"]
        goal = min(goal + rounds, max_rounds)


def time_pair(stock_vmfb: str, plugin_vmfb: str, input_paths: Sequence[str], *,
              function: str = "main", device: str = "local-task", rounds: int = 5,
              repetitions: int = 10, extra_flags: Sequence[str] = (),
              max_rounds: int | None = None, budget_s: float | None = None,
              margin: float = MARGIN) -> dict:
    """Stock and plugin alternately (`alternate`: each round's figure is the median
    repetition), more rounds while the verdict is unsettled (up to `max_rounds`, within
    `budget_s`); returns `judge`'s verdict on them, in ms (as
    iree_fusions.harness.timing.compare_latency)."""
    paths = {"stock": stock_vmfb, "plugin": plugin_vmfb}

    def time_side(side: str) -> float:
        return statistics.median(repetition_times_ms(
            paths[side], input_paths, function=function, device=device,
            repetitions=repetitions, extra_flags=extra_flags))

    stock, plugin = alternate(time_side, rounds=rounds, max_rounds=max_rounds,
                              budget_s=budget_s,
                              unsettled=lambda s, p: not judge(s, p, margin)["settled"])
    return judge(stock, plugin, margin)


# ------------------------------------------------------------------ the machine


def _cpuinfo() -> dict[str, str]:
    """The fields of the first processor in /proc/cpuinfo ({} where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if not sep:
                    if fields:
                        break  # the first processor is enough
                    continue
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_flags() -> set[str]:
    """The CPU's feature flags as /proc/cpuinfo lists them (empty where it does not)."""
    fields = _cpuinfo()
    return set((fields.get("flags") or fields.get("Features") or "").split())


def cpu_info() -> dict:
    """The CPU this process runs on: model name (/proc/cpuinfo, else the platform's),
    vendor/family/model numbers, logical cores, and the widest vector extension its flags
    list (x86: avx512, avx2, avx, sse4.2, sse2; Arm: sve, neon); on a host of at most
    SMALL_HOST_CORES cores, the flags local-task timings add (`topology_flags`)."""
    import platform

    fields = _cpuinfo()
    model = (fields.get("model name") or fields.get("Model") or fields.get("Hardware")
             or platform.processor() or platform.machine() or "unknown")
    info = {"model": model, "cores": os.cpu_count(), "arch": platform.machine()}
    if usable_cores() <= SMALL_HOST_CORES:  # local-task was timed with one worker group
        info["timing_flags"] = topology_flags("local-task")
    if "cpu family" in fields:
        info["id"] = (f"{fields.get('vendor_id', '?')} family {fields['cpu family']} "
                      f"model {fields.get('model', '?')}")
    flags = cpu_flags()
    if flags:
        info["vector"] = next((name for name, flag in _VECTOR_FLAGS if flag in flags), "none")
    return info


_VECTOR_FLAGS = (("avx512", "avx512f"), ("avx2", "avx2"), ("avx", "avx"),
                 ("sse4.2", "sse4_2"), ("sse2", "sse2"), ("sve", "sve"), ("neon", "asimd"))


def describe_cpu(info: dict) -> str:
    """One line: `Intel(R) Xeon(R) Processor (GenuineIntel family 6 model 167, 2 cores,
    avx512)`."""
    details = [d for d in (info.get("id"), f"{info.get('cores')} cores", info.get("vector"))
               if d]
    return f"{info.get('model', 'unknown CPU')} ({', '.join(details)})"


_EXECUTABLE_TARGET = re.compile(r'#hal\.executable\.target<"([^"]+)"')
_TARGET_ATTRS = {key: re.compile(rf'\b{key} = (?:"([^"]*)"|(\d+))')
                 for key in ("cpu", "arch", "cpu_features", "native_vector_size")}


def compiled_for(ir_text: str | bytes) -> dict | None:
    """What IREE compiled for, from IR past its target resolution (`--compile-to=flow`
    text): {"target": "llvm-cpu:rocketlake", "cpu_features": "+avx,...",
    "native_vector_size": 64} (GPUs: "cuda:sm_80" and no CPU fields); None if none found."""
    if isinstance(ir_text, bytes):
        ir_text = ir_text.decode(errors="replace")
    found = _EXECUTABLE_TARGET.search(ir_text)
    if found is None:
        return None
    backend, attrs = found.group(1), ir_text[found.end():found.end() + 20000]
    attrs = attrs.split("\n", 1)[0]

    def attr(key: str):
        m = _TARGET_ATTRS[key].search(attrs)
        return None if m is None else (m.group(1) if m.group(2) is None else int(m.group(2)))

    chip = attr("cpu" if backend == "llvm-cpu" else "arch") or "generic"
    out: dict = {"target": f"{backend}:{chip}"}
    if backend == "llvm-cpu":
        out.update(cpu_features=attr("cpu_features") or "",
                   native_vector_size=attr("native_vector_size"))
    return out


# LLVM's names of x86 vector features -> the flag /proc/cpuinfo shows for them.
_CPUINFO_FLAG = {"avx512f": "avx512f", "avx512bw": "avx512bw", "avx512dq": "avx512dq",
                 "avx512vl": "avx512vl", "avx512fp16": "avx512_fp16",
                 "avx512bf16": "avx512_bf16", "avx2": "avx2", "avx": "avx", "fma": "fma",
                 "f16c": "f16c", "sse4.2": "sse4_2", "sse4.1": "sse4_1", "ssse3": "ssse3"}


def missing_features(target: dict | None, flags: set[str] | None = None) -> list[str]:
    """The x86 vector features the modules were compiled to use (`compiled_for`) that this
    CPU (`cpu_flags`) lacks: code using them stops with an illegal instruction here."""
    flags = cpu_flags() if flags is None else flags
    if not target or not flags or not target.get("cpu_features"):
        return []
    used = [f[1:] for f in target["cpu_features"].split(",") if f.startswith("+")]
    return [f for f in used if f in _CPUINFO_FLAG and _CPUINFO_FLAG[f] not in flags]


# ------------------------------------------------------------------ running a bundle


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
        row["ok"] = shapes and (row["max_abs"] <= atol or row["max_rel"] <= rtol)
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
    add_timing_arguments(p)
    p.add_argument("--atol", type=float, default=1e-5, help="stock vs plugin abs tolerance")
    p.add_argument("--rtol", type=float, default=1e-4, help="stock vs plugin rel tolerance")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag for both timings (repeatable)")
    add_parameters_argument(p)
    p.add_argument("--json", help="write the rows as JSON to this file (- for stdout); "
                   "`python -m iree_fusions.tools.plot FILE -o plot.png` draws them")
    args = p.parse_args(argv)
    if args.folder is None:
        p.error("no bundle folder given")
    try:
        parameters = parse_parameters(args.parameters)
    except ValueError as e:
        p.error(str(e))
    try:
        rows = run_bundle(args.folder, device=args.device, models=args.model,
                          rounds=args.rounds, repetitions=args.repetitions, atol=args.atol,
                          rtol=args.rtol, runtime_flags=args.runtime_flag,
                          max_rounds=args.max_rounds, budget_s=args.budget,
                          margin=args.margin, parameters=parameters)
    except BundleError as e:
        print(f"run_bundle.py: error: {e}", file=sys.stderr)
        return 2
    return report(rows, args.json)


if __name__ == "__main__":
    if sys.argv[1:2] == [_PROBE]:
        print(json.dumps(memory_probe(**json.loads(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main())
