"""The bounds that judge a rewrite whose output may differ from stock's: derived from the
operations and types the rewrite keeps and the sums whose order it changes (docs/testing.md,
"Numerics"). Used by the tests, `bench/attention_forms.py` and the comparisons that print
which bound they used."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from ..runtime.modules import UNIT_ROUNDOFF, within_stated_bound

U32 = 2.0 ** -24
MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
SMALLEST_NORMAL_EXPONENT = {"float16": -14, "bfloat16": -126, "float32": -126,
                            "float64": -1022}


def gamma(n: int, u: float = U32) -> float:
    """gamma(n) = n u / (1 - n u): the relative error of a sum of n terms in any order."""
    return n * u / (1 - n * u)


def ulp(x: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of `dtype` numbers at |x| (at subnormals: the subnormal spacing)."""
    x = np.abs(np.asarray(x, np.float64))
    low = SMALLEST_NORMAL_EXPONENT[dtype]
    exponent = np.floor(np.log2(np.maximum(x, 2.0 ** low)))
    return 2.0 ** (exponent - MANTISSA_BITS[dtype])


def attention_bound(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
                    stock: np.ndarray, dq: np.ndarray | None = None,
                    mask: np.ndarray | None = None, rescaling_sides: int = 1) -> np.ndarray:
    """|plugin - stock| per output element of rewrite-attention's decomposition against
    IREE's fused op, q [B, M, d], k [B, N, d], v [B, e, N] (keys last, as sharktank's export
    gives it), `stock` [B, M, e] (its type: the output's):

      scores: both sides sum d f32 terms of the same q' = q * scale * log2 e (q's type) and
        k, in any order: |ds| <= A = gamma(d) max_j sum_i |q'_i k_ji|; where the two sides' q
        differ by at most `dq` (the output of an attention before this one), the scores also
        by B = scale log2 e max_j sum_i |dq_i k_ji|; a finite additive `mask` [B, M, N] adds
        m log2 e in f32 on each side, a product and a sum rounded: C = 4 u32 max_j (sum_i
        |q'_i k_ji| + |m_j| log2 e). The max moves by as much, so exp2(s - max)
        moves by a relative 2 ln2 (A + B), and stock's rescaling between key tiles adds
        <= 4 u32: e_p (`rescaling_sides` 2: the other side is IREE's fused op too, with other
        key tiles (rewrite-attention's fused tiles), and rescales as well: 8 u32);
      p' = p in v's type: a relative e_p + 2 u_v (a value near a rounding boundary may round
        the other way);
      l = sum p and sum p' v over N keys in f32, any order: gamma(N) each;
      o = (1 / l) * sum p' v, then the output's type: |do| <= max_j |v_j| (e_p + 2 u_v + e_p +
        2 gamma(N) + 4 u32) (1 + u_v) + one ulp of |o| in the output's type.

    NaN where q, k or v holds NaN or infinity on that row (no bound: the caller compares
    the NaN and infinity pattern instead)."""
    v_type, out_type = _type_name(v), _type_name(stock)
    u_v = UNIT_ROUNDOFF[v_type]
    d, n = q.shape[-1], k.shape[-2]
    log2e = math.log2(math.e)
    q_scaled = q.astype(np.float64) * float(np.asarray(scale * log2e, q.dtype))
    q_scaled = q_scaled.astype(q.dtype).astype(np.float64)
    k_abs = np.abs(k.astype(np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        a = gamma(d) * np.einsum("bmi,bji->bmj", np.abs(q_scaled), k_abs).max(-1)
        if dq is not None:
            a = a + scale * log2e * np.einsum("bmi,bji->bmj", np.abs(dq.astype(np.float64)),
                                              k_abs).max(-1)
        if mask is not None:
            m = np.abs(np.where(np.isfinite(mask), mask, 0).astype(np.float64)) * log2e
            a = a + 4 * U32 * (np.einsum("bmi,bji->bmj", np.abs(q_scaled), k_abs) + m).max(-1)
        e_p = 2 * math.log(2) * a + 4 * rescaling_sides * U32
        v_max = np.abs(v.astype(np.float64)).max(-1)  # [B, e]
        relative = (2 * e_p + 2 * u_v + 2 * gamma(n) + 4 * U32) * (1 + u_v)
        return v_max[:, None, :] * relative[..., None] + ulp(stock, out_type)


def _type_name(x: np.ndarray) -> str:
    name = np.asarray(x).dtype.name
    if name not in UNIT_ROUNDOFF:
        raise ValueError(f"no unit roundoff known for {name}")
    return name


def within_attention_bound(plugin: np.ndarray, stock: np.ndarray, bound: np.ndarray
                           ) -> tuple[bool, float, int]:
    """(every element within: the same NaN and infinity positions as stock and each finite
    output with a finite bound within it, the largest |d| / bound, how many were checked)."""
    if plugin.shape != stock.shape or not np.array_equal(np.isnan(plugin), np.isnan(stock)) \
            or not np.array_equal(np.isinf(plugin), np.isinf(stock)):
        return False, math.inf, 0
    checked = np.isfinite(stock) & np.isfinite(bound)
    if not checked.any():
        return True, 0.0, 0
    diff = np.abs(plugin[checked].astype(np.float64) - stock[checked].astype(np.float64))
    worst = float((diff / np.maximum(bound[checked], 1e-300)).max())
    return worst <= 1.0, worst, int(checked.sum())


_FUNC_ARGS = re.compile(r"func\.func @(\w+)\(([^)]*)\)")
_SDPA = re.compile(r"torch\.aten\.scaled_dot_product_attention (%[\w.]+), (%[\w.]+), (%[\w.]+), "
                   r"(%[\w.]+), (%[\w.]+), (%[\w.]+), (%[\w.]+)")
_FLOAT_CONSTANT = r"{name} = torch\.constant\.float ([-+0-9.eE]+)"


def sdpa_operands(source: bytes | str, inputs: Sequence[np.ndarray], function: str = "main"
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """(q, k, v, scale) of a model that is one PyTorch `scaled_dot_product_attention` (torch
    dialect text, as iree-turbine exports it) whose q, k and v are arguments of `function`,
    from that call's `inputs`, flattened to [heads, rows, d] (k and v repeated over a GQA
    group); None for any other model."""
    text = source.decode(errors="replace") if isinstance(source, bytes) else source
    calls = _SDPA.findall(text)
    signature = {name: args for name, args in _FUNC_ARGS.findall(text)}
    if len(calls) != 1 or function not in signature:
        return None
    args = re.findall(r"(%[\w.]+)\s*:", signature[function])
    q_name, k_name, v_name, _, _, _, scale_name = calls[0]
    if not all(n in args for n in (q_name, k_name, v_name)) or len(args) != len(inputs):
        return None
    q, k, v = (np.asarray(inputs[args.index(n)]) for n in (q_name, k_name, v_name))
    if q.ndim < 3 or k.ndim != q.ndim or v.ndim != q.ndim or q.shape[-1] != k.shape[-1]:
        return None
    scale = 1 / math.sqrt(q.shape[-1])
    if scale_name != "%none":
        found = re.search(_FLOAT_CONSTANT.format(name=re.escape(scale_name)), text)
        if found is None:
            return None
        scale = float(found.group(1))
    if q.ndim == 4 and k.shape[1] != q.shape[1]:
        k, v = (np.repeat(x, q.shape[1] // x.shape[1], axis=1) for x in (k, v))
    flat = lambda x: x.reshape(-1, x.shape[-2], x.shape[-1])  # noqa: E731
    return flat(q), flat(k), flat(v), scale


def judge_outputs(stock: Sequence[np.ndarray], plugin: Sequence[np.ndarray], changed: set[str],
                  source: bytes | str, inputs: Sequence[np.ndarray], function: str,
                  atol: float, rtol: float) -> tuple[bool, str]:
    """Whether the plugin's outputs are right, and by which bound: where rewrite-attention
    changed a model that is one PyTorch SDPA call, its derived bound (`attention_bound`);
    where it changed another model, a stated bound (|d| <= 16 unit roundoffs of the output's
    type times the largest |output|, or atol; the derived one holds per attention, not through
    the layers after it); else atol / rtol, as before."""
    from . import api

    agreement = api.compare_outputs(stock, plugin)
    if "rewrite-attention" not in changed:
        return agreement.within(atol, rtol), f"|d| <= {atol:g} or relative <= {rtol:g}"
    operands = sdpa_operands(source, inputs, function) if len(stock) == 1 else None
    if operands is not None:
        q, k, v, scale = operands
        out, ref = (np.asarray(x).reshape(q.shape[0], q.shape[1], v.shape[-1])
                    for x in (plugin[0], stock[0]))
        ok, worst, _ = within_attention_bound(
            out, ref, attention_bound(q, k, np.swapaxes(v, 1, 2), scale, ref))
        return ok, f"rewrite-attention's derived bound ({worst:.2g} of it)"
    return within_stated_bound(stock, plugin, atol)
