"""The concat writer step of batch-gathers: one generic that writes every slot of a concat
(one-id lookups gathered in it, batched gather slots and other values copied in), then a
`collapse_shape`; the `insert_slice` chain disappears. Its candidates (which concats, which
lookups each gathers: decided before the lookups are grouped, which leaves these to it),
typed plans and emission."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor
from iree.compiler.dialects import _linalg_ops_gen as linalg  # op classes; see ir_build

from iree_fusions.compiler import ir_build as b
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.invariants import parameter_names_text
from iree_fusions.compiler.ir_helpers import TENSOR_INSERT_SLICE
from iree_fusions.compiler.protocol import Candidate, NoMatch, structural_key

from .build import erase_dead_wraps
from .tables import TablePool, erase_dead_tables
from .scalars import (emit_checks, emit_size_checks, entry, index_in_shape, int_table, materialize,
                      select_chain, wrap_index)
from .match import Lookup, distinct_tables
from .concats import Concat, SameSizes, stacked_source
from .plan import SizeCheck


@dataclass(frozen=True)
class WriterOptions:
    """The options of batch-gathers that planning concat writers reads."""

    min_concat_slots: int
    narrow_concat: Literal["run", "columns", "off"]
    max_table_bytes: int
    stack_parameters: bool


MIN_WRITER_CHUNK = 4  # a concat writer writes chunks of gcd(slot widths) columns, >= this


@dataclass
class WriterPlan:
    """A concat written in place by one generic, which gathers `slot_lookups` itself."""

    concat: Concat
    slot_lookups: dict[int, Lookup]  # slot -> one-id lookup of a constant table
    checks: list[SizeCheck] = field(default_factory=list)  # rows read vs the batch
    # Slot widths that share only narrow chunks (raw dense features beside embeddings):
    # "columns" writes every slot in chunks of their gcd (down to single columns), "run"
    # only the run of slots from the first to the last lookup (chunks of its gcd), the
    # other slots inserted as they were.
    narrow: Literal["columns", "run"] | None = None


def writer_candidates(concats: list[Concat], lookups: list[Lookup], placements: dict,
                      sizes: SameSizes, opts: WriterOptions) -> list[Candidate[WriterPlan]]:
    """One candidate per concat that lookups feed: written in place when enough of its slots
    are produced by lookups (or by the batched gathers that replaced them). A concat no
    lookup feeds is no candidate (e.g. the one a B = 1 writer leaves: its run + other slots)."""
    by_result = {lookup.result: lookup for lookup in lookups}
    out = []
    for concat in concats:
        gathered, produced, unstacked = _writer_slots(concat, by_result,
                                                      placements[concat.final], sizes, opts)
        if not produced:
            continue
        kinds = tuple("gathered" if slot in gathered else "produced" if slot in produced
                      else "value" for slot in range(len(concat.slots)))
        key = structural_key("batch-gathers-concat", concat.batch_text, str(concat.elem),
                             tuple(concat.widths), kinds)
        out.append(Candidate.of(key, concat.final, f"concat of {len(concat.slots)} slots",
                                lambda concat=concat, gathered=gathered, count=len(produced),
                                unstacked=unstacked:
                                _writer_plan(concat, gathered, count, sizes, opts, unstacked)))
    return out


def _writer_slots(concat: Concat, by_result: dict, placement: frozenset[str], sizes: SameSizes,
                  opts: WriterOptions) -> tuple[dict[int, Lookup], set[int], list[str]]:
    """(slot -> one-id lookup the writer gathers itself, slots produced by a lookup, the
    parameter tables left unstacked: their lookups stay copied values).

    A slot counts as produced when a lookup whose only user is the insert fills it, or a
    slot of a batched gather that only inserts read: the same count before and after the
    groups are applied (each replaced lookup had the insert as its one user)."""
    gathered: dict[int, Lookup] = {}
    produced: set[int] = set()
    for slot in range(len(concat.slots)):
        src = concat.source(slot)
        lookup = by_result.get(src)
        if lookup is None:
            if stacked_source(src, concat.widths[slot]) is not None and all(
                    user.name == TENSOR_INSERT_SLICE and user.operands[0] == src
                    for user in h.users(src)):
                produced.add(slot)
            continue
        if len(h.users(lookup.result)) != 1:
            continue
        produced.add(slot)
        one_id = (len(lookup.index_sizes) == 1 and
                  sizes.same(lookup.index_sizes[0], concat.batch)) or \
            (concat.unit_batch and not lookup.index_sizes)
        if lookup.pool is None and one_id and h.is_constant_like(lookup.table) and \
                lookup.placement == placement:  # a lookup placed elsewhere stays a copied value
            gathered[slot] = lookup
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for slot, lookup in gathered.items():
        by_key[(lookup.dim, str(lookup.elem))].append(slot)
    unstacked: list[str] = []
    for slots in by_key.values():  # stacked tables over the limit or parameters: copied as
        tables = distinct_tables([gathered[slot] for slot in slots])  # values
        parameters = [name for name in map(h.parameter_name, tables) if name is not None]
        unstacking = bool(parameters) and not opts.stack_parameters
        if len(tables) > 1 and (h.value_bytes(tables) > opts.max_table_bytes or unstacking):
            unstacked += parameters if unstacking else []
            for slot in slots:
                del gathered[slot]
    return gathered, produced, unstacked


def _writer_plan(concat: Concat, gathered: dict[int, Lookup], produced: int, sizes: SameSizes,
                 opts: WriterOptions, unstacked: list[str]) -> WriterPlan:
    if not gathered and unstacked:  # it would only copy values (dlrm-b64 --form params:
        # 0.91x of stock on local-sync)
        raise NoMatch("concat-no-lookup",
                      "concat: the writer would gather none of its lookups (their tables are "
                      f"external parameters, not stacked: {parameter_names_text(unstacked)}; "
                      "stack-parameters=true stacks them), only copy values; left to IREE")
    if produced < opts.min_concat_slots:
        raise NoMatch("min-concat-slots", f"concat: {produced} slot(s) from lookups, fewer than "
                      f"min-concat-slots={opts.min_concat_slots}")
    narrow = None
    if concat.chunk < MIN_WRITER_CHUNK and not concat.unit_batch:
        why = (f"concat: slot widths {sorted(set(concat.widths))} share only "
               f"{concat.chunk}-column chunks (< {MIN_WRITER_CHUNK})")
        if opts.narrow_concat == "off":
            raise NoMatch("narrow-concat-off", f"{why} and narrow-concat=off")
        if opts.narrow_concat == "run":
            run = produced_run(concat, gathered)
            width = math.gcd(*concat.widths[run[0]:run[1]])
            if width < MIN_WRITER_CHUNK:
                raise NoMatch("concat-narrow-run",
                              f"{why}, and so do the slots from the first to the last lookup "
                              f"({width}-column chunks; narrow-concat=run)")
        narrow = opts.narrow_concat
    elif concat.chunk < MIN_WRITER_CHUNK:
        raise NoMatch("concat-widths",
                      f"concat: slot widths {sorted(set(concat.widths))} share only "
                      f"{concat.chunk}-column chunks (< {MIN_WRITER_CHUNK})")
    return WriterPlan(concat, gathered, _writer_checks(concat, gathered, sizes), narrow)


def produced_run(concat: Concat, gathered: dict[int, Lookup]) -> tuple[int, int]:
    """[first, last + 1) of the slots a lookup or a batched gather produces."""
    produced = [slot in gathered or
                stacked_source(concat.source(slot), concat.widths[slot]) is not None
                for slot in range(len(concat.slots))]
    if not any(produced):
        return 0, len(concat.slots)
    return produced.index(True), len(produced) - produced[::-1].index(True)


def _writer_checks(concat: Concat, gathered: dict[int, Lookup], sizes: SameSizes
                   ) -> list[SizeCheck]:
    """The rows of what the writer reads at row b < batch (an index tensor, a batched
    gather, a value), where they are not the batch itself: equal when the concat is valid
    (checked at run time); rows not known to be equal block the writer."""
    checks = []
    for slot in range(len(concat.slots)):
        src = concat.source(slot)
        stacked = stacked_source(src, concat.widths[slot])
        if slot in gathered:
            rows = gathered[slot].index_sizes[0] if gathered[slot].index_sizes else 1
        elif stacked is not None:
            rows = h.dim_key(stacked[0], 1) if h.tensor_type(stacked[0]).rank == 3 else 1
        else:
            rows = h.dim_key(src, 0) if h.tensor_type(src).rank == 2 else 1
        if rows == concat.batch:
            continue
        if not sizes.same(rows, concat.batch):
            raise NoMatch("concat-rows",
                          f"concat: slot {slot} has {h.size_text(rows)} rows, not known to equal "
                          f"the concat's {h.size_text(concat.batch)}")
        checks.append((rows, concat.batch))
    return list(dict.fromkeys(checks))


# ---------------------------------------------------------------- emission


KEPT_WHY = {True: "B = 1: written in place by their producers",
            False: "inserted as they were: narrow-concat=run"}


def emit_concat_writer(plan: WriterPlan, tables: TablePool, values_as_ins: bool,
                       dedup: bool) -> str:
    """Replaces the concat's insert_slice chain with one generic that writes its slots.

    At B = 1 every slot is a contiguous run of the result, so IREE writes a producer's
    result into it in place (no copy): there the writer covers only the run of slots from
    the first to the last lookup/batched slot, and the other slots keep their inserts (the
    value of a long chain like the MLP would otherwise wait for the writer).
    """
    concat, slot_lookups = plan.concat, plan.slot_lookups
    start, stop = 0, len(concat.slots)
    if concat.unit_batch or plan.narrow == "run":
        start, stop = produced_run(concat, slot_lookups)
    run = Concat(concat.inserts, concat.batch, concat.widths[start:stop], concat.slots[start:stop],
                 concat.elem, concat.rows[start:stop])
    run_lookups = {slot - start: lookup for slot, lookup in slot_lookups.items()
                   if start <= slot < stop}
    built = len(tables.built)
    with concat.final.location, ir.InsertionPoint(concat.final):
        emit_size_checks(plan.checks, "concat writer", concat.final.block)
        result, counts = _write_slots(run, run_lookups, tables, values_as_ins, dedup)
        if (start, stop) != (0, len(concat.slots)):
            result = _insert_other_slots(concat, result, start, stop)
    n_inserts = len(concat.inserts)
    concat.final.results[0].replace_all_uses_with(result)
    for ins in reversed(concat.inserts):
        ins.erase()
    erased = [lookup for lookup in slot_lookups.values() if not list(lookup.result.uses)]
    for lookup in erased:
        for op in reversed(lookup.ops):
            op.erase()
    erase_dead_tables(distinct_tables(list(slot_lookups.values())))
    erase_dead_wraps(erased)
    n_lookups, n_groups, n_stacked, n_values = counts
    kept = len(concat.slots) - (stop - start)
    return (f"concat of {len(concat.slots)} slots (widths "
            f"{'/'.join(map(str, sorted(set(concat.widths))))}) written in place by one generic in "
            f"{run.chunk}-column chunks ({n_lookups} lookups gathered in it from {n_groups} "
            f"table group(s), {n_stacked} from batched gathers, {n_values} copied values); "
            f"{n_inserts} insert_slices removed"
            + (f", {kept} kept ({KEPT_WHY[concat.unit_batch]})" if kept else "")
            + (f"; checked at run time: {len(plan.checks)} slot batch size(s) equal to the "
               "concat's" if plan.checks else "") + tables.note_since(built))


def _insert_other_slots(concat: Concat, written: ir.Value, start: int, stop: int) -> ir.Value:
    """The concat from the written run of slots [start, stop) and the other slots' values (each
    inserted with its own rows, as before)."""
    prev, col = concat.inserts[0].operands[1], 0
    for slot, width in enumerate(concat.widths):
        if slot == start:
            prev = b.insert_slice(written, prev, [0, col],
                                  [materialize(concat.batch), sum(concat.widths[start:stop])])
        elif not start <= slot < stop:
            prev = b.insert_slice(concat.source(slot), prev, [0, col],
                                  [materialize(concat.rows[slot]), width])
        col += width
    return prev


@dataclass
class _Chunks:
    """The writer's loops (chunk, b, lane) and what each chunk is."""

    chunk: ir.Value  # loop index of the chunk
    batch: ir.Value
    lane: ir.Value
    q: ir.Value  # columns per chunk
    chunk_slot: list[int]  # the slot of each chunk
    chunk_sub: list[int]  # the chunk's place in its slot
    pre: ir.InsertionPoint  # where constants and index reshapes go (before the generic)

    def column(self, members: set[int]) -> ir.Value:
        """sub * q + lane, with sub the chunk's place in its slot (0 outside `members`)."""
        subs = [sub if slot in members else 0
                for slot, sub in zip(self.chunk_slot, self.chunk_sub)]
        if not any(subs):
            return self.lane
        with self.pre:
            subs_table = int_table(subs)
        offset = arith.MulIOp(entry(subs_table, self.chunk), self.q).result
        return arith.AddIOp(offset, self.lane).result


def _write_slots(concat: Concat, slot_lookups: dict[int, Lookup], tables: TablePool,
                 values_as_ins: bool, dedup: bool) -> tuple[ir.Value, tuple[int, ...]]:
    """The value of `concat` written by one generic in chunks of q = gcd(widths)
    columns, and (lookups, table groups, batched slots, copied values) it reads.

    Loops (chunk, b, lane) write [B, W/q, q] through the map (c, b, l) -> (b, c, l), then a
    collapse_shape gives [B, W]. No two loops are adjacent in the same order in every map,
    so IREE does not collapse them (which would turn row reads into per-element gathers).
    Per chunk, constant tables give the slot's kind and the chunk's place in the slot; every
    read (table rows, other values, batched bags) is at [uniform indices..., sub * q + lane],
    which the vectorizer turns into contiguous loads. Lookups of one (dim, dtype, checks)
    read one stacked table; the index is picked among the lookups' index tensors by slot.
    """
    nslots, bsz = len(concat.slots), materialize(concat.batch)
    elem, chunk_cols = concat.elem, concat.chunk
    nchunks = sum(concat.widths) // chunk_cols
    chunk_slot, chunk_sub = [], []
    for slot, width in enumerate(concat.widths):
        chunk_slot += [slot] * (width // chunk_cols)
        chunk_sub += list(range(width // chunk_cols))
    # Sources: lookup groups (by dim/dtype/checks), other values, batched (stacked) gathers.
    groups: dict[tuple, list[int]] = defaultdict(list)
    values: list[int] = []
    stacks: dict[ir.Value, list[tuple[int, int]]] = {}
    for slot in range(nslots):
        if slot in slot_lookups:
            lookup = slot_lookups[slot]
            groups[(lookup.dim, str(lookup.elem), str(lookup.index_elem), lookup.checks,
                    lookup.wrap)].append(slot)
            continue
        stacked = stacked_source(concat.source(slot), concat.widths[slot])
        if stacked is not None:
            stacks.setdefault(stacked[0], []).append((slot, stacked[1]))
        else:
            values.append(slot)
    code = {}  # slot -> kind code
    for group_no, slots in enumerate(groups.values()):
        code.update({slot: group_no for slot in slots})
    base = len(groups)
    code.update({slot: base for slot in values})
    for group_no, pairs in enumerate(stacks.values()):
        code.update({slot: base + 1 + group_no for slot, _ in pairs})
    # One-chunk-wide values read as inputs (b, lane) (option values-as-ins).
    ins_slots = [slot for slot in values if concat.widths[slot] == chunk_cols and values_as_ins]
    ins = [concat.source(slot) for slot in ins_slots]
    in_maps = [b.map_attr(3, [1, 2] if ir.RankedTensorType(value.type).rank == 2 else [2])
               for value in ins]

    empty = tensor.EmptyOp([bsz, nchunks, chunk_cols], elem)
    pre = ir.InsertionPoint(empty)

    def written_element(args: list[ir.Value]) -> ir.Value:
        chunk, batch, lane = (linalg.IndexOp(dim).result for dim in range(3))
        chunks = _Chunks(chunk, batch, lane, b.index_const(chunk_cols), chunk_slot, chunk_sub, pre)
        if chunk_slot == list(range(nchunks)):
            s_v = chunk  # one chunk per slot
        else:
            with pre:
                slot_table = int_table(chunk_slot)
            s_v = entry(slot_table, chunk)
        kind_v = None
        if len(set(code.values())) > 1:
            with pre:
                kinds = int_table([code[slot] for slot in range(nslots)], width=32)
            kind_v = tensor.ExtractOp(kinds, [s_v]).result

        def is_kind(kind: int) -> ir.Value:
            kind_const = arith.ConstantOp(ir.IntegerType.get_signless(32), kind).result
            return arith.CmpIOp(arith.CmpIPredicate.eq, kind_v, kind_const).result

        result = None
        for group_no, ((_, _, _, checks, wrap), slots) in enumerate(groups.items()):
            lks = [slot_lookups[slot] for slot in slots]
            distinct = distinct_tables(lks)
            if len(distinct) == 1:
                table, start_at = distinct[0], [0] * len(lks)
            elif dedup:
                table, starts = tables.stacked(distinct)
                start_at = [starts[distinct.index(lookup.table)] for lookup in lks]
            else:
                table, start_at = tables.stacked([lookup.table for lookup in lks])
            chain_in = []
            for lookup in lks:
                with pre:
                    index = index_in_shape(lookup)
                chain_in.append(tensor.ExtractOp(index, [batch] if lookup.index_shape else [])
                                .result)
            raw = select_chain(s_v, chain_in, slots)
            idx = arith.IndexCastOp(ir.IndexType.get(), raw).result
            member = dict(zip(slots, range(len(lks))))
            rows = [lks[member[slot]].rows if slot in member else 0 for slot in range(nslots)]
            offs = [start_at[member[slot]] if slot in member else 0 for slot in range(nslots)]
            with pre:
                rows_table = int_table(rows)
            rows_v = entry(rows_table, s_v)
            if wrap:
                idx = wrap_index(idx, rows_v)
            skip = None
            if kind_v is not None:
                other = is_kind(group_no)
                true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
                skip = arith.XOrIOp(other, true).result
            emit_checks(checks, raw, idx, rows_v, skip)
            if any(offs):
                with pre:
                    offs_table = int_table(offs)
                idx = arith.AddIOp(idx, entry(offs_table, s_v)).result
            if skip is not None:
                idx = arith.SelectOp(skip, b.index_const(0), idx).result
            col = chunks.column(set(slots))
            value = tensor.ExtractOp(table, [idx, col]).result
            result = value if result is None else \
                arith.SelectOp(is_kind(group_no), value, result).result
        if values:
            pvs = []
            for slot in values:
                value = concat.source(slot)
                if slot in ins_slots:
                    pvs.append(args[ins_slots.index(slot)])
                    continue
                col = chunks.column({slot})
                read_at = [batch, col] if ir.RankedTensorType(value.type).rank == 2 else [col]
                pvs.append(tensor.ExtractOp(value, read_at).result)
            picked = select_chain(s_v, pvs, values)
            result = picked if result is None else \
                arith.SelectOp(is_kind(base), picked, result).result
        for group_no, (stacked, pairs) in enumerate(stacks.items()):
            stack_pos = [0] * nslots
            for slot, pos in pairs:
                stack_pos[slot] = pos
            with pre:
                ks_table = int_table(stack_pos)
            pos_v = entry(ks_table, s_v)
            col = chunks.column({slot for slot, _ in pairs})
            read_at = [pos_v, batch, col] if ir.RankedTensorType(stacked.type).rank == 3 \
                else [pos_v, col]
            gathered_v = tensor.ExtractOp(stacked, read_at).result
            result = gathered_v if result is None else \
                arith.SelectOp(is_kind(base + 1 + group_no), gathered_v, result).result
        return result

    gen = b.generic(ins, [empty.result], in_maps + [b.map_attr(3, [1, 0, 2])],
                    ["parallel"] * 3, written_element)
    written = b.collapse(gen.results[0], [[0], [1, 2]],
                         b.tensor_type_of([bsz, nchunks * chunk_cols], elem))
    n_lookups = sum(len(slots) for slots in groups.values())
    counts = (n_lookups, len(groups), sum(len(entries) for entries in stacks.values()), len(values))
    return written, counts
