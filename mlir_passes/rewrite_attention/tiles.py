"""IREE's fused attention op with the plugin's CPU tiles (`fused-tiles`): where the fused op is
kept on llvm-cpu, its lowering config, set as the op's `compilation_info` (IREE's
MaterializeUserConfigs then uses it instead of its own choice; the attribute survives dispatch
creation and the conversion to `online_attention`).

IREE 3.13's CPU config for the fused op tiles the value dim (the head dim of the output) by one
vector (16 f32 lanes on AVX-512) and the query rows by 1 to 8: the scores of a tile are
computed again for every 16 output columns (4x for a head dim of 64, 8x for 128). These tiles
take the whole value dim at once, so each tile's scores are computed once:

    iree_linalg_ext.attention ins(%q, %k, %v : [32,512,32] x [32,512,32] x [32,32,512] ..)
  =>
    iree_linalg_ext.attention {compilation_info = #iree_codegen.compilation_info<
        lowering_config = #iree_cpu.lowering_config<distribution = [1, 64, 32, 0, 0],
          vector_common_parallel = [1, 8, 32, 0, 0], vector_reduction = [0, 0, 0, 0, 16]>,
        translation_info = #iree_codegen.translation_info<
          pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>>} ins(..)

Loops in the op's order: batch 1; query rows 64 a workgroup (the rows where fewer), `rows` at
a time; the value dim whole; the head dim (k1) not tiled, as IREE leaves it; keys `keys` at a
time. The largest vector (the p @ v step, [rows, value dim, keys] in f32) is kept at
`VECTOR_ELEMENTS` f32 (16 KiB, half of IREE's large-vector limit on x86): the rows are the
largest power of two up to 8 that fits it and divides a static query length.

The online softmax's sums run over the keys in tiles of `keys`, as the fused op's always do; the
other tiles split independent outputs. On this project's AVX-512 CPU, with the keys' tile of
IREE's own choice, every suite form's output was bit-identical to stock's
(bench/results/attention-forms.md, "fused-tiles"); with these tiles the result is held to the
pass's derived bound, not to bit-identity."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import NoMatch

from .match import AttentionPlan, _static_extent, gathered, match_attention

VECTOR_ELEMENTS = 4096  # f32 elements of the largest vector (p @ v): 16 KiB
KEY_VALUE_ELEMENTS = 512  # keys x value dims of a v tile (IREE's own keys at head dims 64, 128)
MAX_ROWS = 8
KEY_TILES = (16, 8, 4, 2, 1)
HEAD_DIM_MAX = 128  # IREE leaves a static head dim up to this untiled (KernelDispatch.cpp)
ROWS_PER_WORKGROUP = 64
PIPELINE = "LinalgExtTileAndVectorize"
COMPILATION_INFO = "compilation_info"


@dataclass(frozen=True)
class FusedTiles:
    """One attention's CPU tiles, per loop in the op's order."""

    distribution: tuple[int, ...]
    rows: tuple[int, ...]  # vector_common_parallel
    keys: tuple[int, ...]  # vector_reduction

    def attribute(self) -> ir.Attribute:
        """The op's `compilation_info` (in the current context)."""
        def text(values):
            return "[" + ", ".join(map(str, values)) + "]"
        return ir.Attribute.parse(
            "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
            f"distribution = {text(self.distribution)}, vector_common_parallel = "
            f"{text(self.rows)}, vector_reduction = {text(self.keys)}>, translation_info = "
            f"#iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<{PIPELINE}>>>")

    def summary(self) -> str:
        """The tiles in words, for the report."""
        return (f"tiles {list(self.rows)} of rows and value dims, keys "
                f"{max(self.keys)} at a time")


# The forms where IREE's fused op with these tiles was measured faster than the decomposition on
# this project's CPU (AVX-512; bench/results/attention-forms.md, "fused-tiles"); elsewhere the
# decomposition was faster or as fast (f32, head dims of 64 or more in prefill, GQA, dynamic
# lengths: 0.4-1.0x of it).
DECODE_F16 = ("fused-tiles: static decode (one query row) in f16, k and v not repeated per "
              "query head: "
              "IREE's fused op reads k and v in f16 once, the decomposition extends them to f32 "
              "first (measured 1.5x faster than the decomposition)")
NARROW_F16 = ("fused-tiles: static prefill in f16 with head and value dims of at most 32: the "
              "decomposition's contractions are too narrow to pay (measured 1.6x faster than "
              "the decomposition)")
NARROW_HEAD_DIM = 32


def fused_faster(plan: AttentionPlan) -> str | None:
    """Why the fused op with these tiles runs faster than the decomposition (DECODE_F16,
    NARROW_F16), or None: decompose. Static shapes only (a dynamic f16 decode measured as
    fast as the decomposition, 1.00x); not where k or v is gathered from a paged cache or
    repeated per query head (`plan.heads`: the decomposition reads them once per KV head)."""
    every_loop = [dim for role in plan.roles.values() for dim in role]
    if plan.heads is not None or gathered(plan.k) or gathered(plan.v) or \
            not isinstance(h.tensor_type(plan.q).element_type, ir.F16Type) or \
            _static_extent(plan, every_loop) is None:
        return None
    if _static_extent(plan, plan.roles["m"]) == 1:
        return DECODE_F16
    if max(_static_extent(plan, plan.roles["k1"]), _static_extent(plan, plan.roles["n"])) \
            <= NARROW_HEAD_DIM:
        return NARROW_F16
    return None


def _operands_moved_only(plan: AttentionPlan) -> None:
    """NoMatch unless q, k, v and the mask are read through reshapes, compute barriers and
    pure copies (IREE's v transpose, a mask's broadcast) only: IREE fuses the ops that compute
    them into the fused op's dispatch, and with these tiles its vectors for them can exceed
    IREE's size limit (a boolean mask's select was measured to: 32 KiB)."""
    for name in ("q", "k", "v", "mask"):
        value = getattr(plan, name)
        op = h.defining_op(value) if value is not None else None
        while op is not None and (op.name in h.RESHAPES or op.name == h.COMPUTE_BARRIER_START
                                  or h.is_pure_copy(op)):
            op = h.defining_op(op.operands[0])
        if op is not None and op.name.startswith(("linalg.", "iree_linalg_ext.")):
            raise NoMatch("tiles-producer",
                          f"fused-tiles: the {name} is computed by {op.name}, which IREE "
                          "fuses into the attention's dispatch (its vectors at these tiles "
                          "can exceed IREE's size limit)")
    if plan.mask is not None and not isinstance(h.tensor_type(plan.mask).element_type,
                                                ir.FloatType):
        raise NoMatch("tiles-bool-mask", "fused-tiles: a boolean mask (its select, in the "
                      "attention's dispatch, exceeds IREE's vector size limit at these tiles)")


def fused_tiles(plan: AttentionPlan) -> FusedTiles:
    """The tiles of `plan`'s fused op; NoMatch where they do not apply: an operand computed by
    an op IREE would fuse into the dispatch, a boolean mask, a value or head dim that is
    dynamic, larger than HEAD_DIM_MAX or more than one loop, or several key loops."""
    _operands_moved_only(plan)
    n, k1, k2 = plan.roles["n"], plan.roles["k1"], plan.roles["k2"]
    value = _static_extent(plan, n)
    head = _static_extent(plan, k1)
    if len(n) != 1 or value is None or value > HEAD_DIM_MAX:
        raise NoMatch("tiles-value-dim",
                      "fused-tiles: a value dim that is dynamic, several loops or over "
                      f"{HEAD_DIM_MAX}")
    if head is None or head > HEAD_DIM_MAX:
        raise NoMatch("tiles-head-dim",
                      f"fused-tiles: a head dim that is dynamic or over {HEAD_DIM_MAX}")
    if len(k2) != 1:
        raise NoMatch("tiles-key-loops", "fused-tiles: several key loops")
    key_tile = max(c for c in KEY_TILES if c <= max(1, KEY_VALUE_ELEMENTS // value))
    row_tile = max(1, min(MAX_ROWS, VECTOR_ELEMENTS // (value * key_tile)))
    m = plan.roles["m"]
    if m and _static_extent(plan, m[-1:]) == 1:
        row_tile = 1  # (a decode whose query row is a loop of its own)
    for dims, tile, what in ((k2, key_tile, "keys"), (m[-1:], row_tile, "query rows")):
        extent = _static_extent(plan, dims) if dims else None
        if extent is not None and extent % tile:
            raise NoMatch("tiles-uneven", f"fused-tiles: {extent} {what}, not a multiple of "
                          f"{tile} (smaller tiles were not measured)")
    per_loop = []  # (distribution, vector_common_parallel, vector_reduction) per loop
    for dim in range(h.indexing_maps(plan.op)[0].n_dims):
        if dim in m:
            extent = _static_extent(plan, [dim])
            per_loop.append((ROWS_PER_WORKGROUP if extent is None
                             else min(ROWS_PER_WORKGROUP, extent),
                             row_tile if dim == m[-1] else 1, 0))
        elif dim in n:
            per_loop.append((value, value, 0))
        elif dim in k1:
            per_loop.append((0, 0, 0))
        elif dim in k2:
            per_loop.append((0, 0, key_tile))
        else:  # batch
            per_loop.append((1, 1, 0))
    distribution, rows, keys = zip(*per_loop)
    return FusedTiles(distribution, rows, keys)


def set_fused_tiles(plan: AttentionPlan) -> str:
    """Sets `plan.tiles` as the fused op's `compilation_info`; what changed, in words."""
    plan.op.attributes[COMPILATION_INFO] = plan.tiles.attribute()
    return (f"attention of {plan.q.type}: IREE's fused op kept, with CPU "
            f"{plan.tiles.summary()} ({plan.tiles_reason})")


def tiles_set_here(op: ir.Operation) -> bool:
    """Whether `op`'s compilation_info is the one `fused_tiles` plans for it (this pass set it
    in an earlier round), not a tuning spec's."""
    try:
        return op.attributes[COMPILATION_INFO] == fused_tiles(match_attention(op)).attribute()
    except NoMatch:
        return False
