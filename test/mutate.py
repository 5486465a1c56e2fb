#!/usr/bin/env python3
"""Mutation testing: do the tests that cover a module fail when it has a small bug?

    python test/mutate.py MODULE [MODULE ...] [--max N] [--seed S] [-j N] [--list] [--json F]
                          [--again F] [--only FILE]

MODULE is a source path (python/iree_fusions/runtime/profile.py, mlir_passes/rewrite_attention,
a folder: each .py in it) or a key of test/mutation.toml, which names the tests that cover each
module (pytest files or node ids, lit files). Each mutant is one small change of one line, made
on the module's syntax tree (operators.py-style: a comparison's boundary or sense, an arithmetic
or bitwise operator, `and`/`or`, a dropped `not` or minus, an integer constant plus one,
True/False, min/max, an `if` condition negated); docstrings, annotations and strings are not
mutated. Each runs in a copy of the repository's tracked files (a folder of its own, the
copy's python/ first on PYTHONPATH, so the tests, their subprocesses and lit's tools import the
mutant and nothing else sees it), with the covering tests: lit, then pytest -x. A mutant is
killed when they fail (or time out: 4x the unmutated run), survives when they pass. The tests
must pass unmutated first.

Mutants listed in test/mutation.toml's `equivalent` table of the module (by the text the tool
prints, `LINE: BEFORE -> AFTER`) with a reason are not counted. The score is killed /
(killed + survived). --max samples N mutants (seeded) of each module; --list prints the
mutants without running them.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = os.path.join(HERE, "mutation.toml")

_COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                  ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
                  ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BINOP_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv,
                ast.FloorDiv: ast.Mult, ast.Div: ast.Mult, ast.Mod: ast.FloorDiv,
                ast.Pow: ast.Mult, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
                ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr}
_CALL_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclasses.dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository
    line: int
    start: tuple[int, int]  # (line, col) of the replaced source span
    end: tuple[int, int]
    before: str
    after: str
    change: str  # what changed, short: "`<` -> `<=`", "drop `not`", "negate the `if`"

    @property
    def label(self) -> str:
        """Stable while the file is: how test/mutation.toml's `equivalent` names it."""
        return f"{self.line}:{self.start[1]}: {self.change}"

    @property
    def shown(self) -> str:
        before = " ".join(self.before.split())
        return f"{self.label}   ({before[:70]}{'...' if len(before) > 70 else ''})"

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        a = offsets[self.start[0] - 1] + _byte_col(lines[self.start[0] - 1], self.start[1])
        b = offsets[self.end[0] - 1] + _byte_col(lines[self.end[0] - 1], self.end[1])
        return source[:a] + self.after + source[b:]


def _byte_col(line: str, col: int) -> int:
    """ast's col_offset counts UTF-8 bytes: the character index of that byte."""
    return len(line.encode()[:col].decode(errors="ignore"))


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations (and everything inside them)."""
    skip: set[int] = set()

    def drop(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            drop(body[0])
        if isinstance(node, ast.AnnAssign):
            drop(node.annotation)
        elif isinstance(node, ast.arg):
            drop(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            drop(node.returns)
        elif isinstance(node, ast.JoinedStr):
            drop(node)
    return skip


def _symbol(op: ast.AST) -> str:
    node = ast.Compare(ast.Name("a"), [op], [ast.Name("b")]) if isinstance(op, ast.cmpop) \
        else ast.BinOp(ast.Name("a"), op, ast.Name("b"))
    return " ".join(ast.unparse(node).split()[1:-1])


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                               and isinstance(node.value, (str, bytes)))


def _variants(node: ast.AST) -> list[tuple[ast.AST, str]]:
    """The mutated copies of one node (the node's own change only), each with what changed."""
    out: list[tuple[ast.AST, str]] = []

    def copy(**changes) -> ast.AST:
        new = ast.parse(ast.unparse(node), mode="eval").body
        for k, v in changes.items():
            setattr(new, k, v)
        return new

    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE_SWAPS:
                ops = list(copy().ops)
                new = _COMPARE_SWAPS[type(op)]()
                ops[i] = new
                out.append((copy(ops=ops), f"`{_symbol(op)}` -> `{_symbol(new)}`"))
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAPS \
            and not (_is_text(node.left) or _is_text(node.right)):
        new = _BINOP_SWAPS[type(node.op)]()
        out.append((copy(op=new), f"`{_symbol(node.op)}` -> `{_symbol(new)}`"))
    elif isinstance(node, ast.BoolOp):
        new, old = ("or", "and") if isinstance(node.op, ast.And) else ("and", "or")
        out.append((copy(op=ast.Or() if new == "or" else ast.And()), f"`{old}` -> `{new}`"))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        out.append((ast.parse(ast.unparse(node.operand), mode="eval").body,
                    "drop `not`" if isinstance(node.op, ast.Not) else "drop `-`"))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append((ast.Constant(not node.value), f"`{node.value}` -> `{not node.value}`"))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out.append((ast.Constant(node.value + 1), f"`{node.value}` -> `{node.value + 1}`"))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _CALL_SWAPS:
        new = copy()
        new.func = ast.Name(_CALL_SWAPS[node.func.id], ast.Load())
        out.append((new, f"`{node.func.id}` -> `{new.func.id}`"))
    return out


def mutants(path: str, root: str = ROOT) -> list[Mutant]:
    """Every mutant of one file (under `root`), in source order."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source)
    skip = _skipped_nodes(tree)
    found: list[Mutant] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.If, ast.While)) and not isinstance(node.test, ast.Constant):
            test = node.test
            found.append(Mutant(path, test.lineno, (test.lineno, test.col_offset),
                                (test.end_lineno, test.end_col_offset),
                                ast.get_source_segment(source, test),
                                f"not ({ast.unparse(test)})", "negate the condition"))
            continue
        if not hasattr(node, "lineno"):
            continue
        before = ast.get_source_segment(source, node)
        for variant, change in _variants(node):
            after = ast.unparse(variant)
            if isinstance(variant, ast.expr) and not isinstance(variant, (ast.Constant, ast.Name)):
                after = f"({after})"
            found.append(Mutant(path, node.lineno, (node.lineno, node.col_offset),
                                (node.end_lineno, node.end_col_offset), before, after, change))
    found = [m for m in found if _compiles(m, source)]
    return sorted(found, key=lambda m: (m.start, m.end, m.after))


def _compiles(m: Mutant, source: str) -> bool:
    try:
        compile(m.apply(source), m.path, "exec")
        return True
    except SyntaxError:
        return False


@dataclasses.dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, survived, timeout, equivalent
    seconds: float
    by: str = ""  # the first failing test (pytest) or lit file


class Workspace:
    """A copy of the repository's files (tracked, and untracked ones git does not ignore),
    taken once (`snapshot`), or of a snapshot (`of`): the mutant is written there only, and
    edits to the tree while mutants run reach none of them."""

    def __init__(self, parent: str, of: Workspace | None = None) -> None:
        self.root = tempfile.mkdtemp(prefix="mutant-", dir=parent)
        if of is not None:
            shutil.copytree(of.root, self.root, symlinks=True, dirs_exist_ok=True)
        else:
            files = subprocess.run(
                ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
            for rel in filter(None, files):
                src = os.path.join(ROOT, rel)
                if os.path.isfile(src):
                    dst = os.path.join(self.root, rel)
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copy2(src, dst)
            # The install's package layout (pyproject's package-dir): passes in the package.
            # (relative: each copy of the snapshot reads its own passes)
            os.symlink(os.path.join("..", "..", "mlir_passes"),
                       os.path.join(self.root, "python", "iree_fusions", "passes"))
        bin_dir = os.path.dirname(sys.executable)
        self.env = dict(os.environ, PYTHONPATH=os.path.join(self.root, "python"),
                        PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
                        PYTHONDONTWRITEBYTECODE="1")

    def write(self, path: str, text: str) -> None:
        with open(os.path.join(self.root, path), "w", encoding="utf-8") as f:
            f.write(text)

    def run_tests(self, pytest_args: list[str], lit_args: list[str], timeout: float
                  ) -> tuple[str, float, str]:
        """(passed | failed | timeout, seconds, the first failure's name)."""
        start = time.monotonic()
        commands = []  # lit first: it takes seconds, and most mutants of a pass fail it
        if lit_args:
            commands.append([os.path.join(os.path.dirname(sys.executable), "lit"), "-q",
                             *lit_args])
        if pytest_args:
            commands.append([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                             "--no-header", *pytest_args])
        for command in commands:
            left = timeout - (time.monotonic() - start)
            try:
                res = subprocess.run(command, cwd=self.root, env=self.env, capture_output=True,
                                     text=True, errors="replace", timeout=max(left, 1))
            except subprocess.TimeoutExpired:
                return "timeout", time.monotonic() - start, " ".join(command[-1:])
            if res.returncode != 0:
                return "failed", time.monotonic() - start, _first_failure(res.stdout)
        return "passed", time.monotonic() - start, ""

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        for marker in ("FAILED ", "ERROR ", "FAIL: ", "UNRESOLVED: "):
            if line.startswith(marker):
                return line[len(marker):].split(" - ")[0].strip()
    return output.strip().splitlines()[-1][:120] if output.strip() else ""


def load_config() -> dict:
    with open(CONFIG, "rb") as f:
        return tomllib.load(f)["module"]


def module_files(name: str, config: dict) -> list[tuple[str, dict]]:
    """(file, its config) for a module name, file or folder."""
    entry = config.get(name)
    if entry is None:
        matches = [k for k, v in config.items() if os.path.normpath(v["path"]) ==
                   os.path.normpath(name)]
        if not matches:
            raise SystemExit(f"{name}: not in {os.path.relpath(CONFIG, ROOT)} (add its tests)")
        entry = config[matches[0]]
    path = entry["path"]
    if os.path.isdir(os.path.join(ROOT, path)):
        files = sorted(os.path.join(path, f) for f in os.listdir(os.path.join(ROOT, path))
                       if f.endswith(".py"))
    else:
        files = [path]
    return [(f, entry) for f in files]


def run_module(name: str, config: dict, args: argparse.Namespace, parent: str) -> dict:
    files = module_files(name, config)
    entry = files[0][1]
    equivalent = entry.get("equivalent", {})
    snapshot = Workspace(parent)
    every = [m for f, _ in files for m in mutants(f, snapshot.root)
             if not args.only or m.path.endswith(args.only)]
    chosen = every
    if args.max and len(every) > args.max:
        chosen = sorted(random.Random(args.seed).sample(every, args.max),
                        key=lambda m: (m.path, m.start))
    if args.again:
        with open(args.again) as f:
            labels = {label for row in json.load(f) if row["module"] == name
                      for label in row.get("survivors", [])}
        chosen = [m for m in every if _relabel(m, entry) in labels]
    if args.list:
        for m in chosen:
            print(f"{m.path}:{m.shown}")
        return {"module": name, "mutants": len(every)}
    pytest_args, lit_args = entry.get("pytest", []), entry.get("lit", [])
    base = Workspace(parent, of=snapshot)
    status, seconds, by = base.run_tests(pytest_args, lit_args, timeout=3600)
    base.remove()
    if status != "passed":
        raise SystemExit(f"{name}: the tests fail unmutated ({by}): fix them first")
    timeout = 4 * seconds + 30

    def one(m: Mutant) -> Outcome:
        label = _relabel(m, entry)
        if label in equivalent:
            return Outcome(m, "equivalent", 0.0, equivalent[label])
        ws = Workspace(parent, of=snapshot)
        try:
            with open(os.path.join(snapshot.root, m.path), encoding="utf-8") as f:
                ws.write(m.path, m.apply(f.read()))
            st, secs, first = ws.run_tests(pytest_args, lit_args, timeout)
        finally:
            ws.remove()
        return Outcome(m, {"failed": "killed", "passed": "survived"}.get(st, st), secs, first)

    outcomes = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.j)) as pool:
        for o in pool.map(one, chosen):
            outcomes.append(o)
            print(f"  {o.status:10} {o.mutant.path}:{o.mutant.shown}"
                  + (f"  [{o.by}]" if o.by else ""), flush=True)
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    survived = sum(o.status == "survived" for o in outcomes)
    score = killed / (killed + survived) if killed + survived else 1.0
    print(f"{name}: {killed} killed, {survived} survived, "
          f"{sum(o.status == 'equivalent' for o in outcomes)} equivalent, of {len(chosen)} run"
          f" ({len(every)} mutants in all): score {score:.0%} (unmutated tests {seconds:.0f} s)")
    return {"module": name, "mutants": len(every), "run": len(chosen), "killed": killed,
            "survived": survived, "score": score, "test_seconds": seconds,
            "survivors": [_relabel(o.mutant, entry) for o in outcomes
                          if o.status == "survived"]}


def _relabel(m: Mutant, entry: dict) -> str:
    """The mutant's label within its module: in a folder, prefixed by the file's name."""
    return m.label if m.path == entry["path"] else \
        f"{os.path.relpath(m.path, entry['path'])}:{m.label}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("modules", nargs="+", help="keys of test/mutation.toml or paths")
    parser.add_argument("--max", type=int, default=0, help="mutants per module (sampled)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-j", type=int, default=1, help="mutants run at once")
    parser.add_argument("--list", action="store_true", help="print the mutants only")
    parser.add_argument("--only", metavar="FILE",
                        help="in a folder module, the mutants of the file(s) ending so")
    parser.add_argument("--json", help="write the summary rows here")
    parser.add_argument("--again", metavar="JSON",
                        help="run only the survivors of an earlier run's --json")
    args = parser.parse_args(argv)
    config = load_config()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as parent:
        for name in args.modules:
            rows.append(run_module(name, config, args, parent))
            if args.json:  # after each module: a long run's finished rows are kept
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
    return 0 if all(r.get("survived", 0) == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
