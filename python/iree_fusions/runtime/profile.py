"""Where the time goes: IREE's HAL profiler, per dispatch kind, stock vs plugin.

`profile_module` runs `iree-benchmark-module` with HAL device profiling for a fixed number of
calls of one function (`--benchmark_min_time=<calls>x`, `--device_profiling_mode=MODE`,
`--device_profiling_output=F.ireeprof`), then reads `iree-profile dispatch --format=jsonl F`:
one row per dispatch function (`read_dispatch_rows`), with its time per call of the
benchmarked function. `by_kind` sums one side's rows per dispatch kind, `side_by_side` puts
stock and plugin next to each other (losers first), `format_profile` prints them.

The profiling modes (`--device_profiling_mode`): `host-execution` (dispatch spans timed on
the host: the one the local HALs, local-task and local-sync, support; `dispatch-events` is
refused there) and `dispatch-events` (device timestamps, GPU HALs). The jsonl has
`host_dispatch_group` rows for the first and `dispatch_group` rows for the second; a profile
with both is read from its device rows.

The kind of a dispatch is read from its name, as IREE's AnnotateDispatches writes it:
`<function>_dispatch_<n>_<summary>`, the summary being the op kind, then the loop ranges
(`128x384x384`, `D` for a dynamic one), then the element types (`f32`, `f16xf16xf32`),
sometimes more words after them (`_pack`, `_dispatch_tensor_store`). `dispatch_kind` is the
summary's `_`-separated words up to the first that is a shape (starts with a digit, or is
`D` / `Dx...`) or an element type (`f32`, `bf16`, `i64`, `f16xf32`, `index`): `attention`,
`matmul`, `matmul_like`, `batch_matmul`, `matvec_like`, `elementwise_broadcast`,
`elementwise_transpose`, `reduction`, `softmax`, `scatter`, `gather`,
`horizontal_multi_contract`, `pack`; a summary with no such word is its own kind
(`slow_memcpy`, a rank-0 `elementwise`), and a dispatch with no summary is `unnamed`.
Dispatches of a module initializer (`_initializer_<n>_dispatch_...`) run once at load, not
per call. iree-benchmark-module starts profiling after the module is loaded, so they are not
in its profiles (checked with IREE 3.13: a `util.initializer`'s dispatch, compiled with
`--iree-opt-const-eval=false`, is not in them); should one be, `read_dispatch_rows` marks
it `load_time` and `by_kind` leaves it out.

On local-task a dispatch's host-execution time is its span on the host, from its first
workgroup's start to its last's end, whatever the workers did in between (iree-profile's
`total_tile_duration_sum_ns`, the CPU time of its workgroups, is not read).

The standard library only (no numpy, no iree.compiler): it runs wherever the runtime package
does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from .benchmark import benchmark_tool, runtime_tool
from .machine import topology_flags

HOST_EXECUTION = "host-execution"
DISPATCH_EVENTS = "dispatch-events"
MODES = (HOST_EXECUTION, DISPATCH_EVENTS)
LOCAL_DEVICES = ("local-task", "local-sync")
UNNAMED = "unnamed"

_NAME = re.compile(r"^(?P<entry>.*)_dispatch_(?P<n>\d+)(?:_(?P<summary>.*))?$")
_SHAPE = re.compile(r"^(?:\d|D(?:x|$))")
_TYPE1 = r"(?:b?f\d+\w*|tf32|[su]?i\d+|index|complex\w*)"
_TYPES = re.compile(rf"^{_TYPE1}(?:x{_TYPE1})*$")


def default_mode(device: str) -> str:
    """The profiling mode for `device`: host-execution on the local HALs, dispatch-events
    (device timestamps) elsewhere (cuda, hip, vulkan)."""
    return HOST_EXECUTION if device.split(":")[0] in LOCAL_DEVICES else DISPATCH_EVENTS


def split_dispatch_name(name: str) -> tuple[str, int | None, str]:
    """(entry function, dispatch ordinal, summary) of a dispatch function name:
    `main$async_dispatch_12_attention_4x8xDx32x32xD_f16` -> (`main$async`, 12,
    `attention_4x8xDx32x32xD_f16`). The last `_dispatch_<n>` followed by `_` or the end
    splits it (the summary never has one: `softmax_8xf32_dispatch_tensor_store` has no
    number). A name without one: (name, None, name)."""
    m = _NAME.match(name)
    if not m:
        return name, None, name
    return m.group("entry"), int(m.group("n")), m.group("summary") or ""


def _ends_kind(word: str) -> bool:
    return not word or bool(_SHAPE.match(word)) or bool(_TYPES.match(word))


def summary_kind(summary: str) -> str:
    """The kind of a dispatch summary: its words up to the first shape or element type."""
    words = []
    for word in summary.split("_"):
        if _ends_kind(word):
            break
        words.append(word)
    return "_".join(words) or UNNAMED


def dispatch_kind(name: str) -> str:
    """The kind of a dispatch function name (the module docstring's rule):
    `prefill_bs4$async_dispatch_12_attention_4x8xDx32x32xD_f16` -> `attention`,
    `main_dispatch_3_matmul_Dx256x256_f16xf16xf32` -> `matmul`, `..._slow_memcpy` ->
    `slow_memcpy`, `main_dispatch_7` -> `unnamed`."""
    return summary_kind(split_dispatch_name(name)[2])


def is_load_time(entry: str) -> bool:
    """A dispatch of a module initializer (run at load, not by the function called)."""
    return entry.startswith(("_initializer", "__init"))


@dataclass
class DispatchRow:
    """One dispatch function of one profile, per call of the benchmarked function."""

    function: str  # the dispatch function (iree-profile's `key`)
    dispatch: int | None  # its ordinal (`_dispatch_<n>`)
    kind: str  # dispatch_kind(function)
    count: float  # dispatches of it per call (count / calls)
    total_us: float  # their time per call, microseconds
    us_per_call: float  # one dispatch's mean time (total / count), microseconds
    entry: str = ""  # the program function it belongs to (`main$async`, `_initializer_0`)
    load_time: bool = False  # an initializer's: counted once for the whole profile


def read_dispatch_rows(jsonl: str, calls: int) -> list[DispatchRow]:
    """The rows of `iree-profile dispatch --format=jsonl` output, per call of the function
    benchmarked `calls` times: counts and times divided by `calls` (a load-time dispatch's
    too: its row says `load_time`; dispatches that ran untimed count at the timed ones'
    mean). Device rows (`dispatch_group`) where the profile has any,
    else host rows (`host_dispatch_group`); rows of one name (several devices) summed.
    Sorted by time, largest first."""
    if calls < 1:
        raise ValueError(f"calls must be at least 1, not {calls}")
    records = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    device = [r for r in records if r.get("type") == "dispatch_group"]
    groups = device or [r for r in records if r.get("type") == "host_dispatch_group"]
    sums: dict[str, list[float]] = {}  # key -> [count, valid (timed) count, total_ns]
    for r in groups:
        s = sums.setdefault(r["key"], [0, 0, 0.0])
        s[0] += int(r["count"])
        s[1] += int(r.get("valid", r["count"]))
        s[2] += float(r["total_ns"])
    rows = []
    for name, (count, valid, total_ns) in sums.items():
        entry, ordinal, summary = split_dispatch_name(name)
        mean_us = total_ns / 1e3 / valid if valid else 0.0
        # Where fewer dispatches were timed than ran (`valid` < `count`), the untimed ones
        # are counted at the timed ones' mean, not at 0.
        rows.append(DispatchRow(name, ordinal, summary_kind(summary), count / calls,
                                mean_us * count / calls, mean_us, entry, is_load_time(entry)))
    return sorted(rows, key=lambda r: (-r.total_us, r.function))


@dataclass
class Profile:
    """One module's profile: its dispatch rows per call, the calls it was taken over, the
    mean wall time of a call (profiler on) and how it was taken."""

    rows: list[DispatchRow]
    calls: int
    wall_us: float | None = None
    mode: str = HOST_EXECUTION
    device: str = "local-task"
    command: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        """What `format_profile` says of the profile besides its rows: calls, wall_us,
        mode, device, load_time (the initializers' dispatch functions, left out)."""
        return {"calls": self.calls, "wall_us": self.wall_us, "mode": self.mode,
                "device": self.device,
                "load_time": sorted(r.function for r in self.rows if r.load_time)}


def profile_tool() -> str:
    """iree-profile (`runtime_tool`: the iree-base-runtime package ships it beside
    iree-benchmark-module)."""
    return runtime_tool("iree-profile")


_US_PER_UNIT = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
# The HAL profiler holds 8192 host-execution events between flushes and drops the rest
# (IREE 3.13): 5 calls of a 32-layer Llama's prefill with its attention in query blocks make
# ~16000. Flushed this often none are dropped there; `dropped_records` checks every profile.
FLUSH_INTERVAL_MS = 5


def dropped_records(summary_jsonl: str) -> int:
    """The records the profiler dropped, from `iree-profile summary --format=jsonl`."""
    for line in summary_jsonl.splitlines():
        line = line.strip()
        if line.startswith("{"):
            row = json.loads(line)
            if row.get("type") == "summary":
                return int(row.get("dropped_records", 0))
    raise RuntimeError("iree-profile summary has no summary row")


def calls_and_mean_us(benchmark_json: dict) -> tuple[int, float]:
    """The calls iree-benchmark-module's JSON output counts (its iteration runs) and their
    mean wall time, microseconds (0.0 without a call)."""
    runs = [b for b in benchmark_json["benchmarks"] if b.get("run_type") == "iteration"]
    done = sum(int(b["iterations"]) for b in runs)
    total = sum(b["real_time"] * _US_PER_UNIT[b.get("time_unit", "ns")] * b["iterations"]
                for b in runs)
    return done, total / done if done else 0.0


def profile_module(vmfb_path: str, input_paths: Sequence[str], *, function: str = "main",
                   device: str = "local-task", calls: int = 20, mode: str | None = None,
                   extra_flags: Sequence[str] = (), keep: str | None = None) -> Profile:
    """Profiles `calls` calls of `function` (inputs from .npy files; `extra_flags` to
    iree-benchmark-module after `topology_flags`, e.g. `--parameters=model=X.irpa`) with
    the HAL profiler in `mode` (default: `default_mode(device)`). The .ireeprof goes to
    `keep` when given, else to a temporary folder."""
    mode = mode or default_mode(device)
    if mode not in MODES:
        raise ValueError(f"unknown profiling mode {mode!r} (one of {', '.join(MODES)})")
    with tempfile.TemporaryDirectory(prefix="iree-fusions-profile-") as tmp:
        out = keep or os.path.join(tmp, "profile.ireeprof")
        cmd = [benchmark_tool(), f"--module={vmfb_path}", f"--device={device}",
               f"--function={function}", *[f"--input=@{p}" for p in input_paths],
               f"--benchmark_min_time={calls}x", "--benchmark_repetitions=1",
               "--benchmark_format=json", f"--device_profiling_mode={mode}",
               f"--device_profiling_output={out}",
               f"--device_profiling_flush_interval_ms={FLUSH_INTERVAL_MS}",
               *topology_flags(device, extra_flags), *extra_flags]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:  # the tool's reason first: a row's error shows line one
            why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"profiling failed ({mode} on {device}): {why}\n"
                               f"{' '.join(cmd)}\n{proc.stderr.strip()}")
        done, wall = calls_and_mean_us(json.loads(proc.stdout))
        if done < 1:
            raise RuntimeError(f"no calls in the output of {' '.join(cmd)}")
        summary = subprocess.run([profile_tool(), "summary", "--format=jsonl", out],
                                 capture_output=True, text=True, check=False)
        if summary.returncode != 0:
            raise RuntimeError(f"iree-profile failed on {out}: {summary.stderr.strip()}")
        dropped = dropped_records(summary.stdout)
        if dropped:  # the rows would undercount the dispatches' time
            raise RuntimeError(
                f"the HAL profiler dropped {dropped} records of {calls} calls of {function} "
                f"(flushed every {FLUSH_INTERVAL_MS} ms): the profile would be incomplete; "
                f"profile fewer calls\n{' '.join(cmd)}")
        read = subprocess.run([profile_tool(), "dispatch", "--format=jsonl", out],
                              capture_output=True, text=True, check=False)
        if read.returncode != 0:
            raise RuntimeError(f"iree-profile failed on {out}: {read.stderr.strip()}")
    return Profile(read_dispatch_rows(read.stdout, done), done, wall, mode, device, cmd)


def profile_pair(paths: Mapping[str, str], input_paths: Sequence[str], **kwargs
                 ) -> dict[str, Profile]:
    """{"stock": Profile, "plugin": Profile} of the two .vmfbs (`paths`: side -> path), one
    after the other, with `profile_module`'s keywords."""
    return {side: profile_module(paths[side], input_paths, **kwargs)
            for side in ("stock", "plugin")}


# ------------------------------------------------------------------ per kind, side by side


def by_kind(rows: Iterable[DispatchRow | Mapping]) -> dict[str, dict]:
    """One side's per-call rows summed per kind: {kind: {count, total_us, us_per_call}}
    (load-time rows left out)."""
    out: dict[str, dict] = {}
    for r in rows:
        r = r if isinstance(r, Mapping) else asdict(r)
        if r.get("load_time"):
            continue
        k = out.setdefault(r["kind"], {"count": 0.0, "total_us": 0.0})
        k["count"] += r["count"]
        k["total_us"] += r["total_us"]
    for k in out.values():
        k["us_per_call"] = k["total_us"] / k["count"] if k["count"] else 0.0
    return out


def side_by_side(stock: Iterable[DispatchRow | Mapping], plugin: Iterable[DispatchRow | Mapping],
                 **fields) -> list[dict]:
    """Stock vs plugin per kind, per call of the function: `kind`, `count_stock`,
    `count_plugin` (dispatches), `us_per_call_stock`, `us_per_call_plugin` (one dispatch's
    mean time), `total_us_stock`, `total_us_plugin` (the kind's time), `share_stock`,
    `share_plugin` (of the side's dispatch time), `delta_us` (plugin - stock total) and
    `ratio` (stock / plugin total: > 1 where the plugin spends less; None where a side has
    none of the kind); `fields` (e.g. model=, function=) first in each row. Losers first:
    the largest `delta_us` first, then by kind."""
    sides = {"stock": by_kind(stock), "plugin": by_kind(plugin)}
    totals = {s: sum(k["total_us"] for k in v.values()) for s, v in sides.items()}
    rows = []
    for kind in sorted(set(sides["stock"]) | set(sides["plugin"])):
        row = {**fields, "kind": kind}
        for key in ("count", "us_per_call", "total_us"):
            for side in ("stock", "plugin"):
                row[f"{key}_{side}"] = sides[side].get(kind, {}).get(key, 0.0)
        for side in ("stock", "plugin"):
            row[f"share_{side}"] = (row[f"total_us_{side}"] / totals[side] if totals[side]
                                    else 0.0)
        row["delta_us"] = row["total_us_plugin"] - row["total_us_stock"]
        row["ratio"] = (row["total_us_stock"] / row["total_us_plugin"]
                        if row["total_us_stock"] and row["total_us_plugin"] else None)
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["delta_us"], r["kind"]))


def _count(v: float) -> str:
    return f"{v:g}" if v == int(v) else f"{v:.2f}"


def _us(v: float, width: int) -> str:
    return "-".rjust(width) if not v else f"{v:{width}.1f}"


def format_profile(rows: Sequence[Mapping], heading: str = "",
                   sides: Mapping[str, Mapping] | None = None) -> str:
    """The side-by-side table (`side_by_side`'s rows, in their order), a total line, and,
    with `sides` ({"stock": ..., "plugin": ...}: `Profile.summary()`), the calls profiled,
    the wall time of a call and the load-time dispatches left out."""
    head = (f"{'kind':28s} {'dispatches':>13s} {'us/dispatch':>19s} {'us/call (total)':>21s} "
            f"{'share':>12s} {'plugin-stock':>12s} {'stock/plugin':>12s}")
    sub = (f"{'':28s} {'stock':>6s} {'plugin':>6s} {'stock':>9s} {'plugin':>9s} "
           f"{'stock':>10s} {'plugin':>10s} {'stock':>5s} {'plugin':>6s} {'us':>12s}")
    lines = ([heading] if heading else []) + [head, sub, "-" * len(head)]
    for r in rows:
        ratio = "-" if r.get("ratio") is None else f"{r['ratio']:.2f}"
        lines.append(
            f"{r['kind'][:28]:28s} {_count(r['count_stock']):>6s} {_count(r['count_plugin']):>6s} "
            f"{_us(r['us_per_call_stock'], 9)} {_us(r['us_per_call_plugin'], 9)} "
            f"{_us(r['total_us_stock'], 10)} {_us(r['total_us_plugin'], 10)} "
            f"{r['share_stock']:5.0%} {r['share_plugin']:6.0%} {r['delta_us']:+12.1f} "
            f"{ratio:>12s}")
    stock = sum(r["total_us_stock"] for r in rows)
    plugin = sum(r["total_us_plugin"] for r in rows)
    lines.append("-" * len(head))
    lines.append(
        f"{'all dispatches':28s} {_count(sum(r['count_stock'] for r in rows)):>6s} "
        f"{_count(sum(r['count_plugin'] for r in rows)):>6s} {'':19s} {_us(stock, 10)} "
        f"{_us(plugin, 10)} {'':12s} {plugin - stock:+12.1f} "
        f"{(f'{stock / plugin:.2f}' if stock and plugin else '-'):>12s}")
    if sides:
        s, p = sides["stock"], sides["plugin"]
        wall = ", ".join(f"{name} {side['wall_us']:.1f}" for name, side in sides.items()
                         if side.get("wall_us") is not None)
        lines.append(f"{s['calls']} / {p['calls']} calls profiled ({s['mode']} on "
                     f"{s['device']}); wall time of a call with the profiler on, us: {wall}")
        for name, side in sides.items():
            if side.get("load_time"):
                lines.append(f"{name}: load-time dispatches left out: "
                             f"{', '.join(side['load_time'])}")
    return "\n".join(lines)
