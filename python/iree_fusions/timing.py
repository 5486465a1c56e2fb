"""Side-by-side latency: stock vs plugin, alternating, medians, one device, one run.

Each round runs `iree-benchmark-module` once for A then once for B (B then A on odd rounds),
each with `repetitions` repetitions; a round's figure is the median repetition. The result is
the median over rounds for each, and the ratio stock/plugin of those medians. On a noisy
2-core machine this is the figure to quote, never a single run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class LatencyPair:
    stock_ms: float
    plugin_ms: float
    stock_rounds: list[float]
    plugin_rounds: list[float]

    @property
    def ratio(self) -> float:
        """stock / plugin: > 1 means the plugin is faster."""
        return self.stock_ms / self.plugin_ms if self.plugin_ms > 0 else float("inf")


def _benchmark_tool() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "iree-benchmark-module")
    return exe if os.path.exists(exe) else "iree-benchmark-module"


def _save_inputs(inputs: Sequence[np.ndarray], folder: str) -> list[str]:
    flags = []
    for i, x in enumerate(inputs):
        path = os.path.join(folder, f"input{i}.npy")
        np.save(path, np.asarray(x))
        flags.append(f"--input=@{path}")
    return flags


def repetition_times_ms(vmfb_path: str, input_flags: list[str], *, function: str = "main",
                        device: str = "local-task", repetitions: int = 10,
                        min_time: str = "0.05s", extra_flags: Sequence[str] = ()) -> list[float]:
    """Real time (ms) of each of `repetitions` repetitions of one iree-benchmark-module run;
    `extra_flags` go to the tool (e.g. `--task_topology_max_group_count=1`)."""
    cmd = [_benchmark_tool(), f"--module={vmfb_path}", f"--device={device}",
           f"--function={function}", *input_flags, f"--benchmark_repetitions={repetitions}",
           f"--benchmark_min_time={min_time}", "--benchmark_format=json", *extra_flags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
    data = json.loads(proc.stdout)
    times = [b["real_time"] * _MS_PER_UNIT[b.get("time_unit", "ns")]
             for b in data["benchmarks"] if b.get("run_type") == "iteration"]
    if not times:
        raise RuntimeError(f"no repetitions in benchmark output of {' '.join(cmd)}")
    return times


_MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def median_latency_ms(vmfb_path: str, input_flags: list[str], **kwargs) -> float:
    """Median real time (ms) over the repetitions of one iree-benchmark-module run
    (keywords as `repetition_times_ms`)."""
    return statistics.median(repetition_times_ms(vmfb_path, input_flags, **kwargs))


def compare_latency(stock_vmfb: bytes, plugin_vmfb: bytes, inputs: Sequence[np.ndarray], *,
                    function: str = "main", device: str = "local-task", rounds: int = 5,
                    repetitions: int = 10, min_time: str = "0.05s",
                    extra_flags: Sequence[str] = (), every_repetition: bool = False,
                    plugin_inputs: Sequence[np.ndarray] | None = None) -> LatencyPair:
    """Alternates stock and plugin runs `rounds` times; returns medians and the ratio.

    The per-side lists hold each round's median repetition, or with `every_repetition`
    every repetition of every round (for a minimum: on a loaded machine the steadier estimate
    of the uncontended time). `plugin_inputs`: the second module's own inputs, where the two
    compare different signatures (default: `inputs` for both)."""
    with tempfile.TemporaryDirectory(prefix="iree-fusions-bench-") as tmp:
        paths = {}
        for name, blob in (("stock", stock_vmfb), ("plugin", plugin_vmfb)):
            paths[name] = os.path.join(tmp, f"{name}.vmfb")
            with open(paths[name], "wb") as f:
                f.write(blob)
        input_flags = {"stock": _save_inputs(inputs, tmp)}
        if plugin_inputs is None:
            input_flags["plugin"] = input_flags["stock"]
        else:
            os.makedirs(os.path.join(tmp, "plugin-inputs"))
            input_flags["plugin"] = _save_inputs(plugin_inputs, os.path.join(tmp, "plugin-inputs"))
        times: dict[str, list[float]] = {"stock": [], "plugin": []}
        for r in range(rounds):
            order = ("stock", "plugin") if r % 2 == 0 else ("plugin", "stock")
            for name in order:
                reps = repetition_times_ms(paths[name], input_flags[name], function=function,
                                           device=device, repetitions=repetitions,
                                           min_time=min_time, extra_flags=extra_flags)
                times[name].extend(reps if every_repetition else [statistics.median(reps)])
    return LatencyPair(statistics.median(times["stock"]), statistics.median(times["plugin"]),
                       times["stock"], times["plugin"])
