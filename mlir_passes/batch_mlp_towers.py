"""batch-mlp-towers: N independent MLP towers of equal structure -> one chain of batched ops.

A tower is a chain of layers `linalg.matmul -> elementwise epilogue (bias, activation)`, each
layer reading the previous layer's result. Towers whose layers agree (shapes, element types,
indexing maps, epilogue bodies: the activation is part of the key) are rewritten into, per
layer, one batched contraction over the stacked weights and one batched generic per epilogue
op; the stacked `[T, M, N]` tensor is carried from layer to layer and each tower's result is
sliced out only where it is used. A first-layer input shared by the towers is read once
through a broadcast map; constant weights and biases are stacked once, at module load, in a
`util.initializer`; towers equal only on a prefix of layers batch that prefix (a trie over
their layer signatures). Where the towers' results are stacked / concatenated by
`tensor.insert_slice` chains (torch.stack in a mixture-of-experts), the batched result is
written in that layout and replaces the stack.

Constant weights are stacked as [T, K, N] (transposed at load time: measured faster on
llvm-cpu than [T, N, K]); at batch 1 the unit row is dropped ([T, N] tensors). Run-time
tensors (weights passed as arguments, one input per tower) are stacked per call only within
a byte budget per saved dispatch (see the options).

    per tower i, per layer:                          per layer, once:
      %f = linalg.fill 0 -> [B,N]                      %W = util.global.load @stack : [T,K,N]
      %a = linalg.matmul ins(%x, %W_i : [B,K],[N,K])   %a = linalg.batch_matmul
      %b = linalg.generic {+ bias_i} ins(%a, %b_i)          {maps (t,m,n,k): x (m,k), W (t,k,n)}
      %s = linalg.generic {sigmoid} ins(%b)                 ins(%x, %W) -> [T,B,N]
      %y = linalg.generic {mul} ins(%b, %s)            %b = linalg.generic {+ bias} ins(%a, %bs : [T,N])
                                                       %s, %y = (the same generics on [T,B,N])
                                                       %y_i = tensor.extract_slice %y[i] (where used)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import linalg, tensor

from iree_fusions import ir_helpers as h
from iree_fusions.pass_base import FusionPass, PassReport, describe_op

RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")
# Ops a run-time parameter (weight, bias) may come through: function arguments as IREE
# imports them, reshapes and casts.
PARAM_PASSTHROUGH = RESHAPES + ("tensor.cast", "iree_tensor_ext.compute_barrier.start",
                                "hal.tensor.import")
# Ops that may be moved later in the block (no side effects) when a user of a tower result
# comes before the last input of the group is available.
MOVABLE_PREFIXES = ("linalg.", "tensor.", "arith.", "math.", "iree_linalg_ext.",
                    "iree_tensor_ext.compute_barrier.")
# Dead ops left behind by a rewrite that are erased with it.
CLEANUP_OPS = ("tensor.empty", "linalg.fill", "arith.constant", "util.global.load",
               "tensor.insert_slice") + RESHAPES
# Layouts of a stacked [tower, row, column] tensor; TN drops the row dim when there is one
# row (batch 1): [tower, column].
TMN, MTN, TN = "tmn", "mtn", "tn"
# Bodies of a linalg.matmul without casts: what linalg.batch_matmul computes.
_PLAIN_MATMUL_BODIES = (["arith.mulf", "arith.addf", "linalg.yield"],
                        ["arith.muli", "arith.addi", "linalg.yield"])


# ---------------------------------------------------------------- analysis: one layer


@dataclass
class EpilogueOp:
    op: ir.Operation
    roles: list[tuple[str, int]]  # per input: ("chain", index into Layer.chain) | ("param", slot)


@dataclass
class Layer:
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
    kind: str
    sig: tuple = ()
    tail_index: int = -1  # the chain value the next layer reads (default: the last)

    @property
    def tail(self) -> ir.Value:
        return self.chain[self.tail_index]

    @property
    def key(self) -> tuple:
        """What towers batched together must share at this layer."""
        return self.sig, self.tail_index % len(self.chain)

    @property
    def ops(self) -> list[ir.Operation]:
        return [self.mm] + ([self.view_op] if self.view_op else []) + [e.op for e in self.epilogue]

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
    return all(is_param_like(v, depth + 1) for v in op.operands)


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


def _dims(m: ir.AffineMap) -> list[int] | None:
    return h.map_dim_positions(m)


def unit_drop_view(op: ir.Operation) -> list[int] | None:
    """For a collapse_shape of a [M, N] matmul result that only drops unit dims, each result
    dim's source dim (0 or 1); None if it merges two non-unit dims."""
    src = op.operands[0].type.shape
    out = []
    for group in op.attributes["reassociation"]:
        dims = [ir.IntegerAttr(d).value for d in group]
        big = [d for d in dims if src[d] != 1]
        if len(big) > 1:
            return None
        out.append(big[0] if big else dims[-1])
    return out


def activation_kind(epilogue: Sequence[EpilogueOp]) -> str:
    """silu, sigmoid, relu, gelu, tanh, none (bias only or nothing), or other."""
    names = {n for e in epilogue for n in h.body_op_names(e.op)}
    if "math.erf" in names:
        return "gelu"
    if "math.tanh" in names:
        return "gelu" if "arith.mulf" in names else "tanh"
    if "math.exp" in names:
        return "silu" if "arith.mulf" in names else "sigmoid"
    if {"arith.cmpf", "arith.select"} <= names or "arith.maximumf" in names:
        return "relu"
    if names <= {"arith.addf", "linalg.yield"}:
        return "none"
    return "other"


def body_signature(op: ir.Operation, captured: list[ir.Value]) -> tuple:
    """The ops of a region body, operands named by position, captured values by constant
    value (or by index into `captured`, which the group compares by identity)."""
    block = op.regions[0].blocks[0]
    names: dict[ir.Value, tuple] = {a: ("arg", i) for i, a in enumerate(block.arguments)}
    items = []
    for j, bop in enumerate(block.operations):
        bop = bop.operation
        if len(bop.regions):
            raise _NoMatch("epilogue body has an op with a region")
        operands = []
        for v in bop.operands:
            if v in names:
                operands.append(names[v])
                continue
            owner = h.defining_op(v)
            if owner is not None and owner.name == "arith.constant":
                operands.append(("const", str(owner.attributes["value"])))
            else:
                operands.append(("captured", len(captured)))
            captured.append(v)
        attrs = tuple(sorted((a, str(bop.attributes[a])) for a in _attr_names(bop)))
        items.append((bop.name, tuple(operands), attrs, tuple(str(r.type) for r in bop.results)))
        for k, r in enumerate(bop.results):
            names[r] = ("op", j, k)
    return tuple(items)


def _attr_names(op: ir.Operation) -> list[str]:
    return [a if isinstance(a, str) else a.name for a in op.attributes]


class _NoMatch(Exception):
    pass


def analyze_layer(mm: ir.Operation) -> Layer:
    """The layer rooted at a linalg.matmul; raises _NoMatch with the reason."""
    ins, inits = h.dps_inputs(mm), h.dps_inits(mm)
    if len(ins) != 2 or len(inits) != 1:
        raise _NoMatch("matmul with unexpected operands")
    lhs, weight = ins
    for v in (lhs, weight, mm.results[0]):
        t = v.type
        if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape or t.rank != 2:
            raise _NoMatch("operands are not static 2-D tensors")
    a_map, b_map, c_map = (_dims(m) for m in h.indexing_maps(mm))
    if a_map != [0, 2] or c_map != [0, 1] or b_map not in ([1, 2], [2, 1]):
        raise _NoMatch("unsupported matmul indexing maps (expects x[m,k] * W[n,k] or W[k,n])")
    fill = h.defining_op(inits[0])
    if fill is None or fill.name != "linalg.fill":
        raise _NoMatch("matmul accumulator is not a linalg.fill")
    if not is_param_like(weight):
        raise _NoMatch("weight is computed at run time (not a tower layer)")
    if len(mm.regions[0].blocks[0].arguments) != 3:
        raise _NoMatch("matmul body without 3 arguments")
    mm_captured: list[ir.Value] = []
    mm_body = body_signature(mm, mm_captured)
    if mm_captured:
        raise _NoMatch("matmul body uses values from above")

    chain: list[ir.Value] = [mm.results[0]]
    view_op, view_dims = None, [0, 1]
    mm_users = h.users(mm.results[0])
    if len(mm_users) == 1 and mm_users[0].name == "tensor.collapse_shape":
        dims = unit_drop_view(mm_users[0])
        if dims is not None:
            view_op, view_dims = mm_users[0], dims
            chain.append(view_op.results[0])

    epilogue: list[EpilogueOp] = []
    params: list[ir.Value] = []
    captured: list[ir.Value] = []
    body_sigs = []
    rejected: set = set()
    while True:
        candidates = sorted(
            {u for v in chain for u in h.users(v)
             if u.name == "linalg.generic" and u not in rejected
             and all(u != e.op for e in epilogue)},
            key=_position)
        grew = False
        for cand in candidates:
            try:
                roles, sig = _epilogue_roles(cand, chain, params, len(view_dims), captured)
            except _NoMatch:
                rejected.add(cand)
                continue
            epilogue.append(EpilogueOp(cand, roles))
            body_sigs.append(sig)
            chain.append(cand.results[0])
            grew = True
            break
        if not grew:
            break

    layout = "nk" if b_map == [1, 2] else "kn"
    layer = Layer(mm, lhs, weight, layout, fill.operands[0], view_op, view_dims, epilogue,
                  chain, params, captured, activation_kind(epilogue))
    mm_attrs = tuple(sorted((a, str(mm.attributes[a])) for a in _attr_names(mm)
                            if a != "operandSegmentSizes"))
    scalar = h.defining_op(layer.fill_scalar)
    scalar_sig = (str(scalar.attributes["value"]) if scalar is not None
                  and scalar.name == "arith.constant" else "captured")
    layer.sig = (
        "layer", str(lhs.type), str(weight.type), str(mm.results[0].type), layout, mm_attrs,
        mm_body, scalar_sig,
        "const" if trace_constant(weight) else "runtime",
        str(view_op.results[0].type) if view_op else None, tuple(view_dims),
        tuple((sig, tuple(e.roles)) for sig, e in zip(body_sigs, epilogue)),
        tuple((str(p.type), "const" if trace_constant(p) else "runtime") for p in params),
        layer.kind,
    )
    return layer


def _epilogue_roles(op: ir.Operation, chain: list[ir.Value], params: list[ir.Value],
                    rank: int, captured: list[ir.Value]) -> tuple[list, tuple]:
    if not h.is_elementwise_generic(op) or len(op.results) != 1 or len(h.dps_inits(op)) != 1:
        raise _NoMatch("not a single-result elementwise generic")
    maps = h.indexing_maps(op)
    if maps[0].n_dims != rank or not h.is_identity_map(maps[-1]):
        raise _NoMatch("epilogue iteration space differs from the matmul result")
    block = op.regions[0].blocks[0]
    if len(list(block.arguments[-1].uses)):
        raise _NoMatch("epilogue reads its init")
    roles, new_params = [], []
    for v, m in zip(h.dps_inputs(op), maps):
        if v in chain:
            if not h.is_identity_map(m):
                raise _NoMatch("chain value read through a non-identity map")
            roles.append(("chain", chain.index(v)))
            continue
        dims = _dims(m)
        if dims is None or len(set(dims)) != len(dims) or not is_param_like(v):
            raise _NoMatch("operand is neither the chain nor a parameter")
        if not isinstance(v.type, ir.RankedTensorType) or not v.type.has_static_shape:
            raise _NoMatch("parameter is not a static tensor")
        roles.append(("param", len(params) + len(new_params)))
        new_params.append(v)
    if not any(r[0] == "chain" for r in roles):
        raise _NoMatch("does not read the chain")
    local_captured: list[ir.Value] = []
    sig = (body_signature(op, local_captured),
           tuple(str(m) for m in maps), tuple(str(r.type) for r in op.results))
    params.extend(new_params)
    captured.extend(local_captured)
    return roles, sig


def _top_level(op: ir.Operation) -> ir.Operation:
    """The op itself, or its ancestor that sits in the function body being rewritten."""
    while op not in _POSITIONS and op.parent is not None:
        op = op.parent
    return op


def _position(op: ir.Operation) -> int:
    return _POSITIONS.get(op, 1 << 30)


_POSITIONS: dict[ir.Operation, int] = {}


# ---------------------------------------------------------------- analysis: towers and groups


@dataclass
class Tower:
    layers: list[Layer]
    links: list[ir.Operation | None] = field(default_factory=list)  # expand between layers

    @property
    def input(self) -> ir.Value:
        return self.layers[0].lhs


def next_layer(layer: Layer, layers: dict[ir.Operation, Layer]
               ) -> tuple[Layer, ir.Operation | None] | None:
    """The one layer that reads this layer's result as its input (maybe through an
    expand_shape that restores the matmul result type), and that expand_shape."""
    found = []
    for index, value in enumerate(layer.chain):
        for user in h.users(value):
            if user in layers and h.dps_inputs(user)[0] == value:
                found.append((layers[user], None, index))
            elif user.name == "tensor.expand_shape" and user.results[0].type == layer.result_type:
                for u2 in h.users(user.results[0]):
                    if u2 in layers and h.dps_inputs(u2)[0] == user.results[0]:
                        found.append((layers[u2], user, index))
    if len(found) != 1:
        return None
    nxt, link, index = found[0]
    if nxt.mm == layer.mm or nxt.lhs.type != layer.result_type:
        return None
    layer.tail_index = index
    # The expand_shape is part of the tower only when the next layer is its one user.
    if link is not None and len(h.users(link.results[0])) != 1:
        link = None
    return nxt, link


def find_towers(block: ir.Block, report_skip) -> list[Tower]:
    layers: dict[ir.Operation, Layer] = {}
    for op in block.operations:
        op = op.operation
        if op.name != "linalg.matmul":
            continue
        try:
            layers[op] = analyze_layer(op)
        except _NoMatch as e:
            report_skip(op, str(e))
    succ: dict[ir.Operation, tuple[Layer, ir.Operation | None]] = {}
    has_pred: set = set()
    for mm, layer in layers.items():
        nxt = next_layer(layer, layers)
        if nxt is not None and nxt[0].mm not in has_pred:
            succ[mm] = nxt
            has_pred.add(nxt[0].mm)
    towers = []
    for mm, layer in layers.items():
        if mm in has_pred:
            continue
        tower = Tower([layer])
        while tower.layers[-1].mm in succ:
            nxt, link = succ[tower.layers[-1].mm]
            tower.layers.append(nxt)
            tower.links.append(link)
        towers.append(tower)
    return towers


def group_towers(towers: list[Tower]) -> list[tuple[bool, list[Tower]]]:
    """(shared_input, towers): towers reading one input with an equal first layer, then the
    remaining towers with an equal first layer and separate inputs."""
    shared: dict[tuple, list[Tower]] = {}
    for t in towers:
        shared.setdefault((t.input, t.layers[0].key), []).append(t)
    groups: list[tuple[bool, list[Tower]]] = []
    separate: dict[tuple, list[Tower]] = {}
    for ts in shared.values():
        if len(ts) >= 2:
            groups.append((True, ts))
        else:
            separate.setdefault(ts[0].layers[0].key, []).append(ts[0])
    groups += [(False, ts) for ts in separate.values()]
    groups.sort(key=lambda g: min(_position(t.layers[0].mm) for t in g[1]))
    return groups


# ---------------------------------------------------------------- planning: the trie


@dataclass
class Node:
    lo: int
    hi: int
    depth: int
    children: list[Node] = field(default_factory=list)
    layout: str = TMN

    @property
    def size(self) -> int:
        return self.hi - self.lo

    def chain_length(self) -> int:
        return 1 + max((c.chain_length() for c in self.children), default=0)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def build_trie(towers: list[Tower], sig_id, lo: int, hi: int, depth: int) -> Node:
    node = Node(lo, hi, depth)
    i = lo
    while i < hi:
        if len(towers[i].layers) <= depth + 1:
            i += 1
            continue
        s = sig_id(towers[i].layers[depth + 1])
        j = i
        while (j < hi and len(towers[j].layers) > depth + 1
               and sig_id(towers[j].layers[depth + 1]) == s):
            j += 1
        if j - i >= 2:
            node.children.append(build_trie(towers, sig_id, i, j, depth + 1))
        i = j
    return node


@dataclass
class Stack:
    """A tensor.insert_slice chain that stacks / concatenates the towers' results."""
    inserts: list[ir.Operation]
    empty: ir.Operation
    layout: str
    order: list[int]  # tower index (into the group) at each stack position


def find_stack(towers: list[Tower]) -> Stack | None:
    tails = [t.layers[-1].tail for t in towers]
    inserts = []
    for tail in tails:
        users = h.users(tail)
        if len(users) != 1 or users[0].name != "tensor.insert_slice" or \
                users[0].operands[0] != tail or len(users[0].operands) != 2:
            return None
        inserts.append(users[0])
    chain: list[ir.Operation] = []
    first = [op for op in inserts if h.defining_op(op.operands[1]) not in inserts]
    if len(first) != 1:
        return None
    empty = h.defining_op(first[0].operands[1])
    if empty is None or empty.name != "tensor.empty":
        return None
    op = first[0]
    while True:
        chain.append(op)
        users = h.users(op.results[0])
        if len(chain) == len(inserts):
            break
        if len(users) != 1 or users[0] not in inserts or users[0].operands[1] != op.results[0]:
            return None
        op = users[0]
    if len(set(chain)) != len(inserts):
        return None
    order = [[t.layers[-1].tail for t in towers].index(op.operands[0]) for op in chain]
    shape = list(chain[-1].results[0].type.shape)
    m, n = towers[0].layers[-1].result_type.shape
    count = len(towers)
    total = count * m * n
    if int(np.prod(shape)) != total or total > (1 << 22):
        return None
    target = np.arange(total).reshape(shape)
    for layout in (TMN, MTN):
        full = np.arange(total).reshape((count, m, n) if layout == TMN else (m, count, n))
        ok = True
        for p, op in enumerate(chain):
            offs = list(op.attributes["static_offsets"])
            sizes = list(op.attributes["static_sizes"])
            strides = list(op.attributes["static_strides"])
            if any(s != 1 for s in strides) or any(o < 0 for o in offs):
                return None
            region = target[tuple(slice(o, o + s) for o, s in zip(offs, sizes))]
            block = full[p] if layout == TMN else full[:, p, :]
            if region.size != block.size or not np.array_equal(region.reshape(-1),
                                                               block.reshape(-1)):
                ok = False
                break
        if ok:
            return Stack(chain, empty, layout, order)
    return None


# ---------------------------------------------------------------- building


def _map(n_dims: int, dims: Sequence[int]) -> ir.AffineMapAttr:
    """A map of `n_dims` dims; a None result is the constant 0."""
    return ir.AffineMapAttr.get(ir.AffineMap.get(n_dims, 0, [
        ir.AffineConstantExpr.get(0) if d is None else ir.AffineDimExpr.get(d) for d in dims]))


def _iterators(kinds: Sequence[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _layout_dims(layout: str) -> list[int]:
    """Domain (t, m, n) -> positions of a stacked tensor in `layout`; (t, n) for TN."""
    return {TMN: [0, 1, 2], MTN: [1, 0, 2], TN: [0, 1]}[layout]


def _layout_shape(layout: str, t: int, m: int, n: int) -> list[int]:
    return {TMN: [t, m, n], MTN: [m, t, n], TN: [t, n]}[layout]


def stack_values(values: list[ir.Value]) -> ir.Value:
    """tensor.empty [T, ...] + one insert_slice per value (at the current insertion point)."""
    t = values[0].type
    shape = list(t.shape)
    result = tensor.EmptyOp([len(values), *shape], t.element_type).result
    for i, v in enumerate(values):
        result = tensor.InsertSliceOp(v, result, [], [], [], [i] + [0] * len(shape),
                                      [1, *shape], [1] * (len(shape) + 1)).result
    return result


def slice_tower(stacked: ir.Value, layout: str, index: int, result_type: ir.Type) -> ir.Value:
    """Tower `index` of a stacked tensor, as `result_type` (rank-reduced where it is)."""
    shape = list(stacked.type.shape)
    offsets, sizes = [0] * len(shape), list(shape)
    pos = 1 if layout == MTN else 0
    offsets[pos], sizes[pos] = index, 1
    return tensor.ExtractSliceOp(result_type, stacked, [], [], [], offsets, sizes,
                                 [1] * len(shape)).result


def slice_towers(stacked: ir.Value, layout: str, lo: int, count: int) -> ir.Value:
    """Towers [lo, lo + count) of a stacked tensor, still stacked."""
    shape = list(stacked.type.shape)
    pos = 1 if layout == MTN else 0
    if lo == 0 and count == shape[pos]:
        return stacked
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[pos], sizes[pos] = lo, count
    rtype = ir.RankedTensorType.get(sizes, stacked.type.element_type)
    return tensor.ExtractSliceOp(rtype, stacked, [], [], [], offsets, sizes,
                                 [1] * len(shape)).result


def transpose_inner(value: ir.Value) -> ir.Value:
    """[T, A, B] -> [T, B, A]."""
    count, rows, cols = value.type.shape
    empty = tensor.EmptyOp([count, cols, rows], value.type.element_type).result
    result = linalg.transpose(value, outs=[empty], permutation=[0, 2, 1])
    return result if isinstance(result, ir.Value) else result.results[0]


def _group_dims(src: list[int], dst: list[int]) -> list[list[int]] | None:
    """Reassociation that collapses `src` into `dst` by merging consecutive dims, or None."""
    if not dst:
        return None
    groups, i = [], 0
    for d in dst:
        group, size = [], 1
        while i < len(src) and (size < d or not group):
            group.append(i)
            size *= src[i]
            i += 1
        if size != d:
            return None
        groups.append(group)
    while i < len(src) and src[i] == 1:
        groups[-1].append(i)
        i += 1
    return groups if i == len(src) else None


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g])
                             for g in groups])


def reshape_to(value: ir.Value, shape: list[int]) -> ir.Value:
    """A row-major reshape: one collapse_shape or expand_shape when possible."""
    src = list(value.type.shape)
    if src == shape:
        return value
    elt = value.type.element_type
    groups = _group_dims(src, shape)
    if groups is not None:
        return tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, elt), value,
                                      _reassociation(groups)).result
    groups = _group_dims(shape, src)
    if groups is not None:
        return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, elt), value,
                                    _reassociation(groups), [], shape).result
    flat = tensor.CollapseShapeOp(ir.RankedTensorType.get([int(np.prod(src))], elt), value,
                                  _reassociation([list(range(len(src)))])).result
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, elt), flat,
                                _reassociation([list(range(len(shape)))]), [], shape).result


def clone_body(src_op: ir.Operation, dst_block: ir.Block) -> None:
    """Clones src_op's body into dst_block, block arguments mapped by position."""
    src_block = src_op.regions[0].blocks[0]
    mapping = dict(zip(src_block.arguments, dst_block.arguments))
    with ir.InsertionPoint(dst_block):
        for bop in src_block.operations:
            new = bop.operation.clone()
            for i, v in enumerate(list(new.operands)):
                if v in mapping:
                    new.operands[i] = mapping[v]
            for old, res in zip(bop.operation.results, new.results):
                mapping[old] = res


# ---------------------------------------------------------------- the pass


@dataclass(frozen=True)
class BatchMlpTowers(FusionPass):
    name = "batch-mlp-towers"
    phase = "linalg"
    description = ("batches N independent MLP towers of equal structure into one chain of "
                   "batched contractions over stacked weights")

    # Minimum number of batched layers in a group; 1 also batches single-layer towers.
    min_layers: int = 2
    # Cost model for stacking run-time tensors (weights/biases passed as arguments, separate
    # tower inputs): stacking copies them on every call; it is done only when the copied
    # bytes are at most `runtime-stack-bytes-per-dispatch` x the dispatches saved. Measured
    # on llvm-cpu (bench/results/batch-mlp-towers.md): 20 KB per saved dispatch (6 separate
    # [64,256] inputs) won, 131 KB (2.6 MB of run-time weights at B=1) lost 2x.
    runtime_stack_bytes_per_dispatch: int = 32768
    # Batched contractions as linalg.batch_matmul (with a broadcast map for a shared input)
    # wherever the layouts allow; linalg.generic contractions otherwise (and when false).
    named_batch_matmul: bool = True
    # Layout of stacked constant weights: "keep" the towers' ([N,K] or [K,N]), or transpose
    # at load time to "kn" ([T,K,N]) or "nk" ([T,N,K]).
    weight_layout: str = "kn"
    # With one row (batch 1), drop the row dim from the batched tensors: [T, N] instead of
    # [T, 1, N] (vector-matrix contractions).
    drop_unit_rows: bool = True

    def apply(self, module: ir.Operation, report: PassReport) -> None:
        if self.weight_layout not in ("keep", "kn", "nk"):
            raise ValueError(f"weight-layout must be keep, kn or nk, not '{self.weight_layout}'")
        for func in h.functions(module):
            block = func.regions[0].blocks[0]
            for _ in range(64):  # one group per round; analysis is redone after each rewrite
                skips: list[tuple] = []
                if not self._rewrite_one_group(module, block, report, skips):
                    for where, reason in skips:
                        report.skip(where, reason)
                    break

    # One round: analyze, rewrite the first group that can be rewritten.
    def _rewrite_one_group(self, module, block, report, skips) -> bool:
        _POSITIONS.clear()
        for i, op in enumerate(block.operations):
            _POSITIONS[op.operation] = i

        def skip(where, reason):
            skips.append((where, reason))

        towers = find_towers(block, skip)
        for shared, group in group_towers(towers):
            desc = self._describe(group, shared)
            if len(group) < 2:
                t = group[0]
                skip(t.layers[0].mm, f"tower of {len(t.layers)} layer(s) ({t.layers[0].kind}) "
                     "has no other tower of equal structure")
                continue
            try:
                self._rewrite_group(module, block, group, shared, report)
            except _NoMatch as e:
                skip(group[0].layers[0].mm, f"{desc}: {e}")
                continue
            return True
        return False

    @staticmethod
    def _describe(group: list[Tower], shared: bool) -> str:
        depths = sorted({len(t.layers) for t in group})
        kinds = "/".join(sorted({lay.kind for t in group for lay in t.layers}))
        return (f"group of {len(group)} towers (depth {','.join(map(str, depths))}, {kinds}, "
                f"{'shared' if shared else 'separate'} input)")

    def _rewrite_group(self, module, block, group: list[Tower], shared: bool,
                       report: PassReport) -> None:
        # Order towers so that towers equal on a prefix are contiguous (trie), keeping
        # program order among equals (or the order of a stack that consumes them).
        ids: dict[tuple, int] = {}

        def sig_id(layer: Layer) -> int:
            return ids.setdefault(layer.key, len(ids))

        for t in group:
            for lay in t.layers:
                sig_id(lay)
        towers = sorted(group, key=lambda t: tuple(sig_id(lay) for lay in t.layers))
        uniform = len({tuple(sig_id(lay) for lay in t.layers) for t in towers}) == 1
        stack = find_stack(towers) if uniform else None
        if stack is not None:
            towers = [towers[i] for i in stack.order]
        root = build_trie(towers, sig_id, 0, len(towers), 0)
        if root.chain_length() < self.min_layers:
            raise _NoMatch(f"only {root.chain_length()} layer(s) batch "
                           f"(min-layers={self.min_layers}); left to IREE")
        nodes = list(root.walk())
        if stack is not None:
            leaf = nodes[-1]
            assert leaf.size == len(towers) and not leaf.children
            leaf.layout = stack.layout
        rowless = self.drop_unit_rows and towers[0].layers[0].result_type.shape[0] == 1
        if rowless:  # with one row every layout is the same order of elements
            for node in nodes:
                node.layout = TN

        # Which layers of which tower are batched: the deepest node holding the tower.
        batched_depth = [0] * len(towers)
        for node in nodes:
            for i in range(node.lo, node.hi):
                batched_depth[i] = max(batched_depth[i], node.depth)
        group_ops: set = set()
        for i, t in enumerate(towers):
            for d in range(batched_depth[i] + 1):
                group_ops.update(t.layers[d].ops)
                if d > 0 and t.links[d - 1] is not None:
                    group_ops.add(t.links[d - 1])
        consumed = set(stack.inserts) if stack else set()

        # Checks on the values each batched layer reads, and the cost of run-time stacking.
        externals: list[ir.Value] = []
        runtime_bytes = 0
        plans = {}
        for node in nodes:
            layers = [towers[i].layers[node.depth] for i in range(node.lo, node.hi)]
            plan = self._plan_node(layers, node, shared, towers)
            plans[id(node)] = plan
            externals += plan["externals"]
            runtime_bytes += plan["runtime_bytes"]
        anchor, sink = self._placement(block, externals, group_ops, consumed, towers, stack)
        saved = sum(n.size - 1 for n in nodes)
        if runtime_bytes and runtime_bytes > saved * self.runtime_stack_bytes_per_dispatch:
            raise _NoMatch(
                f"stacking run-time tensors would copy {runtime_bytes} bytes per call to save "
                f"{saved} dispatches (runtime-stack-bytes-per-dispatch="
                f"{self.runtime_stack_bytes_per_dispatch})")

        # Build.
        loc = group[0].layers[0].mm.location
        built: dict[int, dict] = {}
        with loc:
            for node in nodes:
                parent = next((p for p in nodes if any(c is node for c in p.children)), None)
                with ir.InsertionPoint(anchor):
                    if parent is None:
                        lhs = plans[id(node)].get("lhs")
                        lhs_layout = None if shared else (TN if rowless else TMN)
                    else:
                        pb = built[id(parent)]
                        tail = towers[node.lo].layers[parent.depth].tail_index
                        lhs = slice_towers(pb["chain"][tail], parent.layout,
                                           node.lo - parent.lo, node.size)
                        lhs_layout = parent.layout
                chain = self._build_node(module, anchor, towers, node, plans[id(node)],
                                         lhs, lhs_layout)
                built[id(node)] = {"chain": chain}
            # Replace uses outside the group with slices of the batched values.
            if stack is not None:
                leaf = nodes[-1]
                with ir.InsertionPoint(anchor):
                    stack_value = reshape_to(built[id(leaf)]["chain"][-1],
                                             list(stack.inserts[-1].results[0].type.shape))
                stack.inserts[-1].results[0].replace_all_uses_with(stack_value)
            for node in nodes:
                chain = built[id(node)]["chain"]
                for p, i in enumerate(range(node.lo, node.hi)):
                    layer = towers[i].layers[node.depth]
                    for c, v in enumerate(layer.chain):
                        uses = [(_owner(u), u.operand_number) for u in v.uses
                                if _owner(u) not in group_ops and _owner(u) not in consumed]
                        if not uses:
                            continue
                        with ir.InsertionPoint(anchor):
                            s = slice_tower(chain[c], node.layout, p, v.type)
                        for owner, k in uses:
                            owner.operands[k] = s
        for op in sink:
            op.move_before(anchor)

        # Erase the towers' ops (and the stack), then what they leave dead.
        doomed = sorted(group_ops | consumed, key=_position, reverse=True)
        dead = {r for op in doomed for r in op.results}
        operands = [v for op in doomed for v in op.operands if v not in dead]
        if stack is not None:
            operands.append(stack.empty.results[0])
        for op in doomed:
            if any(len(list(r.uses)) for r in op.results):
                raise RuntimeError(f"internal: {describe_op(op)} still used after rewrite")
            op.erase()
        _erase_dead(operands)

        n_mm = sum(batched_depth[i] + 1 for i in range(len(towers)))
        n_epi = sum(len(towers[i].layers[d].epilogue)
                    for i in range(len(towers)) for d in range(batched_depth[i] + 1))
        new_epi = sum(len(towers[n.lo].layers[n.depth].epilogue) for n in nodes)
        kinds = "/".join(sorted({towers[n.lo].layers[n.depth].kind for n in nodes}))
        report.change(
            f"{self._describe(group, shared)}: {n_mm} linalg.matmul -> {len(nodes)} batched "
            f"contraction(s), {n_epi} epilogue generic(s) -> {new_epi} ({kinds})"
            + (f"; the {len(towers)}-way stack ({len(stack.inserts)} insert_slice) is the "
               f"batched result ({stack.layout})" if stack else "")
            + (f"; {runtime_bytes} bytes of run-time tensors stacked per call"
               if runtime_bytes else ""))

    def _plan_node(self, layers: list[Layer], node: Node, shared: bool,
                   towers: list[Tower]) -> dict:
        """Checks one batched layer and decides how each of its operands is provided."""
        t0 = layers[0]
        externals: list[ir.Value] = []
        runtime_bytes = 0
        plan: dict = {"externals": externals}
        if node.depth == 0:
            if shared:
                plan["lhs"] = t0.lhs
                externals.append(t0.lhs)
            else:
                inputs = [lay.lhs for lay in layers]
                externals += inputs
                plan["stack_inputs"] = inputs
                runtime_bytes += sum(h.static_tensor_bytes(v.type) for v in inputs)
        # Weights and epilogue parameters: one value for all (shared), constants stacked at
        # load time, or run-time values stacked per call.
        slots = [[lay.weight for lay in layers]] + [
            [lay.params[j] for lay in layers] for j in range(len(t0.params))]
        kinds = []
        for values in slots:
            if all(v == values[0] for v in values):
                kinds.append("shared")
                externals.append(values[0])
            elif all(trace_constant(v) for v in values):
                kinds.append("const")
            else:
                kinds.append("runtime")
                externals += values
                runtime_bytes += sum(h.static_tensor_bytes(v.type) for v in values)
        plan["slots"], plan["slot_kinds"] = slots, kinds
        # Values used from above by the bodies and the accumulator: equal across towers.
        for lay in layers[1:]:
            for a, b in zip(lay.captured, t0.captured):
                if a != b and not _same_constant(a, b):
                    raise _NoMatch("epilogue bodies use different values from above")
            if lay.fill_scalar != t0.fill_scalar and not _same_constant(lay.fill_scalar,
                                                                        t0.fill_scalar):
                raise _NoMatch("accumulators are filled with different values")
        externals += t0.captured + [t0.fill_scalar]
        plan["runtime_bytes"] = runtime_bytes
        return plan

    def _placement(self, block, externals, group_ops, consumed, towers, stack):
        """Where the batched ops go (before `anchor`: after every value they read) and the
        users of tower results that must move after them; _NoMatch if towers depend on each
        other."""
        last = -1
        ext_defs = set()
        for v in externals:
            op = h.defining_op(v)
            if op is None or op not in _POSITIONS:
                continue  # a block argument, or defined above the function body
            ext_defs.add(op)
            last = max(last, _POSITIONS[op])
        removed = group_ops | consumed
        seeds = []
        for op in removed:
            for r in op.results:
                seeds += [_top_level(u) for u in h.users(r)]
        sink: set = set()
        work = [u for u in seeds if u not in removed and _position(u) <= last]
        while work:
            op = work.pop()
            if op in sink:
                continue
            if op in ext_defs:
                raise _NoMatch("towers depend on each other (a tower's input is computed from "
                               "another tower's result)")
            if not op.name.startswith(MOVABLE_PREFIXES):
                raise _NoMatch(f"a user of a tower result ({op.name}) comes before the group's "
                               "inputs are all available and cannot be moved")
            sink.add(op)
            for r in op.results:
                work += [u for u in map(_top_level, h.users(r))
                         if _position(u) <= last and u not in removed]
        anchor = None
        for op in block.operations:
            op = op.operation
            if _POSITIONS[op] > last and op not in removed and op not in sink:
                anchor = op
                break
        return anchor, sorted(sink, key=_position)

    def _build_node(self, module, anchor, towers, node: Node, plan: dict, lhs: ir.Value,
                    lhs_layout: str | None) -> list[ir.Value]:
        layers = [towers[i].layers[node.depth] for i in range(node.lo, node.hi)]
        t0 = layers[0]
        count = len(layers)
        m, n = t0.result_type.shape
        layout = node.layout
        elt = t0.result_type.element_type

        stacked = []
        w_layout = t0.weight_layout
        for j, (values, kind) in enumerate(zip(plan["slots"], plan["slot_kinds"])):
            if kind == "shared":
                stacked.append(values[0])
            elif kind == "const":
                transpose = (j == 0 and self.weight_layout in ("kn", "nk")
                             and self.weight_layout != w_layout)
                if transpose:
                    w_layout = self.weight_layout
                stacked.append(self._hoist_stack(module, anchor, values, transpose))
            else:
                with ir.InsertionPoint(anchor):
                    stacked.append(stack_values(values))
        rowless = layout == TN
        with ir.InsertionPoint(anchor):
            if "stack_inputs" in plan:
                lhs = stack_values(plan["stack_inputs"])
                if rowless:
                    lhs = reshape_to(lhs, [count, lhs.type.shape[-1]])
            elif rowless and lhs_layout is None:
                lhs = reshape_to(lhs, [lhs.type.shape[-1]])  # the shared [1, K] input as [K]
            weight, params = stacked[0], stacked[1:]
            w_kind = plan["slot_kinds"][0]
            types = {str(v.type.element_type) for v in (lhs, weight)} | {str(elt)}
            plain = (len(types) == 1 and w_kind != "shared"
                     and h.body_op_names(t0.mm) in _PLAIN_MATMUL_BODIES)

            # The contraction: domain (t, m, n, k), or (t, n, k) without rows.
            out_shape = _layout_shape(layout, count, m, n)
            init = linalg.fill(t0.fill_scalar,
                               outs=[tensor.EmptyOp(out_shape, elt).result])
            out_dims = _layout_dims(layout)
            if rowless:
                n_dims, k = 3, 2
                lhs_dims = [k] if lhs_layout is None else [0, k]
                w_dims = [1, k] if w_layout == "nk" else [k, 1]
            else:
                n_dims, k = 4, 3
                lhs_dims = [1, k] if lhs_layout is None else (
                    [0, 1, k] if lhs_layout == TMN else [1, 0, k])
                w_dims = [2, k] if w_layout == "nk" else [k, 2]
            if w_kind != "shared":
                w_dims = [0] + w_dims
            if self.named_batch_matmul and plain and rowless and lhs_layout == TN \
                    and w_layout == "kn":
                result = linalg.batch_vecmat(lhs, weight, outs=[init])
            elif (self.named_batch_matmul and plain and not rowless
                  and lhs_layout in (None, TMN) and layout == TMN):
                maps = [_map(4, d).value for d in (lhs_dims, w_dims, [0, 1, 2])]
                result = linalg.batch_matmul(lhs, weight, outs=[init], indexing_maps=maps)
            else:
                contraction = linalg.GenericOp(
                    [ir.RankedTensorType.get(out_shape, elt)], [lhs, weight], [init],
                    ir.ArrayAttr.get([_map(n_dims, lhs_dims), _map(n_dims, w_dims),
                                      _map(n_dims, out_dims)]),
                    _iterators(["parallel"] * (n_dims - 1) + ["reduction"]))
                mm_block = t0.mm.regions[0].blocks[0]
                body = contraction.regions[0].blocks.append(
                    *[a.type for a in mm_block.arguments])
                clone_body(t0.mm, body)
                result = contraction.results[0]
            if not isinstance(result, ir.Value):
                result = result.results[0]
            chain = [result]
            if t0.view_op is not None:
                chain.append(chain[0])

            # The epilogue: domain (t, m, n), or (t, n) without rows; chain in `layout`.
            e_dims = len(out_dims)
            for e in t0.epilogue:
                maps = h.indexing_maps(e.op)
                ins, in_maps = [], []
                for (role, index), amap in zip(e.roles, maps):
                    if role == "chain":
                        ins.append(chain[index])
                        in_maps.append(_map(e_dims, out_dims))
                        continue
                    value = params[index]
                    if rowless:  # the row dim (of size 1) is read at 0
                        dims = [1 if t0.view_dims[d] == 1 else None for d in _dims(amap)]
                    else:
                        dims = [1 + t0.view_dims[d] for d in _dims(amap)]
                    if plan["slot_kinds"][1 + index] != "shared":
                        dims = [0] + dims
                    ins.append(value)
                    in_maps.append(_map(e_dims, dims))
                rtype = e.op.results[0].type
                rt = ir.RankedTensorType.get(out_shape, rtype.element_type)
                empty = tensor.EmptyOp(out_shape, rtype.element_type).result
                g = linalg.GenericOp([rt], ins, [empty],
                                     ir.ArrayAttr.get(in_maps + [_map(e_dims, out_dims)]),
                                     _iterators(["parallel"] * e_dims))
                src_block = e.op.regions[0].blocks[0]
                blk = g.regions[0].blocks.append(*[a.type for a in src_block.arguments])
                clone_body(e.op, blk)
                chain.append(g.results[0])
        return chain

    def _hoist_stack(self, module, anchor, values: list[ir.Value],
                     transpose: bool = False) -> ir.Value:
        traced = [trace_constant(v) for v in values]
        roots: list[ir.Value] = []
        for root, _ in traced:
            if root not in roots:
                roots.append(root)

        def build(cloned: list[ir.Value]) -> ir.Value:
            outs = []
            for root, reshapes in traced:
                v = cloned[roots.index(root)]
                for op in reshapes:
                    new = op.clone()
                    new.operands[0] = v
                    v = new.results[0]
                outs.append(v)
            stacked = stack_values(outs)
            return transpose_inner(stacked) if transpose else stacked

        return h.hoist_to_initializer(module, anchor, roots, build, "__batch_mlp_towers_stack")


def _owner(use) -> ir.Operation:
    owner = use.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _same_constant(a: ir.Value, b: ir.Value) -> bool:
    da, db = h.defining_op(a), h.defining_op(b)
    return (da is not None and db is not None and da.name == db.name == "arith.constant"
            and a.type == b.type and str(da.attributes["value"]) == str(db.attributes["value"]))


def _erase_dead(values: list[ir.Value]) -> None:
    """Erases the pure ops (CLEANUP_OPS) defining `values` once they are unused, recursively."""
    work, seen = list(values), set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        op = h.defining_op(v)
        if op is None or op.name not in CLEANUP_OPS:
            continue
        if any(len(list(r.uses)) for r in op.results):
            continue
        operands = [o for o in op.operands if o not in seen]
        seen.update(op.results)
        op.erase()
        work += operands
