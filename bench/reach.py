"""The reach suite: every rewrite on the forms users deploy, not only the demo form.

For catalog models and zoo architectures (encoder, decoder, encoder-decoder, vision,
multi-branch torch.nn, MoE on tokens, an LLM decode step with a static KV cache), each in the
forms of `iree_fusions.models.forms` (static-inline, dynamic batch, dynamic sequence, turbine
parameters in an .irpa file, ONNX, ONNX with external parameters), this script

- exports the model in the form, compiles it with stock IREE and with the plugin
  (`--fusions=all`), counts dispatches from `--compile-to=flow` IR;
- runs both on the example inputs and, for a dynamic form, on inputs of a size the export
  never saw (parameters loaded from the form's .irpa); compares stock vs plugin and plugin vs
  PyTorch on the same inputs;
- with `--time`, measures stock/plugin latency side by side (alternating rounds, medians);
- checks the issue's rule: each form removes as many dispatches as the static form (stock
  minus plugin), at most one fewer, or the plugin's report names what the form blocks (the
  skip reasons this form has and the static form has not are listed).

    python bench/reach.py --list
    python bench/reach.py towers-silu-b64 moe-tokens-b4 --json rows.json
    python bench/reach.py --all --json bench/results/reach.json --markdown bench/results/reach.md
    python bench/reach.py towers-silu-b64 dlrm-b8 minilm-b8-s128 --time --rounds 9 \\
        --repetitions 20 --device local-sync

Rows are appended to `--json` as they finish (an interrupted run resumes with `--resume`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models import forms
from iree_fusions.harness.timing import compare_latency

FORM_ORDER = ("static", "dynamic-batch", "dynamic-seq", "params", "onnx", "onnx-params")
BATCH_FORMS = ("static", "dynamic-batch", "params", "onnx", "onnx-params")
TOKEN_FORMS = FORM_ORDER


@dataclass(frozen=True)
class ReachModel:
    name: str
    family: str
    build: Callable[[], tuple]  # -> (torch module, example args)
    forms: tuple[str, ...]
    other: dict[str, int] = field(default_factory=dict)  # dynamic dim name -> unseen size
    atol: float = 1e-4  # plugin vs PyTorch (stock vs plugin must be within 1e-5)
    keep_ops: Callable[[], list] | None = None
    # form -> forms.export keywords (which dims are dynamic and their ranges), where the
    # defaults (dim 0 "batch", dim 1 "seq" of every argument) do not fit the model
    export_kwargs: Callable[[str], dict] | None = None


def _towers(**kw):
    from iree_fusions.models.towers import TowersConfig, build_towers

    return lambda: build_towers(TowersConfig(**kw))


def _mmoe(**kw):
    from iree_fusions.models.towers import MmoeConfig, build_mmoe

    return lambda: build_mmoe(MmoeConfig(**kw))


def _moe_tokens(**kw):
    from iree_fusions.models.towers import MoeTokensConfig, build_moe_tokens

    return lambda: build_moe_tokens(MoeTokensConfig(**kw))


def _dlrm(cfg_name: str, **kw):
    def build():
        from iree_fusions.models import dlrm

        return dlrm.build_dlrm(replace(getattr(dlrm, cfg_name), **kw))
    return build


def _minilm(batch: int, seq: int):
    def build():
        from iree_fusions.models.transformers import build_minilm

        return build_minilm(batch, seq)
    return build


def _tiny_bert(batch: int, seq: int):
    def build():
        from iree_fusions.models.transformers import build_tiny_bert

        return build_tiny_bert(batch, seq)
    return build


def _llama(variant: str, seq: int):
    def build():
        from iree_fusions.models.llama import build_llama

        return build_llama(variant, seq)
    return build


def _keep_sdpa() -> list:
    from iree_fusions.models.llama import keep_ops

    return keep_ops("sdpa")


def _decode(**kw):
    def build():
        from iree_fusions.models.decode import DecodeConfig, build_decode_step

        return build_decode_step(DecodeConfig(**kw))
    return build


def _zoo_arch(name: str):
    from iree_fusions.models import zoo

    return next(a for a in zoo.ARCHITECTURES if a.name == name)


def _zoo(arch: str, batch: int = 4):
    def build():
        from iree_fusions.models import zoo

        return zoo.build_positional(_zoo_arch(arch), batch)
    return build


def _zoo_export_kwargs(arch: str) -> Callable[[str], dict]:
    """A zoo token model's dynamic-sequence dims (an encoder-decoder's two lengths) and
    their ranges, as the architecture declares them (`Architecture.export_kwargs`)."""
    return lambda form: _zoo_arch(arch).export_kwargs(form)


# Zoo architectures in the suite, by family, and whether they take tokens (a sequence dim).
ZOO = {"bert": ("encoder", True), "roberta": ("encoder", True), "gpt2": ("decoder", True),
       "llama": ("decoder", True), "qwen2": ("decoder", True), "t5": ("encoder-decoder", True),
       "bart": ("encoder-decoder", True), "vit": ("vision", False),
       "convnext": ("vision", False), "multitask-heads": ("multi-branch", False),
       "two-tower": ("multi-branch", False), "moe-top2": ("multi-branch", False)}

MODELS: list[ReachModel] = [
    ReachModel("towers-silu-b8", "multi-branch", _towers(batch=8), BATCH_FORMS, {"batch": 5}),
    ReachModel("towers-silu-b64", "multi-branch", _towers(batch=64), BATCH_FORMS,
               {"batch": 33}),
    ReachModel("mmoe-b8", "multi-branch", _mmoe(batch=8), BATCH_FORMS, {"batch": 5}),
    ReachModel("moe-tokens-b4", "moe-tokens", _moe_tokens(batch=4), TOKEN_FORMS,
               {"batch": 3, "seq": 11}),
    ReachModel("moe-tokens-flat-b4", "moe-tokens", _moe_tokens(batch=4, flat_tokens=True),
               TOKEN_FORMS, {"batch": 3, "seq": 11}),
    ReachModel("dlrm-b8", "recommender", _dlrm("ISSUE"), BATCH_FORMS, {"batch": 5}),
    ReachModel("dlrm-sparse-b8", "recommender", _dlrm("SPARSE"), BATCH_FORMS, {"batch": 5}),
    ReachModel("criteo-b8", "recommender", _dlrm("CRITEO"), BATCH_FORMS, {"batch": 5}),
    ReachModel("minilm-b8-s128", "encoder", _minilm(8, 128), TOKEN_FORMS,
               {"batch": 3, "seq": 77}, atol=1e-5),
    ReachModel("bert-tiny-b2-s64", "encoder", _tiny_bert(2, 64), TOKEN_FORMS,
               {"batch": 3, "seq": 40}, atol=1e-5),
    ReachModel("llama-start_pos-s64", "decoder", _llama("start_pos", 64),
               ("static", "dynamic-seq", "params", "onnx", "onnx-params"), {"seq": 40}),
    ReachModel("llama-sdpa-s64", "decoder (SDPA kept: iree_linalg_ext.attention)",
               _llama("sdpa", 64), ("static", "dynamic-seq", "params"), {"seq": 40},
               keep_ops=_keep_sdpa),
    ReachModel("llm-decode-b4", "decoder (decode step, static KV cache)", _decode(batch=4),
               BATCH_FORMS, {"batch": 3}),
    *[ReachModel(f"zoo-{arch}-b4", family, _zoo(arch), TOKEN_FORMS if tokens else BATCH_FORMS,
                 {"batch": 3, "seq": 21, "dec_seq": 11},
                 export_kwargs=_zoo_export_kwargs(arch))
      for arch, (family, tokens) in ZOO.items()],
]
BY_NAME = {m.name: m for m in MODELS}
# The models whose latency the issue asks for (static vs dynamic vs parameter forms).
TIMED = ("towers-silu-b64", "dlrm-b8", "minilm-b8-s128")


# ---------------------------------------------------------------- one row


def other_inputs(example: Sequence, dims: list[dict[int, str]], sizes: dict[str, int],
                 seed: int = 5) -> list:
    """The example arguments resampled at the unseen sizes of their dynamic dims: token ids
    and integers within the example's range, 0/1 masks as all ones, floats ~ N(0, std)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for arg, arg_dims in zip(example, dims):
        if not isinstance(arg, torch.Tensor) or not arg_dims:
            out.append(arg)
            continue
        shape = [sizes.get(arg_dims[d], s) if d in arg_dims else s
                 for d, s in enumerate(arg.shape)]
        if arg.dtype == torch.bool:
            out.append(torch.ones(shape, dtype=torch.bool))
        elif not arg.is_floating_point():
            lo, hi = int(arg.min()), int(arg.max())
            if {lo, hi} <= {0, 1}:
                out.append(torch.ones(shape, dtype=arg.dtype))
            else:
                out.append(torch.randint(lo, hi + 1, shape, generator=gen, dtype=arg.dtype))
        else:
            std = float(arg.float().std()) if arg.numel() > 1 else 1.0
            out.append((torch.randn(shape, generator=gen) * std).to(arg.dtype))
    return out


def torch_reference(model, args) -> list[np.ndarray]:
    from iree_fusions.models.torch_export import torch_outputs

    return torch_outputs(model, args)


def _compile_both(path: str, flags: list[str], fusions: str) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    jobs = {"stock_flow": dict(stock=True, compile_to="flow"),
            "plugin_flow": dict(fusions=fusions, compile_to="flow"),
            "stock": dict(stock=True), "plugin": dict(fusions=fusions)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(api.compile_file, path, flags=flags, **kw)
                   for k, kw in jobs.items()}
        return {k: f.result() for k, f in futures.items()}


# Rules that decline a rewrite on llvm-cpu in a form (not because the form blocks it), turned
# off by the tests that check each pass in each form (test_pass_forms, test_reach); the rule
# has its own test (test_batch_mlp_towers: dynamic rows).
CPU_RULES_OFF = {("batch-mlp-towers", "dynamic-batch"): "{cpu-dynamic-rows=true}",
                 ("batch-mlp-towers", "dynamic-seq"): "{cpu-dynamic-rows=true}",
                 # The parameter forms: stacking parameters at load is off by default (a
                 # second resident copy; its own tests: test_parameters, the lit cases).
                 **{(name, form): "{stack-parameters=true}"
                    for name in ("batch-mlp-towers", "batch-gathers")
                    for form in ("params", "onnx-params")}}


def fusions_without_cpu_rules(form: str) -> str:
    """`all`, or every default pass with the rules of CPU_RULES_OFF for `form` turned off."""
    from iree_fusions.compiler.registry import default_pass_names

    names = default_pass_names()
    if not any((name, form) in CPU_RULES_OFF for name in names):
        return "all"
    return ",".join(name + CPU_RULES_OFF.get((name, form), "") for name in names)


def _skips(reports: list[dict]) -> set[str]:
    return {f"{s['pass']}: {s['reason']}" for r in reports for s in r.get("skipped", [])}


def measure(model: ReachModel, form: str, tmp: str, args) -> dict:
    """One (model, form) row: dispatches, passes fired, numerics, skip reasons."""
    torch_model, example = model.build()
    row = {"model": model.name, "family": model.family, "form": form, "ok": False}
    t0 = time.perf_counter()
    keep = model.keep_ops() if model.keep_ops else ()
    extra = model.export_kwargs(form) if model.export_kwargs else {}
    ex = forms.export(torch_model, example, form, tmp, keep_ops=keep, **extra)
    path = ex.write(tmp, form)
    outs = _compile_both(path, ex.flags, args.fusions)
    stock_counts = count_flow_ir(outs["stock_flow"].output)
    plugin_counts = count_flow_ir(outs["plugin_flow"].output)
    reports = outs["plugin"].reports
    row.update(
        stock_dispatches=stock_counts.total_dispatches,
        plugin_dispatches=plugin_counts.total_dispatches,
        removed=stock_counts.total_dispatches - plugin_counts.total_dispatches,
        passes=sorted({r["pass"] for r in reports if r.get("changes")}),
        changes=sum(len(r.get("changes", [])) for r in reports),
        skips=sorted(_skips(reports)),
        notes=[n for r in reports for n in r.get("notes", [])],
        parameters=bool(ex.parameters))
    stock = ex.run(outs["stock"].output, device=args.device)
    plugin = ex.run(outs["plugin"].output, device=args.device)
    reference = torch_reference(torch_model, example)
    row["max_abs"] = api.compare_outputs(stock, plugin).max_abs
    row["ref_max_abs"] = api.compare_outputs(reference, plugin).max_abs
    ok = row["max_abs"] <= 1e-5 and row["ref_max_abs"] <= model.atol
    if any(ex.dynamic_dims):
        unseen = other_inputs(example, ex.dynamic_dims, model.other)
        arrays = [forms.to_numpy(a) for a in unseen]
        stock_o = ex.run(outs["stock"].output, arrays, device=args.device)
        plugin_o = ex.run(outs["plugin"].output, arrays, device=args.device)
        row["unseen_sizes"] = {n: model.other[n] for dims in ex.dynamic_dims
                               for n in dims.values() if n in model.other}
        row["unseen_max_abs"] = api.compare_outputs(stock_o, plugin_o).max_abs
        row["unseen_ref_max_abs"] = api.compare_outputs(
            torch_reference(torch_model, unseen), plugin_o).max_abs
        ok = ok and row["unseen_max_abs"] <= 1e-5 and row["unseen_ref_max_abs"] <= model.atol
    row["ok"] = ok
    row["bit_identical"] = row["max_abs"] == 0.0 and row.get("unseen_max_abs", 0.0) == 0.0
    if args.time and model.name in args.time_models:
        pair = compare_latency(outs["stock"].output, outs["plugin"].output, ex.inputs,
                               function=ex.function, device=args.device, rounds=args.rounds,
                               repetitions=args.repetitions, extra_flags=ex.parameter_flags())
        judged = pair.judged()  # the bench's verdict: median per-round ratio, its interval
        row.update(stock_ms=pair.stock_ms, plugin_ms=pair.plugin_ms, ratio=judged["ratio"],
                   ratio_low=judged["ratio_low"], ratio_high=judged["ratio_high"],
                   verdict=judged["verdict"], stock_rounds=pair.stock_rounds,
                   plugin_rounds=pair.plugin_rounds)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


# ---------------------------------------------------------------- the rule and the table


def judge(rows: list[dict]) -> None:
    """Per row: the static form's removed dispatches and whether this form keeps up (at most
    one fewer), else the reasons this form's report gives that the static form's does not."""
    static = {r["model"]: r for r in rows if r["form"] == "static" and "removed" in r}
    for r in rows:
        s = static.get(r["model"])
        if s is None or "removed" not in r:
            continue
        r["static_removed"] = s["removed"]
        r["keeps_up"] = r["removed"] >= s["removed"] - 1
        if not r["keeps_up"]:
            r["form_reasons"] = sorted(set(r["skips"]) - set(s["skips"]))[:5]


def markdown(rows: list[dict]) -> str:
    """The table, worst rows first (failures, then forms that fall behind, then by
    the dispatches the form removes less than the static one)."""
    def badness(r):
        return (r.get("ok") is not False and "error" not in r,
                r.get("keeps_up", True), r.get("removed", 0) - r.get("static_removed", 0))

    lines = ["| model | family | form | dispatches stock -> plugin | removed (static) | passes "
             "| stock vs plugin (unseen size) | vs PyTorch (unseen) | ratio | notes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=badness):
        if "error" in r:
            lines.append(f"| {r['model']} | {r['family']} | {r['form']} | - | - | - | - | - "
                         f"| - | **error**: {r['error']} |")
            continue
        unseen = (f" ({r['unseen_max_abs']:.1e} at {r['unseen_sizes']})"
                  if "unseen_max_abs" in r else "")
        ref_unseen = f" ({r['unseen_ref_max_abs']:.1e})" if "unseen_ref_max_abs" in r else ""
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "-"
        if "ratio_low" in r:
            ratio += f" [{r['ratio_low']:.2f}, {r['ratio_high']:.2f}] {r['verdict']}"
        note = "" if r.get("keeps_up", True) else \
            "**behind**: " + "; ".join(r.get("form_reasons", [])) or "no reason given"
        lines.append(
            f"| {r['model']} | {r['family']} | {r['form']} | {r['stock_dispatches']} -> "
            f"{r['plugin_dispatches']} | {r['removed']} ({r.get('static_removed', '-')}) | "
            f"{', '.join(r['passes']) or '-'} | {r['max_abs']:.1e}{unseen} | "
            f"{r['ref_max_abs']:.1e}{ref_unseen} | {ratio} | {note} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", help="reach models (default: --all)")
    p.add_argument("--all", action="store_true", help="every model of the suite")
    p.add_argument("--list", action="store_true", help="list the models and their forms")
    p.add_argument("--forms", default=",".join(FORM_ORDER),
                   help="forms to run (comma-separated; a model runs those it has)")
    p.add_argument("--fusions", default="all")
    p.add_argument("--device", default="local-task")
    p.add_argument("--time", action="store_true",
                   help=f"time stock vs plugin for the models named by --time-models "
                   f"(default: {', '.join(TIMED)})")
    p.add_argument("--time-models", default=",".join(TIMED))
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--repetitions", type=int, default=20)
    p.add_argument("--json", help="append rows to this JSON file as they finish")
    p.add_argument("--resume", action="store_true", help="skip rows already in --json")
    p.add_argument("--markdown", help="write the table to this file")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        for m in MODELS:
            print(f"{m.name:24s} {m.family:40s} {', '.join(m.forms)}")
        return 0
    names = [m.name for m in MODELS] if args.all or not args.models else args.models
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"reach.py: unknown models: {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    wanted_forms = [f for f in args.forms.split(",") if f]
    args.time_models = set(args.time_models.split(","))
    rows: list[dict] = []
    if args.json and args.resume and os.path.exists(args.json):
        with open(args.json) as f:
            rows = json.load(f)
    done = {(r["model"], r["form"]) for r in rows}
    for name in names:
        model = BY_NAME[name]
        for form in (f for f in FORM_ORDER if f in model.forms and f in wanted_forms):
            if (name, form) in done:
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {name} {form}", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory(prefix="iree-fusions-reach-") as tmp:
                try:
                    row = measure(model, form, tmp, args)
                except Exception as e:  # one row's failure is reported in the row
                    lines = str(e).strip().splitlines() or [type(e).__name__]
                    row = {"model": name, "family": model.family, "form": form, "ok": False,
                           "error": f"{type(e).__name__}: {lines[0][:300]}"}
                    if os.environ.get("REACH_TRACEBACK"):
                        traceback.print_exc()
            rows.append(row)
            if args.json:
                judge(rows)
                _write(args.json, json.dumps(rows, indent=1) + "\n")
    judge(rows)
    table = markdown(rows)
    print(table)
    if args.markdown:
        _write(args.markdown, table)
    return 0 if all(r.get("ok") for r in rows) else 1


def _write(path: str, text: str) -> None:
    from iree_fusions.compiler.files import write_file

    write_file(path, text)


if __name__ == "__main__":
    sys.exit(main())
