"""batch-gathers: independent embedding lookups -> a few batched gathers; concats written in place.

At global-optimization an embedding lookup is a `linalg.generic` over its index tensor whose
body does `tensor.extract %table[%idx, %j]` (after `cf.assert` bounds checks), or an
`iree_linalg_ext.gather`; a bag is that lookup followed by a sum generic over the bag axis
(and, for `.mean(1)`, a division). `F.embedding_bag` generics (one generic that scans every
index for every bag) are `rewrite-embedding-bags`', which runs before this pass in
`--fusions=all` and leaves fixed-length bags as lookup + sum, the form batched here. On each
function body the pass makes two kinds of change, in two steps:

1. lookup groups (`plan.py`, `build.py`):
   - cross-table: lookups (or bags) with the same embedding dim, dtype, index shape and
     pooling read one table that stacks the *distinct* constant tables (first-appearance
     order, built once in a `util.initializer`), each index offset by its table's first row
     inside the gather body; bounds checks still compare the original index with its own
     table's rows;
   - same-table: leftover lookups of one table share it without offsets; index tensors of
     different shapes are flattened, gathered once and sliced/reshaped back;
2. concat writers (`writer.py`): a concat (`tensor.empty` + `tensor.insert_slice`s along the
   feature axis) fed by lookups or batched bags is written by one generic (one-id lookups
   gathered in it, every other slot copied in), then a `collapse_shape`: the copy
   dispatches disappear.

The writer is a step of this pass, not a pass of its own: which one-id lookups a writer
gathers is decided (with the writer's options: `min-concat-slots`, `narrow-concat`,
`max-table-bytes`) before the lookups are grouped, so that grouping leaves them to it, and
the writer's stacked tables come from the pool the groups' come from (a table is stacked
once per run: a table list that shares tables with a stack extends it). Two passes would
have to share those options and find each other's stacks again in the IR.

Measured policy (bench/results/batch-gathers.md): a lookup whose only consumer is a generic
is left alone (IREE fuses the two); unpooled groups whose results are sliced back need
`min-sliced-indices` indices; bag sums are unrolled in the body (rows stay contiguous
vector loads). Every read in a batched body is at indices that are uniform along the
embedding column, and the loop order keeps IREE from collapsing the column loop.

    %a = linalg.generic ins(%i0 : tensor<8xi64>) {extract %t0[%i0, %j]}   -> tensor<8x64xf32>
    %b = linalg.generic ins(%i1 : tensor<8xi64>) {extract %t1[%i1, %j]}   -> tensor<8x64xf32>
    %c = insert_slice %a, %b into tensor<8x128xf32>
  =>
    %m = util.global.load @__batch_gathers_table_64xf32   (t0 ++ t1, stacked once at load)
    %g = linalg.generic outs(tensor<8x2x64xf32>)          loops (slot s, b, j)
           { i = s == 0 ? %i0[b] : %i1[b]; assert i < rows[s]; assert i >= 0;
             yield %m[i + first_row[s], j] }
    %c = tensor.collapse_shape %g [[0], [1, 2]] : tensor<8x2x64xf32> into tensor<8x128xf32>

    %a = linalg.generic ins(%i0 : tensor<8x20xi64>) {extract %t0[%i0, %j]} -> 8x20x64
    %s = linalg.generic ins(%a) {sum over the 20}                          -> tensor<8x64xf32>
    (the same for %i1 and %t1)
  =>
    %g = linalg.generic outs(tensor<2x8x64xf32>)   loops (b, k, j), the 20 ids unrolled
           { acc = sum_l %m[%i_k[b, l] + first_row[k], j] }
    %s0 = tensor.extract_slice %g[0, 0, 0] [1, 8, 64]; %s1 = ... %g[1, ...]

Dynamic dims (a torch.export `Dim`): index tensors may have dynamic dims; sizes of new tensors
come from the values IREE holds for them (`tensor.empty` operands, `flow.tensor.tie_shape`,
`util.assume.int`) or `tensor.dim`. Lookups whose dynamic dims are one value stack as static
ones do; a dynamic export without shape facts gives every argument its own batch value, and
there the slots of one concat (torch.cat needs equal batches) are stacked and written in place
after host-side checks that the batches are equal (`cf.assert`: unequal batches stop the call);
lookups returned separately with unrelated sizes merge into the flat layout (segment starts
computed on the host); bags with unrelated batches stay apart (the reason names the dims). The
index-count thresholds count a dynamic dim as its `util.assume.int` upper bound, else as
`dynamic-dim-estimate`.

Tables held in immutable `util.global`s or read from external parameters
(`#flow.parameter.named`, iree-turbine's externalized weights, `iree-import-onnx
--externalize-params`) are stacked once, in an initializer placed after the ones it reads;
on CPU the parameter file stays mapped and the stack is one more resident copy (measured:
bench/results/batch-gathers.md section 12), so parameter tables are stacked only with
`stack-parameters=true` (by default their lookups are declined with that reason: resident
memory never grows). Mutable globals are never stacked.

ONNX imports: lookups in any loop order; indices wrapped by separate elementwise generics
(`i < 0 ? i + rows : i`) are read raw and wrapped in the batched body by their own table's
rows; a lookup over flattened [B*L] ids expanded back to [B, L, D] is normalized to one over
[B, L]. Concats whose slot widths share no chunk of 4 columns (raw dense features beside
embeddings, the Criteo layout) are written by a writer over the run of lookup slots
(`narrow-concat=run`), or over every slot in narrow chunks (`columns`).

Candidates, in the order they are applied: cross-table groups, same-table groups (key
family `gathers-group`; lookup-like ops that are no lookup: `gathers-lookup`), concat
writers (`gathers-concat`). A concat's one-id lookups are reserved for its writer before
lookups are grouped; its other lookup slots count as produced whether a lookup or the
batched gather that replaced it fills them, so the writer's plan (and key) is the same
before and after the groups are applied. The F.embedding_bag options (`embedding-bag`,
`offsets-bags`, `min-offsets-batch`) are rewrite-embedding-bags' (issue 23).

Layout: `match.py` (lookups, bags, concats, view hoisting), `plan.py` (candidates, keys,
grouping), `tables.py` (stacked tables), `build.py` (batched gathers; `scalars.py`: the
scalar code of their bodies),
`writer.py` (the concat writer step: its candidates, plans and emission).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from iree.compiler import ir

from iree_fusions.compiler import batching
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.protocol import Candidate, CandidatePass, PassContext, option

from .build import emit_group, slice_column_selects, unflatten_lookups
from .match import mark_immutable_load
from .concats import SameSizes, match_concats
from .plan import GroupOptions, GroupPlan, collect_lookups, group_candidates
from .tables import TablePool
from .writer import WriterOptions, WriterPlan, emit_concat_writer, writer_candidates

__all__ = ["BatchGathers", "GroupPlan", "WriterPlan"]


Plan = GroupPlan | WriterPlan  # a lookup group, or a concat written in place


@dataclass(frozen=True)
class BatchGathers(CandidatePass[Plan]):
    name = "batch-gathers"
    phase = "linalg"
    description = "embedding lookups -> a few batched gathers, concat written in place"

    # Defaults come from bench/results/batch-gathers.md measurements.
    # Lookup groups (plan.py, build.py).
    min_group_size: int = option(2, "lookups merged into one gather at least")
    min_sliced_indices: int = option(
        1024, "indices in a group of unpooled lookups whose results are sliced back, at least "
        "(few ids are slower merged: each sliced result leaving the function costs a copy; "
        "bench/results/code-costs.md)")
    min_pooled_indices: int = option(
        256, "indices in a group of bags, at least (few ids are slower merged: "
        "bench/results/code-costs.md)")
    cross_table: bool = option(True, "merge lookups of different constant tables (offsets)")
    same_table: bool = option(True, "merge lookups of one table (no offsets)")
    gather_mode: Literal["extract", "ins"] = option(
        "extract", "read indices with tensor.extract, or as block arguments (ins: measured "
        "slower)")
    dynamic_dim_estimate: int = option(
        h.TYPICAL_DYNAMIC_DIM, "size a dynamic index dim counts as in min-sliced-indices / "
        "min-pooled-indices when IREE holds no upper bound for it (util.assume.int umax)")
    # The concat writer step (writer.py).
    concat_writer: bool = option(True, "write concats of lookups in place")
    min_concat_slots: int = option(
        2, "concat slots produced by lookups or batched bags for a writer, at least")
    narrow_concat: Literal["run", "columns", "off"] = option(
        "run", "a concat whose slot widths share only narrow chunks: run = the writer covers "
        "the slots from the first to the last lookup in chunks of their gcd, the others "
        "inserted; columns = one generic writes every slot (fewer dispatches, a slower "
        "kernel: bench/results/code-costs.md); off = left to stock")
    values_as_ins: bool = option(
        False, "concat writer reads one-chunk-wide values as ins (slower, and IREE did not "
        "fuse the writer into the value's producer: bench/results/code-costs.md)")
    # Stacked tables (both steps).
    max_table_bytes: int = option(1 << 30, "largest stacked table built at load")
    dedup: bool = option(True, "a table shared by several lookups is stacked once")
    stack_parameters: bool = option(
        False, "stack tables read from external parameters at load (a second resident copy "
        "beside the parameter file: dlrm-b64 --form params, MiB held 4 -> 7); off: lookups of "
        "parameter tables merge only per table")

    def __post_init__(self) -> None:
        if self.min_concat_slots < 1:
            raise ValueError("min-concat-slots must be at least 1 (a concat no lookup feeds is "
                             "not this pass's to write)")

    def normalize(self, block: ir.Block, ctx: PassContext) -> None:
        """Changes no value: ONNX's flattened lookups and column selects in the torch form;
        the index views made just before each lookup or bag moved up to right after their
        operands (independent lookups then do not look interleaved); loads of immutable
        globals marked so. Idempotent: later rounds move nothing."""
        unflatten_lookups(block)
        slice_column_selects(block)
        found = collect_lookups(block, self.gather_mode != "ins")
        for lookup in found[0]:
            batching.hoist_view_chain(lookup.index, block)
            mark_immutable_load(lookup.table)
        # Moving views changes neither which ops are lookups nor their order: the round's
        # find takes these instead of walking the block again.
        ctx.state["normalized_lookups"] = (block, found)

    def find(self, block: ir.Block, ctx: PassContext) -> Iterator[Candidate[Plan]]:
        normalized = ctx.state.pop("normalized_lookups", None)
        lookups, not_lookups = normalized[1] if normalized is not None and \
            normalized[0] == block else collect_lookups(block, self.gather_mode != "ins")
        placements = h.block_placements(block)
        for lookup in lookups:
            lookup.placement = placements[lookup.op]
        concats = match_concats(block)
        sizes = SameSizes(concats)
        writers = writer_candidates(concats, lookups, placements, sizes,
                                    self.option_values(WriterOptions)) \
            if self.concat_writer else []
        reserved = {lookup for writer in writers if not writer.blocked
                    for lookup in writer.plan.slot_lookups.values()}
        yield from (writer for writer in writers if writer.blocked)
        yield from not_lookups
        yield from group_candidates([lookup for lookup in lookups if lookup not in reserved],
                                    h.block_positions(block), sizes,
                                    self.option_values(GroupOptions))
        yield from (writer for writer in writers if not writer.blocked)

    def apply(self, candidate: Candidate[Plan], ctx: PassContext) -> str:
        plan = candidate.plan
        if isinstance(plan, GroupPlan):
            tables = self._table_pool(ctx, plan.members[0].op.block)
            return emit_group(plan, tables, self.gather_mode == "ins", self.dedup)
        tables = self._table_pool(ctx, plan.concat.final.block)
        return emit_concat_writer(plan, tables, self.values_as_ins, self.dedup)

    def _table_pool(self, ctx: PassContext, block: ir.Block) -> TablePool:
        """The block's stacked tables, shared by every candidate applied in it during this
        run (with `dedup`, a table is stacked once)."""
        pools = ctx.state.setdefault("table_pools", {})
        if block not in pools:
            pools[block] = TablePool(ctx.module, block, self.dedup, self.max_table_bytes)
        return pools[block]
