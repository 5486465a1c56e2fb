"""Random-weight LLM exports with sharktank's own generators and exporter (runs in the sharktank venv).

This script is the export half of `bench/llm_suite.py`. It does NOT use the project's venv: it
runs under the Python of a separate venv that holds sharktank (see /work/shared/NOTES.md, "The
production LLM export"), which `llm_suite.py --export` creates when missing:

    python3 -m venv SKVENV
    printf 'iree-base-compiler==3.13.0\\niree-base-runtime==3.13.0\\ntorch==2.13.0\\n' > constraints.txt
    SKVENV/bin/pip install sharktank==3.8.0 wave-lang==3.8.0 torch==2.13.0 -c constraints.txt

Then, for each model NAME:

    SKVENV/bin/python bench/llm_export.py NAME --out EXPORTS/NAME

writes EXPORTS/NAME/model.irpa (the random weights, `Dataset(hp.to_gguf_props(), theta).save`),
model.mlir and model.json (`sharktank.examples.export_paged_llm_v1` with its defaults: prefill_bs4
and decode_bs4, block-seq-stride 32, f16 activations, attention and cache; the `-decomposed`
models add `--attention-kernel decomposed`), and export.cmd (the exporter's command line).

iree-turbine 3.9.0 (which sharktank 3.8.0 brings) calls `IntegerType.isinstance(t)` and
similar static methods that IREE 3.13's MLIR bindings no longer have; `_restore_isinstance`
puts them back in this process before the exporter is run through `runpy`.

Models (NAME):
  toy-llama             sharktank.models.llama.toy_llama.generate(seed): 3 layers, hidden 256,
                        8 heads / 4 KV, ffn 23, vocab 256
  toy-llama-decomposed  the same weights, exported with --attention-kernel decomposed (the form
                        that compiles for GPUs with IREE 3.13)
  llama-gqa-24          make_random_llama_theta: 24 layers, hidden 256, 8 heads / 2 KV, ffn 704,
                        vocab 256
  llama-gqa-32          the same shapes at 32 layers (Llama-3-8B's depth: the compile-time
                        bound of the production-LLM issue is for 32 layers)
  llama3-8b-2l          Llama-3-8B layer shapes (hidden 4096, 32 heads / 8 KV, ffn 14336, rope
                        base 500000), 2 layers, vocab 2048, f16
  toy-deepseek          sharktank.models.deepseek.toy_deepseek.generate(seed): MoE + MLA, 4 layers
  llama-mha-hd128       make_random_llama_theta: 3 layers, hidden 512, 4 heads / 4 KV (MHA),
                        head_dim 128, ffn 1024, vocab 256, batch 8 (prefill and decode); with
                        -decomposed, the form GPUs compile
  NAME-decomposed       for toy-deepseek, llama-gqa-32 and llama3-8b-2l too: the same weights
                        with --attention-kernel decomposed (bench/gpu_llm.py times stock and
                        plugin on both forms)
"""

import argparse
import os
import runpy
import shlex
import sys

SEED = 12345

MODELS = ["toy-llama", "toy-llama-decomposed", "llama-gqa-24", "llama3-8b-2l", "toy-deepseek",
          "toy-deepseek-decomposed", "llama-gqa-32-decomposed", "llama3-8b-2l-decomposed",
          "llama-gqa-32", "llama-mha-hd128", "llama-mha-hd128-decomposed"]
# Exporter flags beyond the defaults, per model (base name).
EXPORT_FLAGS = {"llama-mha-hd128": ["--bs-prefill", "8", "--bs-decode", "8"]}


def _restore_isinstance():
    """Give every MLIR binding class without a static `isinstance` one (iree-turbine 3.9 calls them).

    IREE 3.13's bindings return values and types already down-cast, so Python's isinstance
    answers for those; otherwise try the class's casting constructor.
    """
    from iree.compiler import ir

    def make(cls):
        def check(x):
            if isinstance(x, cls):
                return True
            try:
                cls(x)
                return True
            except Exception:
                return False

        return staticmethod(check)

    for name in dir(ir):
        cls = getattr(ir, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, (ir.Type, ir.Value, ir.Attribute))
            and not hasattr(cls, "isinstance")
        ):
            setattr(cls, "isinstance", make(cls))


def _llama_config(*, layers, hidden, heads, kv_heads, ffn, vocab, rope_base, context):
    """A LlamaModelConfig for make_random_llama_theta (f16 weights, f32 norms)."""
    import torch
    from sharktank.layers.configs import LlamaHParams, LlamaModelConfig

    head_dim = hidden // heads
    return LlamaModelConfig(
        hp=LlamaHParams(
            model_arch="llama",
            vocab_size=vocab,
            context_length=context,
            embedding_length=hidden,
            block_count=layers,
            feed_forward_length=ffn,
            rope_dimension_count=head_dim,
            rope_freq_base=rope_base,
            attention_head_count=heads,
            attn_head_dim=head_dim,
            attention_layer_norm_rms_epsilon=1e-5,
            attention_head_count_kv=kv_heads,
            expert_count=0,
            expert_used_count=0,
        ),
        block_seq_stride=32,
        activation_dtype=torch.float16,
        attention_dtype=torch.float16,
    )


def generate(name):
    """(theta, config) of model `name` from sharktank's generators, seeded."""
    import torch

    base = name.removesuffix("-decomposed")
    if base == "toy-llama":
        from sharktank.models.llama import toy_llama

        return toy_llama.generate(SEED)
    if base == "toy-deepseek":
        from sharktank.models.deepseek import toy_deepseek

        return toy_deepseek.generate(SEED)
    from sharktank.models.llama.testing import make_random_llama_theta

    shapes = {
        "llama-gqa-24": dict(layers=24, hidden=256, heads=8, kv_heads=2, ffn=704, vocab=256,
                             rope_base=500000.0, context=4096),
        # The compile-time bound is for 32 layers (Llama-3-8B's depth).
        "llama-gqa-32": dict(layers=32, hidden=256, heads=8, kv_heads=2, ffn=704, vocab=256,
                             rope_base=500000.0, context=4096),
        "llama3-8b-2l": dict(layers=2, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=2048,
                             rope_base=500000.0, context=8192),
        "llama-mha-hd128": dict(layers=3, hidden=512, heads=4, kv_heads=4, ffn=1024, vocab=256,
                                rope_base=500000.0, context=4096),
    }[base]
    torch.manual_seed(SEED)
    config = _llama_config(**shapes)
    theta = make_random_llama_theta(config=config, dtype_rest=torch.float16, dtype_norm=torch.float32)
    return theta, config


def export(name, out):
    """Write out/model.irpa, out/model.mlir, out/model.json and out/export.cmd for model `name`."""
    from sharktank.types import Dataset

    os.makedirs(out, exist_ok=True)
    irpa, mlir, cfg = (os.path.join(out, f) for f in ("model.irpa", "model.mlir", "model.json"))
    theta, config = generate(name)
    Dataset(config.hp.to_gguf_props(), theta).save(irpa)
    argv = ["sharktank.examples.export_paged_llm_v1", "--irpa-file", irpa,
            "--output-mlir", mlir, "--output-config", cfg]
    if name.endswith("-decomposed"):
        argv += ["--attention-kernel", "decomposed"]
    argv += EXPORT_FLAGS.get(name.removesuffix("-decomposed"), [])
    with open(os.path.join(out, "export.cmd"), "w") as f:
        f.write("python -m " + shlex.join(argv) + "  # after _restore_isinstance()\n")
    _restore_isinstance()
    sys.argv = argv
    runpy.run_module("sharktank.examples.export_paged_llm_v1", run_name="__main__", alter_sys=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=MODELS)
    p.add_argument("--out", required=True, help="folder for model.irpa, model.mlir, model.json")
    a = p.parse_args()
    export(a.name, a.out)


if __name__ == "__main__":
    main()
