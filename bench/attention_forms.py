"""Attention as users export it, stock IREE's fused op vs the plugin's rewrite-attention (and
vs IREE's own decomposition pipeline): PyTorch's `F.scaled_dot_product_attention` in the torch
dialect iree-turbine and `fx_importer` emit, one op per model, over shapes, dtypes, masks
(none, bool, float, causal), static and dynamic lengths, GQA, decode and prefill.

    python bench/attention_forms.py [FORM ...] --device local-sync [--rounds 5] \\
        [--pipeline] [--cpu x86-64-v3] [--fusions 'rewrite-attention{fused-below=0}'] \\
        [--json out.json]
    python bench/attention_forms.py --compile-gpus     # cuda sm_80, rocm gfx942: strict

Each form is compiled stock, with `--fusions=rewrite-attention` (what it chose: the report's
change or skip) and, with --pipeline, stock + IREE's decomposition preprocessing pipeline;
run on the same random inputs (the plugin's module first); timed in alternating rounds
(`runtime.benchmark.time_pair`: medians, an interval and a verdict). Prints a row per form,
worst ratio first."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from dataclasses import asdict, dataclass

import ml_dtypes
import numpy as np

from iree_fusions.harness import api
from iree_fusions.harness.bounds import attention_bound, within_attention_bound
from iree_fusions.runtime.benchmark import time_pair

PIPELINE = ("--iree-preprocessing-pass-pipeline=builtin.module(util.func("
            "iree-linalg-ext-convert-attention-to-online-attention,"
            "iree-linalg-ext-decompose-attention))")
TORCH_TYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16"}
NP_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


@dataclass(frozen=True)
class Form:
    """q [B, H, M, d], k/v [B, KVH, N, d] (or dims `?` where `dynamic`), a mask of `mask`
    ("none", "bool", "float": [B, 1, M, N]), `causal`, GQA where KVH < H."""

    name: str
    b: int
    h: int
    m: int
    n: int
    d: int
    dtype: str = "f32"
    mask: str = "none"
    causal: bool = False
    kvh: int = 0  # 0: h
    dynamic: bool = False

    def torch_ir(self) -> str:
        kvh = self.kvh or self.h
        m, n = ("?", "?") if self.dynamic else (self.m, self.n)
        if self.m == 1 and self.dynamic:
            m = 1
        t = TORCH_TYPES[self.dtype]
        qt = f"!torch.vtensor<[{self.b},{self.h},{m},{self.d}],{t}>"
        kt = f"!torch.vtensor<[{self.b},{kvh},{n},{self.d}],{t}>"
        args = [f"%q: {qt}", f"%k: {kt}", f"%v: {kt}"]
        mask_value, mask_type = "%none", "!torch.none"
        if self.mask != "none":
            mt = "i1" if self.mask == "bool" else t
            mask_type = f"!torch.vtensor<[{self.b},1,{m},{n}],{mt}>"
            args.append(f"%mask: {mask_type}")
            mask_value = "%mask"
        causal = "%true" if self.causal else "%false"
        gqa = "%true" if kvh != self.h else "%false"
        return f"""
func.func @main({', '.join(args)}) -> {qt} {{
  %f0 = torch.constant.float 0.000000e+00
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %none = torch.constant.none
  %r = torch.aten.scaled_dot_product_attention %q, %k, %v, {mask_value}, %f0, {causal}, %none, {gqa}
      : {qt}, {kt}, {kt}, {mask_type}, !torch.float, !torch.bool, !torch.none, !torch.bool -> {qt}
  return %r : {qt}
}}"""

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        kvh = self.kvh or self.h
        dt = NP_TYPES[self.dtype]
        q = rng.standard_normal((self.b, self.h, self.m, self.d)).astype(dt)
        k, v = (rng.standard_normal((self.b, kvh, self.n, self.d)).astype(dt) for _ in range(2))
        out = [q, k, v]
        if self.mask == "bool":
            keep = rng.random((self.b, 1, self.m, self.n)) > 0.2
            keep[..., 0] = True
            out.append(keep)
        elif self.mask == "float":
            out.append(np.triu(np.full((self.m, self.n), -np.inf, dt), 1 + self.n - self.m)
                       [None, None].repeat(self.b, 0))
        return out


SUITE = [
    Form("bert-f32-s128", 1, 12, 128, 128, 64),
    Form("bert-bool-f32-s128", 2, 12, 128, 128, 64, mask="bool"),
    Form("bert-bool-f32-dyn", 2, 12, 128, 128, 64, mask="bool", dynamic=True),
    Form("vit-f32-s197", 1, 12, 197, 197, 64),
    Form("gpt2-causal-f32-s256", 1, 12, 256, 256, 64, causal=True),
    Form("masked-float-f32-s256", 2, 8, 256, 256, 64, mask="float"),
    Form("encoder-f16-s512", 1, 8, 512, 512, 64, dtype="f16"),
    Form("encoder-f16-dyn", 1, 8, 512, 512, 64, dtype="f16", dynamic=True),
    Form("causal-f16-s256", 2, 16, 256, 256, 128, dtype="f16", causal=True),
    Form("decode-f16-kv1024", 4, 32, 1, 1024, 128, dtype="f16"),
    Form("decode-f16-kv1024-dyn", 4, 32, 1, 1024, 128, dtype="f16", dynamic=True),
    Form("decode-f16-hd64-mask", 2, 16, 1, 512, 64, dtype="f16", mask="float"),
    Form("decode-f32-kv256-dyn", 2, 8, 1, 256, 64, dynamic=True),
    Form("gqa-f16-s256", 1, 32, 256, 256, 64, dtype="f16", kvh=8, causal=True),
    Form("gqa-decode-f16-kv512", 1, 32, 1, 512, 128, dtype="f16", kvh=8),
    Form("llama-mask-f16-s512-hd32", 1, 32, 512, 512, 32, dtype="f16", mask="float"),
    Form("llama-mask-f16-dyn-hd32", 1, 32, 512, 512, 32, dtype="f16", mask="float", dynamic=True),
    Form("short-f32-s16", 1, 4, 16, 16, 32),
    Form("tiny-f32-s8", 1, 2, 8, 8, 16),
    Form("small-f32-s32", 1, 8, 32, 32, 64),
    Form("small-f16-s32", 1, 4, 32, 32, 32, dtype="f16"),
    Form("small-f32-s64", 1, 12, 64, 64, 64),
    Form("small-f32-s64-dyn", 1, 12, 64, 64, 64, dynamic=True),
    Form("single-row-f32", 1, 8, 1, 1, 64),
    Form("long-f16-s2048", 1, 4, 2048, 2048, 64, dtype="f16", causal=True),
    Form("long-f32-s4096-dyn", 1, 1, 4096, 4096, 64, causal=True, dynamic=True),
    Form("bool-causal-f16-s128", 1, 8, 128, 128, 64, dtype="f16", mask="bool"),
    Form("bf16-s256", 1, 8, 256, 256, 64, dtype="bf16"),
    Form("bf16-causal-dyn", 1, 8, 512, 512, 64, dtype="bf16", causal=True, dynamic=True),
]


def judge_outputs(form: Form, inputs: list[np.ndarray], plugin: np.ndarray,
                  stock: np.ndarray) -> dict:
    """The plugin's output against stock's by rewrite-attention's derived bound
    (`harness.bounds.attention_bound`; k and v repeated per query head for GQA): ok, the
    largest |d| as a share of its element's bound, and the bound's name."""
    q, k, v = inputs[:3]
    heads = form.b * form.h
    repeat = form.h // (form.kvh or form.h)
    flat = lambda x: x.reshape(heads, x.shape[-2], x.shape[-1])  # noqa: E731
    k, v = (flat(np.repeat(x, repeat, axis=1)) for x in (k, v))
    bound = attention_bound(flat(q), k, np.swapaxes(v, 1, 2), 1 / math.sqrt(form.d),
                            flat(stock))
    ok, worst, checked = within_attention_bound(flat(plugin), flat(stock), bound)
    return {"outputs_ok": ok, "worst_share_of_bound": worst, "checked": checked,
            "max_abs": float(np.nanmax(np.abs(plugin.astype(np.float64) - stock))),
            "bound": "rewrite-attention's derived bound (docs/testing.md)"}


def write_vmfb(tmp: str, name: str, output: bytes) -> str:
    """A compiled module written to `tmp/NAME.vmfb`; its path (for `time_pair`)."""
    path = os.path.join(tmp, f"{name}.vmfb")
    with open(path, "wb") as f:
        f.write(output)
    return path


def write_inputs(tmp: str, name: str, inputs: list[np.ndarray]) -> list[str]:
    """The inputs written to `tmp/NAME-inI.npy`; their paths (for `time_pair`)."""
    paths = [os.path.join(tmp, f"{name}-in{i}.npy") for i in range(len(inputs))]
    for path, x in zip(paths, inputs):
        np.save(path, x)
    return paths


def measure(form: Form, args, tmp: str) -> dict:
    row = asdict(form)
    flags = ["--iree-input-type=torch"]
    text = form.torch_ir()
    opts = dict(device=args.device, target=args.cpu)
    plugin = api.compile_str(text, fusions=args.fusions, flags=flags, **opts)
    stock = api.compile_str(text, stock=True, flags=flags, **opts)
    row["choice"] = [c.what for p in plugin.passes for c in p.changes] or \
        [s.reason for p in plugin.passes for s in p.skipped]
    paths = {side: write_vmfb(tmp, f"{form.name}-{side}", out.output)
             for side, out in (("plugin", plugin), ("stock", stock))}
    inputs = form.inputs()  # (bf16: ml_dtypes' bfloat16, saved as 2-byte elements)
    input_paths = write_inputs(tmp, form.name, inputs)
    (p,) = api.run(plugin.output, inputs, device=args.device)
    (s,) = api.run(stock.output, inputs, device=args.device)
    row.update(judge_outputs(form, inputs, p, s))
    j = time_pair(paths["stock"], paths["plugin"], input_paths, device=args.device,
                  rounds=args.rounds, repetitions=args.repetitions,
                  max_rounds=args.max_rounds)
    row.update(stock_ms=j["stock_ms"], plugin_ms=j["plugin_ms"], ratio=j["ratio"],
               interval=[j["ratio_low"], j["ratio_high"]], verdict=j["verdict"])
    if args.pipeline:
        pipe = api.compile_str(text, stock=True, flags=[*flags, PIPELINE], **opts)
        paths["pipeline"] = write_vmfb(tmp, f"{form.name}-pipeline", pipe.output)
        jp = time_pair(paths["pipeline"], paths["plugin"], input_paths, device=args.device,
                       rounds=args.rounds, repetitions=args.repetitions,
                       max_rounds=args.max_rounds)
        row.update(pipeline_ms=jp["stock_ms"], pipeline_ratio=jp["ratio"],
                   pipeline_interval=[jp["ratio_low"], jp["ratio_high"]],
                   pipeline_verdict=jp["verdict"])
    return row


GPU_TARGETS = (("cuda", "sm_80"), ("hip", "gfx942"))


def compile_gpus(form: Form) -> dict:
    """Each GPU target: stock's compile and the plugin's (`--fusions=all --fusions-strict`),
    "ok" or the first line of the error."""
    results = {}
    for device, target in GPU_TARGETS:
        row = {}
        for side, kw in (("stock", dict(stock=True)),
                         ("plugin", dict(fusions="all", flags=["--iree-input-type=torch",
                                                               "--fusions-strict"]))):
            kw.setdefault("flags", ["--iree-input-type=torch"])
            try:
                api.compile_str(form.torch_ir(), device=device, target=target, **kw)
                row[side] = "ok"
            except api.CompilerToolError as e:
                row[side] = (e.stderr.strip().splitlines() or ["failed"])[0][:200]
        results[f"{device}:{target}"] = row
    return results


def table(rows: list[dict]) -> str:
    """The Markdown table of result rows, worst ratio against stock first."""
    lines = ["| form | dtype | dims | mask | stock ms | plugin ms | stock / plugin | pipeline ms "
             "| pipeline / plugin | outputs (share of bound) | choice |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted((r for r in rows if r.get("ratio")), key=lambda r: r["ratio"]):
        mask = r["mask"] + (" + causal" if r["causal"] else "")
        low, high = r.get("pipeline_interval") or (0, 0)
        pipe = (f"{r['pipeline_ms']:.3f} | {r['pipeline_ratio']:.3f} [{low:.3f}, {high:.3f}] "
                f"{r['pipeline_verdict']}"
                if "pipeline_ratio" in r else "- | -")
        choice = r["choice"][0] if r.get("choice") else ""
        if " -> " in choice:  # a change: what form, briefly
            choice = "decomposed" + (": " + choice.split("generics, ", 1)[1]
                                     if "generics, " in choice else "")
        lines.append(
            f"| {r['name']} | {r['dtype']} | {'dynamic' if r['dynamic'] else 'static'} | {mask} "
            f"| {r['stock_ms']:.3f} | {r['plugin_ms']:.3f} | {r['ratio']:.3f} "
            f"[{r['interval'][0]:.3f}, {r['interval'][1]:.3f}] {r['verdict']} | {pipe} | "
            f"{'ok' if r['outputs_ok'] else 'DIFFER'} ({r['worst_share_of_bound']:.2g}) | "
            f"{choice} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("forms", nargs="*", help="form names (default: the whole suite)")
    p.add_argument("--device", default="local-sync")
    p.add_argument("--cpu", default=None, help="--iree-llvmcpu-target-cpu (default: host)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--max-rounds", type=int, default=9)
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--pipeline", action="store_true", help="also time IREE's decomposition")
    p.add_argument("--fusions", default="rewrite-attention",
                   help="the plugin's passes (e.g. 'rewrite-attention{fused-below=0}' to time "
                   "the decomposition where the rule keeps the fused op)")
    p.add_argument("--json", default=None, help="append the rows to this file")
    p.add_argument("--compile-gpus", action="store_true",
                   help="only compile each form for cuda sm_80 and rocm gfx942, stock and "
                   "the plugin with --fusions-strict (no run)")
    p.add_argument("--table", metavar="JSONL", help="print the Markdown table of a --json file")
    args = p.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(table([json.loads(line) for line in f if line.strip()]))
        return 0
    forms = [f for f in SUITE if not args.forms or f.name in args.forms]
    rows = []
    if args.compile_gpus:
        failed = 0
        for form in forms:
            gpus = compile_gpus(form)
            failed += sum(r["plugin"] != "ok" and r["stock"] == "ok" for r in gpus.values())
            print(json.dumps({"name": form.name, "gpus": gpus}), flush=True)
        print(f"plugin failures where stock compiles: {failed}")
        return 1 if failed else 0
    with tempfile.TemporaryDirectory(prefix="iree-fusions-attn-") as tmp:
        for form in forms:
            row = measure(form, args, tmp)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
    timed = [r for r in rows if r.get("ratio")]
    for r in sorted(timed, key=lambda r: r["ratio"]):
        print(f"{r['name']:28} stock {r['stock_ms']:9.3f} ms  plugin {r['plugin_ms']:9.3f} ms  "
              f"{r['ratio']:.3f} {r['verdict']}  outputs "
              f"{'ok' if r['outputs_ok'] else 'DIFFER'} ({r['worst_share_of_bound']:.2g} of "
              "the bound)"
              + (f"  vs pipeline {r['pipeline_ratio']:.3f} {r['pipeline_verdict']}"
                 if 'pipeline_ratio' in r else ""))
    if timed:
        geo = math.exp(sum(math.log(r["ratio"]) for r in timed) / len(timed))
        print(f"geomean stock / plugin over {len(timed)} forms: {geo:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
