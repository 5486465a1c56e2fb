"""The modules' old flat paths (before issue 23 moved them into subpackages) still import, as
the same module objects: out-of-tree passes and scripts written against
`iree_fusions.registry`, `from iree_fusions import ir_helpers` keep working, sharing the
modules' state (ContextVars, the pass registry) with the package. (`pass_base` is gone:
issue 35 split it into `iree_fusions.compiler.protocol`, see the release notes.)"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

import iree_fusions
from iree_fusions._moved import MOVED
from conftest import tool


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_path_is_the_module_at_its_new_path(old):
    new = importlib.import_module(MOVED[old])
    assert importlib.import_module(f"iree_fusions.{old}") is new
    assert sys.modules[f"iree_fusions.{old}"] is new
    # the module keeps its own name and spec (the alias's spec does not replace it)
    assert new.__name__ == MOVED[old] and new.__spec__.name == MOVED[old]
    assert getattr(iree_fusions, old) is new
    scope: dict = {}
    exec(f"from iree_fusions import {old} as m\nimport iree_fusions.{old} as m2", scope)
    assert scope["m"] is new and scope["m2"] is new


def test_names_from_old_paths_are_the_same_objects():
    from iree_fusions.compiler import ir_helpers, registry
    from iree_fusions.ir_helpers import ATTRIBUTE_TEXTS, op_location
    from iree_fusions.registry import REGISTRY, register

    assert op_location is ir_helpers.op_location
    assert REGISTRY is registry.REGISTRY and register is registry.register
    assert ATTRIBUTE_TEXTS is ir_helpers.ATTRIBUTE_TEXTS
    token = ATTRIBUTE_TEXTS.set({"shared": True})  # a ContextVar set through the old path
    try:
        assert ir_helpers.ATTRIBUTE_TEXTS.get() == {"shared": True}
    finally:
        ATTRIBUTE_TEXTS.reset(token)


def test_a_module_under_a_moved_package_by_its_old_path():
    import iree_fusions.compiler.dialect_views.linalg as new
    import iree_fusions.dialect_views.linalg as old

    assert old is new


def test_the_script_api_names_still_resolve():
    for name in iree_fusions.__all__:
        assert getattr(iree_fusions, name) is not None, name
    assert iree_fusions.api is importlib.import_module("iree_fusions.harness.api")
    assert iree_fusions.numerics is importlib.import_module("iree_fusions.harness.numerics")
    with pytest.raises(AttributeError):
        iree_fusions.no_such_module  # noqa: B018


def test_old_paths_imported_first_in_a_fresh_process():
    """Old path before new (nothing imported yet): each gives the one module, under its new
    name; none is loaded twice."""
    code = textwrap.dedent("""
        import importlib, sys
        from iree_fusions._moved import MOVED
        for old, new in MOVED.items():
            m = importlib.import_module("iree_fusions." + old)
            assert m.__name__ == new and m.__spec__.name == new, (old, m.__spec__.name)
            assert sys.modules[new] is m and importlib.import_module(new) is m, old
        print("ok", len(MOVED))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["ok", str(len(MOVED))]


def test_python_dash_m_with_an_old_path_runs_the_moved_module():
    res = subprocess.run([sys.executable, "-m", "iree_fusions.plot", "--help"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: python -m iree_fusions.tools.plot")


# An out-of-tree pass written against the flat layout (as docs/protocol.md's CandidatePass
# and test_protocol.py's toy pass), loaded by the tools with --fusions-load.
OLD_STYLE_PASS = '''
from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions import ir_helpers as h
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, NoMatch, PassContext,
                                            structural_key)
from iree_fusions.registry import register


@register
@dataclass(frozen=True)
class OldPathsNegToAbs(CandidatePass[ir.Operation]):
    name = "test-old-paths"
    phase = "linalg"
    description = "arith.negf -> math.absf, written against the old module paths"

    def find(self, block: ir.Block, ctx: PassContext):
        for op in list(block.operations):
            op = op.operation
            if op.name == "arith.negf":
                yield Candidate.of(structural_key("old-neg", h.op_signature(op)), op, "a negf",
                                   lambda op=op: self._plan(op))

    def _plan(self, op):
        if any(u.owner.name == "util.return" for u in op.results[0].uses):
            raise NoMatch("its result is returned")
        return op

    def apply(self, candidate, ctx):
        op = candidate.plan
        with ir.InsertionPoint(op), op.location:
            new = ir.Operation.create("math.absf", [op.results[0].type], [op.operands[0]])
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
        return "negf -> absf"
'''
MODULE = """
util.func public @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = arith.negf %a : tensor<4xf32>
  %1 = arith.negf %b : tensor<4xf32>
  %2 = arith.addf %0, %1 : tensor<4xf32>
  util.return %1, %2 : tensor<4xf32>, tensor<4xf32>
}
"""


def test_an_out_of_tree_pass_on_the_old_paths_registers_and_runs(tmp_path):
    (tmp_path / "old_style_pass.py").write_text(OLD_STYLE_PASS)
    src = tmp_path / "in.mlir"
    src.write_text(MODULE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]))
    listed = subprocess.run([tool("iree-fusions-opt"), "--fusions-load=old_style_pass",
                             "--list-passes"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "test-old-paths" in listed.stdout
    res = subprocess.run([tool("iree-fusions-opt"), str(src), "--fusions-load=old_style_pass",
                          "-p", "test-old-paths", "--fusions-report"],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("math.absf") == 1 and res.stdout.count("arith.negf") == 1
    assert "[test-old-paths] 1 change(s), 1 skipped" in res.stderr
    assert ": negf -> absf" in res.stderr and ": its result is returned" in res.stderr
