"""Weights stacked offline (`--fusions-parameter-archive`) against stock IREE and against the
plugin's default (parameter tables and tower weights left unstacked), in the params form
(iree-turbine .irpa). Results: bench/results/parameter-archive.md.

    python bench/parameter_archive.py [MODEL ...] [--rounds 5] [--device local-task]
        [--folder DIR]

Per model (default: dlrm-b8 dlrm-b64 dlrm-lookups16-b8 criteo-b8; also dlrm-tables-256mib-b8,
8 tables of 32 MiB, the memory sweep's model of bench/batch_gathers.py), three builds of one
export: stock (`--fusions=none`), plugin (`--fusions=all`), archive (`--fusions=all
--fusions-parameters=model=P.irpa --fusions-parameter-archive=A.irpa`). Columns: the
archive's bytes; the largest difference of each plugin build's outputs from stock's; MiB
held (what a fresh process gains loading the module with its parameter files and calling it
once: anonymous + file-backed pages), with the archive build's split into the archive's
file-backed pages and the rest; median load time; stock/plugin latency ratio with its
verdict (alternating rounds).
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


def measure(name: str, folder: str, device: str, rounds: int) -> dict:
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

        sys.path.insert(0, HERE)
        from batch_gathers import MEMORY_CFG

        exported = dlrm.build_form(MEMORY_CFG, "params", here)
        art = dataclasses.replace(exported.artifact, parameters=dict(exported.parameters))
    else:
        art = form_artifact(all_models()[name], "params", here)
    source = os.path.join(here, "model.mlir")
    with open(source, "wb") as f:
        f.write(art.source)
    inputs = []
    for i, x in enumerate(art.inputs):
        inputs.append(os.path.join(here, f"input{i}.npy"))
        np.save(inputs[-1], x)
    (scope, irpa), = art.parameters.items()
    archive = os.path.join(here, "fusions.irpa")
    target = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host", *art.flags]
    builds = {"stock": ["--fusions=none"], "plugin": ["--fusions=all"],
              "archive": ["--fusions=all", *archive_flags({scope: irpa}, archive)]}
    paths = {}
    for side, flags in builds.items():
        paths[side] = os.path.join(here, f"{side}.vmfb")
        subprocess.run([sys.executable, "-m", "iree_fusions.tools.compile_cli", source, *target,
                        *flags, "-o", paths[side]], check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": os.path.join(HERE, "..", "python")})
    files = {"stock": {scope: irpa}, "plugin": {scope: irpa},
             "archive": resolve_parameters(paths["archive"], {scope: irpa, "fusions": archive})}
    arrays = [np.load(p) for p in inputs]
    outs = {side: run_module(paths[side], arrays, art.function, device, files[side])
            for side in builds}
    row = {"model": name, "archive_bytes": os.path.getsize(archive)}
    for side in ("plugin", "archive"):
        row[f"{side}_max_abs"], _, row[f"{side}_shapes"] = compare_outputs(outs["stock"],
                                                                           outs[side])
    for side in builds:
        held = held_mib(paths[side], device, art.function, inputs, files[side])
        row[f"{side}_held_mib"] = round(held["total"], 2)
        if side == "archive":
            row["archive_file_mib"] = round(held[archive], 2)
    loads = {side: load_times_ms({side: paths[side]}, device, parameters=files[side])[side]
             for side in builds}
    row.update({f"{side}_load_ms": round(ms, 2) for side, ms in loads.items()})
    if rounds:
        for side in ("plugin", "archive"):
            verdict = time_pair(paths["stock"], paths[side], inputs, function=art.function,
                                device=device, rounds=rounds,
                                extra_flags=parameter_flags(files["archive"]), max_rounds=15)
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
    p.add_argument("--device", default="local-task")
    p.add_argument("--folder", default=None, help="keep the exports and builds here")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    folder = args.folder or tempfile.mkdtemp(prefix="parameter-archive-")
    rows = []
    for name in args.models:
        row = measure(name, folder, args.device, args.rounds)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{'model':20s} {'archive B':>10s} {'err plug/arch':>14s} "
          f"{'MiB held stock / plug / arch (archive pages)':>46s} {'load ms s/p/a':>18s} "
          f"{'ratio plug':>18s} {'ratio arch':>18s}")
    for r in rows:
        held = (f"{r['stock_held_mib']:.2f} / {r['plugin_held_mib']:.2f} / "
                f"{r['archive_held_mib']:.2f} ({r['archive_file_mib']:.2f})")
        loads = f"{r['stock_load_ms']}/{r['plugin_load_ms']}/{r['archive_load_ms']}"
        ratios = [f"{r.get(f'{s}_ratio') or 0:.3f} {r.get(f'{s}_verdict') or '-'}"
                  for s in ("plugin", "archive")]
        print(f"{r['model']:20s} {r['archive_bytes']:>10d} "
              f"{r['plugin_max_abs']:.1e}/{r['archive_max_abs']:.1e} {held:>46s} "
              f"{loads:>18s} {ratios[0]:>18s} {ratios[1]:>18s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
