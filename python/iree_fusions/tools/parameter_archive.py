"""`--fusions-parameter-archive`: the module and the archive of its stacked weights from one
compile (`runtime/archives.py` says what the archive holds and how a pair is checked).

    iree-fusions-compile model.mlir ... -o m.vmfb \\
        --fusions-parameters=model=params.irpa --fusions-parameter-archive=m.fusions.irpa
    iree-run-module --module=m.vmfb --parameters=fusions-<digest>=m.fusions.irpa ...

Two layouts (`--fusions-parameter-archive-mode`, IREE's `--iree-parameter-encoder-mode`):
- `consolidate` (default): the archive holds every parameter the module reads, the stacks
  and a copy of the rest, and the module reads nothing else. One file is mapped, as stock
  maps one: resident memory is stock's. Disk: the archive is about the size of the sources
  (the stacked originals are not in it), and it replaces them where the module is deployed.
- `overlay`: the archive holds the stacks only; the module also reads the sources. A small
  archive, and two files mapped: each file opened costs at least one page-fault window of
  resident memory (the kernel maps a window around a fault), which is measurable on a model
  of a few MiB (bench/results/parameter-archive.md).

The passes that would stack external parameters at load (batch-gathers, batch-mlp-towers:
`stack-parameters`, off by default: a second resident copy) stack them here, because IREE's
parameter encoder moves every load-time computation on parameters into an encoder module,
which runs once, now, on the compile's own target device: the module loads the stacks from
the archive and never reads the originals it no longer needs.

No file is lost: an output of the compile (the archive, -o, the JSON files) that is, or
resolves to, an input (the input file, a parameter file, the decisions file) or another
output is refused before anything is written (`check_distinct_files`), and a source
parameter holding fewer bytes than the module reads from it (a weight of another shape) is
an error naming the file before the encoder runs; the runtime's own errors are one line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
import subprocess

from ..runtime.archives import (ArchiveError, archive_scope, encode_archive, layout,
                                source_entries)
from ..compiler.files import OutputError, UserError
from ..compiler.fusions_flags import with_option
from ..compiler.pipeline import Step
from iree_fusions.compiler.ir_helpers.names import UTIL_FUNC

# The flags that choose the target: the encoder runs on the device the module is built for.
_TARGET_FLAG_PREFIXES = ("--iree-hal-", "--iree-llvmcpu-", "--iree-cuda-", "--iree-rocm-",
                         "--iree-hip-", "--iree-vulkan-")
ARCHIVE_MODES = ("consolidate", "overlay")  # --iree-parameter-encoder-mode; the default first
_DEVICE_OF_TARGET = {"local": "local-sync", "llvm-cpu": "local-sync", "vmvx": "local-sync",
                     "cuda": "cuda", "hip": "hip", "rocm": "hip", "vulkan": "vulkan",
                     "vulkan-spirv": "vulkan"}


@dataclasses.dataclass
class ArchivePlan:
    """One compile's archive: where it goes, what it is made from, its scope."""

    output: str
    sources: dict[str, str]
    scope: str
    manifest: dict
    mode: str  # one of ARCHIVE_MODES
    encoder_mlir: str = ""  # where IREE writes the encoder module (a temporary folder)

    def iree_flags(self) -> list[str]:
        return [f"--iree-parameter-encoder-output-file={self.encoder_mlir}",
                f"--iree-parameter-encoder-output-scope={self.scope}",
                f"--iree-parameter-encoder-mode={self.mode}"]


def plan_archive(output: str, sources: dict[str, str], input_path: str | None, data: bytes,
                 iree_flags: list[str], fusions: str, mode: str = ARCHIVE_MODES[0]
                 ) -> ArchivePlan:
    """The archive of a compile: its scope is a digest of the input, the flags, the pass
    selection and the source parameters (names, sizes, checksums), so that the same compile
    gives the same module and archive and any other compile another scope."""
    if not sources:
        raise UserError("--fusions-parameter-archive needs the parameter files the module "
                        "reads: --fusions-parameters=[SCOPE=]FILE (as iree-run-module "
                        "--parameters)")
    for scope, path in sources.items():
        if not os.path.isfile(path):
            raise UserError(f"--fusions-parameters: no file {path} (scope '{scope}')")
    try:
        entries = source_entries(sources)
    except Exception as e:  # not an archive the runtime reads
        raise UserError(f"--fusions-parameters: cannot read {', '.join(sources.values())}: "
                        f"{e}") from None
    digest = hashlib.sha256(data)
    if input_path is not None and not data:
        with open(input_path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    scope = archive_scope(digest.hexdigest(), "\0".join(iree_flags), fusions, mode,
                          repr([(e["scope"], e["key"], e["bytes"], e["checksum"])
                                for e in entries]))
    manifest = {"scope": scope, "files": {s: os.path.basename(p) for s, p in sources.items()},
                "sources": entries, "mode": mode}
    return ArchivePlan(output, dict(sources), scope, manifest, mode)


def check_distinct_files(inputs: dict[str, str | None], sources: dict[str, str],
                         outputs: dict[str, str | None]) -> None:
    """No output of a compile (flag -> path) is, or resolves to (a symbolic link, a hard
    link, another spelling of the path), one of its inputs (what -> path; `sources`: the
    parameter files, scope -> path) or another of its outputs: else a UserError naming both,
    raised before anything is written. Stdout and stdin (`-`), inputs that do not exist
    (an error of their own) and paths that name something other than a regular file (a
    device such as /dev/null, a FIFO: written where they are, never replaced) are not
    compared."""
    inputs = {**inputs, **{f"--fusions-parameters{'=' + s if s else ''}": p
                           for s, p in sources.items()}}
    seen: list[tuple[str, bool, str, tuple[int, int] | None]] = []
    for is_input, named in ((True, inputs), (False, outputs)):
        for what, path in named.items():
            if path in (None, "-"):
                continue
            try:
                st = os.stat(path)
            except OSError:  # an output not made yet (a missing input: an error of its own)
                if is_input:
                    continue
                st = None
            if st is not None and not stat.S_ISREG(st.st_mode):
                continue  # a device, a FIFO: written where it is, never replaced
            here = f"{what}={path}" if what.startswith("--") else f"{what} {path}"
            real, node = os.path.realpath(path), None if st is None else (st.st_dev, st.st_ino)
            for other, other_is_input, other_real, other_node in [] if is_input else seen:
                if real == other_real or (node is not None and node == other_node):
                    raise UserError(
                        f"{here} is the same file as {other}: " + (
                            "writing it would replace that input (give the output another "
                            "path)" if other_is_input else "one output would overwrite the "
                            "other (give each output a path of its own)"))
            seen.append((here, is_input, real, node))


def with_parameter_stacks(steps: dict[str, list[Step]]) -> dict[str, list[Step]]:
    """The passes with a `stack-parameters` option stack external parameters (their stacks
    are made offline, into the archive), unless the selection set the option."""
    return with_option(steps, "stack_parameters", True)[0]


def archive_flags(sources: dict[str, str], archive: str, mode: str | None = None) -> list[str]:
    """The iree-fusions-compile flags that make `archive` from the parameter files `sources`
    (scope -> path), in `mode` (None: the default)."""
    return [*(f"--fusions-parameters={s}={p}" if s else f"--fusions-parameters={p}"
              for s, p in sources.items()), f"--fusions-parameter-archive={archive}",
            *([f"--fusions-parameter-archive-mode={mode}"] if mode else [])]


def encoder_device(iree_flags: list[str]) -> str:
    """The runtime device the encoder runs on: the one the module is compiled for."""
    target = "local"
    for flag in iree_flags:
        name, _, value = flag.partition("=")
        if name in ("--iree-hal-target-device", "--iree-hal-target-backends"):
            target = value.split(",")[0].split("[")[0]
    device = _DEVICE_OF_TARGET.get(target)
    if device is None:
        raise UserError(f"--fusions-parameter-archive: no runtime device for target '{target}' "
                        "to run the parameter encoder on")
    return device


def write_archive(plan: ArchivePlan, staged_output: str, iree_compile: str,
                  iree_flags: list[str]) -> str:
    """Compiles the encoder module IREE wrote and runs it into `staged_output`; returns the
    line the compile prints (what was written, how to run the pair)."""
    encoder_vmfb, replaced = None, []
    if os.path.isfile(plan.encoder_mlir):  # IREE writes none when nothing is encoded
        with open(plan.encoder_mlir) as f:
            text = f.read()
        replaced = encoder_reads(text)
        plan.manifest["made_from"] = [f"{scope}::{key}" for scope, key in replaced]
        held = {(e["scope"], e["key"]) for e in plan.manifest["sources"]}
        missing = [f"{scope}::{key}" for scope, key in replaced if (scope, key) not in held]
        if missing:
            raise UserError(
                f"--fusions-parameter-archive: the module reads {', '.join(missing)}, which no "
                "--fusions-parameters file holds (given: "
                f"{', '.join(f'{s}={p}' for s, p in plan.sources.items())}); the archive "
                "is made from every parameter it reads")
        _check_read_sizes(plan, text)
        encoder_vmfb = plan.encoder_mlir[:-len(".mlir")] + ".vmfb"
        flags = [f for f in iree_flags if f.startswith(_TARGET_FLAG_PREFIXES)]
        proc = subprocess.run([iree_compile, plan.encoder_mlir, *flags, "-o", encoder_vmfb],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise UserError(f"compiling the parameter encoder failed:\n{proc.stderr.strip()}")
    try:
        outputs = encode_archive(encoder_vmfb, plan.sources, staged_output, plan.scope,
                                 plan.manifest, encoder_device(iree_flags))
    except ArchiveError:
        raise
    except (ValueError, RuntimeError, IndexError) as e:  # the runtime's status, one line
        raise UserError(f"running the parameter encoder failed: {' '.join(str(e).split())}"
                        ) from None
    except OSError as e:
        raise OutputError(f"writing the parameter archive '{plan.output}' failed: "
                          f"{e.strerror or e}") from None
    total = sum(n for _, n in outputs)
    consolidated = layout(plan.mode, outputs) == "consolidate"
    run_flags = " ".join([*(f"--parameters={s}={p}" if s else f"--parameters={p}"
                            for s, p in plan.sources.items() if not consolidated),
                          f"--parameters={plan.scope}={plan.output}"])
    if not outputs:
        what = "nothing to make offline (the module reads only the sources)"
    elif consolidated:
        what = (f"{total} bytes made offline (IREE's parameter encoder, consolidated): every "
                f"parameter the module reads, from {len(replaced)} source parameter(s) (the "
                "stacks the report says are built at load, and a copy of the rest); the "
                "sources are not read")
    else:
        what = (f"{len(outputs)} parameter(s), {total} bytes made offline (IREE's parameter "
                "encoder: the stacks the report says are built at load) from "
                f"{', '.join(f'{s}::{k}' for s, k in replaced)}")
    return f"parameter archive {plan.output}: scope {plan.scope}, {what}; run with {run_flags}"


_BUFFER_TEXT = re.compile(r'(%[\w.$-]+) = util\.buffer\.constant[^=]*= "((?:[^"\\]|\\.)*)"')
_PARAMETER_LOAD = re.compile(r"stream\.async\.parameter\.load\b[^\n]*?(%[\w.$-]+)::(%[\w.$-]+)\[")
_SIZED_LOAD = re.compile(r"stream\.async\.parameter\.load\b[^\n]*?(%[\w.$-]+)::(%[\w.$-]+)"
                         r"\[(%[\w.$-]+)\][^\n]*?\{(%[\w.$-]+)\}")
_CONSTANT = re.compile(r"(%[\w.$-]+) = arith\.constant (\d+) : (?:index|i64)\b")


def _check_read_sizes(plan: ArchivePlan, text: str) -> None:
    """Each source parameter the encoder reads holds the bytes it reads (a weight of another
    shape or element type than the input declares: an error naming the file, before the
    encoder runs). Reads whose extent the text does not give are left to the runtime."""
    body = _encode_body(text)
    names = dict(_BUFFER_TEXT.findall(body))
    numbers = {name: int(value) for name, value in _CONSTANT.findall(body)}
    held = {(e["scope"], e["key"]): e["bytes"] for e in plan.manifest["sources"]}
    for scope, key, offset, length in _SIZED_LOAD.findall(body):
        pair = (names.get(scope, scope), names.get(key, key))
        if offset not in numbers or length not in numbers or pair not in held:
            continue
        if numbers[offset] + numbers[length] > held[pair]:
            path = plan.sources.get(pair[0], "?")
            raise UserError(
                f"--fusions-parameters={pair[0] + '=' if pair[0] else ''}{path}: parameter "
                f"'{pair[1]}' holds {held[pair]} bytes, and the module reads "
                f"{numbers[offset] + numbers[length]} (a weight of another shape or element "
                "type than the input declares)")


def encoder_reads(text: str) -> list[tuple[str, str]]:
    """(scope, key) of each source parameter the encoder module's `encode` function reads,
    in order, once each: what the archive is made from."""
    body = _encode_body(text)
    names = dict(_BUFFER_TEXT.findall(body))
    reads = []
    for scope, key in _PARAMETER_LOAD.findall(body):
        pair = (names.get(scope, scope), names.get(key, key))
        if pair not in reads:
            reads.append(pair)
    return reads


def _encode_body(text: str) -> str:
    """The text of the encoder module's `encode` function ("" when it has none)."""
    start = text.find('iree.encode.function = "encode"')
    if start < 0:
        return ""
    end = text.find(UTIL_FUNC, start)
    return text[start:end if end >= 0 else len(text)]
