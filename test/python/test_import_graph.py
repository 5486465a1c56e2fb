"""The import graph of the package (read from the sources, nothing imported): no module
imports another module's private names, no circle among module-level imports, and the
runtime side (the bundle runner, run on machines with only iree.runtime and numpy) imports
nothing of the compiler side."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = {"iree_fusions": ROOT / "python" / "iree_fusions",
            "iree_fusions.passes": ROOT / "mlir_passes"}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts
                     if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _imports(name: str, path: pathlib.Path, module_level: bool):
    """(imported module, imported name or None, line) of a module's imports: those at module
    level (not under `if TYPE_CHECKING:`), or all of them."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if module_level else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level \
                else node.module
            for alias in node.names:
                yield module, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno


def _targets(name: str, module_level: bool) -> set[str]:
    out = set()
    for module, item, _ in _imports(name, MODULES[name], module_level):
        if item is not None and f"{module}.{item}" in MODULES:
            out.add(f"{module}.{item}")
        elif module in MODULES:
            out.add(module)
    return out - {name}


def test_the_sources_are_found():
    assert "iree_fusions.pass_base" in MODULES
    assert "iree_fusions.passes.batch_gathers.plan" in MODULES


def test_no_module_imports_another_modules_private_names():
    found = [f"{MODULES[name].relative_to(ROOT)}:{line}: {item} from {module}"
             for name in MODULES
             for module, item, line in _imports(name, MODULES[name], module_level=False)
             if item and item.startswith("_") and not item.startswith("__")
             and module in MODULES]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_no_circle_among_module_level_imports():
    graph = {name: _targets(name, module_level=True) for name in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target] if target in path else [target]
            if target not in state and (circle := visit(target, path + [target])):
                return circle
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            circle = visit(name, [name])
            assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_runtime_side_imports_no_compiler():
    runtime = "iree_fusions.bundle_runner"
    imported = {module for module, _, _ in _imports(runtime, MODULES[runtime], False)}
    assert not {m for m in imported if m and m.startswith(("iree.compiler", "iree_fusions"))}
