"""rewrite-attention on the forms the lit file's later chunks stand for, compiled and run against
stock IREE's fused op (the plugin's module run first, so that no output memory it leaves
unwritten can hold stock's result): a static prefill decomposed whole (no loop: its scores
fit whole-scores), a boolean mask (PyTorch's `attn_mask` of bools, as HF
transformers' SDPA exports pass it), and two attentions in a chain with a dynamic batch and
an i8 mask, at a batch of 0 (no host read of an empty block), at sizes the dynamic IR never
names, with non-finite inputs: the same NaN and infinity pattern as stock, every finite
output within the bound derived in docs/testing.md."""

from __future__ import annotations

import numpy as np
import pytest

from iree_fusions.harness import api
from iree_fusions.harness.bounds import attention_bound
from support import passes

PASS = "rewrite-attention"
SCALE = 0.17677669


def _compiled(name: str) -> tuple[bytes, bytes]:
    text = passes.lit_cases(PASS)[name]
    plugin = api.compile_str(text, fusions=PASS)
    assert [c.what for p in plugin.passes for c in p.changes], plugin.reports
    return plugin.output, api.compile_str(text, stock=True).output


def _same_pattern(plugin: np.ndarray, stock: np.ndarray) -> None:
    assert plugin.shape == stock.shape
    assert np.array_equal(np.isnan(stock), np.isnan(plugin))
    assert np.array_equal(np.isinf(stock), np.isinf(plugin))


def _within_bound(plugin_vmfb: bytes, stock_vmfb: bytes, name: str, inputs: list[np.ndarray],
                  v_keys_last: np.ndarray, mask: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs the plugin's module, then stock's; asserts the same NaN and infinity pattern and
    every finite output within the derived bound (`mask`: a finite additive one's term).
    Returns (plugin, stock, where checked)."""
    (plugin,) = api.run(plugin_vmfb, inputs, function=name)
    (stock,) = api.run(stock_vmfb, inputs, function=name)
    _same_pattern(plugin, stock)
    bound = attention_bound(inputs[0], inputs[1], v_keys_last, SCALE, stock, mask=mask)
    finite = np.isfinite(stock) & np.isfinite(bound)
    diff = np.abs(stock.astype(np.float64) - plugin.astype(np.float64))
    assert (diff[finite] <= bound[finite]).all(), float(diff[finite].max())
    return plugin, stock, finite


@pytest.mark.parametrize("seed", [0, 1])
def test_boolean_mask_matches_stock_within_bound(seed):
    """i1 mask [8, 16, 16], true attends: a row with no key to attend to (0 / 0 = NaN in
    both), a row with one key, NaN and infinity in q, k and v."""
    plugin_vmfb, stock_vmfb = _compiled("boolean_mask")
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((8, 16, 32)).astype(np.float16) for _ in range(3))
    mask = rng.random((8, 16, 16)) > 0.4
    mask[2, 5, :] = False
    mask[3, 7, :] = False
    mask[3, 7, 9] = True
    q[1, 0, 5], k[4, 15, 0], v[6, 3, 1] = np.nan, np.inf, -np.inf
    plugin, stock, finite = _within_bound(plugin_vmfb, stock_vmfb, "boolean_mask",
                                          [q, k, v, mask], np.swapaxes(v, 1, 2))
    assert np.isnan(stock[2, 5]).all()
    assert finite.sum() > finite.size // 2
    # Where the mask is all true, the boolean mask is no mask: the row's output is that of the
    # same attention with a zero float mask, which the bound above covers the same way.
    assert not np.isnan(plugin[3, 7]).any()


@pytest.mark.parametrize("batch, rows, keys", [(0, 100, 100), (2, 100, 70), (3, 1, 5),
                                               (1, 65, 65)])
def test_chained_dynamic_batch_matches_stock_within_bound(batch, rows, keys):
    """Two attentions in a chain (the first's output is the second's query), a dynamic batch
    and an i8 mask read by its low bit (a value of 2 masks, 3 attends): both decomposed (before
    the fix, the second's plan held the first's erased result: a segfault); at a batch of 0
    with more rows than a query block the loop's host read is skipped (it read element 0 of
    an empty block: OUT_OF_RANGE at run time); NaN in q and infinity in v spread as in
    stock."""
    plugin_vmfb, stock_vmfb = _compiled("chained_dynamic_batch")
    rng = np.random.default_rng(batch * 1000 + rows)
    q = rng.standard_normal((batch, rows, 16)).astype(np.float32)
    k, v = (rng.standard_normal((batch, keys, 16)).astype(np.float32) for _ in range(2))
    mask = rng.choice(np.array([0, 1, 2, 3], np.int8), (batch, rows, keys))
    mask[..., 0] = 1  # every row attends to one key at least
    if batch >= 2:  # (batch row 1 only: an infinity in v reaches every row of its batch)
        q[1, rows - 1, 3], v[1, keys - 1, 2] = np.nan, np.inf
    inputs = [q, k, v, mask]
    (plugin,) = api.run(plugin_vmfb, inputs, function="chained_dynamic_batch")
    (stock,) = api.run(stock_vmfb, inputs, function="chained_dynamic_batch")
    _same_pattern(plugin, stock)
    if batch == 0:
        return
    # The second attention's q is the first's output: on the two sides it differs by at
    # most the first's bound (`dq`), computed from the exact (f64) first output.
    first = _attention(q, k, v, mask & 1)
    v_t = np.swapaxes(v, 1, 2)
    bound1 = attention_bound(q, k, v_t, 0.25, first.astype(np.float32))
    bound = attention_bound(first.astype(np.float32), k, v_t, 0.25, stock,
                            dq=np.nan_to_num(bound1, nan=np.inf))
    finite = np.isfinite(stock) & np.isfinite(bound)
    diff = np.abs(stock.astype(np.float64) - plugin.astype(np.float64))
    assert (diff[finite] <= bound[finite]).all(), float((diff - bound)[finite].max())
    assert finite[0].all()  # (batch row 0 has no non-finite input: every output checked)


def _attention(q, k, v, keep):
    """Exact (f64) attention with a boolean mask, NaN where no key is attended."""
    s = np.einsum("bmi,bni->bmn", q.astype(np.float64), k.astype(np.float64)) * 0.25
    s = np.where(keep.astype(bool), s, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("bmn,bne->bme", p / p.sum(-1, keepdims=True), v.astype(np.float64))


def test_static_prefill_decomposed_whole_matches_stock_within_bound():
    """[8, 130, 32] f16 with a causal mask, a padding row and non-finite inputs: the whole
    query at once (no loop; the lit file checks the form), within the bound of stock."""
    plugin_vmfb, stock_vmfb = _compiled("prefill_static")
    rng = np.random.default_rng(130)
    q, k, v = (rng.standard_normal((8, 130, 32)).astype(np.float16) for _ in range(3))
    mask = np.triu(np.full((130, 130), -np.inf, np.float16), 1)[None].repeat(8, 0)
    mask[5, 64, :] = -np.inf
    q[1, 0, 5], k[2, 129, 0], v[4, 7, 0] = np.nan, np.inf, -np.inf
    _, stock, finite = _within_bound(plugin_vmfb, stock_vmfb, "prefill_static",
                                     [q, k, v, mask], np.swapaxes(v, 1, 2))
    assert np.isnan(stock[5, 64]).all()
    assert finite[0].all() and finite.sum() > finite.size // 2


@pytest.mark.parametrize("rows", [65, 1])
def test_finite_additive_mask_matches_stock_within_bound(rows):
    """An ALiBi-like mask (finite: -slope * |i - j| per head, plus noise), the form position
    biases take, on the dynamic prefill (query blocks) at sizes its IR never names: each
    mask value enters the scores times log2(e) (the exp2 form), so every output depends on
    that factor, not only on where the mask is -inf."""
    plugin_vmfb, stock_vmfb = _compiled("prefill")
    rng = np.random.default_rng(rows)
    keys = 70
    q, k = (rng.standard_normal((32, n, 32)).astype(np.float16) for n in (rows, keys))
    v = rng.standard_normal((32, 32, keys)).astype(np.float16)
    slope = 2.0 ** -np.arange(1, 33)[:, None, None] * 8
    distance = np.abs(np.arange(rows)[:, None] - np.arange(keys)[None, :])
    mask = (-slope * distance + rng.uniform(-2, 2, (32, rows, keys))).astype(np.float16)
    mask[3, 0, :] = np.float16(-60000)  # large but finite everywhere in one row
    _, stock, finite = _within_bound(plugin_vmfb, stock_vmfb, "prefill", [q, k, v, mask], v,
                                     mask=mask)
    assert finite.all()


@pytest.mark.parametrize("rows", [65, 1])
def test_score_modification_matches_stock_within_bound(rows):
    """A soft cap in the score region (cap * tanh(s / cap): it moves a score by no more than
    the score moves, so the derived bound holds), decomposed in query blocks at sizes the IR
    never names, with NaN and infinity in q, k and v: the NaN and infinity pattern of stock,
    every finite output within the bound."""
    plugin_vmfb, stock_vmfb = _compiled("score_modified")
    rng = np.random.default_rng(rows)
    keys = 70
    q, k, v = (rng.standard_normal((8, n, 32)).astype(np.float16) * 3 for n in (rows, keys, keys))
    q[1, 0, 5], k[2, keys - 1, 0], v[4, 7, 0] = np.nan, np.inf, -np.inf
    cap = 4.0  # (a Python float: IREE passes it as the f32 scalar argument)
    inputs = [q, k, v, cap]
    _, _, finite = _within_bound(plugin_vmfb, stock_vmfb, "score_modified", inputs,
                                 np.swapaxes(v, 1, 2))
    assert finite[0].all()
