"""IREE's fused attention op with the plugin's CPU tiles (`fused-tiles`): where the fused op is
kept on llvm-cpu, its lowering config, set as the op's `compilation_info` (IREE's
MaterializeUserConfigs then uses it instead of its own choice; the attribute survives dispatch
creation and the conversion to `online_attention`).

IREE 3.13's CPU config for the fused op tiles the value dim (the head dim of the output) by one
vector (16 f32 lanes on AVX-512) and the query rows by 1 to 8: the scores of a tile are
computed again for every vector of output columns (for every head dim past one vector). These tiles
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
time. The largest vector (the p @ v step, [rows, value dim, keys] in f32) is kept at half of
IREE's large-vector limit for the CPU's vector class (`NATIVE_VECTOR_BYTES`): keys are 512 /
value dim (IREE's own choice at head dims 64 and 128), at most 16, and the rows fill the rest,
at most 8. A static length that is not a multiple of its tile is left alone (not measured); so
is a CPU of no known vector class.

The online softmax's sums run over the keys in tiles of `keys`, as the fused op's always do; the
other tiles split independent outputs. Where the key tile is IREE's own, the output was
bit-identical to stock's (every suite form, AVX-512: bench/results/attention-forms.md,
"fused-tiles"); the result is held to the pass's derived bound for two fused ops
(docs/testing.md), not to bit-identity."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import NoMatch

from .match import AttentionPlan, static_extent, gathered, match_attention

# Bytes of one native vector per x86 vector class (`target.cpu_vector_class`). IREE's CPU
# codegen refuses a vector of more than 512 native vectors (LLVMCPU/Utils.cpp,
# getMaxVectorSizeForLargeVectorCheck: 32 KiB on AVX-512); the largest vector here (the p @ v
# step, [rows, value dim, keys] in f32) is kept at half of that: 64 f32 per native vector byte.
NATIVE_VECTOR_BYTES = {"avx512": 64, "avx2": 32, "baseline": 16}
F32_PER_VECTOR_BYTE = 64
KEY_VALUE_ELEMENTS = 512  # keys x value dims of a v tile (IREE's own keys at head dims 64, 128)
MAX_ROWS = 8
KEY_TILES = (16, 8, 4, 2, 1)
HEAD_DIM_MAX = 128  # IREE leaves a static head dim up to this untiled (KernelDispatch.cpp)
ROWS_PER_WORKGROUP = 64
PIPELINE = "LinalgExtTileAndVectorize"
COMPILATION_INFO = "compilation_info"


def choice_text(chosen: bool, why: str) -> str:
    """The form a tiles key names, what was done, and why (a `report.Choice`'s text)."""
    done = "instead of the decomposition" if chosen else "the decomposition instead"
    return f"IREE's fused op with the plugin's CPU tiles, {done} ({why})"


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


# The forms where IREE's fused op with these tiles ran faster than the decomposition, per x86
# vector class (code for each class, run on two AVX-512 CPUs, an AMD Zen 4 and an Intel Xeon:
# bench/results/attention-forms.md, "fused-tiles"; bench/tiles_vs_decomposition.py); elsewhere
# the decomposition was faster or as fast on one of them (f32, head dims of 64 or more in
# prefill, GQA, dynamic lengths; narrow f16 prefill on AVX2 and the baseline; f16 decode in
# AVX-512 code on the Intel CPU).
DECODE_F16 = ("fused-tiles: static decode (one query row) in f16 of 16 MiB of k and v or more, "
              "not repeated per query head: IREE's fused op reads k and v in f16 once, the "
              "decomposition extends them to f32 first (measured faster than the decomposition "
              "on this CPU class and chip)")
NARROW_F16 = ("fused-tiles: static prefill in f16 with head and value dims of at most 32 and "
              "256 keys or more, on an AVX-512 CPU: the decomposition's contractions are too "
              "narrow to pay (measured faster than the decomposition)")
# The AVX-512 chips where the decode rule was measured faster (AMD Zen 4, 1.5x). On an Intel
# AVX-512 CPU (IREE's `rocketlake`) the tiles ran slower than the decomposition (0.96x), while
# AVX2 and baseline code ran faster with them on both; other AVX-512 chips keep the
# decomposition.
DECODE_AVX512_CHIPS = ("znver4",)
DECODE_MIN_KV_BYTES = 1 << 24  # k and v together (less: the decomposition's f32 copies stay
# in cache, and it was as fast or faster)
NOT_FASTER = ("fused-tiles: not measured faster than the decomposition for this shape, dtype "
              "and CPU (tiles.fused_faster)")
DECIDED = "fused-tiles: a measured decision"
NARROW_HEAD_DIM = 32
NARROW_MIN_KEYS = 256  # (fewer: the decomposition as fast or faster)
NARROW_CLASSES = ("avx512",)


def fused_faster(plan: AttentionPlan, vector_class: str | None,
                 chip: str | None = None) -> str | None:
    """Why the fused op with these tiles runs faster than the decomposition on a CPU of
    `vector_class` named `chip` (DECODE_F16 on AVX2 and the baseline, and on AVX-512 for
    DECODE_AVX512_CHIPS; NARROW_F16 on NARROW_CLASSES), or None: decompose. Static shapes only
    (a dynamic f16 decode ran as fast as the decomposition);
    not where k or v is gathered from a paged cache or repeated per query head (`plan.heads`:
    the decomposition reads them once per KV head); not on a CPU of no known class."""
    every_loop = [dim for role in plan.roles.values() for dim in role]
    if vector_class not in NATIVE_VECTOR_BYTES or plan.heads is not None or \
            gathered(plan.k) or gathered(plan.v) or \
            not isinstance(h.tensor_type(plan.q).element_type, ir.F16Type) or \
            static_extent(plan, every_loop) is None:
        return None
    if static_extent(plan, plan.roles["m"]) == 1:
        kv_bytes = sum(h.static_tensor_bytes(h.tensor_type(x)) for x in (plan.k, plan.v))
        measured = vector_class != "avx512" or chip in DECODE_AVX512_CHIPS
        return DECODE_F16 if measured and kv_bytes >= DECODE_MIN_KV_BYTES else None
    if vector_class in NARROW_CLASSES and \
            static_extent(plan, plan.roles["k2"]) >= NARROW_MIN_KEYS and \
            max(static_extent(plan, plan.roles["k1"]), static_extent(plan, plan.roles["n"])) \
            <= NARROW_HEAD_DIM:
        return NARROW_F16
    return None


def _operands_moved_only(plan: AttentionPlan) -> None:
    """NoMatch unless q, k, v and the mask are read through reshapes, compute barriers and
    pure copies (IREE's v transpose, a mask's broadcast) only: IREE fuses the ops that compute
    them into the fused op's dispatch, and with these tiles its vectors for them can exceed
    IREE's size limit, as a boolean mask's select did)."""
    for name in ("q", "k", "v", "mask"):
        value = getattr(plan, name)
        op = h.defining_op(value) if value is not None else None
        while op is not None and (op.name in h.RESHAPES or op.name == h.COMPUTE_BARRIER_START
                                  or h.is_pure_copy(op)):
            op = h.defining_op(op.operands[0])
        if op is not None and (h.is_linalg(op) or h.is_linalg_ext(op)):
            raise NoMatch("tiles-producer",
                          f"fused-tiles: the {name} is computed by {op.name}, which IREE "
                          "fuses into the attention's dispatch (its vectors at these tiles "
                          "can exceed IREE's size limit)")
    if plan.mask is not None and not isinstance(h.tensor_type(plan.mask).element_type,
                                                ir.FloatType):
        raise NoMatch("tiles-bool-mask", "fused-tiles: a boolean mask (its select, in the "
                      "attention's dispatch, exceeds IREE's vector size limit at these tiles)")


def fused_tiles(plan: AttentionPlan, vector_class: str | None) -> FusedTiles:
    """The tiles of `plan`'s fused op; NoMatch where they do not apply: an operand computed by
    an op IREE would fuse into the dispatch, a boolean mask, a value or head dim that is
    dynamic, larger than HEAD_DIM_MAX or more than one loop, or several key loops."""
    if vector_class not in NATIVE_VECTOR_BYTES:
        raise NoMatch("tiles-cpu", "fused-tiles: a CPU of no measured vector class (IREE's "
                      "vector size limit and the tiles' speed are known for x86's)")
    vector_elements = NATIVE_VECTOR_BYTES[vector_class] * F32_PER_VECTOR_BYTE
    _operands_moved_only(plan)
    n, k1, k2 = plan.roles["n"], plan.roles["k1"], plan.roles["k2"]
    value = static_extent(plan, n)
    head = static_extent(plan, k1)
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
    row_tile = max(1, min(MAX_ROWS, vector_elements // (value * key_tile)))
    m = plan.roles["m"]
    if m and static_extent(plan, m[-1:]) == 1:
        row_tile = 1  # (a decode whose query row is a loop of its own)
    for dims, tile, what in ((k2, key_tile, "keys"), (m[-1:], row_tile, "query rows")):
        extent = static_extent(plan, dims) if dims else None
        if extent is not None and extent % tile:
            raise NoMatch("tiles-uneven", f"fused-tiles: {extent} {what}, not a multiple of "
                          f"{tile} (smaller tiles were not measured)")
    per_loop = []  # (distribution, vector_common_parallel, vector_reduction) per loop
    for dim in range(h.indexing_maps(plan.op)[0].n_dims):
        if dim in m:
            extent = static_extent(plan, [dim])
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


def tiles_set_here(op: ir.Operation, vector_class: str | None) -> bool:
    """Whether `op`'s compilation_info is the one `fused_tiles` plans for it (this pass set it
    in an earlier round), not a tuning spec's."""
    try:
        return op.attributes[COMPILATION_INFO] == \
            fused_tiles(match_attention(op), vector_class).attribute()
    except NoMatch:
        return False
