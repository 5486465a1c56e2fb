"""rewrite-attention's fused tiles (tiles.py): the tiles per loop for each form the rule picks,
each check that refuses them (its code, on IR the verifier admits, changed to fail it alone),
and the rule's choice (`fused_faster`): where the decomposition stays."""

from __future__ import annotations

import math
import subprocess
from dataclasses import replace

import numpy as np
import pytest
from iree.compiler import ir

from conftest import CPU_FLAGS, tool
from iree_fusions.compiler.decisions import Decider, Decision, DecisionSet
from iree_fusions.compiler.ir_helpers import LINALG_EXT_ATTENTION
from iree_fusions.compiler.pipeline import parse_pipeline, run_pipeline
from iree_fusions.compiler.protocol import PassReport
from iree_fusions.compiler.target import Target, cpu_vector_class, parse_device_target
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.passes.rewrite_attention.match import match_attention
from iree_fusions.passes.rewrite_attention.tiles import (COMPILATION_INFO, DECODE_F16,
                                                         NARROW_F16, fused_faster, fused_tiles)
from iree_fusions.tools import tune_measure
from iree_fusions.harness import api
from iree_fusions.harness.bounds import attention_bound, within_attention_bound
from support import passes
from support.matchers import last_op, parsed
from test_rewrite_attention_match import attention

PASS = "rewrite-attention"
PREFILL = ["d0, d1, d3", "d0, d4, d3", "d0, d2, d4", ""]  # q, k, v [b, n, k2], scale
DECODE = ["d0, d2", "d0, d3, d2", "d0, d1, d3", ""]  # no query loop: q [b, k1]


def _plan(case):
    """The case's module (keep it while the plan is used) and its attention's plan; the
    output is the function's argument (a dynamic one needs no sizes)."""
    out = case[2][-1]
    text = attention(*case).replace(f"  %e = tensor.empty() : {out}\n", "").replace(
        "util.func public @f(", f"util.func public @f(%e: {out}, ")
    module = parsed(text)
    return module, match_attention(last_op(module, LINALG_EXT_ATTENTION))


def prefill(head: int, value: int, keys: int, rows: int = 64, dtype: str = "f16",
            mask: str | None = None, q_dim: str | None = None):
    q = f"tensor<8x{rows if q_dim is None else q_dim}x{head}x{dtype}>"
    out = f"tensor<8x{rows if q_dim is None else q_dim}x{value}x{dtype}>"
    maps = PREFILL + (["d0, d1, d4"] if mask else []) + ["d0, d1, d2"]
    types = [q, f"tensor<8x{keys}x{head}x{dtype}>", f"tensor<8x{value}x{keys}x{dtype}>",
             "f32"] + ([f"tensor<8x{rows}x{keys}x{mask}>"] if mask else []) + [out]
    return 5, maps, types


def decode(head: int, keys: str, dtype: str = "f16"):
    out = f"tensor<16x{head}x{dtype}>"
    return 4, DECODE + ["d0, d1"], [out, f"tensor<16x{keys}x{head}x{dtype}>",
                                    f"tensor<16x{head}x{keys}x{dtype}>", "f32", out]


@pytest.mark.parametrize("case, distribution, rows, keys", [
    # head and value dims 32: keys 512 / 32 = 16 at a time, 8 rows a step (8 x 32 x 16 f32)
    (prefill(32, 32, 512), (1, 64, 32, 0, 0), (1, 8, 32, 0, 0), (0, 0, 0, 0, 16)),
    # 64: keys 8, rows 8; a query of 16 rows: a workgroup of 16
    (prefill(64, 64, 256, rows=16), (1, 16, 64, 0, 0), (1, 8, 64, 0, 0), (0, 0, 0, 0, 8)),
    # 128: keys 4; dynamic rows: 64 a workgroup
    (prefill(128, 128, 64, q_dim="?"), (1, 64, 128, 0, 0), (1, 8, 128, 0, 0), (0, 0, 0, 0, 4)),
    # decode: no query loop; one head a step, the whole value dim
    (decode(128, "256"), (1, 128, 0, 0), (1, 128, 0, 0), (0, 0, 0, 4)),
    (decode(64, "?"), (1, 64, 0, 0), (1, 64, 0, 0), (0, 0, 0, 8)),
    # decode whose query row is a loop of its own (size 1): one row a step
    (prefill(32, 32, 64, rows=1), (1, 1, 32, 0, 0), (1, 1, 32, 0, 0), (0, 0, 0, 0, 16)),
], ids=["hd32", "hd64-16-rows", "hd128-dynamic-rows", "decode", "decode-dynamic-keys",
        "decode-row-loop"])
def test_tiles_per_loop(case, distribution, rows, keys):
    with ir.Context():
        module, plan = _plan(case)
        tiles = fused_tiles(plan, "avx512")
        assert (tiles.distribution, tiles.rows, tiles.keys) == (distribution, rows, keys)
        # (the p @ v step's vector at most 4096 f32: rows x value dim x keys)
        assert math.prod(r for r in tiles.rows if r) * max(tiles.keys) <= 4096
        text = str(tiles.attribute())
        assert f"vector_common_parallel = [{', '.join(map(str, rows))}]" in text
        assert "LinalgExtTileAndVectorize" in text
        del module


@pytest.mark.parametrize("case, code", [
    (prefill(32, 256, 512), "tiles-value-dim"),
    (prefill(256, 32, 512), "tiles-head-dim"),
    (prefill(32, 32, 520), "tiles-uneven"),  # 520 keys: not a multiple of 16
    (prefill(32, 32, 512, rows=60), "tiles-uneven"),  # 60 rows: not a multiple of 8
    (prefill(32, 32, 512, mask="i1"), "tiles-bool-mask"),
    # two key loops (d4, d5): k [b, k2, k2', k1], v [b, n, k2, k2']
    ((6, ["d0, d1, d3", "d0, d4, d5, d3", "d0, d2, d4, d5", "", "d0, d1, d2"],
      ["tensor<8x64x32xf16>", "tensor<8x16x32x32xf16>", "tensor<8x32x16x32xf16>", "f32",
       "tensor<8x64x32xf16>"]), "tiles-key-loops"),
    (prefill(32, 32, 512, mask="f16"), None),
], ids=["value-dim-256", "head-dim-256", "uneven-keys", "uneven-rows", "bool-mask",
        "two-key-loops", "float-mask"])
def test_each_check_of_the_tiles(case, code):
    with ir.Context():
        module, plan = _plan(case)
        if code is None:
            assert fused_tiles(plan, "avx512").keys[-1] == 16
            return
        with pytest.raises(NoMatch) as failed:
            fused_tiles(plan, "avx512")
        assert failed.value.code == code, failed.value
        del module


def test_an_operand_computed_in_the_dispatch():
    """A q computed by a generic (IREE fuses it into the attention's dispatch): refused; the
    same q read through a reshape and a transpose (moved only) is not."""
    generic = """util.func public @f(%x: tensor<8x32x64xf16>, %k: tensor<8x512x32xf16>,
        %v: tensor<8x32x512xf16>) -> tensor<8x64x32xf16> {{
  %scale = arith.constant 0.17677669 : f32
  %t = tensor.empty() : tensor<8x64x32xf16>
  %q = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>,
      affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel",
      "parallel"]}} ins(%x : tensor<8x32x64xf16>) outs(%t : tensor<8x64x32xf16>) {{
  ^bb0(%in: f16, %out: f16):
    {body}
  }} -> tensor<8x64x32xf16>
  %e = tensor.empty() : tensor<8x64x32xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [
      affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>,
      affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>,
      affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>,
      affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]>
      ins(%q, %k, %v, %scale : tensor<8x64x32xf16>, tensor<8x512x32xf16>,
          tensor<8x32x512xf16>, f32) outs(%e : tensor<8x64x32xf16>) {{
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  }} -> tensor<8x64x32xf16>
  util.return %o : tensor<8x64x32xf16>
}}"""
    with ir.Context():
        moved = parsed(generic.format(body="linalg.yield %in : f16"))
        assert fused_tiles(match_attention(last_op(moved, LINALG_EXT_ATTENTION)), "avx512")
        computed = parsed(generic.format(body="%n = arith.negf %in : f16\n    "
                                              "linalg.yield %n : f16"))
        with pytest.raises(NoMatch) as failed:
            fused_tiles(match_attention(last_op(computed, LINALG_EXT_ATTENTION)), "avx512")
        assert failed.value.code == "tiles-producer"
        assert "the q is computed by linalg.generic" in failed.value.reason


@pytest.mark.parametrize("case, rule", [
    (decode(128, "4096"), DECODE_F16),  # k and v: 32 MiB
    (decode(128, "1024"), None),  # 8 MiB: the decomposition's copies stay in cache
    (prefill(32, 32, 512, mask="f16"), NARROW_F16),
    (prefill(32, 32, 512, dtype="f32"), None),  # f32: the decomposition was faster
    (decode(128, "256", dtype="f32"), None),
    (decode(128, "?"), None),  # dynamic keys: as fast (1.00x), the decomposition stays
    (prefill(32, 32, 512, q_dim="?"), None),
    (prefill(64, 64, 512), None),  # head dim 64 in prefill: the decomposition was faster
    (prefill(32, 64, 512), None),  # a value dim over 32
    (prefill(16, 16, 256), NARROW_F16),
    (prefill(32, 32, 128), None),  # fewer keys: the decomposition as fast or faster
], ids=["decode-f16", "decode-f16-8MiB", "narrow-f16", "narrow-f32", "decode-f32", "decode-dynamic",
        "narrow-dynamic", "prefill-hd64", "value-dim-64", "narrow-hd16", "narrow-128-keys"])
def test_where_the_rule_keeps_the_fused_op(case, rule):
    with ir.Context():
        module, plan = _plan(case)
        assert fused_faster(plan, "avx512", "znver4") == rule
        # on AVX2 and the baseline only the decode rule holds; on an unknown CPU none
        assert fused_faster(plan, "avx2") == fused_faster(plan, "baseline") == \
            (rule if rule == DECODE_F16 else None)
        assert fused_faster(plan, None) is None
        # AVX-512 code on a chip other than AMD Zen 4 (an Intel Xeon measured slower with the
        # decode tiles; x86-64-v4: no chip known): the narrow prefill only
        for chip in ("rocketlake", "sapphirerapids", "x86-64-v4", None):
            assert fused_faster(plan, "avx512", chip) == (None if rule == DECODE_F16 else rule)
        # k and v repeated per query head (the KV-head split planned): the decomposition
        assert fused_faster(replace(plan, heads=object()), "avx512") is None
        del module


# ---------------------------------------------------------------- compiled and run

LIT = "rewrite-attention-fused-tiles"


def _cpu(text: str) -> tuple[str | None, str]:
    """(x86 vector class, chip) of the CPU the tests compile for (host, or --cpu), as the
    pass reads them from the module's device target."""
    flow = api.compile_str(text, stock=True, compile_to="flow").output.decode()
    (target,) = parse_device_target(flow)
    return cpu_vector_class(target), target.chip


def _outputs(name: str, inputs: list[np.ndarray], tiled_on: tuple[tuple[str, str | None], ...]
             ) -> tuple[np.ndarray, np.ndarray]:
    """The lit case `name` compiled with the pass and stock, run on `inputs`: (plugin's,
    stock's); the plugin's module runs first. The pass must keep the fused op with its tiles
    where the CPU's (vector class, chip) is in `tiled_on` (chip None: any chip of that class),
    and decompose it elsewhere."""
    text = passes.lit_cases(LIT)[name]
    plugin = api.compile_str(text, fusions=PASS)
    tiled = [c.what for p in plugin.passes for c in p.changes if "fused op kept" in c.what]
    vector_class, chip = _cpu(text)
    assert bool(tiled) == any(vector_class == cls and want in (None, chip)
                              for cls, want in tiled_on), plugin.reports
    (out,) = api.run(plugin.output, inputs, function=name)
    (stock,) = api.run(api.compile_str(text, stock=True).output, inputs, function=name)
    return out, stock


def _within(plugin, stock, q, k, v, scale, mask=None):
    """The same NaN and infinity pattern; every finite output within the derived bound for two
    fused ops (both rescale between their key tiles; it holds for the decomposition too, whose
    bound has one); returns where checked."""
    bound = attention_bound(q, k, v, scale, stock, mask=mask, rescaling_sides=2)
    ok, worst, checked = within_attention_bound(plugin, stock, bound)
    assert ok, worst
    return checked


def test_decode_with_tiles_matches_stock_within_bound():
    """32 heads, 1024 keys, head dim 128, f16 (16 MiB of k and v): NaN in one head's q,
    infinity in another's k and v: the NaN pattern of stock, every other output within the
    bound."""
    rng = np.random.default_rng(16)
    q = rng.standard_normal((32, 128)).astype(np.float16)
    k = rng.standard_normal((32, 1024, 128)).astype(np.float16)
    v = rng.standard_normal((32, 128, 1024)).astype(np.float16)
    q[1, 5], k[2, 1023, 0], v[4, 7, 0] = np.nan, np.inf, -np.inf
    plugin, stock = _outputs("decode_f16", [q, k, v],
                             (("avx512", "znver4"), ("avx2", None), ("baseline", None)))
    assert np.isnan(stock[1]).all() and np.isfinite(stock[0]).all()
    checked = _within(plugin[:, None], stock[:, None], q[:, None], k, v, 0.0883883461)
    assert checked >= 28 * 128


def test_narrow_prefill_with_tiles_matches_stock_within_bound():
    """[8, 256, 32] f16 with a causal float mask, a row masked whole (0 / 0: NaN on both
    sides), NaN and infinity in q, k, v."""
    rng = np.random.default_rng(256)
    q, k = (rng.standard_normal((8, 256, 32)).astype(np.float16) for _ in range(2))
    v = rng.standard_normal((8, 32, 256)).astype(np.float16)
    mask = np.triu(np.full((256, 256), -np.inf, np.float16), 1)[None].repeat(8, 0)
    mask[5, 40, :] = -np.inf
    q[1, 0, 5], k[2, 255, 0], v[4, 7, 0] = np.nan, np.inf, -np.inf
    plugin, stock = _outputs("prefill_narrow_f16", [q, k, v, mask], (("avx512", None),))
    assert np.isnan(stock[5, 40]).all()
    checked = _within(plugin, stock, q, k, v, 0.17677669, mask=mask)
    assert checked > plugin.size // 2


# A decode in f16 (32 MiB of k and v) whose float mask IREE broadcasts over the heads inside
# the attention's dispatch: with the tiles, IREE 3.13's CPU codegen refuses a vector of that
# dispatch (its large-vector check), so iree-fusions-compile compiles again with
# fused-tiles=false.
MASKED_DECODE = """
!q = !torch.vtensor<[2,16,1,64],f16>
!kv = !torch.vtensor<[2,16,8192,64],f16>
!mask = !torch.vtensor<[2,1,1,8192],f16>
func.func @main(%q: !q, %k: !kv, %v: !kv, %mask: !mask) -> !q {
  %f0 = torch.constant.float 0.000000e+00
  %false = torch.constant.bool false
  %none = torch.constant.none
  %r = torch.aten.scaled_dot_product_attention %q, %k, %v, %mask, %f0, %false, %none, %false
      : !q, !kv, !kv, !mask, !torch.float, !torch.bool, !torch.none, !torch.bool -> !q
  return %r : !q
}
"""


@pytest.mark.parametrize("option, rc", [("", 0), ("{fused-tiles=true}", 1)])
def test_a_compile_iree_refuses_with_tiles_is_compiled_again_without(tmp_path, option, rc):
    """Left to the rule: one warning (with IREE's first error line), the held-back errors not
    printed, the decomposition's report, rc 0. `fused-tiles=true` given: no second compile,
    IREE's errors as they were."""
    src = tmp_path / "decode.mlir"
    src.write_text(MASKED_DECODE)
    # (compiled for AMD Zen 4, where the rule gives this decode the tiles; not run)
    flags = [f for f in CPU_FLAGS if not f.startswith("--iree-llvmcpu-target-cpu=")]
    res = subprocess.run([tool("iree-fusions-compile"), str(src), "--iree-input-type=torch",
                          *flags, "--iree-llvmcpu-target-cpu=znver4", f"--fusions={PASS}{option}",
                          "--fusions-report",
                          "-o", str(tmp_path / "out.vmfb")], capture_output=True, text=True)
    assert res.returncode == rc, res.stderr
    assert "Traceback" not in res.stderr
    warning = "compiling again with rewrite-attention{fused-tiles=false}"
    if rc == 0:
        assert res.stderr.count(warning) == 1
        assert "IREE said: " in res.stderr and "large vector sizes" in res.stderr
        assert res.stderr.count("error:") == 1  # (the first line IREE said, in the warning)
        assert "-> contractions, reductions and elementwise generics" in res.stderr
    else:
        assert warning not in res.stderr
        assert "large vector sizes" in res.stderr


@pytest.mark.parametrize("vector_class, rows", [("avx512", 8), ("avx2", 4), ("baseline", 2),
                                                (None, None), ("neon", None)])
def test_rows_follow_the_vector_class(vector_class, rows):
    """The p @ v step's vector at half of IREE's large-vector limit (512 native vectors): on
    AVX2 and the x86-64 baseline fewer rows a step; a CPU of no known class: no tiles."""
    with ir.Context():
        module, plan = _plan(prefill(32, 32, 512))
        if rows is None:
            with pytest.raises(NoMatch) as failed:
                fused_tiles(plan, vector_class)
            assert failed.value.code == "tiles-cpu"
            return
        tiles = fused_tiles(plan, vector_class)
        assert tiles.rows == (1, rows, 32, 0, 0) and tiles.keys == (0, 0, 0, 0, 16)
        del module


# ---------------------------------------------------------------- the form, by decision

ZNVER4 = Target.parse("llvm-cpu:znver4")


def _with_decisions(name: str, decisions: dict[str, bool] | None = None
                    ) -> tuple[str, PassReport]:
    """The lit case `name` after the pass for znver4, following `decisions` (key -> apply,
    as a decisions file holds them): (the IR, the pass's report)."""
    decider = None if decisions is None else Decider(ZNVER4, [DecisionSet(
        ZNVER4, "d.json", entries={k: Decision(k, PASS, a, "d.json")
                                   for k, a in decisions.items()})])
    with ir.Context():
        module = ir.Module.parse(passes.lit_cases(LIT)[name])
        out, (report,) = run_pipeline(module.operation, parse_pipeline(PASS), target=ZNVER4,
                                      decider=decider)
        return str(out), report


def test_a_decision_picks_the_form_of_an_attention_the_rule_gives_tiles():
    """Where the tiles apply, the form is a decision of its own (`rewrite-attention-tiles-`
    and the change's digest), reported chosen or not: a decisions file turns the tiles off
    (the decomposition), and the change's own key off leaves stock's op (no form chosen)."""
    out, report = _with_decisions("decode_f16")
    (change,), (choice,) = report.changes, report.choices
    assert choice.chosen and choice.decided_by == "rule" and COMPILATION_INFO in out
    assert choice.key == change.key.replace(PASS, f"{PASS}-tiles") != change.key
    assert "chose [rewrite-attention-tiles-" in report.format()
    out, report = _with_decisions("decode_f16", {choice.key: False})
    (off,) = report.choices
    assert not off.chosen and off.decided_by == "d.json" and "decomposition instead" in off.what
    assert "iree_linalg_ext.attention" not in out and "contractions" in report.changes[0].what
    out, report = _with_decisions("decode_f16", {change.key: False, choice.key: True})
    assert not report.changes and not report.choices and report.skipped[0].key == change.key
    assert "iree_linalg_ext.attention" in out and COMPILATION_INFO not in out


def test_a_decision_gives_tiles_where_the_rule_decomposes():
    """f32 prefill and a small decode: decomposed by the rule, each with its tiles key
    reported not chosen; a decision for one of them keeps that one fused with its tiles.
    Where a check refuses the tiles a decision asks for, no form is offered and the change
    says which check."""
    out, report = _with_decisions("f32_and_dynamic")
    choices = report.choices
    assert len(choices) == 2 and not any(c.chosen for c in choices), report.format()
    assert all("not measured faster" in c.what for c in choices)
    out, report = _with_decisions("f32_and_dynamic", {choices[0].key: True})
    assert [c.chosen for c in report.choices] == [True, False]
    assert out.count("{compilation_info") == 1 and "a measured decision" in report.changes[0].what
    _, report = _with_decisions("computed_query")
    tiles_key = report.changes[0].key.replace(PASS, f"{PASS}-tiles")
    _, report = _with_decisions("computed_query", {tiles_key: True})
    assert not report.choices and "[tiles-producer]" in report.changes[0].what


def test_the_tuner_measures_the_form_key():
    """`iree-fusions-tune` lists a form's key beside the change's, applied where chosen (so it
    times the other form against it), from the compile's JSON report."""
    _, report = _with_decisions("f32_and_dynamic")
    keys = tune_measure.keys_of_reports([report.to_json()])
    tiles = [k for k in keys.values() if k.key.startswith(f"{PASS}-tiles-")]
    assert len(tiles) == 2 and not any(k.applied for k in tiles)
    assert all(k.pass_name == PASS for k in keys.values()) and len(keys) == 4
    _, report = _with_decisions("decode_f16")
    assert [k.applied for k in tune_measure.keys_of_reports([report.to_json()]).values()] == \
        [True, True]
