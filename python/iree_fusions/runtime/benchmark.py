"""Timing: load times, host memory a module holds (measured in a fresh process),
iree-benchmark-module runs, and stock vs plugin timed alternately (`time_pair`)."""

from __future__ import annotations

import json
import os
import shutil
import statistics  # the standard library's (absolute import)
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from .machine import topology_flags
from .modules import host_arrays, load_module
from .statistics import MARGIN, alternate, judge


_MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


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
            load_module(paths[name], device, parameters)
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
    context, name = load_module(vmfb_path, device, parameters)
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
    proc = subprocess.run([sys.executable, "-c", _PROBE, _import_root(), __name__,
                           json.dumps(spec)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    if not probe["before"]:
        return None
    return round(sum(probe["called"].values()) - sum(probe["before"].values()), 1)


# What `resident_mib`'s fresh process runs: this module's memory_probe(**JSON), imported by
# its name from the folder above the package (`iree_fusions.runtime.benchmark` where the
# project is installed, `runtime.benchmark` in a bundle).
_PROBE = ("import importlib, json, sys\n"
          "sys.path.insert(0, sys.argv[1])\n"
          "probe = importlib.import_module(sys.argv[2]).memory_probe(**json.loads(sys.argv[3]))\n"
          "print(json.dumps(probe))\n")


def _import_root() -> str:
    """The folder this module's top-level package lies in."""
    root = os.path.abspath(__file__)
    for _ in __name__.split("."):
        root = os.path.dirname(root)
    return root


def runtime_tool(name: str) -> str:
    """An IREE runtime tool (iree-benchmark-module, iree-run-module, iree-profile) as shipped
    inside the iree-base-runtime package (so that it is found after `pip install --target
    DIR` too), else next to the interpreter, else PATH."""
    try:
        from iree._runtime import libs

        exe = os.path.join(libs.library_path, name)
        if os.access(exe, os.X_OK):
            return exe
    except ImportError:
        pass
    exe = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(exe, os.X_OK):
        return exe
    return shutil.which(name) or name


def benchmark_tool() -> str:
    """iree-benchmark-module (`runtime_tool`)."""
    return runtime_tool("iree-benchmark-module")


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


def _minor_faults(cmd: Sequence[str], env: Mapping[str, str] | None) -> int:
    """The minor page faults of one run of `cmd` (its ru_minflt), output discarded."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=None if env is None else {**os.environ, **env})
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"benchmark failed: {' '.join(cmd)}\n{err.decode(errors='replace')}")
    return usage.ru_minflt


def faults_per_call(vmfb_path: str, input_paths: Sequence[str], *, function: str, device: str,
                    calls: int = 8, extra_flags: Sequence[str] = (),
                    env: Mapping[str, str] | None = None) -> float:
    """Minor page faults per call once the module is loaded and warm: iree-benchmark-module
    runs of 1 + `calls` and of 1 call, the difference over `calls` (loading, the first call
    and the tool's own start cancel). Each page a call touches that the process got from the
    kernel anew is one fault: on local-sync, where each transient is a malloc, glibc trimming
    its heap at the end of a call and growing it again in the next shows here, and not in
    IREE's HAL profile, whose own buffers change the heap's layout (sharktank's toy DeepSeek
    prefill at 64 tokens: ~2350 faults a call more than the pipeline, 4-5% of its time;
    bench/results/llm-suite.md, twelfth run). `env`: variables added to this process's."""
    def run(n: int) -> int:
        return _minor_faults(
            [benchmark_tool(), f"--module={vmfb_path}", f"--device={device}",
             f"--function={function}", *(f"--input=@{p}" for p in input_paths),
             "--benchmark_repetitions=1", f"--benchmark_min_time={n}x",
             *topology_flags(device, extra_flags), *extra_flags], env)
    return (run(1 + calls) - run(1)) / calls


def repetition_times_ms(vmfb_path: str, input_paths: Sequence[str], *, function: str,
                        device: str, repetitions: int, extra_flags: Sequence[str] = ()
                        ) -> list[float]:
    """Real time (ms) of each repetition of one iree-benchmark-module run."""
    return benchmark_ms(vmfb_path, [f"--input=@{p}" for p in input_paths], function=function,
                        device=device, repetitions=repetitions, extra_flags=extra_flags)


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
