"""`find` never changes the IR: every built-in pass's find, run to the end on every case of
the lit files (each chunk with the options of the file's first RUN line for that pass),
leaves the module printing exactly as before. What a pass must rewrite to match (views moved
next to their operands, an importer's idiom) it does in `normalize`, which the driver calls
before each round; this test runs normalize first, then checks find alone."""

from __future__ import annotations

import pathlib
import re

import pytest
from iree.compiler import ir

from iree_fusions.compiler import registry
from iree_fusions.compiler.files import split_input
from iree_fusions.compiler.ir_helpers import functions
from iree_fusions.compiler.protocol import CandidatePass, PassContext, PassReport
from iree_fusions.compiler.pipeline import parse_pipeline

LIT = pathlib.Path(__file__).resolve().parents[1] / "passes"
_RUN_PASS = re.compile(r"-p '?([a-z-]+(?:\{[^}]*\})?)")


def _cases():
    for path in sorted(LIT.glob("*.mlir")):
        text = path.read_bytes()
        steps = {}
        for line in text.decode().splitlines():
            if line.startswith("// RUN:") and (found := _RUN_PASS.search(line)):
                element = found.group(1)
                name = element.split("{")[0]
                if registry.is_registered(name):
                    steps.setdefault(name, element)
        for offset, chunk in split_input(text):
            for name, element in steps.items():
                yield pytest.param(chunk, element, id=f"{path.stem}:{offset + 1}:{name}")


@pytest.mark.parametrize("chunk, element", list(_cases()))
def test_find_leaves_the_ir_unchanged(chunk, element):
    with ir.Context():
        module = ir.Module.parse(chunk)
        (step,) = parse_pipeline(element)
        pass_ = step.plugin
        assert isinstance(pass_, CandidatePass)
        ctx = PassContext(module.operation, PassReport(pass_.name))
        for func in list(functions(module.operation)):
            for block in func.regions[0].blocks:
                pass_.normalize(block, ctx)
        before = module.operation.get_asm()
        for func in list(functions(module.operation)):
            for block in func.regions[0].blocks:
                found = list(pass_.find(block, ctx))
                assert all(c.key for c in found)
        assert module.operation.get_asm() == before, f"{pass_.name}'s find changed the IR"
