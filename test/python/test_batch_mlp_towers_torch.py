"""batch-mlp-towers on the PyTorch models (slow): six-by-four towers, MMoE, MoE experts,
multitask heads, GPU targets."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import reassociation_bound
from iree_fusions.harness.numerics import compare_compilations
from support.batch_mlp_towers import PAD, PASS, TOL, towers_ir


# ---------------------------------------------------------------- PyTorch models (slow)


def _torch_check(cfg, **kwargs):
    from iree_fusions.models.towers import build_artifact
    from iree_fusions.models.torch_export import TORCH_INPUT_FLAGS

    art = build_artifact(cfg)
    check = compare_compilations(art.source, art.inputs, fusions=PASS, flags=TORCH_INPUT_FLAGS,
                                 **kwargs)
    assert check.agreement.within(TOL), check.agreement
    for ref, out in zip(art.reference, check.plugin):
        assert np.max(np.abs(ref - out)) <= TOL
    return check


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 8, 64])
@pytest.mark.parametrize("activation", ["silu", "relu", "gelu", "sigmoid", "tanh", "none"])
def test_torch_six_by_four_towers(batch, activation):
    from dataclasses import replace

    from iree_fusions.models.towers import ISSUE

    check = _torch_check(replace(ISSUE, batch=batch, activation=activation))
    assert check.stock_dispatches == 24
    assert check.plugin_dispatches == 4


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_torch_mmoe_has_no_per_expert_dispatches(batch):
    from dataclasses import replace

    from iree_fusions.models.towers import MMOE

    check = _torch_check(replace(MMOE, batch=batch))
    names = [n for ns in check.plugin_counts.dispatch_names.values() for n in ns]
    assert not any("slow_memcpy" in n for n in names), names
    # 8 experts x 2 layers -> 2 batched dispatches whose result is the stack.
    assert any("group of 8 towers (depth 2" in c and "8-way stack" in c
               for c in check.changes()), check.changes()
    assert check.plugin_dispatches <= check.stock_dispatches - 14


@pytest.mark.slow
@pytest.mark.parametrize("name", ["towers3x2-w512", "towers8x5-w96", "towers4-mixed-act",
                                  "towers5-prefix", "towers6-concat", "towers2x3-tanh"])
def test_torch_unseen_shapes(name):
    from iree_fusions.models.towers import UNSEEN

    check = _torch_check(UNSEEN[name])
    assert check.changes()
    assert check.plugin_dispatches < check.stock_dispatches


def _zoo_check(name: str, batch: int, fusions: str = PASS):
    from iree_fusions.models.torch_export import TORCH_INPUT_FLAGS
    from iree_fusions.models.zoo import ARCHITECTURES, zoo_artifact

    art = zoo_artifact(next(a for a in ARCHITECTURES if a.name == name), batch)
    check = compare_compilations(art.source, art.inputs, fusions=fusions, flags=TORCH_INPUT_FLAGS)
    assert check.agreement.within(TOL), check.agreement
    for ref, out in zip(art.reference, check.plugin):
        assert np.max(np.abs(ref - out)) <= 1e-4
    return check


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 4])
def test_torch_moe_one_layer_experts(batch):
    """Eight one-layer experts stacked by torch.stack(dim=1): one batched contraction writes
    the stack; no slow_memcpy (stock has 8 at B = 4)."""
    check = _zoo_check("moe-top2", batch)
    names = [n for ns in check.plugin_counts.dispatch_names.values() for n in ns]
    assert not any("slow_memcpy" in n for n in names), names
    assert any("group of 8 towers (depth 1" in c and "8-way stack" in c
               for c in check.changes()), check.changes()
    assert (check.stock_dispatches, check.plugin_dispatches) == ((14, 7) if batch == 1
                                                                 else (22, 7))
    # The batched experts' K = 128 sums may be added in another order than stock's (by the
    # target's vector width): sum |x w| < 8 (5.6 here), through SiLU (slope <= 1.1) and gates
    # summing to < 1 (0.53); the final sum over 8 experts adds terms < 1 (0.42): 1.4e-4.
    assert check.agreement.max_abs <= (reassociation_bound(128, scale=8 * 1.1)
                                       + reassociation_bound(8, scale=1)), check.agreement


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 4])
def test_torch_multitask_heads_padded(batch):
    """Four heads 32/64/96/128 wide on one trunk: padded to 128 (38% padding), 13/9 -> 3,
    when asked (off by default: measured slower); by default nothing changes."""
    assert not _zoo_check("multitask-heads", batch).changes()
    check = _zoo_check("multitask-heads", batch, PAD)
    assert any("widths 32x1/64x1/96x1/128x1" in c and "padded to 128x1" in c
               for c in check.changes()), check.changes()
    assert check.plugin_dispatches == 3
    # Padded K sums (as test_padded_heads_match_stock): the heads' K = 256 terms sum to
    # |h w| < 5 (2.4 here), through ReLU and second layers with sum |w| < 8 (5.7); their
    # K <= 128 terms < 2 (0.7): 1.3e-3 (the TOL above is the binding check).
    assert check.agreement.max_abs <= (reassociation_bound(256, scale=5 * 8)
                                       + reassociation_bound(128, scale=2)), check.agreement


@pytest.mark.slow
@pytest.mark.parametrize("device", ["hip", "cuda", "vulkan"])
def test_gpu_targets_compile_with_fewer_dispatches(device):
    from iree_fusions.harness import api
    from iree_fusions.compiler.counting import count_flow_ir

    text = towers_ir(8, [[64, 64, 32, 16, 8]] * 6, ["silu"] * 6, seed=5)
    stock = count_flow_ir(api.compile_str(text, device=device, stock=True,
                                          compile_to="flow").output)
    plugin = count_flow_ir(api.compile_str(text, device=device, fusions=PASS,
                                           compile_to="flow").output)
    assert (stock.total_dispatches, plugin.total_dispatches) == (24, 4)
    api.compile_str(text, device=device, fusions=PASS)  # through to the VM module
