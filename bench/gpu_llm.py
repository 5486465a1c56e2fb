"""sharktank LLM exports on a GPU machine that has no compiler: stage here, run there.

The GPU machines lent to this project have Python and nothing of IREE's; what travels to one
is limited (64 MiB a call, /work/shared/GPU.md). So the exports are compiled here, and their
weights do not travel: the run makes them again from the parameter spec (names, shapes, dtypes
read from model.mlir), seeded by the model's base name, so both forms of a model (default and
`-decomposed` export) and both builds read the same weights.

    # here (project venv): compile each export for the GPU, stock and plugin
    python bench/gpu_llm.py stage --exports /work/llm/exports \\
        --models llama-gqa-32,llama-gqa-32-decomposed,... --device cuda --out .gpu/llm
    # there (iree-base-runtime and numpy only), with this repo's python/ and bench/ on the path
    python bench/gpu_llm.py run .gpu/llm --device cuda --json $OUT/llm.json

`stage` writes, per export, `<name>/{stock,plugin}.vmfb` (a build that fails to compile is
recorded with its error's last lines: stock IREE 3.13 crashes on the default export of some
models for cuda and hip), `<name>/model.json` (the exporter's config) and
`<name>/stage.json` (vocab, parameter spec, builds, compile seconds, the plugin's notes).

`run` does, per model base (an export and its `-decomposed` form):
1. the .irpa from the spec (`make_irpa`: normal weights scaled 0.05, norms 1 + that);
2. prefill at each of `--seq-lens` then decode one token on the cache that prefill wrote, per
   build, outputs compared per pair (`llm_suite.compare_bits`: bytes, else max |d|, argmax
   agreement, NaN pattern);
3. per pair, prefill and decode timed stock vs plugin alternating (`benchmark.time_pair`),
   decode on the cache of a stock prefill of S tokens;
4. per pair, with `--profile`, the time per dispatch kind (`profile.default_mode`:
   dispatch-events on GPUs, which IREE 3.13's CUDA HAL refuses).
The pairs: `decomposed` (stock vs plugin on the `-decomposed` export: the form stock IREE
compiles for GPUs), `default` (both on the default export, where stock compiles it) and
`default-vs-decomposed` (the plugin's build of the default export against stock's of the
decomposed one: what a user gets instead of re-exporting). Results go to `--json` after each
model; `--deadline` (seconds) skips what would start after it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from llm_suite import Export, compare_bits, input_files, prefill_then_decode  # noqa: E402

SIDES = {"stock": "none", "plugin": "all"}
DECOMPOSED = "-decomposed"
_PARAMETER = re.compile(r'#(?:flow|stream)\.parameter\.named<"([^"]*)"::"([^"]+)">\s*:\s*'
                        r"tensor<([^>]*)>")
DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
          "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64"}
WEIGHT_SCALE = 0.05


def parameter_spec(mlir_text: str) -> list[dict]:
    """[{scope, name, shape, dtype}] of every named parameter a module's globals read."""
    out = {}
    for scope, name, tensor in _PARAMETER.findall(mlir_text):
        *dims, element = tensor.split("x")
        out[(scope, name)] = {"scope": scope, "name": name, "shape": [int(d) for d in dims],
                              "dtype": DTYPES[element]}
    return list(out.values())


def stage(args) -> int:
    from iree_fusions.harness import api

    os.makedirs(args.out, exist_ok=True)
    variants = dict(v.split("=", 1) for v in args.variant)
    variant_models = set(args.variant_models.split(",")) if args.variant_models else None
    for name in args.models.split(","):
        src = os.path.join(args.exports, name)
        export = Export(src)
        dst = os.path.join(args.out, name)
        os.makedirs(dst, exist_ok=True)
        with open(export.mlir) as f:
            spec = parameter_spec(f.read())
        builds = {}
        own = variants if variant_models is None or name in variant_models else {}
        for side, fusions in {**SIDES, **own}.items():
            start = time.perf_counter()
            try:
                result = api.compile_file(export.mlir, device=args.device, target=args.target,
                                          fusions=fusions)
            except api.CompilerToolError as e:
                builds[side] = {"ok": False, "error": e.stderr.strip().splitlines()[-6:]}
            else:
                with open(os.path.join(dst, f"{side}.vmfb"), "wb") as f:
                    f.write(result.output)
                builds[side] = {"ok": True, "bytes": len(result.output), "fusions": fusions,
                                "notes": sorted({ln.strip() for ln in result.stderr.splitlines()
                                                 if ln.startswith("iree-fusions:")})}
            builds[side]["seconds"] = round(time.perf_counter() - start, 1)
            print(f"{name} {side}: {builds[side]}", flush=True)
        with open(os.path.join(dst, "model.json"), "w") as f:
            json.dump(export.config, f)
        with open(os.path.join(dst, "stage.json"), "w") as f:
            json.dump({"export": name, "vocab": export.vocab, "device": args.device,
                       "target": args.target, "parameters": spec, "builds": builds}, f, indent=1)
    return 0


def make_irpa(spec: list[dict], path: str, seed_name: str) -> None:
    """A parameter archive holding every parameter of `spec`, seeded by `seed_name`: floats
    normal * WEIGHT_SCALE (norm weights 1 + that), integers zero."""
    import numpy as np
    import iree.runtime as rt

    rng = np.random.default_rng(zlib.crc32(seed_name.encode()))
    index = rt.ParameterIndex()
    for p in spec:
        if p["dtype"].startswith(("float", "bfloat")):
            values = rng.standard_normal(p["shape"], dtype=np.float32) * WEIGHT_SCALE
            if "norm" in p["name"]:
                values += 1.0
            if p["dtype"] == "bfloat16":  # numpy has none: the top half of each float32
                data = (values.view(np.uint32) >> 16).astype(np.uint16)
            else:
                data = values.astype(p["dtype"])
        else:
            data = np.zeros(p["shape"], dtype=p["dtype"])
        index.add_buffer(p["name"], data.tobytes())
    index.create_archive_file(path)


def _load(folder: str) -> tuple[dict, Export]:
    with open(os.path.join(folder, "stage.json")) as f:
        staged = json.load(f)
    with open(os.path.join(folder, "model.json")) as f:
        config = json.load(f)
    return staged, Export(folder, config=config, vocab=staged["vocab"])


def _pairs(forms: dict) -> list[tuple[str, str, str]]:
    """[(pair, stock .vmfb, plugin .vmfb)] of one base's forms ({form: (staged, folder)}),
    each build compiled."""
    def vmfb(form, side):
        staged, folder = forms.get(form, ({"builds": {}}, ""))
        ok = staged["builds"].get(side, {}).get("ok")
        return os.path.join(folder, f"{side}.vmfb") if ok else None

    wanted = [("decomposed", ("decomposed", "stock"), ("decomposed", "plugin")),
              ("default", ("default", "stock"), ("default", "plugin")),
              ("default-vs-decomposed", ("decomposed", "stock"), ("default", "plugin"))]
    variants = {side for staged, _ in forms.values() for side in staged["builds"]} - set(SIDES)
    wanted += [(f"{form}-{v}-vs-plugin", (form, v), (form, "plugin"))
               for form in forms for v in sorted(variants)]
    out = []
    for pair, s, p in wanted:
        if vmfb(*s) and vmfb(*p) and (pair != "default-vs-decomposed" or not vmfb("default",
                                                                                  "stock")):
            out.append((pair, vmfb(*s), vmfb(*p)))
    return out


def run(args) -> int:
    from iree_fusions.runtime.benchmark import time_pair
    from iree_fusions.runtime.modules import parameter_flags
    from iree_fusions.runtime.profile import default_mode, profile_pair
    from iree_fusions.harness.profiling import profile_summary

    start = time.perf_counter()
    bases: dict[str, dict] = {}
    for name in sorted(os.listdir(args.stage)):
        folder = os.path.join(args.stage, name)
        if os.path.exists(os.path.join(folder, "stage.json")):
            form = "decomposed" if name.endswith(DECOMPOSED) else "default"
            bases.setdefault(name.removesuffix(DECOMPOSED), {})[form] = folder
    order = [m for m in args.models.split(",") if m in bases] if args.models else sorted(bases)
    results = []
    tmp = tempfile.mkdtemp(prefix="gpu-llm-")
    for base in order:
        loaded = {form: _load(folder) for form, folder in bases[base].items()}
        forms = {form: staged for form, (staged, _) in loaded.items()}
        row = {"model": base, "builds": {f: s["builds"] for f, s in forms.items()},
               "pairs": {}, "errors": []}
        results.append(row)
        if time.perf_counter() - start > args.deadline:
            row["errors"].append("skipped: past --deadline")
            continue
        staged, export = next(iter(loaded.values()))
        export.irpa = os.path.join(tmp, f"{base}.irpa")
        make_irpa(staged["parameters"], export.irpa, base)
        flags = parameter_flags(export.parameters)
        pairs = _pairs({f: (forms[f], bases[base][f]) for f in forms})
        for seq_len in args.seq_lens:
            outputs, inputs_of = {}, {}  # per .vmfb: its outputs; per stock .vmfb: input files
            for pair, stock, plugin in pairs:
                key = f"{pair} S={seq_len}"
                entry = row["pairs"][key] = {}
                try:
                    for v in (stock, plugin):
                        if v not in outputs:
                            outputs[v] = prefill_then_decode(v, export, seq_len, args.device)
                    entry["outputs"] = compare_bits(outputs[stock], outputs[plugin])
                    if stock not in inputs_of:  # its own folder: the file names repeat
                        folder = tempfile.mkdtemp(dir=tmp)
                        inputs_of[stock] = input_files(export, {"stock": stock}, seq_len,
                                                       folder, args.device)
                    for fn, inputs in inputs_of[stock].items():
                        if time.perf_counter() - start > args.deadline:
                            entry[fn] = "skipped: past --deadline"
                            continue
                        entry[fn] = time_pair(stock, plugin, inputs, function=fn,
                                              device=args.device, rounds=args.rounds,
                                              repetitions=args.repetitions, extra_flags=flags,
                                              max_rounds=args.max_rounds, budget_s=args.budget)
                        if args.profile and "-vs-plugin" not in pair:
                            try:
                                sides = profile_pair(
                                    {"stock": stock, "plugin": plugin}, inputs, function=fn,
                                    device=args.device, calls=5, extra_flags=flags,
                                    mode=default_mode(args.device))
                                entry[f"{fn} profile"] = profile_summary(
                                    sides, model=base, function=fn, seq_len=seq_len, pair=pair)
                            except Exception as e:
                                entry[f"{fn} profile"] = {"error": f"{e}"[-1500:]}
                except Exception as e:  # one failing pair must not end the others
                    entry["error"] = f"{type(e).__name__}: {str(e)[-1500:]}"
                print(json.dumps({key: _brief(entry)}), flush=True)
        row["seconds"] = round(time.perf_counter() - start, 1)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": args.device, "models": results}, f, indent=1)
    return 0


def _brief(entry: dict) -> dict:
    """A pair's verdicts in one line: {fn: (stock ms, plugin ms, ratio, verdict)}."""
    out = {}
    for k, v in entry.items():
        if isinstance(v, dict) and "ratio" in v:
            out[k] = [round(v.get("stock_ms", 0), 3), round(v.get("plugin_ms", 0), 3),
                      round(v["ratio"], 3), v.get("verdict")]
        elif k in ("error", "outputs"):
            out[k] = v
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("stage", help="compile the exports here")
    s.add_argument("--exports", required=True, help="folder of export folders (llm_export.py)")
    s.add_argument("--models", required=True, help="comma-separated export names")
    s.add_argument("--device", default="cuda", help="cuda, hip, vulkan, local-task")
    s.add_argument("--target", default=None, help="chip (default: api.target_flags's)")
    s.add_argument("--variant", action="append", default=[], metavar="NAME=FUSIONS",
                   help="one more build per export, --fusions=FUSIONS, timed as the baseline of "
                   "the plugin's (pair FORM-NAME-vs-plugin)")
    s.add_argument("--variant-models", default="", help="exports the variants are built for "
                   "(default: all)")
    s.add_argument("--out", required=True)
    r = sub.add_parser("run", help="run a staged folder on this machine's device")
    r.add_argument("stage")
    r.add_argument("--device", default="cuda")
    r.add_argument("--models", default="", help="bases in this order (default: all, sorted)")
    r.add_argument("--seq-lens", type=lambda t: [int(x) for x in t.split(",")], default=[128])
    r.add_argument("--rounds", type=int, default=5)
    r.add_argument("--max-rounds", type=int, default=7)
    r.add_argument("--repetitions", type=int, default=10)
    r.add_argument("--budget", type=float, default=15.0, help="seconds per timed pair")
    r.add_argument("--deadline", type=float, default=1e9, help="seconds for the whole run")
    r.add_argument("--profile", action="store_true",
                   help="profile the stock-vs-plugin pairs (not the variants)")
    r.add_argument("--json")
    args = p.parse_args(argv)
    return stage(args) if args.verb == "stage" else run(args)


if __name__ == "__main__":
    sys.exit(main())
