"""Towers (chains of layers, each feeding the next) and groups of towers with the same layer
structure, found in a block; their candidate keys."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import LINALG_MATMUL, RESHAPES
from iree_fusions.compiler.protocol import NoMatch, structural_key

from .match import Layer, analyze_layer


# ---------------------------------------------------------------- towers and groups


@dataclass
class Tower:
    layers: list[Layer]
    links: list[ir.Operation | None] = field(default_factory=list)  # expand between layers
    # Devices its inputs come from (multi-device programs; see h.block_placements): only
    # towers with equal placements are grouped.
    placement: frozenset[str] = frozenset()

    @property
    def input(self) -> ir.Value:
        return self.layers[0].lhs


@dataclass
class TowerGroup:
    """Towers whose first layers agree: reading one input (shared) or one input each."""

    towers: list[Tower]
    shared: bool
    # A lone tower whose structural partners are placed on other devices.
    elsewhere: bool = False
    # Towers of equal structure but different widths (N per layer), padded to the widest.
    padded: bool = False

    @property
    def first_mm(self) -> ir.Operation:
        return self.towers[0].layers[0].mm

    def describe(self) -> str:
        depths = sorted({len(tower.layers) for tower in self.towers})
        kinds = "/".join(sorted({lay.kind for tower in self.towers for lay in tower.layers}))
        widths = ""
        if self.padded:
            widths = ", widths " + "/".join(
                "x".join(str(lay.width) for lay in tower.layers) for tower in self.towers)
        return (f"group of {len(self.towers)} towers (depth {','.join(map(str, depths))}, "
                f"{kinds}, {'shared' if self.shared else 'separate'} input{widths})")


def next_layer(layer: Layer, layers: dict[ir.Operation, Layer]
               ) -> tuple[Layer, ir.Operation | None] | None:
    """The one layer that reads this layer's result as its input (maybe through an
    expand_shape that restores the matmul result type), and that expand_shape."""
    found = []
    for index, value in enumerate(layer.chain):
        # The matmul result's shape in this chain value's element type: a half-precision
        # layer accumulates in f32 and truncates in its epilogue, so the next layer reads a
        # bf16 / f16 value where the matmul gave f32.
        link_type = ir.RankedTensorType.get(layer.result_type.shape,
                                            ir.RankedTensorType(value.type).element_type,
                                            loc=ir.Location.unknown())
        for user in h.users(value):
            if user in layers and h.dps_inputs(user)[0] == value:
                found.append((layers[user], None, index))
            elif user.name in RESHAPES and user.results[0].type == link_type:
                # A row-major reshape of a row-major view of [M, N] back to [M, N] is the
                # [M, N] value itself (tokens: collapse_shape [B, T, N] -> [B*T, N]).
                for next_user in h.users(user.results[0]):
                    if next_user in layers and h.dps_inputs(next_user)[0] == user.results[0]:
                        found.append((layers[next_user], user, index))
    if len(found) != 1:
        return None
    nxt, link, index = found[0]
    if nxt.mm == layer.mm or nxt.lhs.type.shape != layer.result_type.shape:
        return None
    layer.tail_index = index
    # The expand_shape is part of the tower only when the next layer is its one user.
    if link is not None and len(h.users(link.results[0])) != 1:
        link = None
    return nxt, link


def find_layers(block: ir.Block, positions: h.Positions
                ) -> tuple[dict[ir.Operation, Layer], list[tuple[ir.Operation, NoMatch]]]:
    """The tower layers of the block's matmuls, and (matmul, why not) for the others."""
    layers: dict[ir.Operation, Layer] = {}
    rejected: list[tuple[ir.Operation, NoMatch]] = []
    for op in block.operations:
        op = op.operation
        if op.name != LINALG_MATMUL:
            continue
        try:
            layers[op] = analyze_layer(op, positions)
        except NoMatch as e:
            rejected.append((op, e))
    return layers, rejected


def link_towers(layers: dict[ir.Operation, Layer]) -> list[Tower]:
    """Chains the layers into towers (each layer followed by the one layer reading it)."""
    succ: dict[ir.Operation, tuple[Layer, ir.Operation | None]] = {}
    has_pred: set = set()
    for matmul, layer in layers.items():
        nxt = next_layer(layer, layers)
        if nxt is not None and nxt[0].mm not in has_pred:
            succ[matmul] = nxt
            has_pred.add(nxt[0].mm)
    towers = []
    for matmul, layer in layers.items():
        if matmul in has_pred:
            continue
        tower = Tower([layer])
        while tower.layers[-1].mm in succ:
            nxt, link = succ[tower.layers[-1].mm]
            tower.layers.append(nxt)
            tower.links.append(link)
        towers.append(tower)
    return towers


def place_towers(towers: list[Tower], placements: dict[ir.Operation, frozenset[str]]) -> None:
    """Each tower's placement: the devices its ops' inputs come from."""
    for tower in towers:
        tower.placement = frozenset().union(
            *(placements.get(op, frozenset()) for lay in tower.layers for op in lay.ops))


def group_towers(towers: list[Tower], positions: h.Positions) -> list[TowerGroup]:
    """Towers reading one input with an equal first layer, then the remaining towers with an
    equal first layer and separate inputs; in block order of their first matmul. Towers
    placed on different devices are never in one group."""
    shared: dict[tuple, list[Tower]] = {}
    for tower in towers:
        shared.setdefault((tower.input, tower.layers[0].key, tower.placement), []).append(tower)
    groups: list[TowerGroup] = []
    separate: dict[tuple, list[Tower]] = {}
    for peers in shared.values():
        if len(peers) >= 2:
            groups.append(TowerGroup(peers, True))
        else:
            separate.setdefault((peers[0].layers[0].key, peers[0].placement), []).append(peers[0])
    structures = Counter(key for key, _ in separate)
    lone: list[Tower] = []
    for (key, _), peers in separate.items():
        if len(peers) == 1 and structures[key] == 1:
            lone.append(peers[0])
        else:
            groups.append(TowerGroup(peers, False, len(peers) == 1))
    groups += pad_groups(lone)
    groups.sort(key=lambda group: min(h.position(tower.layers[0].mm, positions)
                                      for tower in group.towers))
    return groups


def pad_groups(lone: list[Tower]) -> list[TowerGroup]:
    """Towers without a partner of equal structure, grouped when they read one input, are
    placed alike and agree on every layer but for the widths (padded groups); the others stay
    alone."""
    found: dict[tuple, list[Tower]] = {}
    for tower in lone:
        key = (tower.input, tuple(lay.width_free_key for lay in tower.layers), tower.placement)
        found.setdefault(key, []).append(tower)
    return [TowerGroup(peers, True, padded=True) if len(peers) >= 2 else TowerGroup(peers, False)
            for peers in found.values()]


# ---------------------------------------------------------------- candidate keys

KEY_FAMILY = "batch-mlp-towers"


def group_key(group: TowerGroup, stack_layout: str | None) -> str:
    """The group's structure: shared or separate input, per tower its depth and per layer
    its structure (Layer.key: shapes, element types, maps, bodies, activation, weight kind),
    and the layout of a stack that consumes the results."""
    towers = tuple((len(tower.layers), tuple(lay.key for lay in tower.layers))
                   for tower in group.towers)
    padded = ("padded",) if group.padded else ()
    return structural_key(KEY_FAMILY, "group", "shared" if group.shared else "separate",
                          len(group.towers), towers, ("stack", stack_layout), *padded)


def matmul_key(matmul: ir.Operation) -> str:
    """A linalg.matmul that is no tower layer."""
    return structural_key(KEY_FAMILY, "matmul", h.op_signature(matmul))
