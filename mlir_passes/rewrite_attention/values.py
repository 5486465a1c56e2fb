"""The attention's values as IREE's own decomposition computes them: contractions, reductions
and elementwise generics, for the whole query or one block of its rows (`blocks.py`)."""

from __future__ import annotations

from collections.abc import Callable

from iree.compiler import ir
from iree.compiler.dialects import arith, math, tensor

from iree_fusions.compiler import ir_build as b

from .match import AttentionPlan

Size = b.Size
Body = Callable[[list[ir.Value]], ir.Value]


def _generic(loops: list[int], inputs: list[tuple[ir.Value, list[int]]], init: ir.Value,
             out_dims: list[int], reduced: set[int], body: Body) -> ir.Value:
    """A one-result linalg.generic over `loops` (loop dims of the attention; the `reduced` ones
    last, as IREE's contraction codegen expects): each input read at its dims, the init
    written at `out_dims`;
    `body(args)` builds the yielded value from the block arguments (inputs, then the init)."""
    loops = [d for d in loops if d not in reduced] + [d for d in loops if d in reduced]
    n = len(loops)
    maps = [b.map_attr(n, [loops.index(d) for d in dims]) for _, dims in inputs]
    maps.append(b.map_attr(n, [loops.index(d) for d in out_dims]))
    values = [v for v, _ in inputs]
    gen = b.generic(values, [init], maps,
                    ["reduction" if d in reduced else "parallel" for d in loops], body)
    return gen.results[0]


def _filled(sizes: list[Size], value: float) -> ir.Value:
    f32 = ir.F32Type.get()
    empty = tensor.EmptyOp(sizes, f32).result
    scalar = arith.ConstantOp(f32, value).result
    return b.fill(scalar, empty)


LOG2E = 1.4426950408889634
LOWEST_F32 = -3.4028234663852886e38


def _convert(value: ir.Value, element: ir.Type) -> ir.Value:
    """A float scalar converted to `element` (extended, truncated, or as it is)."""
    if value.type == element:
        return value
    if ir.FloatType(value.type).width < ir.FloatType(element).width:
        return arith.ExtFOp(element, value).result
    return arith.TruncFOp(element, value).result


def _mask_term(mask: ir.Value, log2e: ir.Value) -> ir.Value:
    """What a mask element adds to a score, as in IREE's decomposition: a float mask times
    log2 e (in f32); a boolean one (an integer, its low bit as IREE reads it) 0 where it is
    true and -inf where it is false (PyTorch's `attn_mask` of bools: true attends)."""
    f32 = ir.F32Type.get()
    if isinstance(mask.type, ir.FloatType):
        return arith.MulFOp(_convert(mask, f32), log2e).result
    i1 = ir.IntegerType.get_signless(1)
    if ir.IntegerType(mask.type).width != 1:
        mask = arith.TruncIOp(i1, mask).result
    return arith.SelectOp(mask, arith.ConstantOp(f32, 0.0).result,
                          arith.ConstantOp(f32, float("-inf")).result).result


def _modified_score(plan: AttentionPlan, score: ir.Value) -> ir.Value:
    """The score region's ops cloned here, its argument read as `score`: what it yields."""
    region = plan.op.regions[0].blocks[0]
    mapped = b.clone_ops(plan.score_ops, {region.arguments[0]: score})
    yielded = list(region.operations)[-1].operands[0]
    return mapped.get(yielded, yielded)


def attention_values(plan: AttentionPlan, q: ir.Value, mask: ir.Value | None,
                     size: dict[int, Size]) -> ir.Value:
    """out = softmax(scale * q k^T + mask) v for the query `q` (the op's or a block of it),
    every loop's size in `size`, with the operations and types of IREE's own decomposition
    of the op (online attention, one key tile), so that only the order of the sums differs:

        q'[b, m, k1] = q * (scale * log2 e)                       (q's type; elementwise)
        s[b, m, k2]  = sum_k1 q' * k                              (f32 contraction)
        s            = the op's score region applied to s, if any   (f32 elementwise)
        s'           = s + mask * log2 e       (f32 elementwise; a boolean mask: 0 / -inf)
        mx[b, m]     = max_k2 s'                 (f32 reduction from the lowest finite f32)
        p            = exp2(s' - mx);  l[b, m] = sum_k2 p         (f32)
        o[b, m, n]   = (1 / l) * sum_k2 p' * v,  p' = p in v's type  (f32 contraction)

    the result in the output's type. With v in f32, or the whole query at once (static, its
    scores few), p is an f32 tensor the sum and p' read (as IREE's pipeline); in query blocks
    of f16 / bf16 v, p is computed twice, in the sum and in p' (no f32 p tensor: s' and p'
    are what a block holds). A fully masked row is 0 * (1 / 0) = NaN, as in IREE."""
    roles, maps = plan.roles, plan.maps
    rows = sorted(roles["batch"] + roles["m"])
    scores = sorted(rows + roles["k2"])
    k1, k2 = set(roles["k1"]), set(roles["k2"])
    f32 = ir.F32Type.get()

    def sizes(dims: list[int]) -> list[Size]:
        return [size[d] for d in dims]

    def element(value: ir.Value) -> ir.Type:
        return ir.RankedTensorType(value.type).element_type

    def add(a, c):
        return arith.AddFOp(a, c).result

    def mul(a, c):
        return arith.MulFOp(a, c).result

    log2e = arith.ConstantOp(f32, LOG2E).result
    q_scale = mul(_convert(plan.scale, f32), log2e)  # in q's type inside the body (no f16
    q_dims = maps["q"]                                 # scalar on the host: the VM has none)
    q = _generic(sorted(q_dims), [(q, q_dims)], tensor.EmptyOp(sizes(q_dims), element(q)).result,
                 q_dims, set(), lambda a: mul(a[0], _convert(q_scale, a[0].type)))
    s = _generic(scores + roles["k1"], [(q, q_dims), (plan.k, maps["k"])],
                 _filled(sizes(scores), 0.0), scores, k1,
                 lambda a: add(mul(_convert(a[0], f32), _convert(a[1], f32)), a[2]))
    if plan.score_ops:  # IREE's decomposition applies the region to s, before the mask
        s = _generic(scores, [(s, scores)], tensor.EmptyOp(sizes(scores), f32).result, scores,
                     set(), lambda a: _modified_score(plan, a[0]))
    empty = tensor.EmptyOp(sizes(scores), f32).result
    if mask is not None:
        s = _generic(scores, [(s, scores), (mask, maps["mask"])], empty, scores, set(),
                     lambda a: add(a[0], _mask_term(a[1], log2e)))
    mx = _generic(scores, [(s, scores)], _filled(sizes(rows), LOWEST_F32), rows, k2,
                  lambda a: arith.MaximumFOp(a[0], a[1]).result)

    def exp2(a):  # p = exp2(s' - mx)
        return math.Exp2Op(arith.SubFOp(a[0], a[1]).result).result

    v_type = element(plan.v)
    if v_type == f32 or plan.whole is not None:  # p held in f32: the sum and p' read it
        p = _generic(scores, [(s, scores), (mx, rows)],
                     tensor.EmptyOp(sizes(scores), f32).result, scores, set(), exp2)
        total = _generic(scores, [(p, scores)], _filled(sizes(rows), 0.0), rows, k2,
                         lambda a: add(a[0], a[1]))
        p_v = p if v_type == f32 else _generic(
            scores, [(p, scores)], tensor.EmptyOp(sizes(scores), v_type).result, scores,
            set(), lambda a: _convert(a[0], v_type))
    else:  # (in query blocks of f16 / bf16 v: p computed again for the sum, no f32 p held)
        total = _generic(scores, [(s, scores), (mx, rows)], _filled(sizes(rows), 0.0), rows,
                         k2, lambda a: add(exp2(a), a[2]))
        p_v = _generic(scores, [(s, scores), (mx, rows)],
                       tensor.EmptyOp(sizes(scores), v_type).result, scores, set(),
                       lambda a: _convert(exp2(a), v_type))
    out_dims = maps["out"]
    pv = _generic(sorted(rows + roles["k2"] + roles["n"]), [(p_v, scores), (plan.v, maps["v"])],
                  _filled(sizes(out_dims), 0.0), out_dims, k2,
                  lambda a: add(mul(_convert(a[0], f32), _convert(a[1], f32)), a[2]))
    out_type = element(plan.out)
    one = arith.ConstantOp(f32, 1.0).result
    return _generic(sorted(out_dims), [(total, rows), (pv, out_dims)],
                    tensor.EmptyOp(sizes(out_dims), out_type).result, out_dims, set(),
                    lambda a: _convert(mul(arith.DivFOp(one, a[0]).result, a[1]), out_type))
