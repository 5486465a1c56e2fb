"""Compile-time overhead of the phase-split driver against plain iree-compile.

    python bench/compile_overhead.py minilm-b1-s128 --rounds 7
    python bench/compile_overhead.py form:long-f32-s4096-dyn hf:vit --rounds 9 \
        --configs stock,none,attention,all

For each model (a name of `iree-fusions-bench --list`; `form:NAME`, a form of
`bench/attention_forms.py`; `hf:vit` or `hf:bert`, a 2-layer HF transformers model with
`attn_implementation="sdpa"` exported by iree-turbine, `bench/hf_sdpa_export.py`; or a
torch-dialect `.mlir` file) it writes the model once, then runs,
alternating the order each round, the same llvm-cpu compile to a .vmfb with

    stock   iree-compile
    none    iree-fusions-compile --fusions=none   (the phase-split driver, no pass)
    attention  ... --fusions=rewrite-attention    (only with --configs)
    all     iree-fusions-compile --fusions=all    (the driver and every pass)
    keep    ... --fusions=all --fusions-keep-no-gain (no stock run weighing the linalg changes)

and prints each one's median wall time over the rounds and the ratios to stock. `none` is the
cost of the driver itself (Python start-up, imports, splitting the pipeline into three
invocations, moving the module between them); `all - none` is what the passes cost;
`all - keep` is the extra stock dispatch-creation run that decides whether the linalg
changes are kept (it runs only when they changed the IR and none of them is sure to pay or
exempt). `bench/compile_scaling.py` measures how all of it grows with the model's depth.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from iree_fusions.harness import api
from iree_fusions.models.catalog import all_models

CONFIGS = {
    "stock": lambda tool: [tool("iree-compile")],
    "none": lambda tool: [tool("iree-fusions-compile"), "--fusions=none"],
    "attention": lambda tool: [tool("iree-fusions-compile"), "--fusions=rewrite-attention"],
    "all": lambda tool: [tool("iree-fusions-compile"), "--fusions=all"],
    # without the stock dispatch-creation run that weighs the linalg changes
    "keep": lambda tool: [tool("iree-fusions-compile"), "--fusions=all", "--fusions-keep-no-gain"],
}


def tool(name: str) -> str:
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


def write_model(name: str, tmp: str) -> tuple[str, list[str]]:
    """The model's source file in `tmp` (or the given .mlir) and its own compile flags."""
    torch_input = ["--iree-input-type=torch"]
    if name.endswith(".mlir"):
        return name, torch_input
    if name.startswith(("form:", "hf:")):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        if name.startswith("form:"):
            from attention_forms import SUITE
            text = {f.name: f for f in SUITE}[name[5:]].torch_ir()
        else:
            from hf_sdpa_export import export
            text = export(name[3:])
        path = os.path.join(tmp, "model.mlir")
        with open(path, "w") as f:
            f.write(text)
        return path, torch_input
    art = all_models()[name].build()
    return art.write(tmp), list(art.flags)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=["minilm-b1-s128"])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--configs", default="stock,none,all,keep",
                   help=f"comma-separated, of {', '.join(CONFIGS)} (stock first)")
    args = p.parse_args(argv)
    configs = args.configs.split(",")
    if configs[0] != "stock" or not set(configs) <= set(CONFIGS):
        p.error(f"--configs: stock first, then any of {', '.join(CONFIGS)}")
    for name in args.models:
        with tempfile.TemporaryDirectory(prefix="compile-overhead-") as tmp:
            src, model_flags = write_model(name, tmp)
            flags = [*api.target_flags("local-task", None), *model_flags]
            times: dict[str, list[float]] = {k: [] for k in configs}
            for r in range(args.rounds):
                order = configs if r % 2 == 0 else configs[::-1]
                for key in order:
                    cmd = [*CONFIGS[key](tool), src, *flags, "-o", os.path.join(tmp, "m.vmfb")]
                    t0 = time.perf_counter()
                    subprocess.run(cmd, check=True, capture_output=True)
                    times[key].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name}: median compile wall time over {args.rounds} rounds")
            for key, values in times.items():
                print(f"  {key:5s} {med[key]:6.2f} s  x{med[key] / med['stock']:.3f} of stock"
                      f"  (rounds: {', '.join(f'{t:.2f}' for t in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
