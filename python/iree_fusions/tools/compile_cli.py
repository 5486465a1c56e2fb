"""iree-fusions-compile: a drop-in iree-compile that runs the plugin passes at the hook points.

Every iree-compile flag and input format is accepted and passed on unchanged; the plugin adds:
  --fusions=all|none|PASS[,PASS{opt=v}...]  passes to run (default: all)
  --fusions-report                           print what each pass changed / skipped (stderr)
  --fusions-report-json=FILE                 the same as JSON
  --fusions-remarks                          each change and skip as a remark at its op (stderr)
  --fusions-report-effect                    with -json: add the dispatches and bytes saved vs
                                             stock (on with --fusions-report)
  --fusions-keep-no-gain                     keep linalg changes that reduce neither dispatches
                                             nor bytes between them (default: reverted, unless
                                             a decisions file chose them)
  --fusions-strict                           a failing pass is an error (default: warn, skip it)
  --fusions-timing                           print the wall time of each IREE phase range and of
                                             each plugin pass (find / apply / verify / count)
                                             on stderr, like --mlir-timing
  --fusions-timing-json=FILE                 the same as JSON
  --fusions-counts-json=FILE                 write the flow-phase counts (dispatches per
                                             function, bytes between them) of this compile,
                                             as `--compile-to=flow` IR would give them
  --fusions-decisions=FILE|none              follow decisions measured by iree-fusions-tune for
                                             this target (none: not even the shipped ones)
  --fusions-list [-v]                        list the passes with their options and exit
                                             (-v: with each pass's before/after sketch)
  --fusions-load=MODULE                      import a Python module that registers extra passes
  --fusions-reproducer-dir=DIR|none          where the IR from before a failing pass is saved
                                             for the reproducer command the warning prints
                                             (default: the temporary folder; none: not saved)
  --fusions-parameter-archive=FILE           with --fusions-parameters: weights the passes stack
                                             (gather tables, tower weights) are made once, now,
                                             into this .irpa (IREE's parameter encoder), not at
                                             each load; the module reads them from scope
                                             fusions-<digest> (the run flags are printed)
  --fusions-parameter-archive-mode=consolidate|overlay
                                             consolidate (default): the archive holds every
                                             parameter the module reads, which then reads
                                             no other file (stock's resident memory);
                                             overlay: the stacks only, the module also
                                             reads the --fusions-parameters files
  --fusions-parameters=[SCOPE=]FILE          a parameter file the module reads (repeatable; as
                                             iree-run-module --parameters)
  --print-shim-dir                           print (creating it if needed) a folder holding an
                                             `iree-compile` that runs the plugin, for
                                             `IREE_TOOL_PATH=$(iree-fusions-compile
                                             --print-shim-dir) python app.py`: code that
                                             calls iree.compiler.compile_file / compile_str
                                             compiles with the plugin unchanged
                                             (IREE_FUSIONS=all|none|PASS,... picks passes)
"""

from __future__ import annotations

if __name__ == "__main__":  # `python -m`: the start-up work first (deferred.py)
    from .deferred import compiler_tool_startup

    compiler_tool_startup()

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import NoReturn

from ..compiler import dialect_views, registry
from .crash import (Interrupted, PluginArgs, compile_with_retries, describe_crash,
                    die_with_parent, interruptible, run_console, run_forked)
from ..compiler.decisions import load as load_decisions
from ..compiler.driver import (HOOK_PHASE, PHASES, CompileError, CompileRequest, compile_request,
                               aggressive_fusion_enabled, const_eval_enabled,
                               initialize_flags)
from ..compiler.files import (SPLIT_INPUT_LIMIT, OutputError, OutputSet, UserError, at_file_line,
                              check_input, check_output, claim_std_streams, is_bytecode,
                              is_regular_file, read_input, split_input)
from ..compiler.fusions_flags import select_steps
from .parameter_archive import (ARCHIVE_MODES, ArchivePlan, check_distinct_files,
                                plan_archive, with_parameter_stacks, write_archive)
from ..runtime.archives import ArchiveError
from ..runtime.modules import parse_parameters
from .shim_folder import real_iree_compile, shim_dir

PROG = "iree-fusions-compile"
# Flags that iree-compile's main handles itself (not session / global compiler flags).
_MAIN_VALUE_FLAGS = {
    "o", "output-format", "compile-mode", "compile-from", "compile-to",
    "emit-mlir-bytecode-version",
}
_MAIN_BOOL_FLAGS = {"emit-mlir-bytecode", "split-input-file", "verify"}
_DELEGATED_FLAGS = {"iree-hal-list-target-backends", "iree-list-plugins", "version"}


class UsageError(UserError):
    """A command line that cannot be right (a missing value, an unknown flag or phase)."""


@dataclass
class CliArgs:
    input: str | None = None
    main: dict[str, str] = field(default_factory=dict)
    iree_flags: list[str] = field(default_factory=list)
    fusions: str = "all"
    report: bool = False
    report_json: str | None = None
    report_effect: bool = False
    remarks: bool = False  # --fusions-remarks
    timing: bool = False
    timing_json: str | None = None
    counts_json: str | None = None
    keep_no_gain: bool = False
    strict: bool = False
    decisions: str | None = None
    delegate: bool = False  # hand the whole command to iree-compile
    list_passes: bool = False
    verbose: bool = False  # -v or --fusions-list=verbose: with each pass's before/after sketch
    load: list[str] = field(default_factory=list)
    reproducer_dir: str | None = None  # where a failing pass's input IR is saved; "none"
    help: bool = False
    print_shim_dir: bool = False
    parameter_archive: str | None = None  # --fusions-parameter-archive=FILE
    archive_mode: str | None = None  # --fusions-parameter-archive-mode (None: the default)
    parameters: list[str] = field(default_factory=list)  # --fusions-parameters=[SCOPE=]FILE
    archive: ArchivePlan | None = None  # what --fusions-parameter-archive makes


def _split_flag(arg: str) -> tuple[str, str | None]:
    body = arg.lstrip("-")
    name, eq, value = body.partition("=")
    return name, (value if eq else None)


def parse_args(argv: list[str]) -> CliArgs:
    args = CliArgs()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            if args.input is not None:
                raise UsageError(
                    f"more than one input file: '{args.input}' and '{arg}' "
                    "(write IREE flags as --flag=value)"
                )
            args.input = arg
            continue
        name, value = _split_flag(arg)
        if name in ("h", "help", "help-hidden"):
            args.help = True
        elif name == "print-shim-dir":
            args.print_shim_dir = True
        elif name == "fusions":
            if value is None:
                raise UsageError("--fusions needs a value: --fusions=all|none|PASS,...")
            args.fusions = value
        elif name == "fusions-report":
            args.report = _bool("true" if value is None else value, name)
        elif name == "fusions-remarks":
            args.remarks = _bool("true" if value is None else value, name)
        elif name == "fusions-report-effect":
            args.report_effect = _bool("true" if value is None else value, name)
        elif name == "fusions-keep-no-gain":
            args.keep_no_gain = _bool("true" if value is None else value, name)
        elif name == "fusions-report-json":
            if not value:
                raise UsageError("--fusions-report-json needs a file: --fusions-report-json=FILE")
            args.report_json = value
        elif name == "fusions-timing":
            args.timing = _bool("true" if value is None else value, name)
        elif name == "fusions-timing-json":
            if not value:
                raise UsageError("--fusions-timing-json needs a file: --fusions-timing-json=FILE")
            args.timing_json = value
        elif name == "fusions-counts-json":
            if not value:
                raise UsageError("--fusions-counts-json needs a file: --fusions-counts-json=FILE")
            args.counts_json = value
        elif name == "fusions-strict":
            args.strict = _bool("true" if value is None else value, name)
        elif name == "fusions-decisions":
            if not value:
                raise UsageError("--fusions-decisions needs a file: --fusions-decisions=FILE")
            args.decisions = value
        elif name == "fusions-list":
            if value not in (None, "verbose"):
                raise UsageError("--fusions-list takes no value but 'verbose' (or add -v)")
            args.list_passes = True
            args.verbose |= value == "verbose"
        elif name == "v" and value is None:  # with --fusions-list; else iree-compile's
            args.verbose = True
            args.iree_flags.append(arg)
        elif name == "fusions-reproducer-dir":
            if not value:
                raise UsageError("--fusions-reproducer-dir needs a folder (or none)")
            args.reproducer_dir = value
        elif name == "fusions-load":
            if not value:
                raise UsageError("--fusions-load needs a module: --fusions-load=package.module")
            args.load.append(value)
        elif name == "fusions-parameter-archive":
            if not value:
                raise UsageError("--fusions-parameter-archive needs a file: "
                                 "--fusions-parameter-archive=FILE.irpa")
            args.parameter_archive = value
        elif name == "fusions-parameter-archive-mode":
            if value not in ARCHIVE_MODES:
                raise UsageError("--fusions-parameter-archive-mode is one of "
                                 f"{', '.join(ARCHIVE_MODES)}, not '{value}'")
            args.archive_mode = value
        elif name == "fusions-parameters":
            if not value:
                raise UsageError("--fusions-parameters needs a file: "
                                 "--fusions-parameters=[SCOPE=]FILE")
            args.parameters.append(value)
        elif name.startswith("fusions"):
            raise UsageError(f"unknown option '{arg}' (see {PROG} --help)")
        elif name in _MAIN_VALUE_FLAGS:
            if value is None:
                if i >= len(argv):
                    raise UsageError(f"option '{arg}' needs a value")
                value = argv[i]
                i += 1
            args.main[name] = value
        elif name in _MAIN_BOOL_FLAGS:
            args.main[name] = "true" if value is None else value
        elif name in _DELEGATED_FLAGS:
            args.delegate = True
            args.iree_flags.append(arg)
        else:
            args.iree_flags.append(arg)
    return args


def _bool(text: str, flag: str) -> bool:
    if text.lower() in ("true", "1", "on"):
        return True
    if text.lower() in ("false", "0", "off"):
        return False
    raise UsageError(f"--{flag}: expected true/false, got '{text}'")


def _help() -> str:
    lines = [__doc__.strip(), "", "Passes (--fusions):"]
    for entry in registry.REGISTRY.values():
        default = "" if entry.default else " [not in 'all']"
        lines.append(f"  {entry.name:34s} ({entry.phase}) {entry.description}{default}")
    lines += ["", "Options of each pass: --fusions-list. All other flags: see "
              "`iree-compile --help`."]
    return "\n".join(lines)


def _request(args: CliArgs, source: bytes, steps, by_path: bool) -> CompileRequest:
    main = args.main
    for key in ("compile-from", "compile-to"):
        if key in main and main[key] not in PHASES:
            raise UsageError(f"--{key}: unknown phase '{main[key]}' (phases: {', '.join(PHASES)})")
    fmt = main.get("output-format", "vm-bytecode")
    if fmt not in ("vm-bytecode", "vm-asm", "vm-c"):
        raise UsageError(f"--output-format: unknown format '{fmt}'")
    version = main.get("emit-mlir-bytecode-version", "-1")
    try:
        bytecode_version = int(version)
    except ValueError:
        raise UsageError(f"--emit-mlir-bytecode-version: not an integer: '{version}'") from None
    return CompileRequest(
        source=source,
        source_path=args.input if by_path else None,
        source_name="<stdin>" if args.input == "-" else args.input,
        compile_from=main.get("compile-from", "start"),
        compile_to=main.get("compile-to", "end"),
        output_format=fmt,
        emit_mlir_bytecode=_bool(main.get("emit-mlir-bytecode", "false"), "emit-mlir-bytecode"),
        emit_mlir_bytecode_version=bytecode_version,
        verify=_bool(main.get("verify", "true"), "verify"),
        steps=steps,
        strict=args.strict,
        effect=args.report or args.report_effect,
        timing=args.timing or args.timing_json is not None,
        remarks=args.remarks,
        count_ops=args.report or args.report_json is not None,
        count_flow=args.counts_json is not None,
        revert_if_no_gain=not args.keep_no_gain,
        decisions=args.decisions,
        const_eval=const_eval_enabled(args.iree_flags),
        aggressive_fusion=aggressive_fusion_enabled(args.iree_flags),
        reproducer_dir=args.reproducer_dir,
    )


def _delegate(argv: list[str]) -> int:
    """Runs plain iree-compile with the same arguments minus the plugin's own flags."""
    passthrough = [a for a in argv if not a.lstrip("-").startswith("fusions")]
    return subprocess.call([real_iree_compile(), *passthrough])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    die_with_parent()  # when the API started this process: not a moment longer than it
    dialect_views.install()  # linalg op views without the OpDSL import
    claim_std_streams()
    outputs = OutputSet()
    with interruptible():
        try:
            return _main(argv, outputs)
        except Interrupted as e:
            print(f"{PROG}: interrupted ({e.name}); no output written", file=sys.stderr)
            return 128 + e.signal
        finally:
            outputs.discard()  # what was not committed: temporary files removed


def _main(argv: list[str], outputs: OutputSet) -> int:
    try:
        args = parse_args(argv)
        if args.print_shim_dir:
            print(shim_dir())
            return 0
        registry.load_plugin_modules(args.load)
        if args.help:
            print(_help())
            return 0
        if args.list_passes:
            print(registry.describe_passes(verbose=args.verbose))
            return 0
        mode = args.main.get("compile-mode", "std")
        if args.delegate or mode != "std":
            if mode != "std" and args.fusions != "none":
                print(f"{PROG}: warning: --compile-mode={mode} runs plain iree-compile, "
                      "no plugin pass runs", file=sys.stderr)
            return _delegate(argv)
        if args.input is None:
            raise UsageError("no input file (give a path or '-' for stdin)")
        split = _bool(args.main.get("split-input-file", "false"), "split-input-file")
        # Inputs are read once, never sniffed and reopened: a regular file is handed to IREE
        # by path (it maps it); stdin, streams (a FIFO, `<(cmd)`) and split input are read
        # here (split input up to a bound: /dev/zero is refused, not read without end).
        by_path = not split and is_regular_file(args.input)
        if by_path:
            check_input(args.input)
            data = b""
        else:
            data = read_input(args.input, limit=SPLIT_INPUT_LIMIT if split else None)
        steps = select_steps(args.fusions)
        if args.decisions not in (None, "none"):
            load_decisions(args.decisions)  # a corrupt file is an error before compiling
        chunks = split_input(data) if split else [(0, data)]
        if args.parameters and not args.parameter_archive:
            raise UsageError("--fusions-parameters is read with --fusions-parameter-archive")
        if args.archive_mode and not args.parameter_archive:
            raise UsageError("--fusions-parameter-archive-mode is read with "
                             "--fusions-parameter-archive")
        if args.parameter_archive and split:
            raise UsageError("--fusions-parameter-archive makes one module's archive: "
                             "not with --split-input-file")
        try:
            sources = parse_parameters(args.parameters)
        except ValueError as e:
            raise UsageError(str(e)) from None
        check_distinct_files(  # before anything is written
            {"the input file": args.input, "--fusions-decisions": args.decisions}, sources,
            {"-o": args.main.get("o"), "--fusions-report-json": args.report_json,
             "--fusions-timing-json": args.timing_json, "--fusions-counts-json":
             args.counts_json, "--fusions-parameter-archive": args.parameter_archive})
        if args.parameter_archive:
            archive = plan_archive(args.parameter_archive, sources,
                                   args.input if by_path else None, data, args.iree_flags,
                                   args.fusions, args.archive_mode or ARCHIVE_MODES[0])
            steps = with_parameter_stacks(steps)
        # Each chunk's request is made in the child, padded to its line in the file then
        # (diagnostics cite the file's lines); the first one checks the flags now.
        first = _request(args, b"", steps, by_path)
        # Every output goes to a temporary file (created now: an unwritable output fails
        # before the compile), renamed into place only when everything succeeded.
        output = args.main.get("o", "-")
        check_output(output)
        if output != "-":
            staged = outputs.stage(output)
            if len(chunks) == 1:  # IREE writes the file, as iree-compile does
                first.output_path = staged
        for path in (args.report_json, args.timing_json, args.counts_json):
            if path:
                outputs.stage(path)
        if args.parameter_archive:
            check_output(args.parameter_archive)
            outputs.stage(args.parameter_archive)
            workdir = tempfile.mkdtemp(prefix="iree-fusions-encoder-")
            archive.encoder_mlir = os.path.join(workdir, "encoder.mlir")
            args.iree_flags = [*args.iree_flags, *archive.iree_flags()]
            args.archive = archive
    except UserError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1 if isinstance(e, OutputError) else 2
    try:
        code, sig, stages, steps = compile_with_retries(
            lambda steps, stderr: run_forked(
                lambda stage: _compile(args, chunks, dataclasses.replace(first, steps=steps),
                                       outputs, stage), stderr=stderr),
            steps, args.iree_flags, PROG)
    finally:
        if args.archive is not None:
            shutil.rmtree(os.path.dirname(args.archive.encoder_mlir), ignore_errors=True)
    if sig is not None:
        plugin = PluginArgs({HOOK_PHASE[p]: [s.text for s in steps.get(p, [])]
                             for p in HOOK_PHASE}, args.load, args.decisions)
        print(describe_crash(sig, stages, _stock_argv(argv, args.input, data), PROG, plugin),
              file=sys.stderr)
    if code == 0:
        try:
            outputs.commit()
        except OutputError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
    return code


def _stock_argv(argv: list[str], source: str, data: bytes) -> list[str]:
    """The command line as plain iree-compile takes it: plugin flags and -o removed; input
    read from a stream (stdin, a FIFO) saved to a file (named in the message, so kept)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        if arg.startswith("-o=") or arg.lstrip("-").startswith("fusions"):
            continue
        if arg == source and not is_regular_file(arg):
            suffix = ".mlirbc" if is_bytecode(data) else ".mlir"
            fd, path = tempfile.mkstemp(prefix="iree-fusions-input-", suffix=suffix)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            arg = path
        out.append(arg)
    return out


def _compile(args: CliArgs, chunks: list[tuple[int, bytes]], first: CompileRequest,
             outputs: OutputSet, stage) -> int:
    """The compile itself (in the forked child), writing into the parent's staged outputs
    (renamed into place by the parent when this returns 0)."""
    initialize_flags(PROG, args.iree_flags)
    results, reports, timings, counts, failed = [], [], [], [], False
    for offset, chunk in chunks:
        request = dataclasses.replace(first, source=at_file_line(offset, chunk))
        try:
            result = compile_request(request, stage=stage)
        except CompileError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            failed = True
            continue
        results.append(result.output)
        reports += result.reports
        if result.flow_counts is not None:
            counts.append(dataclasses.asdict(result.flow_counts))
        if result.timing is not None:
            timings.append(result.timing)
            if args.timing:
                print(result.timing.format(), file=sys.stderr)
    if args.report:
        for report in reports:
            print(report.format(), file=sys.stderr)
    if failed:
        return 1  # nothing written: the parent leaves every output as it was
    try:
        if args.report_json:
            outputs.write(args.report_json, json.dumps([r.to_json() for r in reports], indent=2))
        if args.timing_json:  # one entry per compiled module (--split-input-file: per chunk)
            outputs.write(args.timing_json, json.dumps([t.to_json() for t in timings], indent=2))
        if args.counts_json:  # one entry per compiled module (none past the flow phase)
            outputs.write(args.counts_json, json.dumps(counts, indent=2))
        if first.output_path is None:
            outputs.write(args.main.get("o", "-"), b"".join(results))
        if args.archive is not None:
            stage("parameter encoder")
            print(f"{PROG}: " + write_archive(args.archive,
                                               outputs.stage(args.parameter_archive),
                                               real_iree_compile(), args.iree_flags),
                  file=sys.stderr)
    except (OutputError, UserError, ArchiveError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    return 0


def console_main() -> NoReturn:
    """The console script: main, then `exit_now` (no interpreter finalization)."""
    run_console(main)


if __name__ == "__main__":
    console_main()
