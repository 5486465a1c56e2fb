"""Weights stacked offline (`--fusions-parameter-archive`) against stock IREE and against the
plugin's default (parameter tables and tower weights left unstacked), in the params form
(iree-turbine .irpa). Results: bench/results/parameter-archive.md.

    python bench/parameter_archive.py [MODEL ...] [--rounds 5] [--draws 6]
        [--device local-task] [--folder DIR]

Per model (default: dlrm-b8 dlrm-b64 dlrm-lookups16-b8 criteo-b8; also dlrm-tables-256mib-b8,
8 tables of 32 MiB, the memory sweep's model of bench/batch_gathers.py), four builds of one
export: stock (`--fusions=none`), plugin (`--fusions=all`), and the two archive layouts
(`--fusions=all --fusions-parameters=model=P.irpa --fusions-parameter-archive=A.irpa
--fusions-parameter-archive-mode=consolidate|overlay`), each run with the files it reads
(consolidated: the archive alone; overlay: the archive and the source). Columns: the
archives' bytes; the largest difference of each plugin build's outputs from stock's; MiB
held (what a fresh process gains loading the module with its parameter files and calling it
once: anonymous + file-backed pages, median of 3 processes), the mean over `--draws` input
draws (the catalog's inputs, then ids drawn with other seeds: which pages a lookup faults in
depends on the ids, by a 64 KiB window or two on these small tables), with each archive
build's excess over stock per draw (mean, worst); median load time; stock/build latency
ratio with its verdict (alternating rounds, on the catalog's inputs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

DEFAULT_MODELS = ["dlrm-b8", "dlrm-b64", "dlrm-lookups16-b8", "criteo-b8"]
# Not in the catalog: 8 one-id lookups of 131072 x 64 f32 tables (256 MiB of parameters, as
# bench/batch_gathers.py's memory sweep), where only the rows read are resident.
LARGE = "dlrm-tables-256mib-b8"

# Run in a fresh process: RSS growth per mapping (anonymous, each parameter file) from
# loading the module with its parameter files to after one call.
_PROBE = r"""
import json, os, sys
import numpy as np, iree.runtime as rt
from iree_fusions.runtime.modules import load_module, host_arrays
spec = json.loads(sys.argv[1])
def rss():
    out, name = {}, None
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if parts and "-" in parts[0] and not parts[0].endswith(":"):
                path = parts[5] if len(parts) > 5 else ""
                name = (os.path.realpath(path) if path.startswith("/") else "anon")
            elif parts and parts[0] == "Rss:":
                out[name] = out.get(name, 0) + int(parts[1])
    return out
rt.Config(spec["device"])
inputs = [np.load(p) for p in spec["inputs"]]
before = rss()
context, name = load_module(spec["vmfb"], spec["device"], spec["parameters"])
host_arrays(context.modules[name][spec["function"]](*inputs))
after = rss()
keys = set(after) | set(before)
print(json.dumps({k: (after.get(k, 0) - before.get(k, 0)) / 1024 for k in keys}))
"""


def held_mib(vmfb: str, device: str, function: str, inputs: list[str],
             parameters: dict[str, str]) -> dict[str, float]:
    """{"total", and per parameter file path} MiB a fresh process gains (median of 3)."""
    runs = []
    for _ in range(3):
        spec = {"vmfb": vmfb, "device": device, "function": function, "inputs": inputs,
                "parameters": parameters}
        env = {**os.environ, "PYTHONPATH": os.path.join(HERE, "..", "python")}
        proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(spec)],
                              capture_output=True, text=True, env=env, check=True)
        growth = json.loads(proc.stdout.strip().splitlines()[-1])
        row = {"total": sum(growth.values())}
        for path in parameters.values():
            row[path] = growth.get(os.path.realpath(path), 0.0)
        runs.append(row)
    runs.sort(key=lambda r: r["total"])
    return runs[1]


# The builds: --fusions and the archive layout (None: no archive).
BUILDS = {"stock": ("none", None), "plugin": ("all", None),
          "consolidated": ("all", "consolidate"), "overlay": ("all", "overlay")}
ARCHIVES = [side for side, (_, mode) in BUILDS.items() if mode]
AGAINST_STOCK = [side for side in BUILDS if side != "stock"]


def _input_draws(name: str, art, folder: str, draws: int) -> list[list[str]]:
    """The .npy paths of each input draw: the catalog's inputs, then the model's inputs
    generated with seeds 1, 2, ... (the ids a lookup reads; DLRM-family models only)."""
    import numpy as np

    from iree_fusions.models import dlrm

    out = []
    for draw in range(draws):
        if draw == 0:
            arrays = list(art.inputs)
        else:
            cfg = _large_config() if name == LARGE else dlrm.CONFIGS[name]
            arrays = [a.numpy() for a in dlrm.example_args(dataclasses.replace(cfg, seed=draw))]
        paths = []
        for i, x in enumerate(arrays):
            paths.append(os.path.join(folder, f"input{i}.draw{draw}.npy"))
            np.save(paths[-1], x)
        out.append(paths)
    return out


def _large_config():
    """dlrm-tables-256mib-b8's configuration: bench/batch_gathers.py's memory sweep model."""
    sys.path.insert(0, HERE)
    from batch_gathers import MEMORY_CFG

    return MEMORY_CFG


def measure(name: str, folder: str, device: str, rounds: int, draws: int) -> dict:
    import statistics

    import numpy as np

    from iree_fusions.tools.parameter_archive import archive_flags
    from iree_fusions.models.catalog import all_models, form_artifact
    from iree_fusions.runtime.benchmark import load_times_ms, time_pair
    from iree_fusions.runtime.modules import compare_outputs, parameter_flags, run_module
    from iree_fusions.runtime.archives import resolve_parameters

    here = os.path.join(folder, name)
    os.makedirs(here, exist_ok=True)
    if name == LARGE:  # batch_gathers.py's memory sweep model: 8 tables of 32 MiB
        from iree_fusions.models import dlrm

        exported = dlrm.build_form(_large_config(), "params", here)
        art = dataclasses.replace(exported.artifact, parameters=dict(exported.parameters))
    else:
        art = form_artifact(all_models()[name], "params", here)
    source = os.path.join(here, "model.mlir")
    with open(source, "wb") as f:
        f.write(art.source)
    input_draws = _input_draws(name, art, here, draws)
    (scope, irpa), = art.parameters.items()
    target = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host", *art.flags]
    paths, files, archive_bytes = {}, {}, {}
    for side, (fusions, mode) in BUILDS.items():
        paths[side] = os.path.join(here, f"{side}.vmfb")
        flags = [f"--fusions={fusions}"]
        files[side] = {scope: irpa}
        if mode:
            archive = os.path.join(here, f"{side}.fusions.irpa")
            flags += archive_flags({scope: irpa}, archive, mode)
        subprocess.run([sys.executable, "-m", "iree_fusions.tools.compile_cli", source, *target,
                        *flags, "-o", paths[side]], check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": os.path.join(HERE, "..", "python")})
        if mode:  # the files this build reads: a consolidated archive replaces the source
            files[side] = resolve_parameters(paths[side], {scope: irpa, "+": archive})
            archive_bytes[side] = os.path.getsize(archive)
    arrays = [np.load(p) for p in input_draws[0]]
    outs = {side: run_module(paths[side], arrays, art.function, device, files[side])
            for side in BUILDS}
    row = {"model": name, "archive_bytes": archive_bytes, "draws": draws,
           "files": {side: sorted(os.path.basename(p) for p in files[side].values())
                     for side in BUILDS}}
    for side in AGAINST_STOCK:
        row[f"{side}_max_abs"], _, row[f"{side}_shapes"] = compare_outputs(outs["stock"],
                                                                           outs[side])
    held = {side: [held_mib(paths[side], device, art.function, inputs, files[side])["total"]
                   for inputs in input_draws] for side in BUILDS}
    for side in BUILDS:
        row[f"{side}_held_mib"] = round(statistics.mean(held[side]), 3)
        row[f"{side}_held_draws"] = [round(h, 3) for h in held[side]]
        if side != "stock":
            excess = [h / s - 1 for h, s in zip(held[side], held["stock"])]
            row[f"{side}_excess_mean"] = round(statistics.mean(excess), 4)
            row[f"{side}_excess_worst"] = round(max(excess), 4)
    loads = {side: load_times_ms({side: paths[side]}, device, parameters=files[side])[side]
             for side in BUILDS}
    row.update({f"{side}_load_ms": round(ms, 2) for side, ms in loads.items()})
    if rounds:
        for side in AGAINST_STOCK:
            verdict = time_pair(paths["stock"], paths[side], input_draws[0],
                                function=art.function, device=device, rounds=rounds,
                                extra_flags=parameter_flags({**files["stock"], **files[side]}),
                                max_rounds=15)
            row[f"{side}_ratio"] = verdict.get("ratio")
            row[f"{side}_verdict"] = verdict.get("verdict")
            row[f"{side}_interval"] = [round(verdict["ratio_low"], 3),
                                       round(verdict["ratio_high"], 3)]
            row[f"{side}_rounds"] = verdict["rounds"]
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--draws", type=int, default=6, help="input draws MiB held is averaged over")
    p.add_argument("--device", default="local-task")
    p.add_argument("--folder", default=None, help="keep the exports and builds here")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    folder = args.folder or tempfile.mkdtemp(prefix="parameter-archive-")
    rows = []
    for name in args.models:
        row = measure(name, folder, args.device, args.rounds, args.draws)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("| model | archive bytes cons. / overlay | max abs | MiB held stock / plugin / "
          "cons. / overlay | cons. vs stock: mean (worst) | overlay vs stock | load ms "
          "s / p / c / o | plugin | consolidated | overlay |")
    print("| --- " * 10 + "|")
    for r in rows:
        err = max(r[f"{s}_max_abs"] for s in AGAINST_STOCK)
        held = " / ".join(f"{r[f'{s}_held_mib']:.2f}" for s in BUILDS)
        excess = [f"{100 * r[f'{s}_excess_mean']:+.1f}% ({100 * r[f'{s}_excess_worst']:+.1f}%)"
                  for s in ARCHIVES]
        loads = " / ".join(str(r[f"{s}_load_ms"]) for s in BUILDS)
        ratios = [f"{r.get(f'{s}_ratio') or 0:.3f} {r.get(f'{s}_verdict') or '-'}"
                  for s in AGAINST_STOCK]
        print(f"| {r['model']} | {r['archive_bytes']['consolidated']} / "
              f"{r['archive_bytes']['overlay']} | {err:.1e} | {held} | {excess[0]} | "
              f"{excess[1]} | {loads} | {' | '.join(ratios)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
