"""Side-by-side latency: stock vs plugin, alternating, medians, a verdict, one device, one run.

Each round runs `iree-benchmark-module` once for A then once for B (B then A on odd rounds),
each with `repetitions` repetitions; a round's figure is the median repetition. The result is
the median over rounds for each, the ratio stock/plugin of those medians, and the verdict of
`statistics.judge` (a confidence interval of the per-round ratio; about the same when it
lies within the margin, faster / slower when it lies above / below 1, else within noise). With
`max_rounds` above `rounds`, rounds are added while that verdict is unsettled (within
noise). On a noisy 2-core machine this is the figure to quote, never a single run. The
rounds and the statistics are `runtime.statistics`' (`alternate`, `judge`): one implementation for
the bench, bundles and the tuner.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..runtime.benchmark import benchmark_ms
from ..runtime.statistics import MARGIN, alternate, judge


@dataclass
class LatencyPair:
    stock_ms: float
    plugin_ms: float
    stock_rounds: list[float]
    plugin_rounds: list[float]
    judgement: dict | None = None  # judge() of the round medians (compare_latency sets it)

    @property
    def ratio(self) -> float:
        """stock / plugin: > 1 means the plugin is faster."""
        return self.stock_ms / self.plugin_ms if self.plugin_ms > 0 else float("inf")

    def judged(self, margin: float = MARGIN) -> dict:
        """The verdict on the rounds (`statistics.judge`)."""
        if self.judgement is not None:
            return self.judgement
        return judge(self.stock_rounds, self.plugin_rounds, margin)


def save_input_files(inputs: Sequence[np.ndarray], folder: str) -> list[str]:
    """The inputs saved as `folder/input<i>.npy`; their paths."""
    paths = []
    for i, x in enumerate(inputs):
        paths.append(os.path.join(folder, f"input{i}.npy"))
        np.save(paths[-1], np.asarray(x))
    return paths


def save_inputs(inputs: Sequence[np.ndarray], folder: str) -> list[str]:
    """The inputs saved into `folder`; their `--input=@PATH` flags (iree-run-module)."""
    return [f"--input=@{path}" for path in save_input_files(inputs, folder)]


def repetition_times_ms(vmfb_path: str, input_flags: list[str], *, function: str = "main",
                        device: str = "local-task", repetitions: int = 10,
                        min_time: str = "0.05s", extra_flags: Sequence[str] = ()) -> list[float]:
    """Real time (ms) of each of `repetitions` repetitions of one iree-benchmark-module run;
    `extra_flags` go to the tool (e.g. `--task_topology_max_group_count=1`)."""
    return benchmark_ms(vmfb_path, input_flags, function=function, device=device,
                        repetitions=repetitions, min_time=min_time, extra_flags=extra_flags)


def median_latency_ms(vmfb_path: str, input_flags: list[str], **kwargs) -> float:
    """Median real time (ms) over the repetitions of one iree-benchmark-module run
    (keywords as `repetition_times_ms`)."""
    return statistics.median(repetition_times_ms(vmfb_path, input_flags, **kwargs))


@dataclass(frozen=True)
class TimingOptions:
    """How to time, as one value (`compare_latency(a, b, inputs, options)`); keywords given
    beside it override its fields.

    rounds: alternating rounds (then more while the verdict is unsettled, up to
    `max_rounds` and within `budget_s` seconds: `statistics.alternate`); repetitions and
    min_time: per iree-benchmark-module run; extra_flags: more flags for it (e.g.
    `--task_topology_max_group_count=1`); margin: the verdict's (`statistics.judge`);
    every_repetition: the per-side lists hold every repetition of every round instead of
    each round's median repetition (for a minimum: on a loaded machine the steadier estimate
    of the uncontended time; the judgement is still the rounds')."""

    rounds: int = 5
    repetitions: int = 10
    min_time: str = "0.05s"
    extra_flags: Sequence[str] = ()
    max_rounds: int | None = None
    budget_s: float | None = None
    margin: float = MARGIN
    every_repetition: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_flags", tuple(self.extra_flags))

    @staticmethod
    def from_args(args, extra_flags: Sequence[str] = ()) -> TimingOptions:
        """The options `statistics.add_timing_arguments` parsed into `args`."""
        return TimingOptions(rounds=args.rounds, repetitions=args.repetitions,
                             max_rounds=args.max_rounds, budget_s=args.budget,
                             margin=args.margin, extra_flags=extra_flags)


def compare_latency(stock_vmfb: bytes, plugin_vmfb: bytes, inputs: Sequence[np.ndarray],
                    options: TimingOptions | None = None, *, function: str = "main",
                    device: str = "local-task",
                    plugin_inputs: Sequence[np.ndarray] | None = None,
                    unsettled: Callable[[list[float], list[float]], bool] | None = None,
                    **overrides) -> LatencyPair:
    """Alternates stock and plugin runs on `device` as `options` (a `TimingOptions`) with
    `overrides` (its field names as keywords: `compare_latency(a, b, x, rounds=21)`);
    returns medians, the ratio and `judgement`, the verdict of `statistics.judge`.
    `unsettled(stock_rounds, plugin_rounds)` replaces judge's rule for taking more rounds.
    `plugin_inputs`: the second module's own inputs, where the two compare different
    signatures (default: `inputs` for both)."""
    opts = dataclasses.replace(options or TimingOptions(), **overrides)
    rounds, repetitions, min_time = opts.rounds, opts.repetitions, opts.min_time
    extra_flags, margin = opts.extra_flags, opts.margin
    with tempfile.TemporaryDirectory(prefix="iree-fusions-bench-") as tmp:
        paths = {}
        for name, blob in (("stock", stock_vmfb), ("plugin", plugin_vmfb)):
            paths[name] = os.path.join(tmp, f"{name}.vmfb")
            with open(paths[name], "wb") as f:
                f.write(blob)
        input_flags = {"stock": save_inputs(inputs, tmp)}
        if plugin_inputs is None:
            input_flags["plugin"] = input_flags["stock"]
        else:
            os.makedirs(os.path.join(tmp, "plugin-inputs"))
            input_flags["plugin"] = save_inputs(plugin_inputs, os.path.join(tmp, "plugin-inputs"))
        every: dict[str, list[float]] = {"stock": [], "plugin": []}

        def time_side(name: str) -> float:
            reps = repetition_times_ms(paths[name], input_flags[name], function=function,
                                       device=device, repetitions=repetitions,
                                       min_time=min_time, extra_flags=extra_flags)
            every[name].extend(reps)
            return statistics.median(reps)

        stock, plugin = alternate(
            time_side, rounds=rounds, max_rounds=opts.max_rounds, budget_s=opts.budget_s,
            unsettled=unsettled or (lambda s, p: not judge(s, p, margin)["settled"]))
    judgement = judge(stock, plugin, margin)
    if opts.every_repetition:
        stock, plugin = every["stock"], every["plugin"]
    return LatencyPair(statistics.median(stock), statistics.median(plugin), stock, plugin,
                       judgement)
