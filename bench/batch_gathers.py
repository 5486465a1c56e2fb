"""Measurements behind batch-gathers (results in bench/results/batch-gathers.md).

    python bench/batch_gathers.py [SWEEP ...] [--rounds 5] [--device local-task]

Each row: a DLRM-style PyTorch model (models/dlrm.py) compiled with stock IREE and with
`--fusions=batch-gathers{OPTIONS}`; dispatches (flow IR, run-time dispatches of @main; the
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
  options      the issue's model at B = 8 with parts of the pass switched off or changed
               (each against stock)
  all          every sweep
  ab           pass variants against the default pass directly (alone on the command line)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from iree_fusions import api
from iree_fusions.counting import count_flow_ir
from iree_fusions.models import dlrm
from iree_fusions.timing import compare_latency

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
    fusions = f"batch-gathers{{{options}}}" if options else "batch-gathers"
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
             "dlrm-bag-b8": replace(dlrm.ISSUE, bag_op="embedding_bag")}
AB_VARIANTS = {"dlrm-b8": ["cross-table=0", "concat-writer=0", "dedup=0", "gather-mode=ins",
                           "values-as-ins=1"],
               "dlrm-b64": ["values-as-ins=1"], "dlrm-bag-b8": ["embedding-bag=0"]}


def ab(args) -> None:
    """Pass variants against the default pass (not stock), alternating: ratio = default time /
    variant time (< 1: the variant is slower)."""
    print("| model | variant | dispatches variant vs default | ms variant vs default (min) "
          "| ratio (min) | ratio (median) |")
    print("|---|---|---|---|---|---|")
    for name, variants in AB_VARIANTS.items():
        art = dlrm.build_artifact(AB_MODELS[name])
        with tempfile.TemporaryDirectory(prefix="bg-ab-") as tmp:
            path = os.path.join(tmp, "model.mlirbc")
            with open(path, "wb") as f:
                f.write(art.source)
            vm, count = {}, {}
            for opt in ["", *variants]:
                fusions = f"batch-gathers{{{opt}}}" if opt else "batch-gathers"
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
                   choices=[*SWEEPS, "all", "ab", []])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repetitions", type=int, default=10)
    p.add_argument("--device", default="local-task")
    p.add_argument("--estimator", choices=["min", "median"], default="min",
                   help="min: fastest repetition of alternating rounds (steadier on a loaded "
                        "machine), median ratio shown too; median: iree_fusions.timing")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag (repeatable), e.g. "
                        "--runtime-flag=--task_topology_max_group_count=1")
    p.add_argument("--only", default=None, help="rows whose name contains this text")
    args = p.parse_args(argv)
    RUNTIME_FLAGS[:] = args.runtime_flag
    if args.sweeps == ["ab"]:
        ab(args)
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
