"""Which `iree_linalg_ext.attention` ops the pass decomposes: the roles of their loops (from
the indexing maps), their operands, and the checks that fail (NoMatch reasons)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.analyses.attention_columns import ReadColumns
from iree_fusions.compiler.analyses.attention_columns import read_columns as columns_read
from iree_fusions.compiler.ir_helpers import LINALG_GENERIC, RESHAPES, TENSOR_COLLAPSE_SHAPE
from iree_fusions.compiler.protocol import NoMatch

ATTENTION = h.LINALG_EXT_ATTENTION
GATHER = h.LINALG_EXT_GATHER
ROLES = ("batch", "m", "k1", "k2", "n")


@dataclass(frozen=True)
class AttentionPlan:
    """One attention: out[batch, m, n] = softmax_k2(scale * sum_k1 q[batch, m, k1] *
    k[batch, k2, k1] + mask[batch, m, k2]) @ v[batch, k2, n], in the op's own loops.

    `roles`: the loop dims of each role, in loop order; `maps`: the operands' maps (loop dim
    positions per operand dim); `block`: the query rows per step of a loop over the query
    blocks (None: the whole query at once) and `block_dim` the m loop it steps over.

    Frozen: each planning step returns a new plan (`dataclasses.replace`), and the build reads
    it without changing it (what it builds goes into plans of its own), so a candidate's plan
    is what the report and the footprint saw. The dicts are never changed either."""

    op: ir.Operation
    q: ir.Value
    k: ir.Value
    v: ir.Value
    scale: ir.Value
    mask: ir.Value | None
    out: ir.Value
    roles: dict[str, list[int]]
    maps: dict[str, list[int]]
    block: int | None = None
    block_dim: int | None = None
    block_scores: int = 0  # at most this many score elements per block (0: `block` rows)
    host_sync: bool = False  # each block step waits for the one before it (see build)
    device: ir.Attribute | None = None  # the only device: the loop's output pinned to it
    v_copy: ir.Operation | None = None  # IREE's copy that transposes v (see `untransposed_v`)
    heads: object | None = None  # heads.HeadSplit: k and v read once per KV head
    heads_note: str | None = None  # why k and v, repeated per query head, are not split
    columns: ReadColumns | None = None  # only the first value columns are read (`read_columns`)
    whole: int | None = None  # static: the whole query's scores (at most whole-scores)
    loop_avoided: bool = False  # rows past a block, but `whole`: no loop
    whole_at_run: int = 0  # dynamic: no loop where the scores are at most this at run time
    score_ops: tuple = ()  # the score region's ops before its yield (`score_modification`)
    tiles: object | None = None  # tiles.FusedTiles: the fused op kept, with these CPU tiles
    tiles_reason: str | None = None  # why (tiles.fused_faster)
    form: object | None = None  # report.Choice: the fused-tiles form taken, under its key

    def sizes(self) -> dict[int, tuple[str, int]]:
        """Loop dim -> (operand, its dim) giving that loop's size."""
        found: dict[int, tuple[str, int]] = {}
        for name in ("q", "k", "v", "out"):
            for position, dim in enumerate(self.maps[name]):
                found.setdefault(dim, (name, position))
        return found


def _dims(amap: ir.AffineMap) -> list[int]:
    """Loop positions of a projected-permutation map's results; NoMatch otherwise."""
    dims = []
    for expr in amap.results:
        if not isinstance(expr, ir.AffineDimExpr):
            raise NoMatch("map-not-projection",
                          f"an indexing map that is not a projection ({amap})")
        dims.append(expr.position)
    if len(set(dims)) != len(dims):
        raise NoMatch("map-repeats-loop", f"an indexing map that repeats a loop ({amap})")
    return dims


def score_modification(op: ir.Operation) -> tuple[ir.Operation, ...]:
    """The ops the score region applies to the score before its yield (none: the plain
    score), each an arith or math op without regions (a soft cap: `minimumf`, `tanh`); an
    op that reads the position (`iree_linalg_ext.index`) or anything else: NoMatch."""
    block = op.regions[0].blocks[0]
    *body, terminator = list(block.operations)
    if len(block.arguments) != 1 or len(terminator.operands) != 1:
        raise NoMatch("score-region-signature",
                      "a score region with other arguments or results than the score")
    for inner in body:
        name = inner.operation.name
        if not name.startswith(("arith.", "math.")) or len(inner.operation.regions) \
                or len(inner.operation.results) != 1:
            raise NoMatch("score-region-op",
                          f"a score modification region with {name} (only arith and math "
                          "ops are decomposed: position-dependent scores are left to IREE)")
    return tuple(inner.operation for inner in body)


def match_attention(op: ir.Operation) -> AttentionPlan:
    """The op as an AttentionPlan (no query blocks), or NoMatch at the check that fails."""
    # (the op's definition: q, k, v, scale, an optional mask, out; one map each, one result)
    operands = list(op.operands)
    maps = h.indexing_maps(op)
    names = ["q", "k", "v", "scale"] + (["mask"] if len(operands) == 6 else []) + ["out"]
    values = dict(zip(names, operands))
    modification = score_modification(op)
    # (the scale is a float: the op's definition admits no other type)
    for name in ("q", "k", "v", "out"):
        t = h.tensor_type(values[name])
        if t is None or not isinstance(t.element_type, ir.FloatType):
            raise NoMatch("operand-not-float", f"a {name} that is not a float tensor")
    if "mask" in values:
        t = h.tensor_type(values["mask"])
        if t is None or not isinstance(t.element_type, (ir.FloatType, ir.IntegerType)):
            raise NoMatch("mask-type", "a mask that is neither a float nor a boolean tensor")
    dims = {name: _dims(m) for name, m in zip(names, maps)}
    roles = attention_roles(dims, maps[0].n_dims)
    return AttentionPlan(op, values["q"], values["k"], values["v"], values["scale"],
                         values.get("mask"), values["out"], roles, dims,
                         score_ops=modification)


def attention_roles(dims: dict[str, list[int]], n_loops: int) -> dict[str, list[int]]:
    """The loops of each role (ROLES), from the loops each operand is indexed by; NoMatch
    where a loop has no role or several (each role is the loops two operands share, so a
    loop one of them reads outside its roles has none), a role is missing, or the mask
    reads a head-dim or value loop."""
    if dims["scale"]:
        raise NoMatch("scale-not-scalar", "a scale that is not a scalar")
    q, k, v, o = (set(dims[n]) for n in ("q", "k", "v", "out"))
    batch = q & k & v & o
    roles = {"batch": batch, "m": (q & o) - batch, "k1": (q & k) - batch,
             "k2": (k & v) - batch, "n": (v & o) - batch}
    every = set(range(n_loops))
    if set().union(*roles.values()) != every or sum(map(len, roles.values())) != len(every):
        raise NoMatch("loop-kinds", "loops that are not batch, query, head-dim, key or value loops")
    if not roles["k1"] or not roles["k2"] or not roles["n"]:
        raise NoMatch("missing-loop", "an attention without a head-dim, key or value loop")
    if "mask" in dims and set(dims["mask"]) - batch - roles["m"] - roles["k2"]:
        raise NoMatch("mask-map", "a mask indexed by a head-dim or value loop")
    return {role: sorted(roles[role]) for role in ROLES}


def untransposed_v(plan: AttentionPlan) -> AttentionPlan:
    """Notes the copy IREE's global optimization makes to give the fused op v as [.., n, k2]
    (`--iree-global-opt-enable-attention-v-transpose`; with GQA, the same copy repeats the KV
    heads): v = collapse_shape(copy), the copy's last two dims not merged by the collapse and
    read only there. The decomposition's p @ v then reads a copy that keeps the keys before
    the head dim ([.., k2, n], its source's order): a transposing write of every key and
    value row per call is slow on CPUs (bench/results/code-costs.md, rewrite-attention)."""
    collapse = h.defining_op(plan.v)
    if collapse is None or collapse.name != TENSOR_COLLAPSE_SHAPE or \
            len(h.users(plan.v)) != 1:
        return plan
    copy = h.defining_op(collapse.operands[0])
    if copy is None or not h.is_pure_copy(copy) or len(h.users(copy.results[0])) != 1 or \
            "reduction" in h.iterator_types(copy):
        return plan
    rank = ir.RankedTensorType(copy.results[0].type).rank
    out_map = h.indexing_maps(copy)[1]
    v_dims = plan.maps["v"]
    # (v reads a key and a value loop at least: attention_roles requires both)
    if out_map != ir.AffineMap.get_identity(rank) or \
            v_dims[-2] not in plan.roles["n"] or v_dims[-1] not in plan.roles["k2"]:
        return plan
    return replace(plan, v_copy=copy)


def gathered(value: ir.Value) -> bool:
    """The value is rows gathered from a table (a paged KV cache: `iree_linalg_ext.gather`, or a
    generic that `tensor.extract`s), through reshapes and copies (a chain the IR bounds)."""
    op = h.defining_op(value)
    while op is not None and (op.name in RESHAPES or h.is_pure_copy(op)):
        op = h.defining_op(op.operands[0])
    return op is not None and (
        op.name == GATHER or (op.name == LINALG_GENERIC and h.reads_table_in_body(op)))


def static_extent(plan: AttentionPlan, dims: list[int]) -> int | None:
    """The product of the sizes of loops `dims`, where all are static; None where one is
    dynamic."""
    sizes, total = plan.sizes(), 1
    for dim in dims:
        operand, position = sizes[dim]
        extent = ir.RankedTensorType(getattr(plan, operand).type).shape[position]
        if ir.ShapedType.is_dynamic_size(extent):
            return None
        total *= extent
    return total


def whole_scores(plan: AttentionPlan) -> int | None:
    """How many scores the whole query has (every batch, query row and key), where all
    their loops are static; None where one is dynamic."""
    return static_extent(plan, plan.roles["batch"] + plan.roles["m"] + plan.roles["k2"])


def multiply_adds(plan: AttentionPlan) -> int | None:
    """The attention's multiply-adds (every score times its head dims plus its value dims),
    where every loop is static; None where one is dynamic."""
    scores = whole_scores(plan)
    if scores is None:
        return None
    head, value = (static_extent(plan, plan.roles[role]) for role in ("k1", "n"))
    return scores * (head + value)


def choose_block(plan: AttentionPlan, block: int, block_scores: int = 0,
                 host_sync: bool = False, device: ir.Attribute | None = None,
                 whole: int = 0) -> AttentionPlan:
    """Query blocks of `block` rows over the outermost query loop whose size is dynamic or
    larger than a block (prefill's tokens); none for decode's single row or small queries,
    nor where every loop is static and the whole query's scores are at most `whole`
    (`plan.whole`: their count, noted for any such attention: its p is held in f32). Where a
    loop of the scores is dynamic, the loop is planned with `whole_at_run`: the build asks at
    run time whether the whole query's scores are at most a block's (`block_scores`), and
    then makes one block of every row, its result written whole.
    `device`: the program's only device (`h.single_device_affinity`), or None."""
    scores = whole_scores(plan)
    if scores is not None and scores <= whole:
        plan = replace(plan, whole=scores)
    if block <= 0:
        return plan
    sizes = plan.sizes()
    for dim in plan.roles["m"]:
        operand, position = sizes[dim]
        extent = ir.RankedTensorType(getattr(plan, operand).type).shape[position]
        if ir.ShapedType.is_dynamic_size(extent) or extent > block:
            if plan.whole is not None:
                return replace(plan, loop_avoided=True)
            return replace(plan, block=block, block_dim=dim, block_scores=block_scores,
                           host_sync=host_sync, device=device,
                           whole_at_run=block_scores if scores is None else 0)
    return plan


def read_columns(plan: AttentionPlan) -> AttentionPlan:
    """Notes (`plan.columns`) that only the first columns of the value dim are read
    (`attention_columns.read_columns`: sharktank's MLA export pads v's head dim 128 to q's 192
    and slices the output back): each output column is the same sum over the keys of p times
    that column of v alone, so the others need not be computed. Only where the value dim is
    one loop and the output's last dim, and k and v are not split per KV head; else the plan
    is left as it is (the decomposition is the same, over every column)."""
    n = plan.roles["n"]
    if len(n) == 1 and plan.maps["out"][-1] == n[0] and plan.heads is None:
        return replace(plan, columns=columns_read(plan.op.results[0]))
    return plan
