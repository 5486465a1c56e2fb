"""harness/bounds.py: the derived attention bound and the judgement the bench prints (which
bound it used): an f16 SDPA whose outputs differ from stock's only by the reordering of f32
sums is within the derived bound (the old fixed atol 1e-5 called it "outputs differ"), a
change of one output by more than its bound is not, and a model no attention rewrite touched
keeps the atol / rtol rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iree_fusions.harness import bounds

SDPA = """
func.func @main(%arg0: !torch.vtensor<[1,4,8,16],f16>, %arg1: !torch.vtensor<[1,2,8,16],f16>, %arg2: !torch.vtensor<[1,2,8,16],f16>) -> !torch.vtensor<[1,4,8,16],f16> {
  %f0 = torch.constant.float 0.000000e+00
  %scale = torch.constant.float 5.000000e-01
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %none = torch.constant.none
  %r = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %f0, %false, SCALE, %true : !torch.vtensor<[1,4,8,16],f16>, !torch.vtensor<[1,2,8,16],f16>, !torch.vtensor<[1,2,8,16],f16>, !torch.none, !torch.float, !torch.bool, !torch.float, !torch.bool -> !torch.vtensor<[1,4,8,16],f16>
  return %r : !torch.vtensor<[1,4,8,16],f16>
}"""


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float16) for s in
            ((1, 4, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16))]


def _exact(q, k, v, scale):
    k, v = (np.repeat(x.astype(np.float64), 2, axis=1) for x in (k, v))
    s = np.einsum("bhmi,bhni->bhmn", q.astype(np.float64), k) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhmn,bhne->bhme", p / p.sum(-1, keepdims=True), v)


@pytest.mark.parametrize("scale_text, scale", [("%scale", 0.5), ("%none", 0.25)])
def test_sdpa_operands_reads_q_k_v_and_the_scale(scale_text, scale):
    inputs = _inputs()
    q, k, v, got = bounds.sdpa_operands(SDPA.replace("SCALE", scale_text), inputs)
    assert got == scale and q.shape == (4, 8, 16) and k.shape == v.shape == (4, 8, 16)
    assert np.array_equal(k[1], inputs[1][0, 0]) and np.array_equal(k[2], inputs[1][0, 1])
    assert bounds.sdpa_operands(SDPA.replace("SCALE", scale_text) * 2, inputs) is None
    assert bounds.sdpa_operands(SDPA.replace("SCALE", scale_text), inputs[:2]) is None


def test_judge_by_the_derived_bound_where_attention_was_decomposed():
    inputs = _inputs(1)
    text = SDPA.replace("SCALE", "%scale")
    exact = _exact(*inputs, 0.5)
    stock = exact.astype(np.float16)
    # One f16 ulp away from stock everywhere: what reordered f32 sums give (> atol 1e-5).
    plugin = np.nextafter(stock, np.float16(np.inf))
    ok, bound = bounds.judge_outputs([stock], [plugin], {"rewrite-attention"}, text, inputs,
                                     "main", 1e-5, 1e-4)
    assert ok and bound.startswith("rewrite-attention's derived bound"), bound
    assert not bounds.judge_outputs([stock], [plugin], {"batch-gathers"}, text, inputs,
                                    "main", 1e-5, 1e-4)[0]
    q, k, v, _ = bounds.sdpa_operands(text, inputs)
    limit = bounds.attention_bound(q, k, np.swapaxes(v, 1, 2), 0.5, stock.reshape(4, 8, 16))
    worse = plugin.astype(np.float32).copy()
    worse[0, 2, 3, 4] = stock[0, 2, 3, 4] + 1.5 * limit[2, 3, 4]
    ok, _ = bounds.judge_outputs([stock], [worse.astype(np.float16)], {"rewrite-attention"},
                                 text, inputs, "main", 1e-5, 1e-4)
    assert not ok
    nan = plugin.copy()
    nan[0, 0, 0, 0] = np.nan
    assert not bounds.judge_outputs([stock], [nan], {"rewrite-attention"}, text, inputs,
                                    "main", 1e-5, 1e-4)[0]


def test_the_bound_covers_the_distance_of_f16_attention_to_exact():
    """Stock and the plugin each round the same f32 computation; the exact result rounded to
    f16 is one such, so |exact_f16 - exact| sits well inside the pairwise bound."""
    inputs = _inputs(2)
    q, k, v, scale = bounds.sdpa_operands(SDPA.replace("SCALE", "%none"), inputs)
    exact = _exact(*inputs, scale).reshape(4, 8, 16)
    limit = bounds.attention_bound(q, k, np.swapaxes(v, 1, 2), scale, exact.astype(np.float16))
    assert (np.abs(exact.astype(np.float16) - exact) <= limit).all()
    # ... and is not vacuous: a fraction of the output's own size.
    assert limit.max() < 0.05 * np.abs(v).max()


def test_a_model_with_other_outputs_gets_the_stated_bound():
    stock = np.linspace(-2, 2, 64, dtype=np.float16)
    close = stock + np.float16(16 * 2.0 ** -11 * 2 * 0.9)
    far = stock + np.float16(16 * 2.0 ** -11 * 2 * 1.5)
    for plugin, expect in ((close, True), (far, False)):
        ok, bound = bounds.judge_outputs([stock], [plugin], {"rewrite-attention"}, "", [],
                                         "main", 1e-5, 1e-4)
        assert ok == expect and bound.startswith("stated"), (ok, bound)


def test_ulp_is_the_spacing_of_the_type():
    for dtype, name in ((np.float16, "float16"), (np.float32, "float32")):
        x = np.array([1.0, 3.0, 1e-3, 0.0], dtype)
        assert np.array_equal(bounds.ulp(x, name), np.spacing(np.abs(x)).astype(np.float64))
    assert bounds.gamma(10) == pytest.approx(10 * 2.0 ** -24, rel=1e-6)
    assert math.isclose(bounds.ulp(np.array([1.0]), "bfloat16")[0], 2.0 ** -7)


def test_two_rescaling_sides_add_four_f32_roundings_to_the_probabilities():
    """`rescaling_sides=2` (rewrite-attention's fused tiles against stock: both sides rescale
    between key tiles) widens e_p by 4 u32: the bound grows by max |v| x 2 x 4 u32 x (1 + u_v)
    per output element, exactly."""
    inputs = _inputs(3)
    q, k, v, scale = bounds.sdpa_operands(SDPA.replace("SCALE", "%none"), inputs)
    out = _exact(*inputs, scale).reshape(4, 8, 16).astype(np.float16)
    v_t = np.swapaxes(v, 1, 2)
    one = bounds.attention_bound(q, k, v_t, scale, out)
    two = bounds.attention_bound(q, k, v_t, scale, out, rescaling_sides=2)
    u32, u16 = 2.0 ** -24, 2.0 ** -11
    grow = np.abs(v_t.astype(np.float64)).max(-1)[:, None, :] * 2 * 4 * u32 * (1 + u16)
    assert np.allclose(two - one, grow, rtol=1e-6, atol=0)
