"""rewrite-attention's `kv-heads` (k and v read once per KV head) measured on a sharktank
export: the plugin with it (the default) against the plugin without it
(`rewrite-attention{kv-heads=false}`), everything else the same.

    python bench/attention_heads.py EXPORT_FOLDER [--seq 64] [--rounds 7]
        [--device local-sync] [--folder DIR] [--functions decode,prefill]

EXPORT_FOLDER is a sharktank export as bench/llm_export.py writes it. Prints the dispatches
per function of both builds (flow counts), whether prefill's and decode's logits and cache
are bit-identical at `--seq` tokens (they must be: the same sums in the same order), and
decode and prefill latency, alternating rounds (ratio = without / with: > 1 is faster with
it). Results: bench/results/llm-suite.md, "k and v once per KV head".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

WITHOUT = "rewrite-attention{kv-heads=false}"


def selection(without: bool) -> str:
    """--fusions: every default pass, rewrite-attention with kv-heads off if `without`."""
    from iree_fusions.compiler import registry

    return ",".join(WITHOUT if without and name == "rewrite-attention" else name
                    for name in registry.default_pass_names())


def main() -> None:
    import llm_suite
    from iree_fusions.harness import api
    from iree_fusions.runtime.benchmark import time_pair
    from iree_fusions.runtime.modules import parameter_flags

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("export")
    p.add_argument("--seq", type=int, default=64, help="prefill length; decode after it")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--device", default="local-sync")
    p.add_argument("--functions", default="decode,prefill",
                   help="which functions to time (decode, prefill)")
    p.add_argument("--folder", default=None, help="keep the builds here")
    args = p.parse_args()
    folder = args.folder or tempfile.mkdtemp(prefix="attention-heads-")
    os.makedirs(folder, exist_ok=True)
    export = llm_suite.Export(args.export)
    vmfbs = {}
    for side, without in (("without", True), ("with", False)):
        out = api.compile_file(export.mlir, device=llm_suite.DEVICE,
                               fusions=selection(without), flow_counts=True)
        vmfbs[side] = os.path.join(folder, f"{side}.vmfb")
        with open(vmfbs[side], "wb") as f:
            f.write(out.output)
        counts = {name.removesuffix("$async"): n
                  for name, n in out.flow_counts.dispatches.items() if n}
        print(f"{export.name} {side} kv-heads: dispatches " +
              "  ".join(f"{fn} {n}" for fn, n in sorted(counts.items())))
    outputs = {side: llm_suite.prefill_then_decode(path, export, args.seq)
               for side, path in vmfbs.items()}
    for key, verdict in llm_suite.compare_bits(outputs["without"], outputs["with"]).items():
        print(f"  {key} at S={args.seq}: {verdict}")
    inputs = llm_suite.input_files(export, {"stock": vmfbs["without"]}, args.seq, folder)
    wanted = args.functions.split(",")
    for function, paths in inputs.items():
        if not any(w in function for w in wanted):
            continue
        verdict = time_pair(vmfbs["without"], vmfbs["with"], paths, function=function,
                            device=args.device, rounds=args.rounds, repetitions=5,
                            extra_flags=parameter_flags(export.parameters))
        print(f"  {function} S={args.seq} {args.device}: without {verdict['stock_ms']:.2f} ms, "
              f"with {verdict['plugin_ms']:.2f} ms, ratio {verdict['ratio']:.3f} "
              f"[{verdict['ratio_low']:.3f}, {verdict['ratio_high']:.3f}] {verdict['verdict']}")


if __name__ == "__main__":
    main()
