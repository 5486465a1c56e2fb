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

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable

ISSUES = "https://github.com/iree-org/iree/issues"


def run_forked(work: Callable[[Callable[[str], None]], int]) -> tuple[int, int | None,
                                                                     list[str]]:
    """Runs `work(stage)` in a child process: (exit code, killing signal or None, stages)."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        code = 1
        try:
            code = work(lambda text: os.write(write_fd, (text + "\n").encode()))
        except BaseException:  # a Python error: print it as the process would, exit 1
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(4096):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    stages = b"".join(chunks).decode().splitlines()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), os.WTERMSIG(status), stages
    return os.WEXITSTATUS(status), None, stages


def describe_crash(sig: int, stages: list[str], stock_argv: list[str], prog: str) -> str:
    """What crashed, where, and how to reproduce it (`stock_argv`: the same compile as plain
    iree-compile arguments, without the plugin's flags and without -o)."""
    name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
    last = stages[-1] if stages else "start"
    changed = "changed" in stages
    stock = shlex.join(["iree-compile", *stock_argv, "-o", os.devnull])
    kind, *rest = last.split(" ")
    if kind == "parse":
        lines = [f"{prog}: error: IREE crashed ({name}) while parsing the input "
                 "(ireeCompilerInvocationParseSource); no plugin pass had run.",
                 *_stock_diagnostics(stock_argv),
                 f"  plain iree-compile, for IREE's own diagnostics: {stock}",
                 f"  the crash itself is an IREE bug: please report it ({ISSUES})"]
        return "\n".join(lines)
    if kind == "plugin":
        hook, passes = rest
        return (f"{prog}: error: the process crashed ({name}) in the plugin's passes "
                f"({passes}) at the end of phase '{hook}': a plugin bug (or one in the MLIR "
                "Python bindings).\n"
                f"  work around it with --fusions=none (or --fusions= without the pass), and "
                f"report it with:\n  {prog} {shlex.join(stock_argv)} --compile-to={hook} "
                "--emit-mlir-bytecode -o repro.mlirbc\n"
                f"  iree-fusions-opt repro.mlirbc -p '{passes}'")
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
            f"  the rewritten IR: {prog} {shlex.join(stock_argv)} --compile-to={phase} "
            "--emit-mlir-bytecode -o repro.mlirbc\n"
            f"  then: iree-compile repro.mlirbc --compile-from={phase} "
            f"{shlex.join(a for a in stock_argv[1:] if not a.startswith('--compile-from'))}")


def _stock_diagnostics(stock_argv: list[str], limit: int = 20) -> list[str]:
    """What plain iree-compile says about the input (its parser reports errors where the
    C API's crashes), shortened."""
    exe = os.path.join(os.path.dirname(sys.executable), "iree-compile")
    cmd = [exe if os.path.exists(exe) else "iree-compile", *stock_argv, "--compile-to=input",
           "-o", os.devnull]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return []
    lines = [line if len(line) <= 200 else line[:200] + "..."
             for line in proc.stderr.splitlines() if line.strip()]
    if not lines:
        return []
    return ["  plain iree-compile says:", *(f"    {line}" for line in lines[:limit])]
