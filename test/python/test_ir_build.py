"""The shared generic builders (`ir_build.generic`, `cloned_generic`, `fill`): what they build
verifies and computes what the body says; a fill is built without OpDSL (the start-up cost
it saves: docs/usage.md, "Compile time")."""

from __future__ import annotations

import subprocess
import sys

import pytest
from iree.compiler import ir
from iree.compiler.dialects import arith, func, tensor

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler.ir_helpers import LINALG_FILL, LINALG_GENERIC


def _module(ctx, arg_types: list[str], build) -> ir.Module:
    """A func.func @f taking `arg_types`, its body built by `build(args)` returning values."""
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        types = [ir.Type.parse(t) for t in arg_types]
        with ir.InsertionPoint(module.body):
            f = func.FuncOp("f", (types, []))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                results = build(list(block.arguments))
                func.ReturnOp(results)
            f.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(types, [r.type for r in results]))
        assert module.operation.verify()
    return module


def _ops(op: ir.Module | ir.Operation, name: str) -> list[ir.Operation]:
    """The ops named `name` nested in `op`, in order (keep the module alive while they are
    used)."""
    op = op.operation
    found = [op] if op.name == name else []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                found += _ops(inner, name)
    return found


@pytest.fixture
def ctx():
    return ir.Context()


def test_generic_yields_what_its_body_returns(ctx):
    """One value or a list; the block's arguments are one per input, then per init, of their
    element types."""
    seen = []

    def build(args):
        x = args[0]
        init = tensor.EmptyOp([4], ir.F32Type.get()).result
        init2 = tensor.EmptyOp([4], ir.F32Type.get()).result
        m = b.map_attr(1, [0])

        def neg(a):
            seen.append([v.type for v in a])
            return arith.NegFOp(a[0]).result

        one = b.generic([x], [init], [m, m], ["parallel"], neg)
        two = b.generic([x], [init, init2], [m, m, m], ["parallel"],
                        lambda a: [a[0], arith.AddFOp(a[0], a[0]).result])
        return [one.results[0], *two.results]

    module = _module(ctx, ["tensor<4xf32>"], build)
    text = str(module)
    assert text.count("linalg.generic") == 2
    assert "arith.negf" in text and "arith.addf" in text
    assert [str(t) for t in seen[0]] == ["f32", "f32"]
    gens = _ops(module, LINALG_GENERIC)
    assert [len(g.results) for g in gens] == [1, 2]
    yields = [list(g.regions[0].blocks[0].operations)[-1] for g in gens]
    assert [len(y.operands) for y in yields] == [1, 2]


def test_cloned_generic_renumbers_index_dims(ctx):
    """A body cloned from another generic, its `linalg.index` dims renumbered, verifies (a
    wrong renumbering reads a loop the new op does not have)."""
    src_text = """
    #id = affine_map<(d0) -> (d0)>
    func.func @src(%x: tensor<4xi64>) -> tensor<4xi64> {
      %e = tensor.empty() : tensor<4xi64>
      %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%x : tensor<4xi64>) outs(%e : tensor<4xi64>) {
      ^bb0(%a: i64, %o: i64):
        %i = linalg.index 0 : index
        %c = arith.index_cast %i : index to i64
        %s = arith.addi %a, %c : i64
        linalg.yield %s : i64
      } -> tensor<4xi64>
      return %r : tensor<4xi64>
    }"""
    with ctx:
        src_module = ir.Module.parse(src_text)
    src = _ops(src_module, LINALG_GENERIC)[0]

    def build(args):
        x = args[0]
        init = tensor.EmptyOp([3, 4], ir.IntegerType.get_signless(64)).result
        gen = b.cloned_generic(src, [x], [init], [b.map_attr(2, [1]), b.map_attr(2, [0, 1])],
                               ["parallel", "parallel"], index_map={0: 1})
        return [gen.results[0]]

    module = _module(ctx, ["tensor<4xi64>"], build)
    index = _ops(module, "linalg.index")
    assert [ir.IntegerAttr(op.attributes["dim"]).value for op in index] == [1]


def test_fill(ctx):
    """The scalar filled as it is (the body yields it), of the init's element type only."""
    def build(args):
        init = tensor.EmptyOp([2, 3], ir.F32Type.get()).result
        return [b.fill(arith.ConstantOp(ir.F32Type.get(), 1.5).result, init)]

    module = _module(ctx, [], build)
    fills = _ops(module, LINALG_FILL)
    assert len(fills) == 1
    block = fills[0].regions[0].blocks[0]
    [op] = list(block.operations)
    assert op.name == "linalg.yield" and op.operands[0] == block.arguments[0]
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            init = tensor.EmptyOp([2], ir.F32Type.get()).result
            with pytest.raises(ValueError, match="must match"):
                b.fill(arith.ConstantOp(ir.F16Type.get(), 1.5).result, init)


def test_a_fill_of_the_same_type_imports_no_opdsl():
    """`iree.compiler.dialects.linalg` builds OpDSL's library of named ops on import (~60 ms of
    every compile whose passes build a fill); `fill` of one type does without it."""
    code = """
import sys
from iree.compiler import ir
from iree.compiler.dialects import arith, tensor
from iree_fusions.compiler import ir_build as b
with ir.Context(), ir.Location.unknown():
    m = ir.Module.create()
    with ir.InsertionPoint(m.body):
        init = tensor.EmptyOp([2], ir.F32Type.get()).result
        b.fill(arith.ConstantOp(ir.F32Type.get(), 0.0).result, init)
    print('iree.compiler.dialects.linalg' in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
