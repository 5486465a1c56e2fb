"""iree-fusions-opt: parse MLIR, run a pipeline of plugin and MLIR/IREE passes, print.

    iree-fusions-opt FILE|- -p PIPELINE [-o OUT] [--split-input-file] [--fusions-report]
                     [--fusions-remarks | -verify-diagnostics] [--mlir-print-local-scope]

PIPELINE mixes plugin passes (`batch-gathers{min-group-size=2}`) with any registered
MLIR/IREE pass (`canonicalize,cse,util.func(iree-dispatch-creation-...)`).
"""

from __future__ import annotations

if __name__ == "__main__":  # `python -m`: the start-up work first (deferred.py)
    from .deferred import compiler_tool_startup

    compiler_tool_startup()

import argparse
import contextlib
import sys
from typing import NoReturn

from iree.compiler import ir

from ..compiler import dialect_views, registry
from ..compiler.decisions import Decider, DecisionsError
from ..compiler.diagnostics import (Diagnostic, DiagnosticCollector, expectations,
                                    from_mlir_error, verify)
from ..compiler.files import (SPLIT_INPUT_LIMIT, SPLIT_MARKER, OutputError, UserError, at_file_line,
                              check_output, claim_std_streams, is_bytecode, read_input, split_input,
                              write_file)
from ..compiler.target import Target, module_targets
from ..compiler.pipeline import PipelineError, format_mlir_error, parse_pipeline, run_pipeline
from .crash import run_console

PROG = "iree-fusions-opt"


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.strip().splitlines()[0])
    p.add_argument("input", nargs="?", help="input .mlir/.mlirbc file, or - for stdin")
    p.add_argument("-p", "--pass-pipeline", dest="pipeline", default="",
                   help="comma-separated passes (plugin and MLIR/IREE)")
    p.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    p.add_argument("--split-input-file", action="store_true",
                   help="split the input at '// -----' and process each chunk on its own")
    p.add_argument("--fusions-report", action="store_true",
                   help="print what each plugin pass changed and skipped (stderr)")
    p.add_argument("--fusions-remarks", action="store_true",
                   help="print each change and skipped candidate as a remark at its op "
                        "(stderr, `file:line:col: remark: ...`)")
    p.add_argument("-verify-diagnostics", "--verify-diagnostics", dest="verify_diagnostics",
                   action="store_true",
                   help="check the remarks and errors against the input's expected-* "
                        "annotations, as mlir-opt -verify-diagnostics (implies the remarks)")
    p.add_argument("--fusions-target", metavar="BACKEND:CHIP",
                   help="the target the passes see (e.g. cuda:sm_80; default: the module's "
                        "device target, if it has one)")
    p.add_argument("--iree-dispatch-creation-enable-aggressive-fusion", dest="aggressive_fusion",
                   nargs="?", const="true", default="false", choices=("true", "false"),
                   help="the passes see IREE's aggressive fusion on, as iree-fusions-compile "
                        "does with this IREE flag")
    p.add_argument("--fusions-decisions", metavar="FILE|none",
                   help="follow measured decisions (iree-fusions-tune) for the target "
                        "(none: not even the ones the package ships)")
    p.add_argument("--list-passes", action="store_true",
                   help="list the plugin passes with their options")
    p.add_argument("--fusions-load", action="append", default=[], metavar="MODULE",
                   help="import a Python module that registers extra passes")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    p.add_argument("--mlir-print-local-scope", action="store_true",
                   help="print attributes and types in place (no #map aliases)")
    p.add_argument("--emit-bytecode", action="store_true", help="write MLIR bytecode")
    return p


def _process(ctx: ir.Context, name: str, offset: int, data: bytes, pipeline: str,
             args: argparse.Namespace) -> tuple[str | bytes, list]:
    try:
        module = ir.Module.parse(at_file_line(offset, data), ctx)
    except ir.MLIRError as e:
        raise ParseError(format_mlir_error(e, name), from_mlir_error(e)) from None
    steps = parse_pipeline(pipeline) if pipeline else []
    targets = [args.target] if args.target else module_targets(module.operation)
    try:  # as iree-fusions-compile: the user's file, then the decisions shipped for the target
        decider = (Decider(args.target) if args.fusions_decisions == "none" else
                   Decider.for_module(targets, args.fusions_decisions))
    except DecisionsError as e:
        raise PipelineError(str(e)) from None
    op, reports = run_pipeline(module.operation, steps, target=args.target, decider=decider,
                               aggressive_fusion=args.aggressive_fusion == "true")
    if args.emit_bytecode:
        import io

        buf = io.BytesIO()
        op.write_bytecode(buf)
        return buf.getvalue(), reports
    return op.get_asm(enable_debug_info=args.mlir_print_debuginfo,
                      use_local_scope=args.mlir_print_local_scope), reports


class ParseError(PipelineError):
    """The input does not parse; its diagnostics, for -verify-diagnostics."""

    def __init__(self, message: str, diagnostics: list[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


def main(argv: list[str] | None = None) -> int:
    claim_std_streams()
    args = _build_parser().parse_args(argv)
    dialect_views.install()  # linalg op views without the OpDSL import
    try:
        return _run(args)
    except UserError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1 if isinstance(e, OutputError) else 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; {args.output} left as it was", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    try:
        args.target = Target.parse(args.fusions_target) if args.fusions_target else None
    except ValueError as e:
        raise UserError(f"--fusions-target: {e}") from None
    registry.load_plugin_modules(args.fusions_load)
    if args.list_passes:
        print(registry.describe_passes())
        return 0
    if args.input is None:
        raise UserError("no input file (give a path or '-')")
    check_output(args.output)  # before any work
    data = read_input(args.input, limit=SPLIT_INPUT_LIMIT if args.split_input_file else None,
                      allow_empty=True)
    name = "<stdin>" if args.input == "-" else args.input
    outputs: list[str | bytes] = []
    failed = False
    with ir.Context() as ctx, contextlib.ExitStack() as diagnostics:
        ctx.allow_unregistered_dialects = False
        parse_pipeline(args.pipeline)  # unknown passes are reported once, before any input
        if args.fusions_remarks or args.verify_diagnostics:
            ctx.enable_remarks(all_filter=".*")  # emitted as remark diagnostics
            collected = diagnostics.enter_context(DiagnosticCollector(
                ctx, None if args.verify_diagnostics else sys.stderr, name))
        chunks = split_input(data) if args.split_input_file else [(0, data)]
        for offset, chunk in chunks:
            try:
                out, reports = _process(ctx, name, offset, chunk, args.pipeline, args)
            except PipelineError as e:
                if args.verify_diagnostics and isinstance(e, ParseError):
                    failed |= _verify(collected.take() + e.diagnostics, offset, chunk, name)
                    continue
                print(f"{PROG}: error: {e}", file=sys.stderr)
                failed = True
                continue
            if args.verify_diagnostics:
                failed |= _verify(collected.take(), offset, chunk, name)
            outputs.append(out)
            if args.fusions_report:
                for r in reports:
                    print(r.format(), file=sys.stderr)
    if failed and args.output != "-":
        return 1  # nothing written: the file (even the input, edited in place) stays as it was
    if args.emit_bytecode:
        payload = b"".join(o for o in outputs if isinstance(o, bytes))
    else:
        payload = (b"\n" + SPLIT_MARKER + b"\n").join(
            str(o).rstrip("\n").encode() for o in outputs) + b"\n"
    write_file(args.output, payload)  # stdout: the chunks that worked, as mlir-opt prints them
    return 1 if failed else 0


def _verify(found: list[Diagnostic], offset: int, chunk: bytes, name: str) -> bool:
    """-verify-diagnostics for one chunk (whose first line is line `offset + 1` of the file):
    prints what does not match; returns whether something did not."""
    text = "" if is_bytecode(chunk) else chunk.decode("utf-8", errors="replace")
    problems = verify(found, expectations(text, offset + 1), name)
    for problem in problems:
        print(problem, file=sys.stderr)
    return bool(problems)


def console_main() -> NoReturn:
    """The console script: main, then `exit_now` (no interpreter finalization)."""
    run_console(main)


if __name__ == "__main__":
    console_main()
