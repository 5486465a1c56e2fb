"""Python API for scripts: compile with or without the plugin, load on a device, run, compare.

    import iree_fusions as f
    stock = f.compile_file("model.mlir", fusions="none")
    fused = f.compile_file("model.mlir", fusions="all")
    out_a = f.run(stock.output, inputs)
    out_b = f.run(fused.output, inputs)
    f.compare_outputs(out_a, out_b)      # -> Agreement(max_abs=..., max_rel=...)

Compilation runs `iree-fusions-compile` (or plain `iree-compile` for `stock=True`) in a child
process, like `iree.compiler.tools` does: IREE's global flags are per process, a crash cannot
take the caller down, and a failure raises `CompilerToolError` carrying the exact command.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import tempfile
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..runtime import modules as runtime_modules
from ..runtime.modules import host_arrays
from .reports import pass_summaries

if typing.TYPE_CHECKING:
    from ..compiler.protocol.report import PassReport
    from ..compiler.counting import FlowCounts

_CPU_FLAGS = ["--iree-hal-target-device=local",
              "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"]
DEVICE_FLAGS = {
    "local-task": list(_CPU_FLAGS),
    "local-sync": list(_CPU_FLAGS),
    "cuda": ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"],
    "hip": ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"],
    "vulkan": ["--iree-hal-target-device=vulkan", "--iree-vulkan-target=rdna3"],
}


# The flag that names the chip / CPU for each device's compiler target.
TARGET_FLAG = {
    "local-task": "--iree-llvmcpu-target-cpu", "local-sync": "--iree-llvmcpu-target-cpu",
    "cuda": "--iree-cuda-target", "hip": "--iree-rocm-target", "vulkan": "--iree-vulkan-target",
}


# Vendor names accepted as `target` (`--device vulkan --target nvidia`): a Vulkan module
# runs only on GPUs of the target's vendor. Verified with IREE 3.13: `ampere` code runs on an
# NVIDIA H100, `rdna3` (the default) only on AMD GPUs.
TARGET_ALIASES = {
    "vulkan": {"nvidia": "ampere", "amd": "rdna3"},
}


# The CPU that llvm-cpu code is compiled for when no `target` names one: $IREE_FUSIONS_CPU
# if set (e.g. x86-64-v3; the tests compile for several CPUs with it), else the host's.
CPU_ENV = "IREE_FUSIONS_CPU"


def target_flags(device: str, target: str | None = None) -> list[str]:
    """iree-compile flags for a runtime device name (local-task, cuda, hip, vulkan).

    `target` overrides the chip/CPU (e.g. `gfx90a`, `sm_86`, `ampere`, `valhall`, `znver4`);
    the defaults are the ones verified with IREE 3.13: host CPU (or $IREE_FUSIONS_CPU), sm_80
    (runs on A100 and H100), gfx942, rdna3 (AMD only: use `ampere`, or the alias `nvidia`, on
    NVIDIA GPUs).
    """
    try:
        flags = list(DEVICE_FLAGS[device])
    except KeyError:
        raise ValueError(f"unknown device '{device}' (known: {', '.join(DEVICE_FLAGS)})") from None
    if target is None and TARGET_FLAG[device] == "--iree-llvmcpu-target-cpu":
        target = os.environ.get(CPU_ENV) or None
    if target:
        target = TARGET_ALIASES.get(device, {}).get(target.lower(), target)
        prefix = TARGET_FLAG[device] + "="
        flags = [f for f in flags if not f.startswith(prefix)] + [prefix + target]
    return flags


class CompilerToolError(RuntimeError):
    def __init__(self, command: list[str], returncode: int, stderr: str):
        self.command, self.returncode, self.stderr = command, returncode, stderr
        super().__init__(
            f"compile failed (exit {returncode}):\n{stderr.strip()}\n"
            f"reproduce with: {shlex.join(command)}"
        )


@dataclass
class CompileOutput:
    output: bytes  # .vmfb, or IR text/bytecode for compile_to
    command: list[str]
    reports: list[dict] = field(default_factory=list)
    stderr: str = ""
    # With timing=True: wall seconds per step (IREE phase ranges, each plugin pass and its
    # find / apply / verify / count), as `--fusions-timing-json` writes them.
    timing: dict | None = None
    # With flow_counts=True: the counts of this compile's flow-phase IR.
    flow_counts: FlowCounts | None = None

    @property
    def passes(self) -> list[PassReport]:
        """`reports`, typed: per pass its changes (`.key`, `.location`, `.what`) and skipped
        candidates (`.key`, `.location`, `.reason`); see `iree_fusions.harness.reports`."""
        return pass_summaries(self.reports)


def _tool_command(stock: bool) -> list[str]:
    """Stock: the iree-compile binary by path (never through IREE_TOOL_PATH, which may
    name the shim); else iree-fusions-compile with this interpreter."""
    if stock:
        from .processes import real_iree_compile

        return [real_iree_compile()]
    return [sys.executable, "-m", "iree_fusions.tools.compile_cli"]


@dataclass(frozen=True)
class CompileOptions:
    """How to compile, as one value (`compile_file(path, options)`, `compile_torch(model,
    args, options)`); keywords given beside it override its fields.

    device / target: the runtime device (`local-task`, `cuda`, `hip`, `vulkan`, ...) and
    optionally its chip (`sm_80`, `gfx942`, ...); flags: more compiler flags, passed after
    the device's and the plugin's (so `--fusions=none` there wins); fusions: `all`, `none` or
    `pass-a,pass-b{opt=v}`; stock: plain iree-compile (the reference); compile_to: stop at a
    phase and return IR; output_file: write the output there (`.output` is then empty);
    timeout: seconds, then the compile is stopped with its processes (`CompileTimeout`);
    decisions: a file of measured decisions (iree-fusions-tune); keep_no_gain: keep linalg
    changes that reduce neither dispatches nor bytes (`--fusions-keep-no-gain`); timing:
    fill `.timing` (`--fusions-timing-json`); flow_counts: fill `.flow_counts`, what
    `count_flow_ir` gives for the `--compile-to=flow` IR, from this compile
    (`--fusions-counts-json`: no second compile; not for stock)."""

    device: str = "local-task"
    target: str | None = None
    flags: Sequence[str] = ()
    fusions: str = "all"
    stock: bool = False
    compile_to: str | None = None
    output_file: str | None = None
    timeout: float | None = None
    decisions: str | None = None
    keep_no_gain: bool = False
    timing: bool = False
    flow_counts: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "flags", tuple(self.flags))
        if self.stock and self.flow_counts:
            raise ValueError("flow_counts needs the plugin's driver: compile stock with "
                             "compile_to='flow' and count_flow_ir")

    def with_(self, **changes) -> CompileOptions:
        """A copy with these fields changed (an unknown name is a TypeError)."""
        return dataclasses.replace(self, **changes)


def compile_file(path: str, options: CompileOptions | None = None, **overrides
                 ) -> CompileOutput:
    """Compiles a file (.mlir / .mlirbc / torch-dialect with --iree-input-type=torch) as
    `options` (a `CompileOptions`; default: all passes for local-task on this CPU) with
    `overrides` (its field names as keywords: `compile_file(p, fusions="none")`).

    Not stock: iree-fusions-compile with `--fusions=<fusions>`, its report read back
    (`.reports`, typed as `.passes`). The compile never outlives the calling process, and
    its temporary files go with it.
    """
    opts = (options or CompileOptions()).with_(**overrides)
    with tempfile.TemporaryDirectory(prefix="iree-fusions-") as tmp:
        out_path = opts.output_file or os.path.join(tmp, "out")
        report_path = os.path.join(tmp, "report.json")
        cmd = _tool_command(opts.stock) + [path, *target_flags(opts.device, opts.target)]
        if not opts.stock:
            # A failing pass's reproducer is not saved: nobody may read this compile's
            # warnings (the CLI saves it where it prints the command).
            cmd += [f"--fusions={opts.fusions}", f"--fusions-report-json={report_path}",
                    "--fusions-reproducer-dir=none"]
            if opts.decisions:
                cmd.append(f"--fusions-decisions={opts.decisions}")
            if opts.keep_no_gain:
                cmd.append("--fusions-keep-no-gain")
            if opts.timing:
                cmd.append(f"--fusions-timing-json={os.path.join(tmp, 'timing.json')}")
            if opts.flow_counts:
                cmd.append(f"--fusions-counts-json={os.path.join(tmp, 'counts.json')}")
        cmd += [*opts.flags, "-o", out_path]
        if opts.compile_to:
            cmd.append(f"--compile-to={opts.compile_to}")
        returncode, stderr = _run_tool(cmd, opts.timeout)
        if returncode != 0 or not os.path.exists(out_path):
            raise CompilerToolError(cmd, returncode, stderr or "the compiler wrote no output")
        with open(out_path, "rb") as f:
            data = f.read()
        reports = []
        if os.path.exists(report_path):
            with open(report_path) as f:
                reports = json.load(f)
        timings = None
        if opts.timing and not opts.stock:
            with open(os.path.join(tmp, "timing.json")) as f:
                timings = json.load(f)[0]
        counts = None
        if opts.flow_counts:
            from ..compiler.counting import FlowCounts  # the compiler's side: imported here

            with open(os.path.join(tmp, "counts.json")) as f:
                found = json.load(f)
            counts = FlowCounts(**found[0]) if found else None
        if opts.output_file is None:
            cmd = cmd[: cmd.index("-o")] + cmd[cmd.index("-o") + 2 :]
        return CompileOutput(data, cmd, reports, stderr, timings, counts)


class CompileTimeout(CompilerToolError):
    """The compile ran past `timeout` and was stopped."""

    def __init__(self, command: list[str], returncode: int, timeout: float, stderr: str):
        super().__init__(command, returncode, stderr)
        self.timeout = timeout
        self.args = (f"compile timed out after {timeout:g} s and was stopped:\n"
                     f"{stderr.strip()}\nreproduce with: {shlex.join(command)}",)


def _run_tool(cmd: list[str], timeout: float | None) -> tuple[int, str]:
    """Runs a compiler process that dies with this one (PR_SET_PDEATHSIG, asked for through
    $IREE_FUSIONS_PARENT_PID): (exit code, stderr). Past `timeout` it is stopped with
    SIGTERM (it removes its temporary files and kills its compile child), then SIGKILL."""
    from .processes import PARENT_ENV

    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=env) as proc:
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                _, stderr = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, stderr = proc.communicate()
            raise CompileTimeout(cmd, proc.returncode, timeout, stderr or "") from None
        except BaseException:  # interrupted: the compile goes too
            proc.kill()
            raise
    return proc.returncode, stderr


def source_suffix(data: bytes) -> str:
    """The file suffix iree-compile reads `data` by: .mlirbc for MLIR bytecode, else .mlir."""
    return ".mlirbc" if data[:4] == b"ML\xefR" else ".mlir"


def compile_str(text: str | bytes, options: CompileOptions | None = None, **kwargs
                ) -> CompileOutput:
    """compile_file for IR held in memory."""
    data = text.encode() if isinstance(text, str) else text
    with tempfile.NamedTemporaryFile(suffix=source_suffix(data), delete=False) as f:
        f.write(data)
        path = f.name
    try:
        return compile_file(path, options, **kwargs)
    finally:
        os.unlink(path)


@dataclass
class LoadedModule:
    context: object
    module: object
    device: str

    def __call__(self, function: str, *inputs: np.ndarray) -> list[np.ndarray]:
        return host_arrays(self.module[function](*inputs))


Parameters = Mapping[str, "str | os.PathLike | Mapping[str, np.ndarray]"]


def load(vmfb: bytes, device: str = "local-task",
         parameters: Parameters | None = None) -> LoadedModule:
    """Loads a compiled module on a runtime device. `parameters`: the external weights of a
    parameterized module (iree-turbine's `externalize_module_parameters`, `iree-import-onnx
    --externalize-params`): scope -> .irpa/.gguf/.safetensors file or {name: array}, as
    `iree-run-module --parameters=scope=FILE`. A parameter archive of the plugin
    (`--fusions-parameter-archive`) may be given under any scope: it is checked against the
    module and its sources (`runtime.archives.resolve_parameters`); the sources of a
    consolidated one (the default) need not be given, and are not loaded if they are."""
    context, module = runtime_modules.load_vmfb(vmfb, device, parameters)
    return LoadedModule(context, module, device)


def run(vmfb: bytes, inputs: Sequence[np.ndarray], function: str = "main",
        device: str = "local-task", parameters: Parameters | None = None,
        alone: bool = True) -> list[np.ndarray]:
    """Loads and calls one function; returns its results as numpy arrays. alone=True (the
    default): in a process of its own (`harness.isolated`), so that an output element the
    module never writes cannot hold what an earlier run here computed; False: here."""
    if alone:
        from .isolated import run_alone

        return run_alone(vmfb, inputs, function, device, parameters)
    return load(vmfb, device, parameters)(function, *inputs)


@dataclass
class Agreement:
    max_abs: float
    max_rel: float
    shapes_match: bool

    def within(self, atol: float, rtol: float = 0.0) -> bool:
        return self.shapes_match and (self.max_abs <= atol or self.max_rel <= rtol)


def compare_outputs(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> Agreement:
    """Max abs / rel error over all outputs (shapes and dtypes must match): equal values
    agree (equal infinities, NaN against NaN), NaN on one side is an infinite error, integers
    are compared exactly. The bundle runner's comparison (one implementation)."""
    return Agreement(*runtime_modules.compare_outputs(expected, actual))
