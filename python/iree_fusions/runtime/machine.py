"""The machine a bundle runs on: its CPU (/proc/cpuinfo: model, vector features), the cores
this process may use and the flags local-task timings add on a small host, what IREE
compiled the modules for, and the vector features they use that this CPU lacks."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence


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
    a whole, so per-round ratios scatter and verdicts flip between runs; one group does not
    (bench/results/verdict-check.md, run 3)."""
    if device != "local-task" or usable_cores() > SMALL_HOST_CORES or any(
            f.startswith("--task_topology") for f in extra_flags):
        return []
    return ["--task_topology_group_count=1"]


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
