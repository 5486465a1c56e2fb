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
from iree_fusions.compiler.ir_helpers import TENSOR_INSERT_SLICE
from iree_fusions.compiler.pass_base import Candidate, NoMatch, structural_key

from .build import (TablePool, emit_checks, emit_size_checks, entry, erase_dead_tables,
                    erase_dead_wraps, index_const, index_in_shape, int_table, materialize,
                    select_chain, wrap_index)
from .match import Concat, Lookup, SameSizes, distinct_tables, stacked_source
from .plan import SizeCheck


@dataclass(frozen=True)
class WriterOptions:
    """The options of batch-gathers that planning concat writers reads."""

    min_concat_slots: int
    narrow_concat: Literal["run", "columns", "off"]
    max_table_bytes: int


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
    by_result = {lk.result: lk for lk in lookups}
    out = []
    for c in concats:
        gathered, produced = _writer_slots(c, by_result, placements[c.final], sizes, opts)
        if not produced:
            continue
        kinds = tuple("gathered" if s in gathered else "produced" if s in produced else "value"
                      for s in range(len(c.slots)))
        key = structural_key("gathers-concat", c.batch_text, str(c.elem), tuple(c.widths),
                             kinds)
        out.append(Candidate.of(key, c.final, f"concat of {len(c.slots)} slots",
                                lambda c=c, gathered=gathered, n=len(produced):
                                _writer_plan(c, gathered, n, sizes, opts)))
    return out


def _writer_slots(c: Concat, by_result: dict, placement: frozenset[str], sizes: SameSizes,
                  opts: WriterOptions) -> tuple[dict[int, Lookup], set[int]]:
    """(slot -> one-id lookup the writer gathers itself, slots produced by a lookup).

    A slot counts as produced when a lookup whose only user is the insert fills it, or a
    slot of a batched gather that only inserts read: the same count before and after the
    groups are applied (each replaced lookup had the insert as its one user)."""
    gathered: dict[int, Lookup] = {}
    produced: set[int] = set()
    for s in range(len(c.slots)):
        src = c.source(s)
        lk = by_result.get(src)
        if lk is None:
            if stacked_source(src, c.widths[s]) is not None and all(
                    u.name == TENSOR_INSERT_SLICE and u.operands[0] == src
                    for u in h.users(src)):
                produced.add(s)
            continue
        if len(h.users(lk.result)) != 1:
            continue
        produced.add(s)
        one_id = (len(lk.index_sizes) == 1 and sizes.same(lk.index_sizes[0], c.batch)) or \
            (c.unit_batch and not lk.index_sizes)
        if lk.pool is None and one_id and h.is_constant_like(lk.table) and \
                lk.placement == placement:  # a lookup placed elsewhere stays a copied value
            gathered[s] = lk
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for s, lk in gathered.items():
        by_key[(lk.dim, str(lk.elem))].append(s)
    for slots in by_key.values():  # stacked tables over the limit: copied as values
        tables = distinct_tables([gathered[s] for s in slots])
        if len(tables) > 1 and h.value_bytes(tables) > opts.max_table_bytes:
            for s in slots:
                del gathered[s]
    return gathered, produced


def _writer_plan(c: Concat, gathered: dict[int, Lookup], produced: int, sizes: SameSizes,
                 opts: WriterOptions) -> WriterPlan:
    if produced < opts.min_concat_slots:
        raise NoMatch(f"concat: {produced} slot(s) from lookups, fewer than "
                      f"min-concat-slots={opts.min_concat_slots}")
    narrow = None
    if c.chunk < MIN_WRITER_CHUNK and not c.unit_batch:
        why = (f"concat: slot widths {sorted(set(c.widths))} share only {c.chunk}-column chunks "
               f"(< {MIN_WRITER_CHUNK})")
        if opts.narrow_concat == "off":
            raise NoMatch(f"{why} and narrow-concat=off")
        if opts.narrow_concat == "run":
            run = produced_run(c, gathered)
            width = math.gcd(*c.widths[run[0]:run[1]])
            if width < MIN_WRITER_CHUNK:
                raise NoMatch(f"{why}, and so do the slots from the first to the last lookup "
                              f"({width}-column chunks; narrow-concat=run)")
        narrow = opts.narrow_concat
    elif c.chunk < MIN_WRITER_CHUNK:
        raise NoMatch(f"concat: slot widths {sorted(set(c.widths))} share only {c.chunk}-column "
                      f"chunks (< {MIN_WRITER_CHUNK})")
    return WriterPlan(c, gathered, _writer_checks(c, gathered, sizes), narrow)


def produced_run(c: Concat, gathered: dict[int, Lookup]) -> tuple[int, int]:
    """[first, last + 1) of the slots a lookup or a batched gather produces."""
    produced = [s in gathered or stacked_source(c.source(s), c.widths[s]) is not None
                for s in range(len(c.slots))]
    if not any(produced):
        return 0, len(c.slots)
    return produced.index(True), len(produced) - produced[::-1].index(True)


def _writer_checks(c: Concat, gathered: dict[int, Lookup], sizes: SameSizes
                   ) -> list[SizeCheck]:
    """The rows of what the writer reads at row b < batch (an index tensor, a batched
    gather, a value), where they are not the batch itself: equal when the concat is valid
    (checked at run time); rows not known to be equal block the writer."""
    checks = []
    for s in range(len(c.slots)):
        src = c.source(s)
        st = stacked_source(src, c.widths[s])
        if s in gathered:
            rows = gathered[s].index_sizes[0] if gathered[s].index_sizes else 1
        elif st is not None:
            rows = h.dim_key(st[0], 1) if h.tensor_type(st[0]).rank == 3 else 1
        else:
            rows = h.dim_key(src, 0) if h.tensor_type(src).rank == 2 else 1
        if rows == c.batch:
            continue
        if not sizes.same(rows, c.batch):
            raise NoMatch(f"concat: slot {s} has {h.size_text(rows)} rows, not known to equal "
                          f"the concat's {h.size_text(c.batch)}")
        checks.append((rows, c.batch))
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
    c, slot_lookups = plan.concat, plan.slot_lookups
    s0, s1 = 0, len(c.slots)
    if c.unit_batch or plan.narrow == "run":
        s0, s1 = produced_run(c, slot_lookups)
    run = Concat(c.inserts, c.batch, c.widths[s0:s1], c.slots[s0:s1], c.elem, c.rows[s0:s1])
    run_lookups = {s - s0: lk for s, lk in slot_lookups.items() if s0 <= s < s1}
    built = len(tables.built)
    with c.final.location, ir.InsertionPoint(c.final):
        emit_size_checks(plan.checks, "concat writer", c.final.block)
        result, counts = _write_slots(run, run_lookups, tables, values_as_ins, dedup)
        if (s0, s1) != (0, len(c.slots)):
            result = _insert_other_slots(c, result, s0, s1)
    n_inserts = len(c.inserts)
    c.final.results[0].replace_all_uses_with(result)
    for ins in reversed(c.inserts):
        ins.erase()
    erased = [lk for lk in slot_lookups.values() if not list(lk.result.uses)]
    for lk in erased:
        for op in reversed(lk.ops):
            op.erase()
    erase_dead_tables(distinct_tables(list(slot_lookups.values())))
    erase_dead_wraps(erased)
    n_lookups, n_groups, n_stacked, n_values = counts
    kept = len(c.slots) - (s1 - s0)
    return (f"concat of {len(c.slots)} slots (widths "
            f"{'/'.join(map(str, sorted(set(c.widths))))}) written in place by one generic in "
            f"{run.chunk}-column chunks ({n_lookups} lookups gathered in it from {n_groups} "
            f"table group(s), {n_stacked} from batched gathers, {n_values} copied values); "
            f"{n_inserts} insert_slices removed"
            + (f", {kept} kept ({KEPT_WHY[c.unit_batch]})" if kept else "")
            + (f"; checked at run time: {len(plan.checks)} slot batch size(s) equal to the "
               "concat's" if plan.checks else "") + tables.note_since(built))


def _insert_other_slots(c: Concat, written: ir.Value, s0: int, s1: int) -> ir.Value:
    """The concat from the written run of slots [s0, s1) and the other slots' values (each
    inserted with its own rows, as before)."""
    prev, col = c.inserts[0].operands[1], 0
    for s, w in enumerate(c.widths):
        if s == s0:
            prev = b.insert_slice(written, prev, [0, col],
                                  [materialize(c.batch), sum(c.widths[s0:s1])])
        elif not s0 <= s < s1:
            prev = b.insert_slice(c.source(s), prev, [0, col], [materialize(c.rows[s]), w])
        col += w
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
        at = arith.MulIOp(entry(subs_table, self.chunk), self.q).result
        return arith.AddIOp(at, self.lane).result


def _write_slots(c: Concat, slot_lookups: dict[int, Lookup], tables: TablePool,
                 values_as_ins: bool, dedup: bool) -> tuple[ir.Value, tuple[int, ...]]:
    """The value of the concat `c` written by one generic in chunks of q = gcd(widths)
    columns, and (lookups, table groups, batched slots, copied values) it reads.

    Loops (chunk, b, lane) write [B, W/q, q] through the map (c, b, l) -> (b, c, l), then a
    collapse_shape gives [B, W]. No two loops are adjacent in the same order in every map,
    so IREE does not collapse them (which would turn row reads into per-element gathers).
    Per chunk, constant tables give the slot's kind and the chunk's place in the slot; every
    read (table rows, other values, batched bags) is at [uniform indices..., sub * q + lane],
    which the vectorizer turns into contiguous loads. Lookups of one (dim, dtype, checks)
    read one stacked table; the index is picked among the lookups' index tensors by slot.
    """
    nslots, bsz, elem, q = len(c.slots), materialize(c.batch), c.elem, c.chunk
    nchunks = sum(c.widths) // q
    chunk_slot, chunk_sub = [], []
    for s, w in enumerate(c.widths):
        chunk_slot += [s] * (w // q)
        chunk_sub += list(range(w // q))
    # Sources: lookup groups (by dim/dtype/checks), other values, batched (stacked) gathers.
    groups: dict[tuple, list[int]] = defaultdict(list)
    values: list[int] = []
    stacks: dict[ir.Value, list[tuple[int, int]]] = {}
    for s in range(nslots):
        if s in slot_lookups:
            lk = slot_lookups[s]
            groups[(lk.dim, str(lk.elem), str(lk.index_elem), lk.checks, lk.wrap)].append(s)
            continue
        st = stacked_source(c.source(s), c.widths[s])
        if st is not None:
            stacks.setdefault(st[0], []).append((s, st[1]))
        else:
            values.append(s)
    code = {}  # slot -> kind code
    for g, slots in enumerate(groups.values()):
        code.update({s: g for s in slots})
    base = len(groups)
    code.update({s: base for s in values})
    for g, pairs in enumerate(stacks.values()):
        code.update({s: base + 1 + g for s, _ in pairs})
    # One-chunk-wide values read as inputs (b, lane) (option values-as-ins).
    ins_slots = [s for s in values if c.widths[s] == q and values_as_ins]
    ins = [c.source(s) for s in ins_slots]
    in_maps = [b.map_attr(3, [1, 2] if ir.RankedTensorType(v.type).rank == 2 else [2])
               for v in ins]

    empty = tensor.EmptyOp([bsz, nchunks, q], elem)
    gen = b.new_generic(ins, [empty.result], in_maps + [b.map_attr(3, [1, 0, 2])],
                        ["parallel"] * 3)
    written = b.collapse(gen.results[0], [[0], [1, 2]],
                         b.tensor_type_of([bsz, nchunks * q], elem))
    pre = ir.InsertionPoint(empty)
    block = b.append_body_block(gen, ins + [empty.result])
    with ir.InsertionPoint(block):
        chunk, batch, lane = (linalg.IndexOp(d).result for d in range(3))
        ch = _Chunks(chunk, batch, lane, index_const(q), chunk_slot, chunk_sub, pre)
        if chunk_slot == list(range(nchunks)):
            s_v = chunk  # one chunk per slot
        else:
            with pre:
                slot_table = int_table(chunk_slot)
            s_v = entry(slot_table, chunk)
        kind_v = None
        if len(set(code.values())) > 1:
            with pre:
                kinds = int_table([code[s] for s in range(nslots)], width=32)
            kind_v = tensor.ExtractOp(kinds, [s_v]).result

        def is_kind(k: int) -> ir.Value:
            kc = arith.ConstantOp(ir.IntegerType.get_signless(32), k).result
            return arith.CmpIOp(arith.CmpIPredicate.eq, kind_v, kc).result

        result = None
        n_lookups = 0
        for g, ((_, _, _, checks, wrap), slots) in enumerate(groups.items()):
            lks = [slot_lookups[s] for s in slots]
            n_lookups += len(lks)
            distinct = distinct_tables(lks)
            if len(distinct) == 1:
                table, start_at = distinct[0], [0] * len(lks)
            elif dedup:
                table, starts = tables.stacked(distinct)
                start_at = [starts[distinct.index(lk.table)] for lk in lks]
            else:
                table, start_at = tables.stacked([lk.table for lk in lks])
            chain_in = []
            for lk in lks:
                with pre:
                    index = index_in_shape(lk)
                chain_in.append(tensor.ExtractOp(index, [batch] if lk.index_shape else []).result)
            raw = select_chain(s_v, chain_in, slots)
            idx = arith.IndexCastOp(ir.IndexType.get(), raw).result
            member = dict(zip(slots, range(len(lks))))
            rows = [lks[member[s]].rows if s in member else 0 for s in range(nslots)]
            offs = [start_at[member[s]] if s in member else 0 for s in range(nslots)]
            with pre:
                rows_table = int_table(rows)
            rows_v = entry(rows_table, s_v)
            if wrap:
                idx = wrap_index(idx, rows_v)
            skip = None
            if kind_v is not None:
                other = is_kind(g)
                true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
                skip = arith.XOrIOp(other, true).result
            emit_checks(checks, raw, idx, rows_v, skip)
            if any(offs):
                with pre:
                    offs_table = int_table(offs)
                idx = arith.AddIOp(idx, entry(offs_table, s_v)).result
            if skip is not None:
                idx = arith.SelectOp(skip, index_const(0), idx).result
            col = ch.column(set(slots))
            v = tensor.ExtractOp(table, [idx, col]).result
            result = v if result is None else arith.SelectOp(is_kind(g), v, result).result
        if values:
            pvs = []
            for s in values:
                v = c.source(s)
                if s in ins_slots:
                    pvs.append(block.arguments[ins_slots.index(s)])
                    continue
                col = ch.column({s})
                at = [batch, col] if ir.RankedTensorType(v.type).rank == 2 else [col]
                pvs.append(tensor.ExtractOp(v, at).result)
            pv = select_chain(s_v, pvs, values)
            result = pv if result is None else arith.SelectOp(is_kind(base), pv, result).result
        for g, (st, pairs) in enumerate(stacks.items()):
            ks = [0] * nslots
            for s, k in pairs:
                ks[s] = k
            with pre:
                ks_table = int_table(ks)
            kv = entry(ks_table, s_v)
            col = ch.column({s for s, _ in pairs})
            at = [kv, batch, col] if ir.RankedTensorType(st.type).rank == 3 else [kv, col]
            gv = tensor.ExtractOp(st, at).result
            result = gv if result is None else \
                arith.SelectOp(is_kind(base + 1 + g), gv, result).result
        linalg.YieldOp([result])
    counts = (n_lookups, len(groups), sum(len(p) for p in stacks.values()), len(values))
    return written, counts
