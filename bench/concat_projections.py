"""Issue 45 item 3, measured before building it: sibling projections (Q/K/V, gate/up) as one
matmul over their weights concatenated along N, results split by column slices.

    python bench/concat_projections.py EXPORT_FOLDER [--seq 64] [--rounds 7]
        [--device local-sync] [--folder DIR]

EXPORT_FOLDER is a sharktank export as bench/llm_export.py writes it (model.mlir, .irpa,
.json). The script compiles the export to global-optimization with stock IREE
(`--fusions=none`), rewrites every group of 2-3 `linalg.matmul`s that read one input with
constant [N_i, K] weights (transposed-B maps) and feed one elementwise epilogue each (the
f32 -> f16 truncation) into

    %w  = util.global.load @concat   (wq ++ wk ++ wv along N: stacked once at load, as the
                                       parameter archive would hold it offline)
    %y  = linalg.matmul ins(%x, %w : [M,K], [Nq+Nk+Nv, K]) -> [M, Nq+Nk+Nv] f32
    %yh = linalg.generic {truncf} ins(%y)
    %q, %k, %v = tensor.extract_slice %yh[0, 0 / Nq / Nq+Nk] [M, Nq / Nk / Nv]

then compiles both from there (`--compile-from=global-optimization`), counts dispatches per
function on the flow IR (stock's pipeline, and with `--fusions=all` after the rewrite), and
times decode and prefill, alternating rounds (`benchmark.time_pair`, ratio = without /
with the concatenation). Results: bench/results/llm-suite.md, "Q/K/V as one matmul".
"""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

from iree.compiler import ir  # noqa: E402
from iree.compiler.dialects import tensor  # noqa: E402
from iree.compiler.dialects import _linalg_ops_gen as linalg  # noqa: E402

from iree_fusions.compiler import ir_build as b  # noqa: E402
from iree_fusions.compiler import ir_helpers as h  # noqa: E402
from iree_fusions.compiler.counting import count_flow_ir  # noqa: E402


def concatenate_projections(text: str, transposed: bool = False) -> tuple[str, int]:
    """The IR with every sibling group rewritten as above (`transposed`: as [N, M]), and the
    number of groups."""
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        top = module.operation
        count = 0
        for func in list(top.regions[0].blocks[0].operations):
            func = func.operation
            if func.name != "util.func" or not func.regions[0].blocks:
                continue
            block = func.regions[0].blocks[0]
            groups: dict[tuple, list[ir.Operation]] = {}
            for op in block.operations:
                op = op.operation
                if op.name == h.LINALG_MATMUL and h.is_constant_like(op.operands[1]):
                    weight_t = ir.RankedTensorType(op.operands[1].type)
                    groups.setdefault((op.operands[0], str(op.attributes["indexing_maps"]),
                                       tuple(weight_t.shape[1:])), []).append(op)
            for members in groups.values():
                epilogues = [h.users(op.results[0]) for op in members]
                if not 2 <= len(members) <= 3 or any(
                        len(users) != 1 or not h.is_elementwise(users[0])
                        or len(h.dps_inputs(users[0])) != 1 for users in epilogues):
                    continue
                _concatenate(top, block, members, [users[0] for users in epilogues],
                             transposed)
                count += 1
        return str(module), count


def _concatenate(top: ir.Operation, block: ir.Block, members: list[ir.Operation],
                 epilogues: list[ir.Operation], transposed: bool = False) -> None:
    """One matmul over the members' weights concatenated along N, one epilogue, and a slice
    per member. `transposed`: the result computed as [N, M] (each member's columns a
    contiguous row range, a slice IREE need not copy), read back through a transpose."""
    first = members[0]
    weights = [op.operands[1] for op in members]
    widths = [ir.RankedTensorType(w.type).shape[0] for w in weights]
    weight_t = ir.RankedTensorType(weights[0].type)
    k_dim, elem, total = weight_t.shape[1], weight_t.element_type, sum(widths)

    def build(cloned: list) -> ir.Value:
        acc = tensor.EmptyOp([total, k_dim], elem).result
        for part, start, width in zip(cloned, [sum(widths[:i]) for i in range(len(widths))],
                                      widths):
            acc = tensor.InsertSliceOp(part, acc, [], [], [], [start, 0], [width, k_dim],
                                       [1, 1]).result
        return acc

    concat = b.hoist_to_initializer(top, next(iter(block.operations)).operation, weights,
                                    build, "__concat_projections")
    with first.location, ir.InsertionPoint(first):
        rows = b.size_of(first.operands[0], 0)
        shape = [total, rows] if transposed else [rows, total]
        acc_t = ir.RankedTensorType(first.results[0].type).element_type
        fill = h.defining_op(h.dps_inits(first)[0])
        init = b.first_result(b.linalg_builders().fill(
            fill.operands[0], outs=[tensor.EmptyOp(shape, acc_t).result]))
        maps = (ir.ArrayAttr.get([b.map_attr(3, [0, 2]), b.map_attr(3, [1, 2]),
                                  b.map_attr(3, [0, 1])]) if transposed
                else first.attributes["indexing_maps"])
        inputs = [concat, first.operands[0]] if transposed else [first.operands[0], concat]
        matmul = linalg.MatmulOp(result_tensors=[init.type], inputs=inputs, outputs=[init],
                                 indexing_maps=maps)
        b.clone_body(first, matmul.regions[0].blocks.append(elem, elem, acc_t))
        out_t = ir.RankedTensorType(epilogues[0].results[0].type).element_type
        empty = tensor.EmptyOp(shape, out_t).result
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(2))
        epilogue = b.new_generic([matmul.result], [empty], [identity, identity],
                                 ["parallel", "parallel"])
        yields: list = []
        b.clone_body(epilogues[0], b.append_body_block(epilogue, [matmul.result, empty]),
                     yield_into=yields)
        with ir.InsertionPoint(epilogue.regions[0].blocks[0]):
            linalg.YieldOp(yields)
        start = 0
        for old, width in zip(epilogues, widths):
            if not transposed:
                part = b.slice_out(epilogue.results[0], [0, start], [rows, width], [rows, width])
            else:
                rows_of = b.slice_out(epilogue.results[0], [start, 0], [width, rows],
                                      [width, rows])
                part = b.first_result(b.linalg_builders().transpose(
                    rows_of, outs=[tensor.EmptyOp([rows, width], out_t).result],
                    permutation=[1, 0]))
            old.results[0].replace_all_uses_with(part)
            start += width
    for op in epilogues + members:
        op.erase()


def dispatches(flow_ir: str) -> dict[str, int]:
    """Dispatches per entry point of a flow-phase module (`counting`; sharktank's functions
    dispatch from their `$async` halves)."""
    counts = count_flow_ir(flow_ir).dispatches
    return {name.removesuffix("$async"): n for name, n in counts.items() if n}


def main() -> None:
    import llm_suite

    p = llm_suite.pair_parser(__doc__.split("\n")[0])
    p.add_argument("--transposed", action="store_true",
                   help="compute the result as [N, M]: each projection a row range")
    args = p.parse_args()
    folder, export = llm_suite.pair_setup(args, "concat-projections-")
    compile_cmd = [sys.executable, "-m", "iree_fusions.tools.compile_cli",
                   "--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"]
    stock_go = os.path.join(folder, "stock-go.mlir")
    subprocess.run(compile_cmd + [export.mlir, "--fusions=none",
                                  "--compile-to=global-optimization", "-o", stock_go],
                   check=True)
    with open(stock_go) as f:
        text, groups = concatenate_projections(f.read(), args.transposed)
    concat_go = os.path.join(folder, "concat-go.mlir")
    with open(concat_go, "w") as f:
        f.write(text)
    print(f"{export.name}: {groups} sibling groups concatenated")
    vmfbs, counts = {}, {}
    for side, source, fusions in (("stock", stock_go, "none"), ("concat", concat_go, "none"),
                                  ("concat+plugin", concat_go, "all"),
                                  ("plugin", stock_go, "all")):
        flow = os.path.join(folder, f"{side}-flow.mlir")
        base = compile_cmd + [source, "--compile-from=global-optimization",
                              f"--fusions={fusions}"]
        subprocess.run(base + ["--compile-to=flow", "-o", flow], check=True)
        with open(flow) as f:
            counts[side] = dispatches(f.read())
        if side in ("stock", "concat"):
            vmfbs[side] = os.path.join(folder, f"{side}.vmfb")
            subprocess.run(base + ["-o", vmfbs[side]], check=True)
    for side, per_function in counts.items():
        print(f"  dispatches {side:14s} " + "  ".join(f"{fn} {n}" for fn, n in
                                                     sorted(per_function.items())))
    llm_suite.time_two(export, vmfbs["stock"], vmfbs["concat"], args.seq, folder,
                       device=args.device, rounds=args.rounds)


if __name__ == "__main__":
    main()
