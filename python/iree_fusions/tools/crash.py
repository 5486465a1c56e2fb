"""When IREE crashes: the compile runs in a forked child; the parent says what happened.

A crash inside IREE's C++ (a segfault, an abort after `LLVM ERROR: ...`) kills the process
that runs it; in-process, the user would see exit -11 and nothing else. `run_forked` runs the
compile in a child that reports each step it starts (parse, an IREE segment between two
phases, the plugin passes of a hook, output) through a pipe; if the child dies from a signal,
`describe_crash` names the step, says whether the plugin had changed the IR by then (an IREE
crash on IR no plugin pass touched is IREE's bug) and gives the commands that reproduce it.
Forking costs about a millisecond and happens before IREE is initialized.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import NoReturn
from dataclasses import dataclass, field

from ..harness.processes import PARENT_ENV

ISSUES = "https://github.com/iree-org/iree/issues"


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP reached the tool: it stops, cleans up and exits
    128 + signal with one line (no traceback)."""

    def __init__(self, sig: int):
        super().__init__(sig)
        self.signal = sig

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While inside, SIGINT / SIGTERM / SIGHUP raise `Interrupted` in the main thread, so that
    `finally` blocks run (temporary files removed, the compile child killed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(sig, frame):
        raise Interrupted(sig)

    previous = {sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> None:
    """Asks Linux to send `sig` to this process when its parent dies (PR_SET_PDEATHSIG), so
    that a killed tool leaves no compile running behind it. `parent`: the pid the parent
    had; if it is already gone, the signal is sent at once. Without `parent`, the pid named
    by $IREE_FUSIONS_PARENT_PID (the API sets it), if any."""
    if parent is None:
        text = os.environ.pop(PARENT_ENV, "")
        if not text.isdigit():
            return
        parent = int(text)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: no such guarantee
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os.kill(os.getpid(), sig)


_PR_SET_PDEATHSIG = 1


def exit_now(code: int) -> NoReturn:
    """Ends a console tool with `code` once its main returned, skipping the interpreter's
    finalization, a cost every compile paid (stock iree-compile starts and ends in a fraction
    of it: bench/results/code-costs.md, start-up). Everything the tool writes is closed by then
    (outputs are committed or discarded inside main; the compile ran in a forked child that
    ends with os._exit); the standard streams are flushed here, and if that fails the
    interpreter exits the usual way, so a closed stdout still reports as it would."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the stream was closed when the tool started
                stream.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


def run_console(main: Callable[[], int]) -> NoReturn:
    """A console script's body: `main()`, then `exit_now`. A reader that closed the pipe
    early (`iree-fusions-compile --fusions-list | head -1`) ends the tool quietly with 141,
    the status a C tool killed by SIGPIPE has in a shell, instead of a traceback."""
    try:
        code = main()
    except BrokenPipeError:
        os._exit(128 + 13)  # no flush: what is still buffered has no reader
    exit_now(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def run_forked(work: Callable[[Callable[[str], None]], int], stderr: int | None = None
               ) -> tuple[int, int | None, list[str]]:
    """Runs `work(stage)` in a child process: (exit code, killing signal or None, stages);
    the child's standard error goes to the file descriptor `stderr` where given.

    The child dies with its parent (PR_SET_PDEATHSIG): a parent killed by any signal, even
    SIGKILL, leaves no compile running. Ctrl-C reaches both; the child ignores it and the
    parent, interrupted while it waits, kills the child and raises `Interrupted`."""
    read_fd, write_fd = os.pipe()
    _flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        code = 1
        try:
            die_with_parent(signal.SIGKILL, parent)
            if stderr is not None:
                os.dup2(stderr, 2)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            for sig in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            code = work(lambda text: os.write(write_fd, (text + "\n").encode()))
        except BaseException:  # a Python error: print it as the process would, exit 1
            import traceback

            traceback.print_exc()
        finally:
            _flush()
            os._exit(code)
    os.close(write_fd)
    chunks, status = [], None
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            while chunk := pipe.read(4096):
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    except BaseException:  # interrupted (or failed) while waiting: the child goes too
        if status is None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        raise
    stages = b"".join(chunks).decode(errors="replace").splitlines()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), os.WTERMSIG(status), stages
    return os.WEXITSTATUS(status), None, stages


@dataclass
class PluginArgs:
    """The plugin's part of a compile command, for the reproducer commands: the passes at
    each hook phase (in pipeline order, options included), --fusions-load modules and the
    decisions file."""

    passes: dict[str, list[str]] = field(default_factory=dict)
    load: list[str] = field(default_factory=list)
    decisions: str | None = None

    def flags(self, hook: str | None = None, through: bool = True) -> list[str]:
        """Plugin flags of a compile to `hook` that runs the passes of the hooks before it
        (and its own when `through`); all of them without `hook`."""
        hooks = list(self.passes)
        upto = len(hooks) if hook not in hooks else hooks.index(hook) + (1 if through else 0)
        passes = [p for h in hooks[:upto] for p in self.passes[h]]
        return [f"--fusions={','.join(passes) or 'none'}",
                *[f"--fusions-load={m}" for m in self.load],
                *([f"--fusions-decisions={self.decisions}"] if self.decisions else [])]


_KILLS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def describe_signal(sig: int) -> str:
    """A signal's name (SIGSEGV), or its number where it has none."""
    return signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)


def describe_crash(sig: int, stages: list[str], stock_argv: list[str], prog: str,
                   plugin: PluginArgs | None = None) -> str:
    """What crashed, where, and how to reproduce it (`stock_argv`: the same compile as plain
    iree-compile arguments, without the plugin's flags and without -o; `plugin`: the
    plugin's flags, repeated in the commands that run the plugin)."""
    plugin = plugin or PluginArgs()
    name = describe_signal(sig)
    last = stages[-1] if stages else "start"
    changed = "changed" in stages
    stock = shlex.join(["iree-compile", *stock_argv, "-o", os.devnull])
    kind, *rest = last.split(" ")
    if sig in _KILLS:
        return (f"{prog}: error: the compile process was killed ({name}) at step '{last}': "
                "stopped from outside (a user, a job limit, or the system out of memory), "
                "not a crash")
    if kind == "parse":
        lines = [f"{prog}: error: IREE crashed ({name}) while parsing the input "
                 "(ireeCompilerInvocationParseSource); no plugin pass had run.",
                 *_stock_diagnostics(stock_argv),
                 f"  plain iree-compile, for IREE's own diagnostics: {stock}",
                 f"  the crash itself is an IREE bug: please report it ({ISSUES})"]
        return "\n".join(lines)
    if kind == "plugin":
        hook, names = rest
        passes = ",".join(plugin.passes.get(hook, [])) or names
        load = [f"--fusions-load={m}" for m in plugin.load]
        return (f"{prog}: error: the process crashed ({name}) in the plugin's passes "
                f"({names}) at the end of phase '{hook}': a plugin bug (or one in the MLIR "
                "Python bindings).\n"
                f"  work around it with --fusions=none (or --fusions= without the pass), and "
                f"report it with:\n  "
                + shlex.join([prog, *stock_argv, *plugin.flags(hook, through=False),
                              f"--compile-to={hook}", "--emit-mlir-bytecode", "-o",
                              "repro.mlirbc"])
                + "\n  " + shlex.join(["iree-fusions-opt", "repro.mlirbc", *load, "-p", passes]))
    where = {
        "iree": lambda: f"while compiling from phase '{rest[0]}' to '{rest[1]}'",
        "import": lambda: f"while importing the IR at phase '{rest[0]}'",
        "emit": lambda: "while writing the output",
    }.get(kind, lambda: f"at step '{last}'")()
    head = f"{prog}: error: IREE crashed ({name}) {where}"
    if not changed:
        return (f"{head}, on IR no plugin pass had changed: an IREE bug, not the plugin's.\n"
                f"  reproduce with: {stock}\n  please report it to IREE ({ISSUES})")
    phase = next(s.split(" ")[1] for s in reversed(stages) if s.startswith("plugin "))
    return (f"{head}, on IR the plugin passes had rewritten at phase '{phase}'.\n"
            f"  does plain IREE crash too? {stock}\n"
            "  the rewritten IR: "
            + shlex.join([prog, *stock_argv, *plugin.flags(phase), f"--compile-to={phase}",
                          "--emit-mlir-bytecode", "-o", "repro.mlirbc"]) + "\n"
            f"  then: iree-compile repro.mlirbc --compile-from={phase} "
            f"{shlex.join(a for a in stock_argv[1:] if not a.startswith('--compile-from'))}")


def _stock_diagnostics(stock_argv: list[str], limit: int = 20) -> list[str]:
    """What plain iree-compile says about the input (its parser reports errors where the
    C API's crashes), shortened."""
    from ..compiler.files import UserError
    from ..harness.processes import real_iree_compile

    try:
        cmd = [real_iree_compile(), *stock_argv, "--compile-to=input", "-o", os.devnull]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired, UserError):
        return []
    lines = [line if len(line) <= 200 else line[:200] + "..."
             for line in proc.stderr.splitlines() if line.strip()]
    if not lines:
        return []
    return ["  plain iree-compile says:", *(f"    {line}" for line in lines[:limit])]


# ------------------------------------------------------------------ compiling again

_GPU_TARGET = re.compile(r"^--iree-hal-target-(?:device|backends)=(?:.*[=,])?(?:cuda|hip|rocm)\b")


def gathered_attention_retry(steps: dict, stages: list[str], iree_flags: list[str]
                             ) -> dict | None:
    """The steps to compile again with after a crash, or None: when IREE crashed in one of its
    own segments from the linalg hook on, for a CUDA or ROCm target, and rewrite-attention ran
    without `gpu-gathered` given, the same steps with rewrite-attention{gpu-gathered=true}
    (it decomposes the attentions that read a paged cache, which IREE 3.13 crashes on for
    some shapes, and leaves fused by default: fused is faster where it compiles). The
    compiler's modules load here, not when the tools start (the shim imports this file)."""
    from ..compiler.fusions_flags import with_option

    if not _failed_in_iree_past_linalg_hook(stages) or \
            not any(_GPU_TARGET.match(f) for f in iree_flags):
        return None
    retry, changed = with_option(steps, "gpu_gathered", True, passes=("rewrite-attention",))
    return retry if changed else None


def _failed_in_iree_past_linalg_hook(stages: list[str]) -> bool:
    """Whether the last step the compile began was one of IREE's own segments from the
    linalg hook on (where a plugin option can change what IREE is given)."""
    from ..compiler.driver import HOOK_PHASE, phase_index

    kind, *phases = stages[-1].split(" ") if stages else ["start"]
    return kind == "iree" and phase_index(phases[0]) >= phase_index(HOOK_PHASE["linalg"])


def _without_fused_tiles(steps: dict, iree_flags: list[str]) -> dict | None:
    """The steps with rewrite-attention{fused-tiles=false}, for a CPU target where
    rewrite-attention runs without `fused-tiles` given; None otherwise."""
    from ..compiler.fusions_flags import with_option

    if any(_GPU_TARGET.match(f) for f in iree_flags):
        return None
    retry, changed = with_option(steps, "fused_tiles", False, passes=("rewrite-attention",))
    return retry if changed else None


def fused_tiles_retry(steps: dict, stages: list[str], iree_flags: list[str]) -> dict | None:
    """The steps to compile again with after IREE failed (an error, not a crash), or None:
    when it failed in one of its own segments from the linalg hook on, for a CPU target, after
    the linalg passes changed the IR, and rewrite-attention ran without `fused-tiles` given,
    the same steps with rewrite-attention{fused-tiles=false}. With the plugin's tiles on a
    fused attention, IREE's CPU codegen can refuse an op it fused into that dispatch (its
    large-vector check: rewrite_attention/tiles.py); the decomposition compiles."""
    if not _failed_in_iree_past_linalg_hook(stages) or "changed" not in stages:
        return None
    return _without_fused_tiles(steps, iree_flags)


def compile_with_retries(
    compile_once: Callable[[dict, int | None], tuple[int, int | None, list[str]]],
    steps: dict, iree_flags: list[str], prog: str,
) -> tuple[int, int | None, list[str], dict]:
    """`compile_once(steps, stderr)` (a forked compile: exit code, signal, stages), and once
    more with the steps of a retry where one applies: after a crash on a GPU target
    (`gathered_attention_retry`) or an IREE error on IR the plugin changed
    (`fused_tiles_retry`), with a warning. Where an error would be retried, the first
    attempt's standard error is held back (a temporary file): printed as it was if no retry
    follows, summed up in the warning (IREE's first error line) if one does. Returns the last
    attempt's (code, signal, stages) and its steps."""
    import tempfile

    held = tempfile.TemporaryFile() \
        if _without_fused_tiles(steps, iree_flags) is not None else None
    code, sig, stages = compile_once(steps, held.fileno() if held is not None else None)
    retry = None if sig is None else gathered_attention_retry(steps, stages, iree_flags)
    tiles_retry = None if sig is not None or code == 0 else \
        fused_tiles_retry(steps, stages, iree_flags)
    if held is not None:
        held.seek(0)
        text = held.read().decode(errors="replace")
        held.close()
        if tiles_retry is None:
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            errors = [line for line in text.splitlines() if ": error: " in line]
            print(f"{prog}: warning: {FUSED_TILES_RETRY}"
                  + (f"; IREE said: {errors[0]}" if errors else ""), file=sys.stderr)
    if retry is not None:
        print(f"{prog}: warning: " + retry_message(sig, stages), file=sys.stderr)
    retry = retry or tiles_retry
    if retry is None:
        return code, sig, stages, steps
    return (*compile_once(retry, None), retry)


FUSED_TILES_RETRY = ("IREE failed on IR the plugin had changed; compiling again with "
                     "rewrite-attention{fused-tiles=false} (the attentions it kept fused with "
                     "its CPU tiles decomposed instead)")


def retry_message(sig: int, stages: list[str]) -> str:
    """What the CLI says when `gathered_attention_retry` compiles again."""
    return (f"IREE crashed ({describe_signal(sig)}) at step '{stages[-1]}' on a GPU target, "
            "where IREE 3.13 crashes on some fused attentions reading a paged cache; compiling "
            "again with rewrite-attention{gpu-gathered=true} (those attentions decomposed)")
