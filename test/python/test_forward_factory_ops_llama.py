"""forward-factory-ops on the Llama-style decoder (tiny, s512, unseen shapes, GPU targets)
and the forms users compile."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from iree_fusions.harness import api
from iree_fusions.harness.numerics import compare_compilations
from support.forward_factory_ops import BOTH, ROOT


# ---------------------------------------------------------------- Llama-style decoder

TINY = dict(dim=32, n_heads=2, head_dim=16, hidden=48, n_layers=2)


@pytest.fixture(scope="session")
def ffo_cache(tmp_path_factory):
    """bench/forward_factory_ops.py's cache of exports and stock compiles, for this session
    only (never /tmp/iree-fusions-ffo-cache: no test reads what another run left)."""
    path = tmp_path_factory.mktemp("ffo-cache")
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ffo_bench(monkeypatch, ffo_cache):
    """The bench module (bench/ is not a package on sys.path), caching under ffo_cache."""
    monkeypatch.syspath_prepend(ROOT)
    import bench.forward_factory_ops as bench

    monkeypatch.setattr(bench, "CACHE", ffo_cache)
    return bench


@pytest.mark.parametrize("variant", ["start_pos", "sdpa"])
def test_tiny_llama_matches_torch_and_loses_factory_dispatches(variant, ffo_bench):
    from iree_fusions.models import llama

    pytest.importorskip("torch")
    compile_config, factory_only_dispatches = (ffo_bench.compile_config,
                                               ffo_bench.factory_only_dispatches)
    art = llama.build_artifact(variant, 16, **TINY)
    check = compare_compilations(art.source, art.inputs, fusions=BOTH, flags=art.flags)
    for out, ref in zip(check.plugin, art.reference):
        np.testing.assert_allclose(out, ref, atol=1e-5, rtol=1e-5)
    assert check.agreement.within(1e-6)
    stock_flow = compile_config(art, "none", "local-task", "flow")
    plugin_flow = compile_config(art, BOTH, "local-task", "flow")
    stock_factory, _ = factory_only_dispatches(stock_flow)
    plugin_factory, names = factory_only_dispatches(plugin_flow)
    assert stock_factory >= 6
    # Tiny tables: the cost model forwards every one of them.
    assert plugin_factory == 0, names
    assert check.plugin_dispatches <= check.stock_dispatches - stock_factory
    assert (check.plugin_counts.total_bytes_between
            < check.stock_counts.total_bytes_between)


LLAMA_512 = ["const", "start_pos", "sdpa", "alibi", "sliding"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", LLAMA_512)
def test_llama_s512_matches_torch(variant, ffo_bench):
    pytest.importorskip("torch")
    build, compile_config, factory_only_dispatches = (
        ffo_bench.build, ffo_bench.compile_config, ffo_bench.factory_only_dispatches)
    art = build(variant, 512, {})
    check = compare_compilations(art.source, art.inputs, fusions=BOTH, flags=art.flags)
    for out, ref in zip(check.plugin, art.reference):
        np.testing.assert_allclose(out, ref, atol=1e-4, rtol=1e-4)
    assert check.plugin_dispatches <= check.stock_dispatches
    assert (check.plugin_counts.total_bytes_between
            <= check.stock_counts.total_bytes_between)
    if variant != "const":
        stock_factory, _ = factory_only_dispatches(compile_config(art, "none", "local-task",
                                                                  "flow"))
        plugin_factory, names = factory_only_dispatches(compile_config(art, BOTH, "local-task",
                                                                       "flow"))
        assert plugin_factory < stock_factory, names


@pytest.mark.slow
@pytest.mark.parametrize("variant,overrides", [
    ("start_pos", dict(n_heads=4, head_dim=64)),
    ("alibi", dict(n_heads=16, head_dim=16)),
    ("sliding", dict(n_heads=2, head_dim=128, window=16)),
])
def test_llama_unseen_shapes(variant, overrides, ffo_bench):
    pytest.importorskip("torch")
    art = ffo_bench.build(variant, 128, overrides)
    check = compare_compilations(art.source, art.inputs, fusions=BOTH, flags=art.flags)
    for out, ref in zip(check.plugin, art.reference):
        np.testing.assert_allclose(out, ref, atol=1e-4, rtol=1e-4)
    assert check.changes()
    assert check.plugin_dispatches < check.stock_dispatches


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cuda", "hip", "vulkan"])
@pytest.mark.parametrize("variant", LLAMA_512)
def test_llama_compiles_for_gpu_targets(device, variant, ffo_bench):
    pytest.importorskip("torch")
    art = ffo_bench.build(variant, 512, {})
    if device == "vulkan" and variant == "sdpa":
        # Stock IREE 3.13 cannot compile iree_linalg_ext.attention for Vulkan (rdna3) either.
        with pytest.raises(api.CompilerToolError, match="online_attention"):
            api.compile_str(art.source, device=device, flags=art.flags, stock=True)
        return
    out = api.compile_str(art.source, device=device, flags=art.flags, fusions=BOTH)
    assert out.output
    # const: IREE const-evaluates the tables and fuses the index-only mask; nothing to do.
    assert any(r["changes"] for r in out.reports) == (variant != "const")


# ---------------------------------------------------------------- the forms users compile

_STATIC: dict = {}


def _check_llama_form(variant: str, form: str, seq: int, **overrides):
    """A Llama-style variant (B=2: torch.export specializes a batch of 1) in `form` removes
    as many dispatches as in its static form, at most one fewer where the form's report names
    the dynamic dim that blocks (at S=16 the static form forwards RoPE tables that a dynamic
    size counted as its bound or dynamic-dim-estimate does not); it agrees with stock IREE
    and PyTorch at the export's size and an unseen one (B=3 / S=seq-5)."""
    pytest.importorskip("torch")
    from iree_fusions.models import forms, llama

    model = forms.FormModel(
        f"llama-{variant}", lambda b, s: llama.build_llama(variant, s, batch=b, **overrides),
        2, seq, (), other_seq=seq - 5,
        export_kwargs=lambda f: {} if "onnx" in f else {"keep_ops": llama.keep_ops(variant)})
    key = (variant, seq, tuple(sorted(overrides.items())))
    if key not in _STATIC:
        _STATIC[key] = model.check("static", BOTH)
    static = _STATIC[key]
    check = static if form == "static" else model.check(form, BOTH)
    assert static.removed >= 1
    if check.removed < static.removed:
        assert check.removed == static.removed - 1, (form, check.skipped)
        if not (variant == "sdpa" and form.startswith("onnx")):
            # the dynamic size the rules counted is named (a skip, or a compaction's reason)
            assert any("dynamic" in r for r in check.skipped + check.changes), check.skipped
        # else the ONNX exporter decomposes SDPA: no attention dispatch to clone the mask
        # into, the mask is forwarded at the linalg phase instead
    for stock_err, torch_err in check.errors:
        assert stock_err <= 1e-5 and torch_err <= 1e-4, check.errors
    return check


# The dynamic forms in CI's slow subset (about 24 s each; the default suite keeps static).
_CI_SLOW = (pytest.mark.slow, pytest.mark.ci_slow)


@pytest.mark.parametrize("form", ["static", pytest.param("dynamic-seq", marks=_CI_SLOW),
                                  pytest.param("dynamic-batch", marks=_CI_SLOW)])
def test_tiny_llama_forms(form):
    check = _check_llama_form("start_pos", form, 16, **TINY)
    assert len(check.errors) == (2 if "dynamic" in form else 1)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["params", "onnx", "onnx-params", "onnx-dynamic-seq",
                                  "dynamic-seq-facts", "params-dynamic-seq"])
def test_tiny_llama_forms_slow(form):
    _check_llama_form("start_pos", form, 16, **TINY)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["start_pos", "sdpa", "alibi", "sliding"])
@pytest.mark.parametrize("form", ["dynamic-seq", "dynamic-batch", "onnx"])
def test_llama_forms(variant, form):
    _check_llama_form(variant, form, 64)
