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

import os
import sys

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

    p = llm_suite.pair_parser(__doc__.split("\n")[0])
    p.add_argument("--functions", default="decode,prefill",
                   help="which functions to time (decode, prefill)")
    args = p.parse_args()
    folder, export = llm_suite.pair_setup(args, "attention-heads-")
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
    llm_suite.time_two(export, vmfbs["without"], vmfbs["with"], args.seq, folder,
                       device=args.device, rounds=args.rounds,
                       functions=args.functions.split(","))


if __name__ == "__main__":
    main()
