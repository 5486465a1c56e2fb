"""IREE's own e2e tests (tests/e2e, vendored in test/iree_e2e/) as a suite of the plugin.

    python -m iree_fusions.tools.iree_e2e [FILE|DIR ...] [--cpu NAME] [--cpu-only] [--json F]

Each file is a check-module test: public functions without arguments that call
`check.expect_eq`, `expect_almost_eq`, `expect_true`, ... (IREE runs each with
iree-check-module). Here every such call becomes results of its function (the `_const` forms'
value an `arith.constant`; element types numpy has no type for widened exactly: floats to f32,
odd integer widths to the next byte width), so the check module is Python's: the file is
compiled for llvm-cpu with stock IREE and with the plugin (`--fusions=all --fusions-strict`),
each module is run in a process of its own (memory one leaves unwritten never holds the
other's results), and per function

1. IREE's check semantics hold for the plugin's results (expect_eq byte for byte,
   expect_almost_eq as IREE's check module compares: `|a - e| <= atol + rtol |e|`, default
   atol 1e-4, rtol 0);
2. the plugin's results equal stock's bit for bit where the plugin reported no change or
   its module is stock's (and for the operands of exact checks), else within the check's
   tolerance of stock's;
3. a file stock compiles, the plugin compiles too.

With GPU targets (default: cuda sm_80 and hip gfx942) each file is also compiled, not run:
where stock compiles it, the plugin with `--fusions-strict` must too. A function or file
stock itself fails (its checks, its compile) is excluded and listed with the reason. The exit
status is 1 when the plugin caused a failure."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .iree_e2e_checks import (Check, differs_from_stock, failed_check, rewrite_checks,
                              same_bits, updated_source)

SUITE = pathlib.Path(__file__).resolve().parents[3] / "test" / "iree_e2e"
GPU_TARGETS = ("cuda", "hip")  # sm_80 and gfx942: harness.api.DEVICE_FLAGS
# The flags IREE's BUILD.bazel files give these tests (target-cpu aside: --cpu picks it).
FOLDER_FLAGS = {"stablehlo_ops": ["--iree-input-demote-f64-to-f32"],
                "regression/stablehlo": ["--iree-input-demote-f64-to-f32"]}
FILE_FLAGS = {"regression/vector_distribute_64bit_amdgpu.mlir":
              ["--iree-input-demote-f64-to-f32=false"]}
CPU_FILE_FLAGS = {"regression/associative_reordering.mlir":
                  ["--iree-llvmcpu-reassociate-fp-reductions=false"]}


@dataclass
class FileResult:
    """One file's outcome: per test function pass / fail (caused by the plugin) / excluded
    (stock fails it), and per GPU target `ok`, `fail: ...` or `stock fails: ...`."""

    path: str
    functions: int = 0
    passed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    inexact: list[str] = field(default_factory=list)  # passed within tolerance, not bitwise
    changed: bool = False  # the plugin reported a change in the CPU compile
    same_vmfb: bool = False  # the plugin's CPU module is stock's, byte for byte
    gpu: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def gpu_failures(self) -> list[str]:
        return [f"{t}: {s[6:]}" for t, s in self.gpu.items() if s.startswith("fail:")]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.gpu_failures


# ---------------------------------------------------------------- compiling and running

def run_module(vmfb: str, functions: list[str], out: str, timeout: float) -> dict:
    """{function: results, or the error's text} of a module run in a process of its own."""
    cmd = [sys.executable, "-m", "iree_fusions.tools.iree_e2e", "--run-module", vmfb, out,
           *functions]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {f: f"timed out after {timeout:g} s" for f in functions}
    if proc.returncode != 0 or not os.path.exists(out):
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {f: f"the run failed: {why}" for f in functions}
    with open(out, "rb") as f:
        return pickle.load(f)


def _run_module_child(vmfb: str, out: str, functions: list[str]) -> int:
    """The child of `run_module`: calls each function in order, in one context."""
    from ..harness.api import load

    with open(vmfb, "rb") as f:
        module = load(f.read(), "local-task")
    results: dict[str, object] = {}
    for name in functions:
        try:
            results[name] = module(name)
        except Exception as e:  # noqa: BLE001  (a failing function is a result)
            results[name] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
    with open(out, "wb") as f:
        pickle.dump(results, f)
    return 0


def _first_line(error: Exception, tmp: str = "") -> str:
    """The first error line of a compiler error (or the signal it crashed with), the
    temporary folder cut from its paths."""
    text = str(error)
    if tmp:
        text = text.replace(os.path.join(tmp, "in", ""), "").replace(os.path.join(tmp, ""), "")
    lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()
             and not ln.startswith("compile failed (exit")]
    if getattr(error, "returncode", 0) < 0:
        lines = [f"the compiler crashed (signal {-error.returncode})", *lines[:1]]
        return ": ".join(lines)[:300]
    return (lines or text.splitlines() or ["?"])[0].strip()[:300]


def flags_for(rel: str, cpu: bool) -> list[str]:
    """The compiler flags IREE's BUILD files give the file (target and CPU aside)."""
    folder = rel.rpartition("/")[0]
    return [*FOLDER_FLAGS.get(folder, []), *FILE_FLAGS.get(rel, []),
            *(CPU_FILE_FLAGS.get(rel, []) if cpu else [])]


def relative(path: str | os.PathLike, root: str | os.PathLike) -> str:
    """The file's name in the suite (`regression/x.mlir`), or its own name outside it."""
    path, root = pathlib.Path(path).resolve(), pathlib.Path(root).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name


def check_file(path: str | os.PathLike, root: str | os.PathLike = SUITE, cpu: str | None = None,
               gpus: tuple[str, ...] = GPU_TARGETS, run_cpu: bool = True,
               timeout: float = 600) -> FileResult:
    """One file of the suite: CPU compiled and run with stock IREE and the plugin, and
    compiled for each of `gpus` (names of harness.api.DEVICE_FLAGS), as the module says."""
    from ..harness.api import CompilerToolError, compile_file

    path, rel = pathlib.Path(path), relative(path, root)
    result, started = FileResult(rel), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="iree-e2e-") as tmp:
        os.mkdir(os.path.join(tmp, "in"))
        src = os.path.join(tmp, "in", path.name)
        with open(src, "w") as f:
            f.write(updated_source(path.read_text()))
        source, tests = rewrite_checks(src)
        result.functions = len(tests)
        src = os.path.join(tmp, path.name)
        with open(src, "w") as f:
            f.write(source)
        if run_cpu:
            _check_cpu(result, src, tests, tmp, cpu, flags_for(rel, True), timeout)
        for target in gpus:
            flags = flags_for(rel, False)
            try:
                compile_file(src, device=target, stock=True, flags=flags, timeout=timeout)
            except CompilerToolError as e:
                result.gpu[target] = f"stock fails: {_first_line(e, tmp)}"
                continue
            try:
                compile_file(src, device=target, flags=[*flags, "--fusions-strict"],
                             timeout=timeout)
                result.gpu[target] = "ok"
            except CompilerToolError as e:
                result.gpu[target] = f"fail: {_first_line(e, tmp)}"
    result.seconds = time.monotonic() - started
    return result


def _check_cpu(result: FileResult, src: str, tests: dict[str, list[Check]], tmp: str,
               cpu: str | None, flags: list[str], timeout: float) -> None:
    from ..harness.api import CompilerToolError, compile_file

    names = list(tests)
    try:
        stock = compile_file(src, target=cpu, stock=True, flags=flags, timeout=timeout)
    except CompilerToolError as e:
        result.excluded += [f"{n}: stock does not compile it: {_first_line(e, tmp)}"
                            for n in names]
        return
    try:
        fused = compile_file(src, target=cpu, flags=[*flags, "--fusions-strict"],
                             timeout=timeout)
    except CompilerToolError as e:
        result.failures += [f"{n}: the plugin does not compile it: {_first_line(e, tmp)}"
                            for n in names]
        return
    result.changed = any(p.changes for p in fused.passes)
    result.same_vmfb = fused.output == stock.output
    runs = {}
    for side, out in (("plugin", fused), ("stock", stock)):  # the plugin's first
        vmfb = os.path.join(tmp, f"{side}.vmfb")
        with open(vmfb, "wb") as f:
            f.write(out.output)
        runs[side] = run_module(vmfb, names, os.path.join(tmp, f"{side}.pkl"), timeout)
    for name in names:
        got, ref = runs["plugin"][name], runs["stock"][name]
        if isinstance(ref, str):
            result.excluded.append(f"{name}: stock's run fails: {ref}")
            continue
        if (why := next(filter(None, (failed_check(c, ref) for c in tests[name])), None)):
            result.excluded.append(f"{name}: stock fails its check: {why}")
            continue
        if isinstance(got, str):
            why = f"the plugin's run fails: {got}"
        else:
            why = next(filter(None, (failed_check(c, got) for c in tests[name])), None) or \
                differs_from_stock(tests[name], got, ref,
                                   exact=not result.changed or result.same_vmfb)
        (result.failures if why else result.passed).append(f"{name}: {why}" if why else name)
        if not why and not all(map(same_bits, got, ref)):
            result.inexact.append(name)


# ---------------------------------------------------------------- the suite

def suite_files(paths: list[str] | None = None, root: str | os.PathLike = SUITE
                ) -> list[pathlib.Path]:
    """The .mlir files under `paths` (files or folders; default: the whole suite), sorted."""
    out: list[pathlib.Path] = []
    for p in map(pathlib.Path, paths or [str(root)]):
        out += sorted(p.rglob("*.mlir")) if p.is_dir() else [p]
    return out


def summary(results: list[FileResult], gpus: tuple[str, ...], seconds: float) -> str:
    """The table: per file its functions, passed / failed / excluded, each GPU target's
    outcome and the time; then the totals and every failure and exclusion with its cause."""
    width = max([len(r.path) for r in results] + [4])
    head = f"{'file':<{width}}  fns  pass  ~tol  fail  excl  changed  " + \
        "".join(f"{t:<12}" for t in gpus) + "   time"
    lines = [head, "-" * len(head)]
    for r in results:
        gpu = "".join(f"{r.gpu.get(t, '-').split(':')[0]:<12}" for t in gpus)
        lines.append(f"{r.path:<{width}}  {r.functions:>3}  {len(r.passed):>4}  "
                     f"{len(r.inexact):>4}  "
                     f"{len(r.failures):>4}  {len(r.excluded):>4}  "
                     f"{'yes' if r.changed else 'no':<7}  {gpu} {r.seconds:6.1f}s")
    passed, inexact, failed, excluded = (
        sum(len(getattr(r, attr)) for r in results)
        for attr in ("passed", "inexact", "failures", "excluded"))
    lines += ["-" * len(head),
              (f"{len(results)} files, {sum(r.functions for r in results)} functions: "
               f"{passed} passed ({inexact} of them within the checks' tolerance of stock, "
               f"not bit for bit), {failed} failed, {excluded} excluded (stock fails them); "
               f"the plugin changed {sum(r.changed for r in results)} file(s); {seconds:.0f} s")]
    for t in gpus:
        counts = {k: sum(r.gpu.get(t, "").startswith(k) for r in results)
                  for k in ("ok", "fail", "stock fails")}
        lines.append(f"{t}: {counts['ok']} compiled with the plugin, {counts['fail']} failed, "
                     f"{counts['stock fails']} excluded (stock does not compile them)")
    for r in results:
        lines += [f"FAIL {r.path}: {f}" for f in r.failures + r.gpu_failures]
    for r in results:
        lines += [f"excluded {r.path}: {e}" for e in r.excluded]
        lines += [f"excluded {r.path}: {t}: {s}" for t, s in r.gpu.items()
                  if s.startswith("stock fails")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--run-module"]:
        return _run_module_child(argv[1], argv[2], argv[3:])
    p = argparse.ArgumentParser(prog="python -m iree_fusions.tools.iree_e2e",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", help=f"files or folders (default: {SUITE})")
    p.add_argument("--root", default=str(SUITE), help="the suite's folder (names in the table)")
    p.add_argument("--cpu", default=None,
                   help="llvm-cpu target CPU (default: $IREE_FUSIONS_CPU or host)")
    p.add_argument("--cpu-only", action="store_true", help="no GPU-target compiles")
    p.add_argument("--gpu-only", action="store_true", help="only the GPU-target compiles")
    p.add_argument("--gpus", default=",".join(GPU_TARGETS),
                   help="GPU devices to compile for (default: cuda,hip = sm_80, gfx942)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per compile or run")
    p.add_argument("--json", help="write the results there as JSON")
    args = p.parse_args(argv)
    gpus = () if args.cpu_only else tuple(filter(None, args.gpus.split(",")))
    files, results, started = suite_files(args.paths, args.root), [], time.monotonic()
    for i, path in enumerate(files, 1):
        print(f"[{i}/{len(files)}] {path}", file=sys.stderr, flush=True)
        try:
            results.append(check_file(path, args.root, args.cpu, gpus, not args.gpu_only,
                                      args.timeout))
        except Exception as e:  # noqa: BLE001  (a file the runner cannot read fails)
            results.append(FileResult(relative(path, args.root),
                                      failures=[f"the runner: {_first_line(e)}"]))
        for line in results[-1].failures + results[-1].gpu_failures:
            print(f"  FAIL {line}", file=sys.stderr, flush=True)
    print(summary(results, gpus, time.monotonic() - started))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dataclasses.asdict(r) for r in results], f, indent=1)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
