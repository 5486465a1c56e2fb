"""Measurements behind batch-gathers (results in bench/results/batch-gathers.md).

    python bench/batch_gathers.py [SWEEP ...] [--rounds 5] [--device local-task]

Each row: a DLRM-style PyTorch model (models/dlrm.py) compiled with stock IREE and with
`--fusions=rewrite-embedding-bags,batch-gathers{OPTIONS}` (`pipeline`: an option of
rewrite-embedding-bags goes to that pass); dispatches (flow IR, run-time dispatches of @main; the
ones in initializers apart), the largest error against PyTorch of both, and the median
latency of alternating runs (stock/plugin ratio > 1: the plugin is faster).

Sweeps:
  issue        the issue's model at B = 1, 8, 64, F.embedding_bag variant, sparse part alone,
               16 one-id lookups (NOTES.md's hand check)
  unseen       layouts the pass was not tuned on (26 features on 24 dim-32 tables, mixed dims,
               one packed id tensor)
  group-size   K one-id lookups returned separately (sliced back) and written to a concat
  index-count  4 one-id lookups (returned separately) as the batch grows
  consumed     K lookups whose results feed other dispatches (a Linear each)
  bags         4 pooled bags of 20 ids (returned separately) as the batch grows
  offsets      F.embedding_bag with run-time offsets (variable-length bags, as nn.EmbeddingBag
               called with (flat ids, offsets)): K bags returned separately or into a concat,
               as the batch and the bag length vary; the DLRM models with offsets
  narrow       the Criteo layout (raw dense features beside 16-wide embeddings) at B = 8, 64,
               512 with narrow-concat=run and =columns
  options      the issue's model at B = 8 with parts of the pass switched off or changed
               (each against stock)
  all          every sweep
  ab           pass variants against the default pass directly (alone on the command line)
  forms        every form users compile (models/dlrm.py FORMS: static, dynamic batch with and
               without shape facts, turbine parameters, ONNX, ONNX with externalized
               parameters) of dlrm-b8, dlrm-sparse-b8, dlrm-bag-b64 and criteo-b8: dispatches
               stock -> plugin, what changed, stock vs plugin at the export's batch and (dynamic
               forms) at batch 5 (alone on the command line; no latency unless --rounds)
  memory       resident memory with tables as parameters (8 tables of 32 MiB, turbine .irpa)
               and inline: RSS (anonymous / file-backed) after load and after calls, stock vs
               plugin, each in a fresh process (alone on the command line)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models import dlrm
from iree_fusions.harness.timing import compare_latency

D = dlrm.DlrmConfig


def one_id(k: int, batch: int, concat: bool, dim: int = 64) -> D:
    return D(batch=batch, table_rows=(1000,) * k, table_dims=dim,
             features=tuple((t, 1) for t in range(k)), mlp=(), concat=concat)


def bags(k: int, batch: int, length: int = 20) -> D:
    return D(batch=batch, table_rows=tuple(500 + 100 * t for t in range(k)),
             features=tuple((t, length) for t in range(k)), mlp=(), concat=False)


def offsets_bags(k: int, batch: int, length: int = 20, concat: bool = False) -> D:
    return replace(bags(k, batch, length), bag_op="offsets", concat=concat)


SWEEPS: dict[str, list[tuple[str, D, str]]] = {
    "issue": [
        *[(f"dlrm-b{b}", replace(dlrm.ISSUE, batch=b), "") for b in (1, 8, 64)],
        *[(f"dlrm-bag-b{b}", replace(dlrm.ISSUE, batch=b, bag_op="embedding_bag"), "")
          for b in (1, 8, 64)],
        ("dlrm-sparse-b8", dlrm.SPARSE, ""),
        ("dlrm-sparse-b64", replace(dlrm.SPARSE, batch=64), ""),
        ("dlrm-lookups16-b8", dlrm.LOOKUPS16, ""),
    ],
    "unseen": [
        ("criteo26-b32", replace(dlrm.CRITEO26, batch=32), ""),
        ("mixed-dims-b8", dlrm.MIXED_DIMS, ""),
        ("packed-b16", replace(dlrm.PACKED, batch=16), ""),
        ("dlrm-mean-b8", replace(dlrm.ISSUE, bag_op="mean"), ""),
    ],
    "group-size": [
        *[(f"{k} lookups, sliced, B=8", one_id(k, 8, False), "min-sliced-indices=0")
          for k in (2, 3, 4, 8)],
        *[(f"{k} lookups, concat, B=8", one_id(k, 8, True), "") for k in (2, 4, 16)],
    ],
    "index-count": [
        (f"4 lookups, sliced, B={b}", one_id(4, b, False), "min-sliced-indices=0")
        for b in (1, 16, 64, 128, 256, 1024, 2048, 4096)
    ],
    "consumed": [  # sliced results read by other dispatches (each lookup feeds a Linear)
        (f"{k} lookups -> Linear each, summed, B={b}", ("towers", k, b), "min-sliced-indices=0")
        for k, b in ((4, 8), (8, 8), (4, 64), (4, 256))
    ],
    "bags": [
        *[(f"4 bags x 20, B={b}", bags(4, b), "") for b in (1, 8, 64, 512)],
        ("2 bags x 20, B=8", bags(2, 8), ""),
    ],
    "offsets": [
        *[(f"{k} offsets bags x ~{n}, B={b}", offsets_bags(k, b, n), "")
          for k, b, n in ((1, 1, 20), (1, 2, 20), (1, 8, 20), (1, 64, 20), (2, 1, 20),
                          (2, 8, 20), (6, 1, 20), (6, 2, 20), (6, 8, 20), (6, 64, 20),
                          (6, 8, 2), (6, 1, 2))],
        *[(f"{k} offsets bags x ~20 into a concat, B={b}", offsets_bags(k, b, concat=True), "")
          for k, b in ((2, 1), (6, 1), (6, 8))],
        *[(f"dlrm-offsets-b{b}", replace(dlrm.ISSUE, batch=b, bag_op="offsets"), "")
          for b in (1, 8, 64)],
    ],
    "narrow": [  # the Criteo layout: slot widths 13 and 16 (narrow-concat)
        (f"criteo-b{b}", replace(dlrm.CRITEO, batch=b), f"narrow-concat={mode}")
        for b in (8, 64, 512) for mode in ("run", "columns")
    ],
    "options": [
        ("dlrm-b8", dlrm.ISSUE, ""),
        ("dlrm-b8 same-table only", dlrm.ISSUE, "cross-table=0"),
        ("dlrm-b8 no concat writer", dlrm.ISSUE, "concat-writer=0"),
        ("dlrm-b8 no dedup", dlrm.ISSUE, "dedup=0"),
        ("dlrm-b8 indices as ins", dlrm.ISSUE, "gather-mode=ins"),
        ("dlrm-b8 values as ins", dlrm.ISSUE, "values-as-ins=1"),
        ("dlrm-bag-b8 no embedding_bag rewrite", replace(dlrm.ISSUE, bag_op="embedding_bag"),
         "embedding-bag=0"),
    ],
}


RUNTIME_FLAGS: list[str] = []  # --runtime-flag: extra iree-benchmark-module flags
BAG_OPTIONS = ("embedding-bag", "offsets-bags", "min-offsets-batch")  # rewrite-embedding-bags'


def pipeline(options: str = "") -> str:
    """`rewrite-embedding-bags{...},batch-gathers{...}` (what --fusions=all runs of the two),
    each with its own of the space-separated `options`."""
    opts = options.split()
    bags = " ".join(o for o in opts if o.partition("=")[0] in BAG_OPTIONS)
    rest = " ".join(o for o in opts if o.partition("=")[0] not in BAG_OPTIONS)
    return (f"rewrite-embedding-bags{{{bags}}}" if bags else "rewrite-embedding-bags") + \
        (f",batch-gathers{{{rest}}}" if rest else ",batch-gathers")


def latency_min(stock: bytes, plugin: bytes, inputs, device: str, rounds: int,
                repetitions: int) -> tuple[float, float, float, float]:
    """(min stock, min plugin, median stock, median plugin) in ms over alternating rounds
    of `repetitions` runs each: on a shared, loaded machine the minimum is the steadier
    estimate of the uncontended time (medians are given too)."""
    lat = compare_latency(stock, plugin, inputs, device=device, rounds=rounds,
                          repetitions=repetitions, min_time="0.02s", every_repetition=True,
                          extra_flags=RUNTIME_FLAGS)
    return min(lat.stock_rounds), min(lat.plugin_rounds), lat.stock_ms, lat.plugin_ms


def towers_artifact(k: int, batch: int):
    """k lookups (1000 x 64 tables), each through its own nn.Linear(64, 64), summed."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from iree_fusions.models.catalog import Artifact
    from iree_fusions.models.torch_export import TORCH_INPUT_FLAGS, export_to_mlir, torch_outputs

    class Towers(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.t = nn.ParameterList([nn.Parameter(torch.randn(1000, 64)) for _ in range(k)])
            self.lin = nn.ModuleList([nn.Linear(64, 64) for _ in range(k)])

        def forward(self, *ids):
            return sum(lin(F.embedding(i, t)) for i, t, lin in zip(ids, self.t, self.lin))

    model = Towers()
    gen = torch.Generator().manual_seed(1)
    ids = [torch.randint(0, 1000, (batch,), generator=gen) for _ in range(k)]
    return Artifact(export_to_mlir(model, ids), [i.numpy() for i in ids], list(TORCH_INPUT_FLAGS),
                    torch_outputs(model, ids), reference_atol=1e-4)


def measure(name: str, cfg, options: str, args) -> dict:
    art = towers_artifact(*cfg[1:]) if isinstance(cfg, tuple) else dlrm.build_artifact(cfg)
    fusions = pipeline(options)
    with tempfile.TemporaryDirectory(prefix="bg-bench-") as tmp:
        path = os.path.join(tmp, "model.mlirbc")
        with open(path, "wb") as f:
            f.write(art.source)
        jobs = {"stock": dict(stock=True), "plugin": dict(fusions=fusions),
                "stock_flow": dict(stock=True, compile_to="flow"),
                "plugin_flow": dict(fusions=fusions, compile_to="flow")}
        with ThreadPoolExecutor(max_workers=2) as pool:
            futs = {k: pool.submit(api.compile_file, path, device=args.device,
                                   flags=art.flags, **kw) for k, kw in jobs.items()}
            outs = {k: f.result() for k, f in futs.items()}
    sc, pc = count_flow_ir(outs["stock_flow"].output), count_flow_ir(outs["plugin_flow"].output)
    stock = api.run(outs["stock"].output, art.inputs, device=args.device)
    plugin = api.run(outs["plugin"].output, art.inputs, device=args.device)
    row = dict(name=name, options=options or "-", stock_d=sc.total_dispatches,
               plugin_d=pc.total_dispatches, init_d=pc.initializer_dispatches,
               err_stock=api.compare_outputs(art.reference, stock).max_abs,
               err_plugin=api.compare_outputs(art.reference, plugin).max_abs,
               err_sp=api.compare_outputs(stock, plugin).max_abs)
    if args.rounds and args.estimator == "median":
        pair = compare_latency(outs["stock"].output, outs["plugin"].output, art.inputs,
                               device=args.device, rounds=args.rounds,
                               repetitions=args.repetitions, extra_flags=RUNTIME_FLAGS)
        row.update(stock_ms=pair.stock_ms, plugin_ms=pair.plugin_ms, ratio=pair.ratio)
    elif args.rounds:
        s_min, p_min, s_med, p_med = latency_min(outs["stock"].output, outs["plugin"].output,
                                                 art.inputs, args.device, args.rounds,
                                                 args.repetitions)
        row.update(stock_ms=s_min, plugin_ms=p_min, ratio=s_min / p_min,
                   median_ratio=s_med / p_med)
    return row


AB_MODELS = {"dlrm-b8": dlrm.ISSUE, "dlrm-b64": replace(dlrm.ISSUE, batch=64),
             "dlrm-bag-b8": replace(dlrm.ISSUE, bag_op="embedding_bag"),
             "criteo-b8": dlrm.CRITEO, "criteo-b512": replace(dlrm.CRITEO, batch=512)}
AB_VARIANTS = {"dlrm-b8": ["cross-table=0", "concat-writer=0", "dedup=0", "gather-mode=ins",
                           "values-as-ins=1"],
               "dlrm-b64": ["values-as-ins=1"], "dlrm-bag-b8": ["embedding-bag=0"],
               "criteo-b8": ["narrow-concat=columns"], "criteo-b512": ["narrow-concat=columns"]}


def ab(args) -> None:
    """Pass variants against the default pass (not stock), alternating: ratio = default time /
    variant time (< 1: the variant is slower)."""
    print("| model | variant | dispatches variant vs default | ms variant vs default (min) "
          "| ratio (min) | ratio (median) |")
    print("|---|---|---|---|---|---|")
    for name, variants in AB_VARIANTS.items():
        if args.only is not None and args.only not in name:
            continue
        art = dlrm.build_artifact(AB_MODELS[name])
        with tempfile.TemporaryDirectory(prefix="bg-ab-") as tmp:
            path = os.path.join(tmp, "model.mlirbc")
            with open(path, "wb") as f:
                f.write(art.source)
            vm, count = {}, {}
            for opt in ["", *variants]:
                fusions = pipeline(opt)
                vm[opt] = api.compile_file(path, device=args.device, flags=art.flags,
                                           fusions=fusions).output
                count[opt] = count_flow_ir(api.compile_file(
                    path, device=args.device, flags=art.flags, fusions=fusions,
                    compile_to="flow").output).total_dispatches
        for opt in variants:
            d_min, v_min, d_med, v_med = latency_min(vm[""], vm[opt], art.inputs, args.device,
                                                     args.rounds, args.repetitions)
            print(f"| {name} | `{opt}` | {count[opt]} vs {count['']} | {v_min:.4f} vs "
                  f"{d_min:.4f} | {d_min / v_min:.2f} | {d_med / v_med:.2f} |", flush=True)


# ---------------------------------------------------------------- forms

FORM_MODELS = {
    "dlrm-b8": dlrm.ISSUE,
    "dlrm-sparse-b8": dlrm.SPARSE,
    "dlrm-bag-b64": replace(dlrm.ISSUE, batch=64, bag_op="embedding_bag"),
    "criteo-b8": dlrm.CRITEO,
}


def _change_kinds(reports: list[dict]) -> str:
    """What the pass changed, counted by kind (`6 embedding_bag, 1 group, 1 writer`)."""
    kinds: dict[str, int] = {}
    for r in reports:
        for c in r.get("changes", []):
            what = c["what"]
            kind = ("embedding_bag" if what.startswith("embedding_bag") else
                    "writer" if what.startswith("concat") else
                    "run-time offsets" if "run-time offsets" in what else "group")
            if "checked at run time" in what:
                kind += " (checked)"
            kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none"


def _first_reasons(reports: list[dict], n: int = 1) -> list[str]:
    seen: list[str] = []
    for r in reports:
        for sk in r.get("skipped", []):
            if sk["reason"] not in seen:
                seen.append(sk["reason"])
    return seen[:n]


def form_row(model: str, form: str, args) -> dict:
    """One model in one form: dispatches, changes, numerics (and latency with --rounds)."""
    with tempfile.TemporaryDirectory(prefix="bg-forms-") as tmp:
        fa = dlrm.build_form(FORM_MODELS[model], form, tmp)
        art = fa.artifact
        path = art.write(tmp)
        jobs = {"stock": dict(stock=True), "plugin": dict(fusions=pipeline()),
                "stock_flow": dict(stock=True, compile_to="flow"),
                "plugin_flow": dict(fusions=pipeline(), compile_to="flow")}
        outs = {}
        for k, kw in jobs.items():
            try:
                outs[k] = api.compile_file(path, device=args.device, flags=art.flags, **kw)
            except api.CompilerToolError as e:
                lines = e.stderr.strip().splitlines() or ["?"]
                first = next((ln for ln in lines if "error:" in ln), lines[-1])
                op = re.search(r'name = "([\w.]+)"', e.stderr)
                return dict(model=model, form=form, error=f"{k.split('_')[0]} fails: " + (
                    f"{op.group(1)} not lowered: " if op else "") + first.split("error:")[-1])
        sc = count_flow_ir(outs["stock_flow"].output)
        pc = count_flow_ir(outs["plugin_flow"].output)
        row = dict(model=model, form=form, stock_d=sc.total_dispatches,
                   plugin_d=pc.total_dispatches, init_d=pc.initializer_dispatches,
                   changes=_change_kinds(outs["plugin_flow"].reports),
                   reasons=_first_reasons(outs["plugin_flow"].reports))
        runs = [(art.inputs, art.reference)]
        if fa.other_inputs is not None:
            runs.append((fa.other_inputs, fa.other_reference))
        errs = []
        for inputs, ref in runs:
            stock = api.run(outs["stock"].output, inputs, art.function, args.device,
                            fa.parameters)
            plugin = api.run(outs["plugin"].output, inputs, art.function, args.device,
                             fa.parameters)
            errs.append((api.compare_outputs(stock, plugin).max_abs,
                         api.compare_outputs(ref, plugin).max_abs))
        row["errs"] = errs
        if args.rounds:
            pair = compare_latency(outs["stock"].output, outs["plugin"].output, art.inputs,
                                   function=art.function, device=args.device,
                                   rounds=args.rounds, repetitions=args.repetitions,
                                   extra_flags=RUNTIME_FLAGS + _parameter_flags(fa))
            row["ratio"] = pair.ratio
        return row


def _parameter_flags(fa) -> list[str]:
    return [f"--parameters={scope}={path}" for scope, path in fa.parameters.items()]


def forms(args) -> None:
    print("| model | form | dispatches stock -> plugin | removed | changes | stock vs plugin "
          "(export batch / batch 5) | plugin vs torch |" + (" ratio |" if args.rounds else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if args.rounds else ""))
    for model in FORM_MODELS:
        if args.only is not None and args.only not in model:
            continue
        for form in dlrm.FORMS:
            row = form_row(model, form, args)
            if "error" in row:
                print(f"| {model} | {form} | {row['error'][:110]} | | | | |", flush=True)
                continue
            errs = " / ".join(f"{e[0]:.1e}" for e in row["errs"])
            torch_err = max(e[1] for e in row["errs"])
            why = f" ({row['reasons'][0][:110]})" if row["reasons"] else ""
            line = (f"| {model} | {form} | {row['stock_d']} -> {row['plugin_d']} "
                    f"(+{row['init_d']} init) | {row['stock_d'] - row['plugin_d']} | "
                    f"{row['changes']}{why} | {errs} | {torch_err:.1e} |")
            if args.rounds:
                line += f" {row['ratio']:.2f} |"
            print(line, flush=True)


# ---------------------------------------------------------------- memory

MEMORY_CFG = dlrm.DlrmConfig(batch=8, table_rows=(131072,) * 8, table_dims=64,
                             features=tuple((t, 1) for t in range(8)), mlp=(), concat=True)


def _rss() -> dict[str, int]:
    """VmRSS, RssAnon, RssFile of this process, MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) // 1024
    return out


def memory_probe(folder: str, kind: str) -> dict:
    """In a fresh process: RSS before loading, after loading (module initializers run: the
    stacked tables are built), after one call and after 20 more."""
    import iree.runtime as rt

    from iree_fusions.runtime.modules import parameters_module
    from iree_fusions.models import forms as forms_mod

    before = _rss()
    config = rt.Config("local-task")
    modules = []
    irpa = os.path.join(folder, "params.irpa")
    if os.path.exists(irpa):
        modules.append(parameters_module(config.vm_instance, {forms_mod.PARAMETER_SCOPE: irpa}))
    modules.append(rt.VmModule.mmap(config.vm_instance, os.path.join(folder, kind + ".vmfb")))
    context = rt.SystemContext(vm_modules=modules, config=config)
    loaded = _rss()
    inputs = list(np.load(os.path.join(folder, "inputs.npy")))
    main_fn = context.modules[modules[-1].name]["main"]
    main_fn(*inputs).to_host()
    one = _rss()
    for _ in range(20):
        main_fn(*inputs)
    return dict(before=before, loaded=loaded, one_call=one, calls_21=_rss())


def memory(args) -> None:
    table_mib = sum(r * d * 4 for r, d in zip(MEMORY_CFG.table_rows, MEMORY_CFG.dims())) >> 20
    print(f"8 tables, {table_mib} MiB in all; RSS MiB (anonymous / file-backed) of a fresh "
          "process")
    print("| form | compiled | vmfb MiB | before loading | loaded | after 1 call "
          "| after 21 calls |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bg-memory-") as tmp:
        for form in ("params", "static"):
            folder = os.path.join(tmp, form)
            os.makedirs(folder)
            fa = dlrm.build_form(MEMORY_CFG, form, folder)
            src = fa.artifact.write(folder)
            np.save(os.path.join(folder, "inputs.npy"), np.stack(fa.artifact.inputs))
            for kind, kw in (("stock", dict(stock=True)), ("plugin",
                                                           dict(fusions=pipeline()))):
                api.compile_file(src, device=args.device, flags=fa.artifact.flags,
                                 output_file=os.path.join(folder, kind + ".vmfb"), **kw)
                probe = subprocess.run([sys.executable, __file__, "memory-probe", folder, kind],
                                       capture_output=True, text=True, check=True)
                r = json.loads(probe.stdout.strip().splitlines()[-1])
                size = os.path.getsize(os.path.join(folder, kind + ".vmfb")) >> 20

                def cell(x: dict) -> str:
                    return f"{x['VmRSS']} ({x['RssAnon']} / {x['RssFile']})"

                print(f"| {form} | {kind} | {size} | {cell(r['before'])} | "
                      f"{cell(r['loaded'])} | {cell(r['one_call'])} | {cell(r['calls_21'])} |",
                      flush=True)


def fmt(row: dict) -> str:
    t = (f"| {row['name']} | {row['options']} | {row['stock_d']} | {row['plugin_d']} "
         f"(+{row['init_d']} init) | {row['err_stock']:.1e} / {row['err_plugin']:.1e} | "
         f"{row['err_sp']:.1e} |")
    if "ratio" in row:
        t += f" {row['stock_ms']:.4f} | {row['plugin_ms']:.4f} | {row['ratio']:.2f} |"
    if "median_ratio" in row:
        t += f" {row['median_ratio']:.2f} |"
    return t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweeps", nargs="*", default=["issue"],
                   choices=[*SWEEPS, "all", "ab", "forms", "memory", []])
    p.add_argument("--rounds", type=int, default=None,
                   help="latency rounds (default 5; forms and memory: 0, no latency)")
    p.add_argument("--repetitions", type=int, default=10)
    p.add_argument("--device", default="local-task")
    p.add_argument("--estimator", choices=["min", "median"], default="min",
                   help="min: fastest repetition of alternating rounds (steadier on a loaded "
                        "machine), median ratio shown too; median: iree_fusions.harness.timing")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag (repeatable), e.g. "
                        "--runtime-flag=--task_topology_max_group_count=1")
    p.add_argument("--only", default=None, help="rows whose name contains this text")
    if argv is None and sys.argv[1:2] == ["memory-probe"]:
        print(json.dumps(memory_probe(*sys.argv[2:4])))
        return 0
    args = p.parse_args(argv)
    if args.rounds is None:
        args.rounds = 0 if args.sweeps in (["forms"], ["memory"]) else 5
    RUNTIME_FLAGS[:] = args.runtime_flag
    if args.sweeps == ["ab"]:
        ab(args)
        return 0
    if args.sweeps == ["forms"]:
        forms(args)
        return 0
    if args.sweeps == ["memory"]:
        memory(args)
        return 0
    est = "min" if args.estimator == "min" else "median"
    print(f"| model | options | dispatches stock | dispatches plugin | max err vs torch "
          f"(stock / plugin) | max err stock vs plugin | ms stock ({est}) | ms plugin ({est}) "
          f"| ratio ({est}) |" + (" ratio (median) |" if args.estimator == "min" else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if args.estimator == "min" else ""))
    sweeps = list(SWEEPS) if "all" in args.sweeps else (args.sweeps or ["issue"])
    for sweep in sweeps:
        for name, cfg, options in SWEEPS[sweep]:
            if args.only is None or args.only in name:
                print(fmt(measure(name, cfg, options, args)), flush=True)
    return 0


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    sys.exit(main())
