"""The phase-split compile driver: stock IREE, plugin passes at two hook points, stock IREE.

One process, one compiler session:

    source --[IREE: start .. global-optimization]--> linalg passes (+ canonicalize, cse)
           --[IREE: .. dispatch-creation]--> flow passes
           --[IREE: .. end]--> .vmfb / --compile-to IR

Modules move between IREE invocations as in-memory MLIR operations (export/import through
`iree.compiler.api`); the compile-from/to phase of each invocation is set through the C API
(`ireeCompilerInvocationSetCompileFromPhase/ToPhase`, reached with ctypes).
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from iree.compiler import ir
from iree.compiler.api import ctypes_dl as capi

from .counting import FlowCounts, count_flow_module
from .decisions import Decider, DecisionsError
from .ir_helpers import format_location
from .protocol import PassReport
from .target import module_targets
from .timing_report import PHASES, CompileTiming
from .weighing import is_unsure, keep_what_pays
from .pipeline import PipelineError, Step, run_pipeline

# Hook point of each plugin phase: the plugin passes run on the IR at the end of this phase.
HOOK_PHASE = {"linalg": "global-optimization", "flow": "dispatch-creation"}
# Run after the linalg passes when any of them changed the IR (DESIGN: step 2).
LINALG_CLEANUP = "canonicalize,cse"

_lib = capi._dylib
_lib.ireeCompilerInvocationSetCompileFromPhase.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_lib.ireeCompilerInvocationSetCompileFromPhase.restype = None
_lib.ireeCompilerInvocationSetCompileToPhase.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_lib.ireeCompilerInvocationSetCompileToPhase.restype = None
_lib.ireeCompilerInvocationSetVerifyIR.argtypes = [ctypes.c_void_p, ctypes.c_bool]
_lib.ireeCompilerInvocationSetVerifyIR.restype = None


class CompileError(RuntimeError):
    """Compilation failed; IREE's diagnostics were already printed to stderr."""


@dataclass
class CompileRequest:
    """What one `iree-fusions-compile` run does (the iree-compile main flags, parsed)."""

    source: bytes
    # A file path gives IREE the file's name (module name, locations), as iree-compile has.
    source_path: str | None = None
    source_name: str = "<stdin>"  # buffer name when the source is given as bytes
    compile_from: str = "start"
    compile_to: str = "end"
    output_format: str = "vm-bytecode"  # vm-bytecode | vm-asm | vm-c
    emit_mlir_bytecode: bool = False
    emit_mlir_bytecode_version: int = -1
    verify: bool = True
    # Plugin steps per plugin phase ("linalg" / "flow").
    steps: dict[str, list[Step]] = field(default_factory=dict)
    strict: bool = False  # a failing plugin pass is an error instead of a warning
    # Write the output straight to this file (as iree-compile does) instead of returning it.
    output_path: str | None = None
    # Measured decisions to follow (--fusions-decisions=FILE); "none": not even the shipped.
    decisions: str | None = None
    # Weigh the linalg passes' changes: when they changed the IR, stock IREE also runs to
    # dispatch-creation from the IR before them. The report notes the effect (`effect`);
    # changes that reduce neither dispatches nor bytes between them are reverted
    # (`revert_if_no_gain`) unless a measured decision chose them.
    effect: bool = False
    revert_if_no_gain: bool = True
    timing: bool = False  # time each step (--fusions-timing): CompileResult.timing
    # Print each plugin change and skip as a remark at its op (--fusions-remarks).
    remarks: bool = False
    # Count each pass's ops before and after it (the reports' `ops:` line): only when a
    # report is shown or written.
    count_ops: bool = True
    # Count the flow-phase IR on the way (dispatches, bytes between them: what
    # `--compile-to=flow` and `count_flow_ir` give), so that one compile yields the output and
    # its counts: CompileResult.flow_counts (--fusions-counts-json).
    count_flow: bool = False
    # IREE's const-eval is on (the process's global flags do not turn it off:
    # `const_eval_enabled`): the load-time stacks the linalg passes made are folded.
    const_eval: bool = True
    # IREE's dispatch creation fuses aggressively (`aggressive_fusion_enabled`): the passes
    # see it (`PassContext.aggressive_fusion`).
    aggressive_fusion: bool = False
    # Where a failing plugin pass's input IR is saved for its reproducer command
    # (`pipeline.write_reproducer`): a folder, None for the temporary folder, "none".
    reproducer_dir: str | None = None


@dataclass
class CompileResult:
    output: bytes
    reports: list[PassReport]
    timing: CompileTiming | None = None
    # With count_flow: the counts of the flow-phase IR (None when the compile starts past it).
    flow_counts: FlowCounts | None = None


def phase_index(name: str) -> int:
    try:
        return PHASES.index(name)
    except ValueError:
        raise CompileError(f"unknown phase '{name}' (phases: {', '.join(PHASES)})") from None


class _Pipeline:
    """Runs stock segments and plugin steps in one session."""

    def __init__(self, session: capi.Session, verify: bool):
        self.session = session
        self.verify = verify

    def invocation(self, compile_from: str, compile_to: str) -> capi.Invocation:
        inv = self.session.invocation()
        inv.enable_console_diagnostics()
        _lib.ireeCompilerInvocationSetCompileFromPhase(inv._inv_p, compile_from.encode())
        _lib.ireeCompilerInvocationSetCompileToPhase(inv._inv_p, compile_to.encode())
        _lib.ireeCompilerInvocationSetVerifyIR(inv._inv_p, self.verify)
        return inv

    def load(self, inv: capi.Invocation, source: capi.Source | None,
             module: ir.Operation | None) -> None:
        if module is not None:
            inv.import_module(module)
        elif not inv.parse_source(source):
            raise CompileError("failed to parse the input")

    def run_to(self, current: str, to: str, source: capi.Source, module: ir.Operation | None,
               stage: Callable[[str], None]) -> capi.Invocation:
        """An invocation from phase `current` to `to`, run on `module` (the parsed `source`
        while there is none yet), announcing its steps to `stage`."""
        inv = self.invocation(current, to)
        stage("parse" if module is None else f"import {current}")
        self.load(inv, source if module is None else None, module)
        stage(f"iree {current} {to}")
        if phase_index(current) < phase_index(to) and not inv.execute():
            raise CompileError(f"IREE failed while compiling to phase '{to}'")
        return inv


def compile_request(
    request: CompileRequest, warn: Callable[[str], None] | None = None,
    stage: Callable[[str], None] | None = None,
) -> CompileResult:
    """Compiles like iree-compile with the plugin steps run at their hook points.

    Global compiler flags must already be set (CLI: `initialize_flags`); they are the
    session's defaults, exactly as for iree-compile. `stage(text)` is called before each
    step (parse, an IREE segment, the plugin passes of a hook, output), so that a caller can
    tell where a crash happened; "changed" follows a hook whose passes changed the IR.
    """
    warn = warn or (lambda msg: print(msg, file=sys.stderr))
    stage = stage or (lambda text: None)
    timing = CompileTiming() if request.timing else None
    if timing is not None:
        stage = timing.wrap(stage)
    first, last = phase_index(request.compile_from), phase_index(request.compile_to)
    if first > last:
        raise CompileError(
            f"--compile-from={request.compile_from} is after --compile-to={request.compile_to}"
        )
    session = capi.Session()
    if request.remarks:
        _print_remarks(session.context, request.steps)
    runner = _Pipeline(session, request.verify)
    if request.source_path is not None:
        source = capi.Source.open_file(session, request.source_path)
    else:
        source = capi.Source.wrap_buffer(session, request.source, buffer_name=request.source_name)
    reports: list[PassReport] = []
    module: ir.Operation | None = None
    decider: Decider | None = None
    linalg_before: ir.Operation | None = None  # the IR before linalg passes that changed it
    current = request.compile_from
    hooks = [(phase, HOOK_PHASE[phase]) for phase in ("linalg", "flow")
             if first <= phase_index(HOOK_PHASE[phase]) <= last]
    for plugin_phase, hook in hooks:
        module = runner.run_to(current, hook, source, module, stage).export_module()
        current = hook
        if plugin_phase == "flow" and linalg_before is not None and \
                _must_weigh(reports, request):
            stage(f"iree {HOOK_PHASE['linalg']} {hook} (stock, to weigh the linalg changes)")

            def rerun(without: dict[str, tuple[str, ...] | None]
                      ) -> tuple[ir.Operation, list[PassReport]]:
                """The linalg passes again from the IR before them, each pass of `without`
                left out (None) or kept out of the named functions, then IREE to
                dispatch-creation: (module, the passes' reports)."""
                stage(f"plugin {HOOK_PHASE['linalg']} again without {','.join(sorted(without))}")
                kept = []
                for s in request.steps["linalg"]:
                    name = s.plugin.name if s.plugin is not None else None
                    if name not in without:
                        kept.append(s)
                    elif without[name] is not None:
                        plugin = dataclasses.replace(
                            s.plugin, skip_functions=s.plugin.skip_functions + without[name])
                        kept.append(Step(s.text, plugin))
                with session.context:
                    again, again_reports = _run_hook(linalg_before.clone(), kept, "linalg",
                                                     request, warn, decider, stage)
                    _fold_load_time_stacks(runner, again, again_reports, request)
                stage(f"iree {HOOK_PHASE['linalg']} {hook} (the kept passes' IR)")
                return _dispatch_creation(runner, again), again_reports

            with session.context:
                # IREE runs on the module it imports: a copy, while `before` may be needed again.
                stock = _dispatch_creation(runner, linalg_before.clone()
                                           if request.revert_if_no_gain else linalg_before)
                module = keep_what_pays(module, stock, reports, rerun, effect=request.effect,
                                        revert=request.revert_if_no_gain)
        steps = request.steps.get(plugin_phase, [])
        if steps:
            stage(f"plugin {hook} {','.join(s.text.partition('{')[0] for s in steps)}")
            with session.context:
                if decider is None:
                    decider = _decider(module, request.decisions)
                before = module.clone() if plugin_phase == "linalg" and (
                    request.effect or request.revert_if_no_gain) else None
                module, phase_reports = _run_hook(module, steps, plugin_phase, request, warn,
                                                  decider, stage, before)
                if plugin_phase == "linalg" and any(r.changed for r in phase_reports):
                    stage("iree const-eval of the plugin's load-time stacks")
                    _fold_load_time_stacks(runner, module, phase_reports, request)
            reports += phase_reports
            if any(r.changed for r in phase_reports):
                stage("changed")
                linalg_before = before
    flow_counts = None
    if request.count_flow and phase_index(current) <= phase_index("flow") <= last:
        # One more stop, at flow: the same IR `--compile-to=flow` writes, counted in memory.
        module = runner.run_to(current, "flow", source, module, stage).export_module()
        current = "flow"
        stage("count flow")
        with session.context:
            flow_counts = count_flow_module(module)
    inv = runner.run_to(current, request.compile_to, source, module, stage)
    stage("emit")
    output = _emit(inv, request)
    if timing is not None:
        timing.finish(reports)
    return CompileResult(output, reports, timing, flow_counts)


def _print_remarks(context: ir.Context, steps: dict[str, list[Step]]) -> None:
    """Enables the remarks of the plugin's passes (their categories: the pass names) in the
    session's context. IREE's console diagnostics print them as its own (`file:line:col:
    remark: ...` with the source line); this handler prints those nothing else took. Other
    diagnostics go to IREE's handler as before."""
    names = sorted({s.plugin.name for ss in steps.values() for s in ss if s.plugin})
    if not names:
        return
    context.enable_remarks(all_filter="|".join(re.escape(n) for n in names))

    def show(diag: ir.Diagnostic) -> bool:
        if diag.severity != ir.DiagnosticSeverity.REMARK:
            return False
        print(f"{format_location(diag.location)}: remark: {diag.message}", file=sys.stderr)
        return True

    context.attach_diagnostic_handler(show)


def _must_weigh(reports: list[PassReport], request: CompileRequest) -> bool:
    """Whether the linalg changes are weighed against stock IREE (one extra run of its
    dispatch creation, from the IR before them): when the report asks for their effect, or
    when a pass's changes are neither exempt nor sure to pay (`_unsure`). A pass with such a
    change is kept without the run, as before: no rewrite adds a dispatch or bytes between
    dispatches where its pass is sure of the limitation it works around."""
    if request.effect:
        return True
    return request.revert_if_no_gain and any(is_unsure(r) for r in reports)


def _dispatch_creation(runner: _Pipeline, module: ir.Operation) -> ir.Operation:
    """IREE from the linalg hook to dispatch-creation on `module` (which it consumes)."""
    inv = runner.invocation(HOOK_PHASE["linalg"], HOOK_PHASE["flow"])
    inv.import_module(module)
    if not inv.execute():
        raise CompileError("IREE failed on the IR from before the linalg passes")
    return inv.export_module()


def _decider(module: ir.Operation, decisions: str | None) -> Decider:
    """The decisions to follow for this module's target: the user's file (refused when it
    was measured for another target), then the ones the package ships."""
    targets = module_targets(module)
    if decisions == "none":
        return Decider(targets[0] if len(targets) == 1 else None)
    try:
        return Decider.for_module(targets, decisions)
    except DecisionsError as e:
        raise CompileError(str(e)) from None


def _fold_load_time_stacks(runner: _Pipeline, module: ir.Operation,
                           reports: list[PassReport], request: CompileRequest) -> None:
    """Evaluates the load-time initializers the linalg passes created (stacked weights and
    tables) at compile time, with IREE's const-eval, unless `--iree-opt-const-eval=false`;
    each pass's report notes what became a constant and what stays at load time."""
    if not request.const_eval:
        return

    from . import consteval  # numpy: imported only when there is something to fold

    def evaluate(small: ir.Operation) -> ir.Operation | None:
        inv = runner.invocation("preprocessing", HOOK_PHASE["linalg"])
        inv.import_module(small)
        return inv.export_module() if inv.execute() else None

    folded = consteval.fold_initializers(module, evaluate)
    for report in reports:
        note = folded.note_for(report.pass_name)
        if note:
            report.note(note)


def _run_hook(module: ir.Operation, steps: list[Step], plugin_phase: str,
              request: CompileRequest, warn, decider: Decider, stage: Callable[[str], None],
              before: ir.Operation | None = None) -> tuple[ir.Operation, list[PassReport]]:
    """`before`: the copy of the module kept for the weighing (left unchanged), which also
    serves as the copy kept in case a pass fails."""
    # Every plugin pass of the compile, `steps` for this phase's (the rerun's kept ones).
    selected = tuple(s.plugin for phase, phase_steps in request.steps.items()
                     for s in (steps if phase == plugin_phase else phase_steps)
                     if s.plugin is not None)
    try:
        module, reports = run_pipeline(module, steps, keep_going=not request.strict, warn=warn,
                                       target=decider.target, decider=decider,
                                       count_ops=request.count_ops, before=before,
                                       reproducer_dir=request.reproducer_dir,
                                       aggressive_fusion=request.aggressive_fusion,
                                       selected=selected)
        if plugin_phase == "linalg" and any(r.changed for r in reports):
            stage(f"plugin {HOOK_PHASE[plugin_phase]} {LINALG_CLEANUP}")  # crash: the plugin's
            module, _ = run_pipeline(module, [Step(LINALG_CLEANUP)])
    except PipelineError as e:
        raise CompileError(f"iree-fusions ({plugin_phase} passes): {e}") from None
    return module, reports


def _emit(inv: capi.Invocation, request: CompileRequest) -> bytes:
    """The requested output: written to `request.output_path` (returns b"") or returned."""
    if request.output_path is not None:
        try:
            out = capi.Output.open_file(request.output_path)
        except ValueError as e:  # the C API's error
            raise CompileError(str(e)) from None  # "cannot open output file '...': <why>"
    else:
        out = capi.Output.open_membuffer()
    emits_ir = request.compile_to != "end" or request.output_format == "vm-asm"
    if emits_ir and request.emit_mlir_bytecode:
        inv.output_ir_bytecode(out, request.emit_mlir_bytecode_version)
    elif emits_ir:
        inv.output_ir(out)
    elif request.output_format == "vm-c":
        _lib.ireeCompilerInvocationOutputVMCSource.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        _lib.ireeCompilerInvocationOutputVMCSource.restype = ctypes.c_void_p
        capi._handle_error(_lib.ireeCompilerInvocationOutputVMCSource(inv._inv_p, out._output_p))
    else:
        try:
            inv.output_vm_bytecode(out)
        except ValueError as e:  # IREE printed its diagnostics already
            raise CompileError(f"IREE could not write the output: {e}") from None
    if request.output_path is not None:
        out.keep()
        out.close()
        return b""
    data = bytes(out.map_memory())
    out.close()
    return data


# The flags IREE's global command line was set with in this process (it can be set once).
_global_flags: tuple[str, ...] | None = None


def const_eval_enabled(iree_flags: list[str] | tuple[str, ...]) -> bool:
    """Whether IREE's const-eval runs with these global flags (`CompileRequest.const_eval`)."""
    return not any(f.replace(" ", "") in ("--iree-opt-const-eval=false", "--iree-opt-const-eval=0")
                   for f in iree_flags)


AGGRESSIVE_FUSION = "--iree-dispatch-creation-enable-aggressive-fusion"


def aggressive_fusion_enabled(iree_flags: list[str] | tuple[str, ...]) -> bool:
    """Whether these flags turn on IREE's aggressive fusion (the last one given counts)."""
    enabled = False
    for flag in iree_flags:
        name, sep, value = flag.replace(" ", "").partition("=")
        if name == AGGRESSIVE_FUSION:
            enabled = not sep or value.lower() in ("true", "1")
    return enabled


def initialize_flags(program: str, iree_flags: list[str]) -> None:
    """Sets IREE's global command-line flags once per process, as iree-compile does.

    Every session created afterwards starts from these flags. An unknown flag makes LLVM's
    command-line parser print an error and exit, exactly like iree-compile.
    """
    global _global_flags
    flags = tuple(iree_flags)
    if _global_flags is not None:
        if flags != _global_flags:
            raise CompileError(
                "IREE's global flags can be set once per process; compile with other flags "
                "in another process (iree_fusions.compile does)"
            )
        return
    capi._initializeGlobalCL(program, *flags)
    _global_flags = flags
