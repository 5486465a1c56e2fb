#!/usr/bin/env python3
"""Do the lit tests check what their passes change? Each plugin pass in the RUN lines is
replaced by a stand-in that changes nothing (test/noop/iree_fusions_lit_noop.py: it reports
`[<pass>] 0 change(s), 0 skipped` and emits no remark), chunk by chunk; every chunk that the
real pipeline changes must then fail at least one RUN line of that pipeline, which passes on
the chunk with the real pass.

    python test/check_lit_noop.py [FILE.mlir ...] [-j N] [-v]

With no file: every .mlir under test/ that lit runs. For each file, each plugin pipeline of its
RUN lines (the `-p` of the line's first iree-fusions-opt; IDEM lines share their first run's)
is run on the whole file with --split-input-file, once as written and once with the stand-ins;
the chunks whose IR differs are the ones the pipeline changes. Each such chunk is then written
alone (padded with blank lines, so it keeps its line numbers, as --split-input-file does) and
the FileCheck RUN lines of that pipeline whose checks it holds are run on it (`%s` = the chunk)
with the stand-ins, until FileCheck itself fails (its exit status, not the pipeline's: a
command before it that fails, a `-verify-diagnostics` line whose expected remark never comes,
says nothing about the CHECK lines); that line must pass with the real pipeline (else the
failure says nothing about the pass). A chunk whose CHECK lines no stand-in fails survives a
no-op: the script names it and exits 1.

The tools are those of the running interpreter (its bin/ first on PATH, as lit.cfg.py does).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NOOP_DIR = os.path.join(HERE, "noop")
NOOP_MODULE = "iree_fusions_lit_noop"
NOOP_PREFIX = "lit-noop-"
SPLIT_MARKER = "// -----"
TIMEOUT = 600

_RUN = re.compile(r"^\s*//\s*RUN:\s?(.*)$")
# `-p PIPELINE` / `--pass-pipeline=PIPELINE` of an iree-fusions-opt invocation.
_PIPELINE = re.compile(r"""(?P<flag>(?<!\S)-p\s+|(?<!\S)--pass-pipeline[=\s]\s*)"""
                       r"""(?P<value>'[^']*'|"[^"]*"|[^\s|;&]+)""")
_OPT = re.compile(r"(?<![\w/-])iree-fusions-opt(?![\w-])")
_DIRECTIVE_SUFFIX = r"(?:-(?:LABEL|NOT|DAG|SAME|NEXT|EMPTY|COUNT-\d+))?:"


@dataclasses.dataclass
class RunLine:
    number: int  # 1-based line of the file where the RUN line starts
    command: str
    pipeline: str | None  # the first iree-fusions-opt's -p, when it names a plugin pass
    prefixes: tuple[str, ...] | None  # FileCheck's prefixes, None without FileCheck
    # What the first iree-fusions-opt reads when it reads stdin: the commands before it
    # (`sed -e 's/a/b/' %s`), else "" (it reads %s).
    feed: str = ""
    report: bool = False  # FileCheck reads the last iree-fusions-opt's --fusions-report

    @property
    def config(self) -> tuple[str, str]:
        return self.feed, self.pipeline or ""

    def holds_checks(self, chunk: str) -> bool:
        """Whether this line checks anything in `chunk`: a FileCheck directive of one of its
        prefixes, or (no FileCheck) always: -verify-diagnostics reads the chunk's expected-*,
        an exit status is the chunk's own."""
        if self.prefixes is None:
            return True
        alternatives = "|".join(re.escape(p) for p in self.prefixes)
        return re.search(rf"(?<![\w-])(?:{alternatives}){_DIRECTIVE_SUFFIX}", chunk) is not None


@dataclasses.dataclass
class Chunk:
    index: int
    offset: int  # lines of the file before it
    text: str

    @property
    def first_line(self) -> int:
        return self.offset + 1

    def name(self) -> str:
        m = re.search(r"@([\w$.]+)\s*\(", self.text)
        return f"@{m.group(1)}" if m else f"chunk {self.index}"


@dataclasses.dataclass
class Verdict:
    chunk: Chunk
    pipeline: str
    failing_line: int | None = None  # the RUN line the no-op fails (None: survives)
    notes: list[str] = dataclasses.field(default_factory=list)


def plugin_names() -> set[str]:
    from iree_fusions.compiler import registry

    return {n for n in registry.REGISTRY if not n.startswith(NOOP_PREFIX)}


def split_chunks(text: str) -> list[Chunk]:
    """As iree-fusions-opt --split-input-file splits (compiler/files.py split_input)."""
    chunks, start, current = [], 0, []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk(len(chunks), start, "".join(current)))
            start, current = i + 1, []
        else:
            current.append(line)
    chunks.append(Chunk(len(chunks), start, "".join(current)))
    return chunks


def _unquote(value: str) -> str:
    return value[1:-1] if value[:1] in "'\"" and value[-1:] == value[:1] else value


def _split_elements(pipeline: str) -> list[str]:
    from iree_fusions.compiler.pipeline import split_top_level

    return split_top_level(pipeline)


def _has_plugin(pipeline: str, plugins: set[str]) -> bool:
    return any(e.partition("{")[0].strip() in plugins for e in _split_elements(pipeline))


def _filecheck_prefixes(command: str) -> tuple[str, ...] | None:
    stages = command.split("|")
    for stage in stages:
        words = shlex.split(stage)
        if "filecheck" not in words and "FileCheck" not in words:
            continue
        prefixes: list[str] = []
        for i, w in enumerate(words):
            for flag in ("--check-prefix", "--check-prefixes", "-check-prefix",
                         "-check-prefixes"):
                if w == flag and i + 1 < len(words):
                    prefixes += words[i + 1].split(",")
                elif w.startswith(flag + "="):
                    prefixes += w.split("=", 1)[1].split(",")
        return tuple(prefixes) or ("CHECK",)
    return None


def run_lines(text: str, plugins: set[str]) -> list[RunLine]:
    lines, pending, start = [], "", 0
    for number, line in enumerate(text.splitlines(), 1):
        m = _RUN.match(line)
        if not m:
            continue
        body = m.group(1).rstrip()
        if not pending:
            start = number
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        command, pending = pending + body, ""
        pipeline, feed = None, ""
        opt = _OPT.search(command)
        if opt:
            p = _PIPELINE.search(command, opt.end())
            if p and _has_plugin(_unquote(p.group("value")), plugins):
                pipeline = _unquote(p.group("value"))
            before = re.sub(r"\bnot\s*$", "", command[:opt.start()].rstrip()).rstrip()
            if before.endswith("|"):
                feed = before[:-1].strip()
        stages = command.split("|")
        report = any("--fusions-report" in st and _OPT.search(st) for st in stages) and \
            "2>&1" in command
        lines.append(RunLine(start, command, pipeline, _filecheck_prefixes(command), feed,
                             report))
    return lines


def noop_pipeline(pipeline: str, plugins: set[str]) -> str:
    """Every plugin pass (options dropped) -> its stand-in; MLIR passes kept."""
    out = []
    for element in _split_elements(pipeline):
        name = element.partition("{")[0].strip()
        out.append(NOOP_PREFIX + name if name in plugins else element)
    return ",".join(out)


def noop_command(command: str, plugins: set[str]) -> str:
    """The RUN line with each iree-fusions-opt's pipeline replaced by the stand-ins."""
    def sub(m: re.Match) -> str:
        value = _unquote(m.group("value"))
        if not _has_plugin(value, plugins):
            return m.group(0)
        return (f"{m.group('flag')}{shlex.quote(noop_pipeline(value, plugins))} "
                f"--fusions-load={NOOP_MODULE}")
    return _PIPELINE.sub(sub, command)


class Runner:
    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        bin_dir = os.path.dirname(sys.executable)
        self.env = dict(os.environ)
        self.env["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
        self.env["PYTHONPATH"] = os.pathsep.join(
            [NOOP_DIR, *filter(None, [os.environ.get("PYTHONPATH")])])
        self.opt = os.path.join(bin_dir, "iree-fusions-opt")
        if not os.path.exists(self.opt):
            self.opt = "iree-fusions-opt"

    def shell(self, command: str, path: str, source: str, pipefail: bool = True
              ) -> subprocess.CompletedProcess:
        """A RUN line, `%s` = path, `%S` = the source file's folder (lit's substitutions).
        pipefail=False: the status is the last command's (FileCheck's), as lit's is not."""
        fd, tmp = tempfile.mkstemp(dir=self.workdir, prefix="t-")
        os.close(fd)
        text = (command.replace("%python", shlex.quote(sys.executable))
                .replace("%S", shlex.quote(os.path.dirname(os.path.abspath(source))))
                .replace("%s", shlex.quote(path)).replace("%t", shlex.quote(tmp)))
        script = "not() { ! \"$@\"; }\n" + text  # lit's `not` (its shell's builtin)
        return subprocess.run(["bash", "-o" if pipefail else "+o", "pipefail", "-c", script],
                              check=False,
                              capture_output=True,
                              text=True, errors="replace", env=self.env, timeout=TIMEOUT,
                              cwd=self.workdir)

    def opt_chunks(self, path: str, pipeline: str, noop: bool) -> tuple[int, str]:
        args = [self.opt, path, "--split-input-file", "-p", pipeline]
        if noop:
            args.append(f"--fusions-load={NOOP_MODULE}")
        res = subprocess.run(args, check=False, capture_output=True, text=True, errors="replace",
                             env=self.env, timeout=TIMEOUT, cwd=self.workdir)
        return res.returncode, res.stdout


def _outputs_by_chunk(stdout: str) -> list[str]:
    return [c.strip() for c in re.split(r"^// -----$", stdout, flags=re.MULTILINE)]


def _chunk_file(workdir: str, source: str, chunk: Chunk) -> str:
    rel = os.path.relpath(os.path.abspath(source), os.path.dirname(HERE))
    base = rel.removesuffix(".mlir").replace(os.sep, "+")
    path = os.path.join(workdir, f"{base}.chunk{chunk.index}.mlir")
    if not os.path.exists(path):
        _write(path, "\n" * chunk.offset + chunk.text)
    return path


def _write(path: str, text: str) -> None:
    """Whole or not at all (threads may ask for the same file at once)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _fed(runner: Runner, feed: str, path: str, source: str) -> str:
    """The file iree-fusions-opt reads: `path`, or what the RUN line's feed makes of it."""
    if not feed:
        return path
    name = os.path.basename(path).removesuffix(".mlir")
    out = os.path.join(runner.workdir, f"{name}.fed{abs(hash(feed))}.mlir")
    if not os.path.exists(out):
        res = runner.shell(feed, path, source)
        if res.returncode != 0:
            raise RuntimeError(f"{feed}: {res.stderr.strip()}")
        _write(out, res.stdout)
    return out


def changed_chunks(runner: Runner, source: str, chunks: list[Chunk], config: tuple[str, str],
                   plugins: set[str]) -> list[Chunk]:
    """The chunks whose printed IR the pipeline changes (vs. the stand-ins)."""
    feed, pipeline = config
    noop = noop_pipeline(pipeline, plugins)
    whole = _fed(runner, feed, os.path.abspath(source), source)
    real_rc, real = runner.opt_chunks(whole, pipeline, noop=False)
    noop_rc, plain = runner.opt_chunks(whole, noop, noop=True)
    real_out, noop_out = _outputs_by_chunk(real), _outputs_by_chunk(plain)
    if real_rc == noop_rc == 0 and len(real_out) == len(noop_out) == len(chunks):
        return [c for c, a, b in zip(chunks, real_out, noop_out) if a != b]
    changed = []  # a chunk failed somewhere: the chunks one by one
    for chunk in chunks:
        path = _fed(runner, feed, _chunk_file(runner.workdir, source, chunk), source)
        if runner.opt_chunks(path, pipeline, False) != runner.opt_chunks(path, noop, True):
            changed.append(chunk)
    return changed


def judge(runner: Runner, source: str, chunk: Chunk, config: tuple[str, str],
          lines: list[RunLine], plugins: set[str]) -> Verdict:
    verdict = Verdict(chunk, describe(config))
    path = _chunk_file(runner.workdir, source, chunk)
    mine = [r for r in lines if r.config == config and r.prefixes is not None
            and r.holds_checks(chunk.text)]
    if not mine:
        verdict.notes.append("no FileCheck RUN line of this pipeline checks anything in it")
    for line in mine:
        noop = runner.shell(noop_command(line.command, plugins), path, source, pipefail=False)
        if noop.returncode == 0:
            continue
        real = runner.shell(line.command, path, source)
        if real.returncode == 0:
            verdict.failing_line = line.number
            return verdict
        verdict.notes.append(f"RUN line {line.number} fails on the chunk alone even with the "
                             f"real pass: {(real.stderr or real.stdout).strip()[-400:]}")
    return verdict


def describe(config: tuple[str, str]) -> str:
    feed, pipeline = config
    return f"{feed} | {pipeline}" if feed else pipeline


_HEADER = re.compile(r"\[([a-z0-9-]+)\] (?:\d+|\{\{[^}]*\}\}) change\(s\)")


def unheaded_reports(lines: list[RunLine], chunks: list[Chunk], plugins: set[str]
                     ) -> list[str]:
    """Report checks (FileCheck reading --fusions-report) of a chunk that do not check each
    pass's `[pass] N change(s)` header positively: an extra change would pass them."""
    problems = []
    for line in lines:
        if not (line.report and line.pipeline and line.prefixes):
            continue
        stages = [s for s in line.command.split("|") if _OPT.search(s)]
        p = _PIPELINE.search(stages[-1])
        passes = [e.partition("{")[0].strip() for e in _split_elements(_unquote(p.group("value")))]
        passes = [n for n in passes if n in plugins]
        alternatives = "|".join(re.escape(x) for x in line.prefixes)
        positive = re.compile(rf"(?<![\w-])(?:{alternatives})(?:-(?:NEXT|SAME|DAG|"
                              rf"LABEL|COUNT-\d+))?:(.*)$", re.MULTILINE)
        for chunk in chunks:
            if not line.holds_checks(chunk.text):
                continue
            checked = {m.group(1) for d in positive.finditer(chunk.text)
                       for m in _HEADER.finditer(d.group(1))}
            missing = [n for n in passes if n not in checked]
            if missing:
                problems.append(f"{chunk.name()} (line {chunk.first_line}): RUN line "
                                f"{line.number}'s report checks lack the header "
                                f"`[{missing[0]}] N change(s)`")
    return problems


def lit_files() -> list[str]:
    found = []
    for root, dirs, files in os.walk(HERE):
        dirs[:] = sorted(d for d in dirs if d not in ("python", "Inputs", "noop", "iree_e2e"))
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".mlir")]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("files", nargs="*", help="lit files (default: every one under test/)")
    parser.add_argument("-j", type=int, default=os.cpu_count() or 1, help="parallel runs")
    parser.add_argument("-v", action="store_true", help="name every changed chunk")
    args = parser.parse_args(argv)
    plugins = plugin_names()
    files = args.files or lit_files()
    failed = False
    with tempfile.TemporaryDirectory(prefix="lit-noop-") as workdir, \
            concurrent.futures.ThreadPoolExecutor(max(1, args.j)) as pool:
        runner = Runner(workdir)
        parsed = {}
        changes = {}
        for source in files:
            with open(source) as f:
                text = f.read()
            lines = run_lines(text, plugins)
            chunks = split_chunks(text)
            pipelines = list(dict.fromkeys(r.config for r in lines if r.pipeline))
            parsed[source] = (lines, chunks, pipelines)
            for p in pipelines:
                changes[source, p] = pool.submit(changed_chunks, runner, source, chunks, p,
                                                 plugins)
        verdicts = {}
        for source, (lines, chunks, pipelines) in parsed.items():
            for p in pipelines:
                for chunk in changes[source, p].result():
                    verdicts[source, p, chunk.index] = pool.submit(
                        judge, runner, source, chunk, p, lines, plugins)
        for source, (lines, chunks, pipelines) in parsed.items():
            rel = os.path.relpath(source, os.path.dirname(HERE))
            mine = [v.result() for (s, _, _), v in verdicts.items() if s == source]
            survivors = [v for v in mine if v.failing_line is None]
            per_pipeline = ", ".join(
                f"'{describe(p)}' {sum(v.pipeline == describe(p) for v in mine)}"
                for p in pipelines) or "none"
            unheaded = unheaded_reports(lines, chunks, plugins)
            status = "FAIL" if survivors or unheaded else "ok"
            print(f"{status}: {rel}: {len(chunks)} chunk(s); changed by {per_pipeline}; "
                  f"{len(survivors)} survive the no-op")
            for problem in unheaded:
                print(f"    {problem}")
            for v in mine if args.v else survivors:
                where = (f"fails RUN line {v.failing_line}" if v.failing_line is not None
                         else "SURVIVES the no-op")
                print(f"    {v.chunk.name()} (line {v.chunk.first_line}) under '{v.pipeline}':"
                      f" {where}")
                for note in v.notes:
                    print(f"        {note}")
            failed |= bool(survivors or unheaded)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
