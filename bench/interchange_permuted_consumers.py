"""Benchmark for interchange-permuted-consumers: dispatches, transpose dispatches, numerics
against PyTorch and stock IREE, llvm-cpu latency (alternating rounds), GPU compile checks.

    python bench/interchange_permuted_consumers.py minilm-b1-s128 minilm-b8-s128 \
        --rounds 15 --gpu-compile
    python bench/interchange_permuted_consumers.py micro-query-b1 micro-key-b8 micro-attn-out-b8 \
        --fusions 'interchange-permuted-consumers{producer-layout=never}' --rounds 9

`micro-{query,key,attn-out}-bB` are one-projection models built here: a 384->384 linear with
constant weights, `view(B, 128, 12, 32)` and `transpose(1, 2)` (query) or
`permute(0, 2, 3, 1)` (key), times 0.5; attn-out is `matmul(p, v).transpose(1, 2)
.reshape(B, 128, 384) * 2` on inputs p `[B, 12, 128, 128]`, v `[B, 12, 128, 32]`.

Exported models are cached under --cache (default /tmp/ipc-bench) as .mlirbc + inputs +
reference, keyed by model name, so repeated runs skip the slow torch export.

    python bench/interchange_permuted_consumers.py --forms [bert-tiny minilm zoo-t5 ...] \
        [--form static --form dynamic-seq]

checks the pass on the forms users compile (models/forms.py: static, dynamic batch / sequence,
turbine parameters, ONNX, ONNX with parameters): dispatches stock -> plugin per form, what
changed, plugin vs stock at the export's size and at a size a dynamic export never saw (bit
identity), plugin vs PyTorch; a markdown table (bench/results/interchange-permuted-consumers.md).
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
import tempfile
from collections import Counter

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models.catalog import all_models
from iree_fusions.harness.timing import compare_latency

PASS = "interchange-permuted-consumers"
GPU_DEVICES = ("hip", "cuda", "vulkan")


def micro_artifact(name: str):
    """micro-query-bB, micro-key-bB, micro-attn-out-bB (see the module docstring)."""
    import torch

    from iree_fusions.models.catalog import Artifact
    from iree_fusions.models.torch_export import TORCH_INPUT_FLAGS, export_to_mlir, torch_outputs

    m = re.fullmatch(r"micro-(query|key|attn-out)-b(\d+)", name)
    if not m:
        raise SystemExit(f"unknown model {name}")
    kind, b = m.group(1), int(m.group(2))
    torch.manual_seed(0)

    class Projection(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(384, 384)

        def forward(self, x):
            y = self.linear(x).view(b, 128, 12, 32)
            y = y.transpose(1, 2) if kind == "query" else y.permute(0, 2, 3, 1)
            return y * 0.5

    class AttentionOutput(torch.nn.Module):
        def forward(self, p, v):
            return torch.matmul(p, v).transpose(1, 2).reshape(b, 128, 384) * 2.0

    if kind == "attn-out":
        model = AttentionOutput()
        args = (torch.randn(b, 12, 128, 128), torch.randn(b, 12, 128, 32))
    else:
        model = Projection()
        args = (torch.randn(b, 128, 384),)
    return Artifact(export_to_mlir(model, args), [a.numpy() for a in args],
                    list(TORCH_INPUT_FLAGS), torch_outputs(model, args), reference_atol=1e-4)


def load_artifact(name: str, cache: str):
    path = os.path.join(cache, f"{name}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    if name.startswith("micro-"):
        artifact = micro_artifact(name)
    else:
        artifact = all_models()[name].build()
    os.makedirs(cache, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(artifact, f)
    return artifact


def kinds(names: list[str]) -> Counter:
    return Counter(re.sub(r"^.*_dispatch_\d+_", "", n) for n in names)


def transposes(names: list[str]) -> int:
    return sum(1 for n in names if "transpose" in n)


def form_models():
    """The models of `--forms` (forms.FormModel): encoders, a Llama-style layer and zoo models
    with transposed Q/K/V epilogues, at B=2 (torch.export specializes a batch of 1) and other
    sizes B=3 / S=40 (MiniLM 77, zoo 21)."""
    from iree_fusions.models import forms, llama, zoo
    from iree_fusions.models.transformers import build_minilm, build_tiny_bert

    tokens = (*forms.FORMS, "dynamic-seq-facts", "onnx-dynamic-seq")
    out = [forms.FormModel("bert-tiny", build_tiny_bert, 2, 64, tokens),
           forms.FormModel("minilm", build_minilm, 2, 128, tokens, other_seq=77),
           forms.FormModel("llama-start_pos", lambda b, s: llama.build_llama("start_pos", s,
                                                                              batch=b),
                           2, 64, tokens)]
    for name in ("bert", "gpt2", "llama", "t5", "vit"):
        arch = next(a for a in zoo.ARCHITECTURES if a.name == name)
        token = arch.takes_seq()
        out.append(forms.FormModel(
            f"zoo-{name}", lambda b, s, arch=arch: zoo.build_positional(arch, b, s), 2,
            zoo.SEQ if token else None,
            tokens if token else tuple(f for f in forms.FORMS if "seq" not in f),
            other_seq=21,
            export_kwargs=lambda form, arch=arch: _zoo_export_kwargs(arch, form)))
    return out


def _zoo_export_kwargs(arch, form: str) -> dict:
    """A zoo token model's dynamic-sequence dims and their ranges."""
    if "dynamic-seq" not in form:
        return {}
    return {"dims": list(arch.seq_dims), "ranges": arch.seq_ranges()}


def forms_table(names: list[str], form_names: list[str] | None, fusions: str) -> None:
    from iree_fusions.models import forms

    models = [m for m in form_models() if not names or m.name in names]
    forms.run_table(models, fusions, form_names)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*")
    p.add_argument("--forms", action="store_true",
                   help="the forms table (models: form_models(); default all)")
    p.add_argument("--form", action="append", help="with --forms: only these forms")
    p.add_argument("--cache", default="/tmp/ipc-bench")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--repetitions", type=int, default=10)
    p.add_argument("--fusions", default=PASS)
    p.add_argument("--threads", type=int, default=0,
                   help="worker threads for timing (--task_topology_max_group_count); 0: default")
    p.add_argument("--gpu-compile", action="store_true", help="also compile for hip/cuda/vulkan")
    p.add_argument("--kinds", action="store_true", help="print dispatch kinds")
    args = p.parse_args(argv)
    if args.forms:
        forms_table(args.models, args.form, args.fusions)
        return 0
    if not args.models:
        p.error("give models (or --forms)")
    for name in args.models:
        art = load_artifact(name, args.cache)
        with tempfile.TemporaryDirectory() as tmp:
            src = art.write(tmp)
            flow = {}
            for label, kw in (("stock", dict(stock=True)), ("plugin", dict(fusions=args.fusions))):
                out = api.compile_file(src, flags=art.flags, compile_to="flow", **kw)
                counts = count_flow_ir(out.output)
                names = [n for ns in counts.dispatch_names.values() for n in ns]
                flow[label] = (counts.total_dispatches, transposes(names), kinds(names),
                               counts.total_bytes_between)
            print(f"{name}: dispatches stock {flow['stock'][0]} -> plugin {flow['plugin'][0]} "
                  f"(transpose dispatches {flow['stock'][1]} -> {flow['plugin'][1]}; "
                  f"bytes between {flow['stock'][3]} -> {flow['plugin'][3]})", flush=True)
            if args.kinds:
                for label in ("stock", "plugin"):
                    print(f"  {label}: " + ", ".join(f"{v}x {k}" for k, v in
                                                  sorted(flow[label][2].items())))
            stock = api.compile_file(src, flags=art.flags, stock=True).output
            plugin = api.compile_file(src, flags=art.flags, fusions=args.fusions).output
            out_s = api.run(stock, art.inputs)
            out_p = api.run(plugin, art.inputs)
            agree = api.compare_outputs(out_s, out_p)
            line = f"  stock vs plugin max abs {agree.max_abs:.3g}"
            if art.reference is not None:
                ref_s = api.compare_outputs(art.reference, out_s)
                ref_p = api.compare_outputs(art.reference, out_p)
                line += (f"; vs PyTorch: stock {ref_s.max_abs:.3g}, plugin {ref_p.max_abs:.3g}"
                         f" (atol {art.reference_atol:g})")
            print(line, flush=True)
            if args.rounds:
                extra = [f"--task_topology_max_group_count={args.threads}"] if args.threads else []
                lat = compare_latency(stock, plugin, art.inputs, rounds=args.rounds,
                                      repetitions=args.repetitions, extra_flags=extra)
                s_ms, p_ms, s_r, p_r = (lat.stock_ms, lat.plugin_ms, lat.stock_rounds,
                                        lat.plugin_rounds)
                threads = f"{args.threads} thread(s)" if args.threads else "default threads"
                print(f"  llvm-cpu latency ({threads}): stock {s_ms:.3f} ms, plugin "
                      f"{p_ms:.3f} ms, stock/plugin {s_ms / p_ms:.3f} "
                      f"(rounds: stock {[round(x, 3) for x in s_r]}, "
                      f"plugin {[round(x, 3) for x in p_r]})", flush=True)
            if args.gpu_compile:
                for device in GPU_DEVICES:
                    res = {}
                    for label, kw in (("stock", dict(stock=True)),
                                      ("plugin", dict(fusions=args.fusions))):
                        try:
                            api.compile_file(src, device=device, flags=art.flags, **kw)
                            res[label] = "ok"
                        except api.CompilerToolError as e:
                            res[label] = "FAIL: " + str(e).splitlines()[1][:200]
                    print(f"  compile {device}: stock {res['stock']}, plugin {res['plugin']}",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
