"""bench/gpu_llm.py, the sharktank exports timed on a GPU machine without a compiler: the
parameter spec read from an export, the weights made again from it (an archive the runtime
reads, the same bytes for the same model), and which builds are paired."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEC = importlib.util.spec_from_file_location("bench_gpu_llm",
                                              os.path.join(ROOT, "bench", "gpu_llm.py"))
gpu_llm = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = gpu_llm
SPEC.loader.exec_module(gpu_llm)

GLOBALS = """
  util.global private @__auto.token_embd.weight = #flow.parameter.named<"model"::"token_embd.weight"> : tensor<256x64xf16>
  util.global private @__auto.blk.0.attn_norm.weight = #flow.parameter.named<"model"::"blk.0.attn_norm.weight"> : tensor<64xf32>
  util.global private @__auto.blk.0.attn_norm.weight_1 = #flow.parameter.named<"model"::"blk.0.attn_norm.weight"> : tensor<64xf32>
  util.global private @x = #stream.parameter.named<"other"::"blk.0.ids"> : tensor<2x3xi64>
  util.global private @y = #flow.parameter.named<"model"::"blk.0.bf"> : tensor<8xbf16>
"""


def test_parameter_spec_reads_each_parameter_once():
    spec = gpu_llm.parameter_spec(GLOBALS)
    assert spec == [
        {"scope": "model", "name": "token_embd.weight", "shape": [256, 64], "dtype": "float16"},
        {"scope": "model", "name": "blk.0.attn_norm.weight", "shape": [64], "dtype": "float32"},
        {"scope": "other", "name": "blk.0.ids", "shape": [2, 3], "dtype": "int64"},
        {"scope": "model", "name": "blk.0.bf", "shape": [8], "dtype": "bfloat16"},
    ]


def test_weights_made_again_have_the_spec_sizes_and_the_same_bytes(tmp_path):
    import iree.runtime as rt

    spec = gpu_llm.parameter_spec(GLOBALS)
    first, second, other = tmp_path / "a.irpa", tmp_path / "b.irpa", tmp_path / "c.irpa"
    gpu_llm.make_irpa(spec, str(first), "toy")
    gpu_llm.make_irpa(spec, str(second), "toy")
    gpu_llm.make_irpa(spec, str(other), "other-model")
    assert first.read_bytes() == second.read_bytes()  # seeded by the model's base name
    assert first.read_bytes() != other.read_bytes()
    index = rt.ParameterIndex()
    index.load(str(first))
    sizes = {key: len(entry.file_view) for key, entry in index.items()}
    assert sizes == {"token_embd.weight": 256 * 64 * 2, "blk.0.attn_norm.weight": 64 * 4,
                     "blk.0.ids": 6 * 8, "blk.0.bf": 8 * 2}
    views = dict(index.items())
    norm = np.frombuffer(views["blk.0.attn_norm.weight"].file_view, dtype=np.float32)
    assert np.all(np.abs(norm - 1.0) < 0.5)  # norms near 1, other floats small
    embd = np.frombuffer(views["token_embd.weight"].file_view, dtype=np.float16)
    assert np.all(np.isfinite(embd)) and 0 < np.abs(embd).max() < 0.5
    assert not np.frombuffer(views["blk.0.ids"].file_view, dtype=np.int64).any()


def test_pairs_follow_what_compiled():
    def forms(default_stock_ok):
        return {"decomposed": ({"builds": {"stock": {"ok": True}, "plugin": {"ok": True},
                                           "nomerge": {"ok": True}}}, "D"),
                "default": ({"builds": {"stock": {"ok": default_stock_ok},
                                        "plugin": {"ok": True}}}, "F")}

    crashed = gpu_llm._pairs(forms(False))  # stock cannot compile the default export
    assert crashed == [("decomposed", "D/stock.vmfb", "D/plugin.vmfb"),
                       ("default-vs-decomposed", "D/stock.vmfb", "F/plugin.vmfb"),
                       ("decomposed-nomerge-vs-plugin", "D/nomerge.vmfb", "D/plugin.vmfb")]
    compiled = gpu_llm._pairs(forms(True))
    assert [p for p, _, _ in compiled] == ["decomposed", "default",
                                           "decomposed-nomerge-vs-plugin"]
