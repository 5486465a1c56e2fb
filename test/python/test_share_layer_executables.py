"""share-layer-executables' grouping and planning on small IR: what makes slices one group,
which groups are reported, and each reason a group is left alone (the lit file has the
rewritten IR of sharktank's form)."""

from __future__ import annotations

import pytest

from support import passes

PASS = "share-layer-executables"


def _module(slices: list[tuple[int, str, str]], caches: int, cache_type: str = "8x2x4",
            strides: str = "1, 1, 1") -> str:
    """One function: `caches` tensors of `cache_type` f16, and a slice [1, 1, 4] of the
    cache numbered by each entry (cache, layer, kv) returned."""
    args = ", ".join(f"%c{i}: tensor<{cache_type}xf16>" for i in range(caches))
    body, outs = [], []
    for n, (cache, layer, kv) in enumerate(slices):
        body.append(f"  %s{n} = tensor.extract_slice %c{cache}[{layer}, {kv}, 0] [1, 1, 4] "
                    f"[{strides}] : tensor<{cache_type}xf16> to tensor<4xf16>")
        outs.append(f"%s{n}")
    types = ", ".join(["tensor<4xf16>"] * len(outs))
    return (f"util.func public @f({args}) -> ({types}) {{\n" + "\n".join(body)
            + f"\n  util.return {', '.join(outs)} : {types}\n}}\n")


def _run(text: str, options: str = "") -> tuple[str, list[str], list[str]]:
    """(IR, what changed, why each candidate was skipped)."""
    out, reports = passes.run_pass(text, f"{PASS}{{{options}}}" if options else PASS)
    (report,) = reports
    return out, [c.what for c in report.changes], [s.reason for s in report.skipped]


def _layers(n: int, kv: tuple[int, ...] = (0,)) -> list[tuple[int, str, str]]:
    """Layer i read from its own cache i, at each K/V offset in `kv`."""
    return [(i, str(i), str(k)) for i in range(n) for k in kv]


def test_one_layer_per_cache_is_shared_from_min_group_on():
    """4 layers, min-group 4: shared (the layer dim, 0); min-group 5: left alone, saying so."""
    text = _module(_layers(4), caches=4)
    _, changed, skipped = _run(text)
    assert changed == ["4 slices of tensor<8x2x4xf16> to tensor<4xf16> read their plane "
                       "(dim(s) 0) from an operand: IREE can compile one executable for all "
                       "of them"] and skipped == []
    _, changed, skipped = _run(text, "min-group=5")
    assert changed == [] and skipped == ["4 alike slice(s), fewer than min-group=5"]


def test_two_layers_are_enough_with_min_group_2():
    """K and V of 2 layers (the fewest the option allows): shared by the layer and K/V dims;
    the layer dim picks one layer per cache (two caches, two distinct layers)."""
    _, changed, _ = _run(_module(_layers(2, kv=(0, 1)), caches=2), "min-group=2")
    assert changed == ["4 slices of tensor<8x2x4xf16> to tensor<4xf16> read their plane "
                       "(dim(s) 0, 1) from an operand: IREE can compile one executable for all "
                       "of them"]


def test_a_pair_of_alike_slices_is_reported_a_single_one_is_not():
    _, changed, skipped = _run(_module(_layers(2), caches=2))
    assert changed == [] and skipped == ["2 alike slice(s), fewer than min-group=4"]
    _, changed, skipped = _run(_module(_layers(1), caches=1))
    assert changed == [] and skipped == []


def test_groups_differ_by_source_type():
    """4 layers of an 8-layer cache and 4 of a 9-layer one: two groups of 4."""
    text = _module(_layers(4), caches=4).replace("%c2: tensor<8x2x4xf16>, %c3: tensor<8x2x4xf16>",
                                                 "%c2: tensor<9x2x4xf16>, %c3: tensor<9x2x4xf16>")
    text = text.replace("%c2[2, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<8x2x4xf16>",
                        "%c2[2, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<9x2x4xf16>")
    text = text.replace("%c3[3, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<8x2x4xf16>",
                        "%c3[3, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<9x2x4xf16>")
    _, changed, skipped = _run(text, "min-group=2")
    assert [c.split(" to ")[0] for c in changed] == ["2 slices of tensor<8x2x4xf16>",
                                                     "2 slices of tensor<9x2x4xf16>"]


@pytest.mark.parametrize("strides", ["1, 2, 1", "2, 1, 1"])
def test_strided_slices_are_not_plane_selections(strides):
    """Any stride that is not 1 (one is enough): not a group at all."""
    _, changed, skipped = _run(_module(_layers(4), caches=4, strides=strides))
    assert changed == [] and skipped == []


def test_planes_of_one_cache_read_side_by_side_are_not_layers():
    """4 planes of one cache, and 2 caches each read at two layers: no dim picks one layer
    per cache."""
    reason = ("no dim picks one layer per tensor (each tensor sliced at one offset of it, "
              "another one per tensor): planes of one tensor read side by side (a batched "
              "result, packed ids), not one per layer")
    one = [(0, str(i), "0") for i in range(4)]
    two = [(i // 2, str(i), "0") for i in range(4)]
    for slices, caches in ((one, 1), (two, 2)):
        _, changed, skipped = _run(_module(slices, caches=caches))
        assert changed == [] and skipped == [reason]
