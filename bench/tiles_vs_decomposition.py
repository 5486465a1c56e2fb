"""rewrite-attention's two CPU forms of one attention side by side: the decomposition against
IREE's fused op with the plugin's CPU tiles (`fused-tiles`), alternating rounds, medians.

    python bench/tiles_vs_decomposition.py decode-f16-kv1024 llama-mask-f16-s512-hd32 \\
        [--cpu host|x86-64-v3|x86-64] [--device local-sync] [--rounds 9] [--max-rounds 21]

Each form (a name of `bench/attention_forms.py`'s suite) is compiled twice for the CPU, with
`rewrite-attention{fused-tiles=false}` (the decomposition) and with a decisions file that sets
the form's tiles key (`rewrite-attention-tiles-<digest>`) on, and the two programs are timed as
`iree-fusions-bench` times stock against the plugin: the ratio is decomposition / tiles (above
1: the tiles are faster), with its interval and verdict. A form whose tiles do not apply says
so. What `tiles.fused_faster`'s rule per CPU was calibrated by (bench/results/attention-forms.md,
"fused-tiles").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from iree_fusions.compiler.decisions import Decision, DecisionSet
from iree_fusions.compiler.target import Target
from iree_fusions.harness import api
from iree_fusions.runtime.benchmark import time_pair

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_forms import SUITE, write_inputs, write_vmfb  # noqa: E402

PASS = "rewrite-attention"


def tiles_key(compiled: api.CompileOutput) -> tuple[str | None, str | None]:
    """(the form's tiles key, the target it compiled for), from the compile's report."""
    keys = [c.key for p in compiled.passes for c in p.choices]
    target = next((p.target for p in compiled.passes if p.target), None)
    return (keys[0] if len(keys) == 1 else None), target


def measure(name: str, args, tmp: str) -> dict:
    form = {f.name: f for f in SUITE}[name]
    text, flags = form.torch_ir(), ["--iree-input-type=torch"]
    opts = dict(device=args.device, target=args.cpu, flags=flags)
    decomposed = api.compile_str(text, fusions=f"{PASS}{{fused-tiles=false}}", **opts)
    key, target = tiles_key(api.compile_str(text, fusions=PASS, **opts))
    if key is None:
        return {"form": name, "cpu": args.cpu, "note": "the tiles do not apply to this form"}
    decisions = os.path.join(tmp, "decisions.json")
    DecisionSet(Target.parse(target), decisions, entries={
        key: Decision(key, PASS, True, decisions)}).save(decisions)
    tiled = api.compile_str(text, fusions=PASS, decisions=decisions, **opts)
    paths = [write_vmfb(tmp, f"{name}-{side}", out.output)
             for side, out in (("decomposed", decomposed), ("tiled", tiled))]
    inputs = write_inputs(tmp, name, form.inputs())
    j = time_pair(*paths, inputs, device=args.device, rounds=args.rounds,
                  max_rounds=args.max_rounds)
    return {"form": name, "cpu": args.cpu, "target": target, "device": args.device,
            "decomposed_ms": j["stock_ms"], "tiles_ms": j["plugin_ms"], "ratio": j["ratio"],
            "interval": [j["ratio_low"], j["ratio_high"]], "verdict": j["verdict"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("forms", nargs="+")
    p.add_argument("--cpu", default="host", help="--iree-llvmcpu-target-cpu")
    p.add_argument("--device", default="local-sync")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--max-rounds", type=int, default=21)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.forms:
            row = measure(name, args, tmp)
            print(json.dumps(row), flush=True)
            if "ratio" in row:
                low, high = row["interval"]
                print(f"{name:28} {row['target']:22} decomposition {row['decomposed_ms']:9.3f} "
                      f"ms  tiles {row['tiles_ms']:9.3f} ms  decomposition / tiles "
                      f"{row['ratio']:.3f} [{low:.3f}, {high:.3f}] {row['verdict']}",
                      file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
