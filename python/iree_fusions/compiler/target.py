"""The compile target a module is built for: device kind and chip, as the passes see it.

IREE resolves the target flags (`--iree-hal-target-device=cuda --iree-cuda-target=sm_80`,
`--iree-llvmcpu-target-cpu=host`, ...) into `#hal.device.target` globals early in the
pipeline; at the plugin's hook points every module carries them, with `host` already
resolved to the CPU's name. Reading them from the IR (rather than re-parsing flags) gives
exactly what IREE compiles for, including multi-device programs.

    util.global private @__device_0 = #hal.device.target<"cuda",
        [#hal.executable.target<"cuda", "cuda-nvptx-fb", {... arch = "sm_80" ...}>]>
      -> Target(device="cuda", backend="cuda", chip="sm_80")
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from iree.compiler import ir
from iree_fusions.compiler.ir_helpers.names import UTIL_GLOBAL

_DEVICE = re.compile(r'#hal\.device\.target<"([^"]+)"')
_EXECUTABLE = re.compile(r'#hal\.executable\.target<"([^"]+)"')
_CPU = re.compile(r'\bcpu = "([^"]*)"')
_ARCH = re.compile(r'\barch = "([^"]*)"')


@dataclass(frozen=True)
class Target:
    """device: the HAL device kind (local, cuda, hip, vulkan); backend: the executable
    backend (llvm-cpu, cuda, rocm, vulkan-spirv); chip: CPU name or GPU arch."""

    device: str
    backend: str
    chip: str

    def __str__(self) -> str:
        return f"{self.backend}:{self.chip}"

    @staticmethod
    def parse(text: str) -> Target:
        """`backend:chip` (as printed), e.g. `llvm-cpu:znver4`, `cuda:sm_80`."""
        backend, sep, chip = text.partition(":")
        if not sep or not backend or not chip:
            raise ValueError(f"a target is BACKEND:CHIP (e.g. llvm-cpu:znver4, cuda:sm_80), "
                             f"not '{text}'")
        device = {"llvm-cpu": "local", "rocm": "hip", "vulkan-spirv": "vulkan"}.get(backend,
                                                                                   backend)
        return Target(device, backend, chip)

    def to_json(self) -> dict[str, str]:
        return {"device": self.device, "backend": self.backend, "chip": self.chip}


def is_llvm_cpu(target: Target | None) -> bool:
    """Whether a pass compiles for llvm-cpu (False without a target: iree-fusions-opt, lit),
    where the passes' CPU cost rules apply."""
    return target is not None and target.backend == "llvm-cpu"


# x86 CPU names (LLVM's, as IREE resolves `host`) by the widest vector ISA their code uses.
_AVX512 = frozenset("""x86-64-v4 skylake-avx512 cascadelake cooperlake cannonlake icelake-client
    icelake-server tigerlake rocketlake sapphirerapids emeraldrapids graniterapids
    graniterapids-d diamondrapids znver4 znver5 knl knm""".split())
_AVX2 = frozenset("""x86-64-v3 haswell broadwell skylake alderlake raptorlake meteorlake arrowlake
    arrowlake-s lunarlake pantherlake gracemont sierraforest grandridge clearwaterforest znver1
    znver2 znver3 bdver4""".split())
_BASELINE = frozenset("""x86-64 x86-64-v2 core2 nehalem westmere sandybridge ivybridge silvermont
    goldmont goldmont-plus tremont btver2 bdver1 bdver2 bdver3""".split())


def cpu_vector_class(target: Target | None) -> str | None:
    """"avx512", "avx2" or "baseline" (SSE to AVX) for an x86 llvm-cpu target's CPU name;
    None for another target, an unknown name or no target (the classes the CPU cost rules
    were measured on)."""
    if not is_llvm_cpu(target):
        return None
    for name, chips in (("avx512", _AVX512), ("avx2", _AVX2), ("baseline", _BASELINE)):
        if target.chip in chips:
            return name
    return None


def is_gpu(target: Target | None) -> bool:
    """Whether a pass compiles for a GPU backend (cuda, rocm, vulkan-spirv: any target but
    llvm-cpu; False without a target), where the passes' GPU rules apply."""
    return target is not None and not is_llvm_cpu(target)


def parse_device_target(text: str) -> list[Target]:
    """The targets of one printed `#hal.device.target<...>` attribute (one per executable
    target it lists)."""
    device = _DEVICE.search(text)
    if device is None:
        return []
    out = []
    # Split at each executable target; the chip is in the attributes that follow it.
    pieces = _EXECUTABLE.split(text)
    for backend, attrs in zip(pieces[1::2], pieces[2::2]):
        found = (_CPU if backend == "llvm-cpu" else _ARCH).search(attrs)
        chip = found.group(1) if found and found.group(1) else "generic"
        out.append(Target(device.group(1), backend, chip))
    return out


def module_targets(module: ir.Operation) -> list[Target]:
    """Every distinct target the module's devices compile for, in device order."""
    out: list[Target] = []
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != UTIL_GLOBAL or "initial_value" not in op.attributes:
            continue
        for t in parse_device_target(str(op.attributes["initial_value"])):
            if t not in out:
                out.append(t)
    return out
