"""Layers, towers and tower groups: what a tower is, structurally, and which towers batch
together (the reason at the check that failed when a matmul is not a tower layer)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.ir_helpers import (ARITH_ADDF, ARITH_CMPF, ARITH_CONSTANT, ARITH_EXTF,
                                              ARITH_MAXIMUMF, ARITH_MULF, ARITH_SELECT,
                                              ARITH_TRUNCF, LINALG_FILL, LINALG_GENERIC,
                                              LINALG_INDEX, LINALG_YIELD, RESHAPES, TENSOR_CAST,
                                              TENSOR_COLLAPSE_SHAPE, TENSOR_EXPAND_SHAPE)
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.compiler.ir_helpers.names import (
    COMPUTE_BARRIER_START, HAL_TENSOR_IMPORT, MATH_ERF, MATH_EXP, MATH_TANH,
)

# Ops a run-time parameter (weight, bias) may come through: function arguments as IREE
# imports them, reshapes and casts.
PARAM_PASSTHROUGH = RESHAPES + (TENSOR_CAST, COMPUTE_BARRIER_START,
                                HAL_TENSOR_IMPORT)
# Float casts between precisions: no activation of their own.
PRECISION_CASTS = {ARITH_TRUNCF, ARITH_EXTF}

# ---------------------------------------------------------------- one layer


@dataclass
class EpilogueOp:
    op: ir.Operation
    roles: list[tuple[str, int]]  # per input: ("chain", index into Layer.chain) | ("param", slot)
    # Per loop of the op: 0 (a row dim of the matmul result) or 1 (its column dim).
    dims: list[int] = field(default_factory=lambda: [0, 1])


@dataclass
class Layer:
    """`linalg.matmul -> [unit-dim collapse_shape] -> elementwise epilogue generics`, where
    one `expand_shape` may split the rows (an nn.Linear on tokens [B, T, d]: the matmul runs
    on [B*T, d] and the epilogue on [B, T, N])."""

    mm: ir.Operation
    lhs: ir.Value
    weight: ir.Value
    weight_layout: str  # "nk": weight [N, K] read (n, k); "kn": [K, N]
    fill_scalar: ir.Value
    view_op: ir.Operation | None  # collapse_shape dropping unit dims after the matmul
    view_dims: list[int]  # chain tensor dim -> 0 (row) / 1 (column) of the matmul result
    epilogue: list[EpilogueOp]
    chain: list[ir.Value]  # matmul result, [view result], epilogue results
    params: list[ir.Value]
    captured: list[ir.Value]  # values the epilogue bodies use from above
    kind: str  # the activation (see activation_kind)
    sig: tuple = ()
    wsig: tuple = ()  # sig with the tensor sizes left out (towers of different widths)
    tail_index: int = -1  # the chain value the next layer reads (default: the last)
    # An expand_shape in the chain splitting the rows M into several dims (tokens), and the
    # op making each chain value (the matmul, the views, the epilogue generics).
    row_view: ir.Operation | None = None
    chain_ops: list[ir.Operation] = field(default_factory=list)

    @property
    def tail(self) -> ir.Value:
        return self.chain[self.tail_index]

    @property
    def key(self) -> tuple:
        """What towers batched together must share at this layer (structure only)."""
        return self.sig, self.tail_index % len(self.chain)

    @property
    def width_free_key(self) -> tuple:
        """Layer.key without the tensor sizes: what towers padded to one width share."""
        return self.wsig, self.tail_index % len(self.chain)

    @property
    def width(self) -> int:
        """N: the columns of the matmul result."""
        return self.result_type.shape[1]

    @property
    def ops(self) -> list[ir.Operation]:
        return list(self.chain_ops)

    def after_row_view(self, index: int) -> bool:
        """Chain value `index` is shaped like the tokens (rows split by the row view)."""
        return self.row_view is not None and index >= self.chain_ops.index(self.row_view)

    @property
    def result_type(self) -> ir.RankedTensorType:
        return self.mm.results[0].type


def is_param_like(value: ir.Value, depth: int = 0) -> bool:
    """A value known before any tower runs: argument, constant, or these through reshapes."""
    if isinstance(value.owner, ir.Block):
        return True
    if h.is_constant_like(value):
        return True
    op = h.defining_op(value)
    if op is None or depth > 8 or op.name not in PARAM_PASSTHROUGH:
        return False
    return all(is_param_like(operand, depth + 1) for operand in op.operands)


def trace_constant(value: ir.Value) -> tuple[ir.Value, list[ir.Operation]] | None:
    """(constant root, reshapes applied to it in order) when `value` is a reshaped constant."""
    reshapes: list[ir.Operation] = []
    while not h.is_constant_like(value):
        op = h.defining_op(value)
        if op is None or op.name not in RESHAPES or len(op.operands) != 1:
            return None
        reshapes.append(op)
        value = op.operands[0]
    return value, list(reversed(reshapes))


def unit_drop_view(op: ir.Operation) -> list[int] | None:
    """For a collapse_shape of a [M, N] matmul result that only drops unit dims, each result
    dim's source dim (0 or 1); None if it merges two non-unit dims."""
    src = op.operands[0].type.shape
    out = []
    for dims in h.reassociation(op):
        big = [dim for dim in dims if src[dim] != 1]
        if len(big) > 1:
            return None
        out.append(big[0] if big else dims[-1])
    return out


def activation_kind(epilogue: Sequence[EpilogueOp]) -> str:
    """silu, sigmoid, relu, gelu, tanh, none (bias only or nothing), or other. Precision
    casts (a half-precision layer's truncf of its f32 accumulator) do not count."""
    names = {name for epi in epilogue for name in h.body_op_names(epi.op)} - PRECISION_CASTS
    if MATH_ERF in names:
        return "gelu"
    if MATH_TANH in names:
        return "gelu" if ARITH_MULF in names else "tanh"
    if MATH_EXP in names:
        return "silu" if ARITH_MULF in names else "sigmoid"
    if {ARITH_CMPF, ARITH_SELECT} <= names or ARITH_MAXIMUMF in names:
        return "relu"
    if names <= {ARITH_ADDF, LINALG_YIELD}:
        return "none"
    return "other"


def _sorted_attrs(op: ir.Operation, skip: tuple[str, ...] = ()) -> tuple:
    return tuple(sorted(h.attribute_texts(op, skip)))


def body_signature(op: ir.Operation, captured: list[ir.Value]) -> tuple:
    """The ops of a region body, operands named by position, captured values by constant
    value (or by index into `captured`, which the group compares by identity)."""
    block = h.body_block(op)
    names: dict[ir.Value, tuple] = {arg: ("arg", i) for i, arg in enumerate(block.arguments)}
    items = []
    for j, bop in enumerate(block.operations):
        bop = bop.operation
        if len(bop.regions):
            raise NoMatch("epilogue-region-op", "epilogue body has an op with a region")
        operands = []
        for operand in bop.operands:
            if operand in names:
                operands.append(names[operand])
                continue
            owner = h.defining_op(operand)
            if owner is not None and owner.name == ARITH_CONSTANT:
                operands.append(("const", str(owner.attributes["value"])))
            else:
                operands.append(("captured", len(captured)))
            captured.append(operand)
        items.append((bop.name, tuple(operands), _sorted_attrs(bop),
                      tuple(h.type_text(result) for result in bop.results)))
        for result_idx, result in enumerate(bop.results):
            names[result] = ("op", j, result_idx)
    return tuple(items)


def _check_matmul(matmul: ir.Operation) -> tuple[ir.Value, ir.Value, ir.Operation, str, tuple]:
    """(lhs, weight, accumulator fill, weight layout, body signature) of a tower matmul."""
    # (linalg.matmul's verifier: two inputs, one init, a body of three arguments)
    (lhs, weight), inits = h.dps_inputs(matmul), h.dps_inits(matmul)
    for value in (lhs, weight, matmul.results[0]):
        value_t = value.type
        if not isinstance(value_t, ir.RankedTensorType) or value_t.rank != 2:
            raise NoMatch("matmul-not-2d", "operands are not 2-D tensors")
    a_map, b_map, c_map = (h.map_dim_positions(map_) for map_ in h.indexing_maps(matmul))
    if a_map != [0, 2] or c_map != [0, 1] or b_map not in ([1, 2], [2, 1]):
        raise NoMatch("matmul-maps",
                      "unsupported matmul indexing maps (expects x[m,k] * W[n,k] or W[k,n])")
    _check_static_except_rows(lhs, weight, matmul.results[0], "nk" if b_map == [1, 2] else "kn")
    fill = h.defining_op(inits[0])
    if fill is None or fill.name != LINALG_FILL:
        raise NoMatch("accumulator-not-fill", "matmul accumulator is not a linalg.fill")
    if not is_param_like(weight):
        mutable = h.mutable_global_read(weight)
        if mutable is not None:
            raise NoMatch("mutable-weight",
                          f"weight is read from the mutable global @{mutable} (it can change "
                          "between calls: never stacked)")
        raise NoMatch("runtime-weight", "weight is computed at run time (not a tower layer)")
    mm_captured: list[ir.Value] = []
    mm_body = body_signature(matmul, mm_captured)
    if mm_captured:
        raise NoMatch("matmul-body-captures", "matmul body uses values from above")
    return lhs, weight, fill, "nk" if b_map == [1, 2] else "kn", mm_body


def _check_static_except_rows(lhs: ir.Value, weight: ir.Value, result: ir.Value,
                              layout: str) -> None:
    """Only the rows M (batch, tokens) may be dynamic: the weights are stacked and the
    batched tensors are [T, M, N] with T, K, N known."""
    weight_dims = ("N", "K") if layout == "nk" else ("K", "N")
    for value, what, names in ((lhs, "input", ("M", "K")), (result, "result", ("M", "N")),
                               (weight, "weight", weight_dims)):
        for dim, size in enumerate(value.type.shape):
            if ir.ShapedType.is_dynamic_size(size) and names[dim] != "M":
                raise NoMatch("dynamic-matmul-dim",
                              f"dynamic dim {dim} ({names[dim]}) of the matmul {what}: only "
                              "the rows (M: batch, tokens) may be dynamic")


def _epilogue_roles(op: ir.Operation, chain: list[ir.Value], chain_dims: list[list[int]],
                    params: list[ir.Value], captured: list[ir.Value]
                    ) -> tuple[list, tuple, list[int]]:
    """How an elementwise generic reads the layer (chain values, parameters), its signature
    and its loop dims (row / column); appends its parameters and captured values. NoMatch if
    it is no epilogue."""
    if not h.is_elementwise_generic(op) or len(op.results) != 1 or len(h.dps_inits(op)) != 1:
        raise NoMatch("epilogue-not-elementwise", "not a single-result elementwise generic")
    maps = h.indexing_maps(op)
    read = [chain.index(operand) for operand in h.dps_inputs(op) if operand in chain]
    if not read:
        raise NoMatch("epilogue-not-on-chain", "does not read the chain")
    dims = chain_dims[read[0]]
    if maps[0].n_dims != len(dims) or not h.is_identity_map(maps[-1]) or \
            any(chain_dims[read_idx] != dims for read_idx in read):
        raise NoMatch("epilogue-space", "epilogue iteration space differs from the matmul result")
    if len(list(h.body_block(op).arguments[-1].uses)):
        raise NoMatch("epilogue-reads-init", "epilogue reads its init")
    if LINALG_INDEX in h.body_op_names(op):
        raise NoMatch("epilogue-reads-indices", "epilogue body reads its loop indices")
    split_rows = dims.count(0) > 1  # after a row view: the rows are several dims
    roles, new_params = [], []
    for operand, map_ in zip(h.dps_inputs(op), maps):
        if operand in chain:
            if not h.is_identity_map(map_):
                raise NoMatch("chain-map", "chain value read through a non-identity map")
            roles.append(("chain", chain.index(operand)))
            continue
        pdims = h.map_dim_positions(map_)
        if pdims is None or len(set(pdims)) != len(pdims) or not is_param_like(operand):
            raise NoMatch("epilogue-operand", "operand is neither the chain nor a parameter")
        if not isinstance(operand.type, ir.RankedTensorType) or not operand.type.has_static_shape:
            raise NoMatch("parameter-not-static", "parameter is not a static tensor")
        if split_rows and any(dims[dim] == 0 for dim in pdims):
            raise NoMatch("parameter-token-dim",
                          "parameter indexed by a token dim (rows split by a reshape)")
        roles.append(("param", len(params) + len(new_params)))
        new_params.append(operand)
    local_captured: list[ir.Value] = []
    sig = (body_signature(op, local_captured),
           h.indexing_map_texts(op), tuple(h.type_text(result) for result in op.results))
    params.extend(new_params)
    captured.extend(local_captured)
    return roles, sig, dims


def row_view_dims(op: ir.Operation, source_dims: list[int]) -> list[int] | None:
    """For an expand_shape of a [M, N] chain value that splits only the rows (the column
    dim stays one dim, possibly with unit dims around it), each result dim's kind (0 row,
    1 column); None otherwise."""
    if op.name != TENSOR_EXPAND_SHAPE or source_dims != [0, 1]:
        return None
    groups = h.reassociation(op)
    shape = op.results[0].type.shape
    col = groups[1]
    big = [dim for dim in col if ir.ShapedType.is_dynamic_size(shape[dim]) or shape[dim] != 1]
    if len(big) > 1:
        return None
    n_col = big[0] if big else col[-1]
    out = [0] * len(shape)
    out[n_col] = 1
    # Unit dims next to the column group count as rows (read at 0 either way).
    return out
@dataclass
class _Epilogue:
    """The epilogue of a layer as it is collected: its ops, chain, parameters."""

    ops: list[EpilogueOp] = field(default_factory=list)
    sigs: list[tuple] = field(default_factory=list)
    params: list[ir.Value] = field(default_factory=list)
    captured: list[ir.Value] = field(default_factory=list)


def _collect_epilogue(chain: list[ir.Value], chain_dims: list[list[int]],
                      chain_ops: list[ir.Operation], positions: h.Positions
                      ) -> tuple[_Epilogue, ir.Operation | None]:
    """Grows `chain` by the elementwise generics reading it (and one expand_shape splitting
    its rows), first in block order first; generics that are no epilogue are left out.
    Returns the epilogue and the row view."""
    found = _Epilogue()
    row_view = None
    rejected: set = set()
    while True:
        candidates = sorted(
            {user for value in chain for user in h.users(value)
             if user.name in (LINALG_GENERIC, TENSOR_EXPAND_SHAPE) and user not in rejected
             and user not in chain_ops},
            key=lambda op: h.position(op, positions))
        for cand in candidates:
            if cand.name == TENSOR_EXPAND_SHAPE:
                dims = None if row_view is not None else row_view_dims(
                    cand, chain_dims[chain.index(cand.operands[0])])
                if dims is None:
                    rejected.add(cand)
                    continue
                row_view = cand
            else:
                try:
                    roles, sig, dims = _epilogue_roles(cand, chain, chain_dims, found.params,
                                                       found.captured)
                except NoMatch:
                    rejected.add(cand)
                    continue
                found.ops.append(EpilogueOp(cand, roles, dims))
                found.sigs.append(sig)
            chain.append(cand.results[0])
            chain_dims.append(dims)
            chain_ops.append(cand)
            break
        else:
            return found, row_view


def analyze_layer(matmul: ir.Operation, positions: h.Positions) -> Layer:
    """The layer rooted at a linalg.matmul; raises NoMatch with the reason."""
    lhs, weight, fill, layout, mm_body = _check_matmul(matmul)
    chain: list[ir.Value] = [matmul.results[0]]
    chain_ops: list[ir.Operation] = [matmul]
    chain_dims: list[list[int]] = [[0, 1]]
    view_op, view_dims = None, [0, 1]
    mm_users = h.users(matmul.results[0])
    if len(mm_users) == 1 and mm_users[0].name == TENSOR_COLLAPSE_SHAPE:
        dims = unit_drop_view(mm_users[0])
        if dims is not None:
            view_op, view_dims = mm_users[0], dims
            chain.append(view_op.results[0])
            chain_ops.append(view_op)
            chain_dims.append(dims)
    epi, row_view = _collect_epilogue(chain, chain_dims, chain_ops, positions)
    layer = Layer(matmul, lhs, weight, layout, fill.operands[0], view_op, view_dims, epi.ops,
                  chain, epi.params, epi.captured, activation_kind(epi.ops),
                  row_view=row_view, chain_ops=chain_ops)
    scalar = h.defining_op(layer.fill_scalar)
    scalar_sig = (str(scalar.attributes["value"]) if scalar is not None
                  and scalar.name == ARITH_CONSTANT else "captured")
    layer.sig = (
        "layer", h.type_text(lhs), h.type_text(weight), h.type_text(matmul.results[0]), layout,
        _sorted_attrs(matmul, ("operandSegmentSizes",)), mm_body, scalar_sig,
        "const" if trace_constant(weight) else "runtime",
        h.type_text(view_op.results[0]) if view_op else None, tuple(view_dims),
        tuple((sig, tuple(epi_op.roles)) for sig, epi_op in zip(epi.sigs, epi.ops)),
        tuple((h.type_text(param), "const" if trace_constant(param) else "runtime")
              for param in epi.params),
        layer.kind,
    )
    if row_view is not None:  # (absent from the keys of layers without one)
        layer.sig += (("row-view", chain_ops.index(row_view), str(row_view.results[0].type),
                       str(row_view.attributes["reassociation"])),)
    layer.wsig = tuple(_without_sizes(part) for part in layer.sig)
    return layer


_SIZES = re.compile(r"(?<=[<x])\d+(?=x)")


@functools.lru_cache(maxsize=8192)  # the same few parts in every layer: computed once
def _without_sizes(part):
    """A signature part with every size of the tensor types in it replaced by `?`."""
    if isinstance(part, str):
        return _SIZES.sub("?", part)
    if isinstance(part, tuple):
        return tuple(_without_sizes(sub) for sub in part)
    return part
