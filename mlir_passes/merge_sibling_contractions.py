"""merge-sibling-contractions: contractions of one input with same-shaped weights -> one
multi-result contraction, their casts -> one multi-result generic (one dispatch).

An LLM layer reads its normalized input in several projections of equal width: K and V
(grouped KV heads), gate and up. IREE gives each contraction a dispatch of its own (its
horizontal fusion is off by default and needs M >= 16: decode has M = batch). The pass
builds what IREE's FuseHorizontalContractions builds, for every M (decode's 4 rows,
prefill's dynamic tokens): one linalg.generic with one result per contraction, reading the
shared input once and each weight where it is (nothing is stacked or copied: a deployed
model's parameters stay as they are), and one generic for their one-input epilogues (the
f32 -> f16 truncation), which IREE fuses into the contraction's dispatch (an unmerged
epilogue would be a dispatch of its own). Each result's sum is the same sum; the order in
which generated code adds its terms may differ (the merged dispatch is tiled as one).

    %k = linalg.matmul ins(%x, %wk : [M,K], [N,K]) outs(%f0) -> [M,N] f32
    %kh = linalg.generic {truncf} ins(%k) -> [M,N] f16
    %v = linalg.matmul ins(%x, %wv : [M,K], [N,K]) outs(%f1) -> [M,N] f32
    %vh = linalg.generic {truncf} ins(%v) -> [M,N] f16
  =>
    %kv:2 = linalg.generic {(m,n,k): x[m,k] * wk[n,k], x[m,k] * wv[n,k]}
              ins(%x, %wk, %wv) outs(%f, %f) -> [M,N] f32, [M,N] f32
    %kvh:2 = linalg.generic {truncf, truncf} ins(%kv#0, %kv#1) -> [M,N] f16, [M,N] f16

Declined by default on every target it was measured on, and on the GPU targets with it:
- llvm-cpu (`on-cpu`): IREE's CPU code for the multi-result contraction was slower than the
  separate matmuls it replaces, in decode and in prefill (sharktank's toy Llama);
- GPU targets (`on-gpu`): on CUDA the merge made decode slower, prefill no faster (the
  32-layer GQA Llama). IREE 3.13 gives a single-result contraction with M = 4 rows its matvec
  configuration (VectorDistribute, the K loop split over a subgroup's lanes, one workgroup
  per output column) and the multi-result one TileAndFuse (a thread walks K alone, a block
  of columns per workgroup). ROCm and Vulkan were not measured; they share IREE's GPU
  configuration logic. The figures: bench/results/code-costs.md, merge-sibling-contractions.
A decisions file (`iree-fusions-tune`) or the option turns it on where it is measured faster.

Left alone, with the reason: contractions whose result has another user than its epilogue,
whose epilogues are not one-input elementwise generics of the same kind (a bias add reads a
second tensor: merged, it would stay a dispatch of its own) or permute or broadcast, whose
inits are not fills of one scalar; and, as the merged ops are built before the first
contraction with new, empty epilogue inits (the checks of `compiler/invariants.py`), groups
whose weights, or a value an epilogue's body captures (a scale `tensor.extract`ed between
them), are defined after the first contraction, and groups whose epilogues read their init (a
residual added through `outs`). Q (N = 256) and K/V (N = 64) differ in width and stay apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import tensor

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.invariants import (captured_values, check_defined_before,
                                              check_init_unread)
from iree_fusions.compiler.ir_helpers import (
    ARITH_CONSTANT, LINALG_FILL, LINALG_MATMUL, TENSOR_EMPTY
)
from iree_fusions.compiler.protocol import (Candidate, CandidatePass, Footprint, NoMatch,
                                            PassContext, option, round_analysis, structural_key)
from iree_fusions.compiler.target import is_gpu, is_llvm_cpu


SURE = ("IREE makes each contraction the root of a dispatch of its own; one multi-result "
        "contraction with its fused epilogue is one dispatch")


# Where the merged contraction and epilogue are built (the reasons' "after <WHERE>").
WHERE = "the first contraction"


CPU_RULE = ("on llvm-cpu a multi-result contraction measured slower than its matmuls "
            "(on-cpu=true merges; a decisions file may apply it)")
GPU_RULE = ("on GPU targets a multi-result contraction measured slower than its matmuls in "
            "decode on CUDA (IREE gives it TileAndFuse where each matmul gets its matvec "
            "configuration) and no faster in prefill (on-gpu=true merges; a decisions file "
            "may apply it)")


@dataclass
class SiblingGroup:
    """Contractions of one input, in block order, and the epilogue each result feeds."""

    contractions: list[ir.Operation]
    epilogues: list[ir.Operation]
    fill_scalar: ir.Value


def _structure(op: ir.Operation) -> tuple:
    """What siblings share: the input, maps, weight and result types, body."""
    return (op.operands[0], str(op.attributes["indexing_maps"]), str(op.operands[1].type),
            str(op.results[0].type), tuple(h.body_op_names(op)))


def _scalar_fact(value: ir.Value) -> ir.Value | tuple[str, str]:
    """What a fill scalar is: its constant (attribute text and type), else the value itself
    (printing an op would name every value of its function: slow on a whole model)."""
    op = h.defining_op(value)
    if op is not None and op.name == ARITH_CONSTANT:
        return (str(op.attributes["value"]), str(value.type))
    return value


def _epilogue(op: ir.Operation) -> ir.Operation:
    users = h.users(op.results[0])
    if len(users) != 1:
        raise NoMatch("result-users",
                      f"a contraction result with {len(users)} users (one epilogue each)")
    epi = users[0]
    if not h.is_elementwise(epi) or len(h.dps_inputs(epi)) != 1 or len(epi.results) != 1:
        raise NoMatch("epilogue-kind",
                      f"the result feeds {epi.name}, not a one-input elementwise generic")
    if any(amap != ir.AffineMap.get_identity(amap.n_dims) for amap in h.indexing_maps(epi)):
        raise NoMatch("epilogue-permutes", "an epilogue that permutes or broadcasts")
    return epi


def plan_group(members: list[ir.Operation], positions: dict[ir.Operation, int]
               ) -> SiblingGroup:
    """The group's plan, or NoMatch at the check that fails."""
    scalars = []
    for op in members:
        fill = h.defining_op(h.dps_inits(op)[0])
        if fill is None or fill.name != LINALG_FILL:
            raise NoMatch("init-not-fill", "an init that is not a linalg.fill")
        scalars.append(fill.operands[0])
    if len({_scalar_fact(scalar) for scalar in scalars}) != 1:
        raise NoMatch("fills-differ", "inits filled with different scalars")
    # The merged ops go before the first contraction: what they use must exist there.
    first = positions[members[0]]
    check_defined_before([op.operands[1] for op in members[1:]], first, positions,
                         "a weight", WHERE)
    epilogues = [_epilogue(op) for op in members]
    if len({(tuple(h.body_op_names(e)), str(e.results[0].type)) for e in epilogues}) != 1:
        raise NoMatch("epilogues-differ", "epilogues of different kinds")
    for epi in epilogues:  # the merged epilogue's inits are new tensor.empty ops
        check_init_unread(epi, "an epilogue")
    for op in members + epilogues:
        check_defined_before(captured_values(op), first, positions,
                             f"a value the body of {op.name} captures", WHERE)
    return SiblingGroup(members, epilogues, scalars[0])


def _iterators(maps: list[ir.AffineMap]) -> list[str]:
    """Parallel for the dims of the result map, reduction for the others."""
    out_dims = set(h.map_dim_positions(maps[-1]))
    return ["parallel" if d in out_dims else "reduction" for d in range(maps[-1].n_dims)]


def _merged(srcs: list[ir.Operation], ins: list[ir.Value], inits: list[ir.Value],
            in_maps: list[ir.AffineMap], out_map: ir.AffineMap,
            arg_maps: list[list[int]]) -> ir.Operation:
    """One generic computing each of `srcs`' bodies (block args per `arg_maps`)."""
    return b.multi_result_generic(list(zip(ins, in_maps)), [(init, out_map) for init in inits],
                                  _iterators(in_maps + [out_map]), list(zip(srcs, arg_maps)))


def merge_group(group: SiblingGroup) -> str:
    first, n = group.contractions[0], len(group.contractions)
    maps = h.indexing_maps(first)
    with first.location, ir.InsertionPoint(first):
        first_init = h.dps_inits(first)[0]
        sizes = b.mixed_shape(first_init)
        acc_type = first.results[0].type
        init = first_init  # one fill for all (as torch's export shares it), else a new one
        if any(h.dps_inits(op)[0] != first_init for op in group.contractions):
            empty = tensor.EmptyOp(sizes, acc_type.element_type).result
            init = b.fill(group.fill_scalar, empty)
        weights = [op.operands[1] for op in group.contractions]
        contraction = _merged(group.contractions, [first.operands[0], *weights], [init] * n,
                              maps[:2] + [maps[1]] * (n - 1), maps[2],
                              [[0, 1 + i, 1 + n + i] for i in range(n)])
        epi_type = group.epilogues[0].results[0].type
        epi_inits = [tensor.EmptyOp(sizes, epi_type.element_type).result] * n
        rank = len(sizes)
        identity = ir.AffineMap.get_identity(rank)
        epilogue = _merged(group.epilogues, list(contraction.results), epi_inits,
                           [identity] * n, identity, [[i, n + i] for i in range(n)])
    for i, epi in enumerate(group.epilogues):
        epi.results[0].replace_all_uses_with(epilogue.results[i])
    text = (f"{n} contractions of one {first.operands[0].type} into {acc_type} -> one "
            "multi-result contraction and one epilogue generic")
    dead = [v for op in group.contractions + group.epilogues for v in h.dps_inits(op)]
    for op in group.epilogues + group.contractions:
        op.erase()
    b.erase_dead(dead, b.of_kind(LINALG_FILL, TENSOR_EMPTY))
    return text


@dataclass(frozen=True)
class MergeSiblingContractions(CandidatePass[SiblingGroup]):
    name = "merge-sibling-contractions"
    phase = "linalg"
    description = ("contractions of one input with same-shaped weights -> one multi-result "
                   "contraction (weights read in place, nothing stacked)")

    max_group: int = option(4, "contractions merged into one, at most", min=2)
    on_cpu: bool = option(
        False, "merge on llvm-cpu too (slower there in decode and prefill: IREE's CPU code for "
        "a multi-result contraction is slower than its matmuls; bench/results/code-costs.md)")
    on_gpu: bool = option(
        False, "merge on GPU targets too (slower on CUDA in decode, prefill no faster: IREE "
        "3.13 gives the multi-result contraction TileAndFuse, each matmul its matvec "
        "configuration; bench/results/code-costs.md)")

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[SiblingGroup]]:
        groups: dict[tuple, list[ir.Operation]] = {}
        for op in block.operations:
            op = op.operation
            if op.name == LINALG_MATMUL and len(op.results) == 1:
                groups.setdefault(_structure(op), []).append(op)
        positions = None
        for members in groups.values():
            if len(members) < 2:
                continue
            if positions is None:
                positions = round_analysis(h.block_positions, block)
            for start in range(0, len(members) - 1, self.max_group):
                chunk = members[start:start + self.max_group]
                if len(chunk) < 2:
                    continue
                key = structural_key("merge-sibling-contractions", len(chunk),
                                     h.op_signature(chunk[0]))
                candidate = Candidate.of(key, chunk[0], f"{len(chunk)} sibling contractions",
                                         lambda chunk=chunk: plan_group(chunk, positions))
                if not candidate.blocked:
                    candidate.sure = SURE
                    if is_llvm_cpu(ctx.target) and not self.on_cpu:
                        candidate.decline("cpu", CPU_RULE)
                    elif is_gpu(ctx.target) and not self.on_gpu:
                        candidate.decline("gpu", GPU_RULE)
                yield candidate

    def footprint(self, candidate: Candidate[SiblingGroup], ctx: PassContext) -> Footprint:
        group = candidate.plan
        ops = group.contractions + group.epilogues
        return Footprint.of(reads=ops, writes=ops)

    def apply(self, candidate: Candidate[SiblingGroup], ctx: PassContext) -> str:
        return merge_group(candidate.plan)
