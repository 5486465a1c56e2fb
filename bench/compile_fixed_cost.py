"""The plugin's fixed cost per compile: a 4-line module compiled by iree-compile and by
iree-fusions-compile (--fusions=none, --fusions=all), alternating, medians of `--rounds`;
also `iree-fusions-compile --fusions-list` (imports and pass loading alone) and a bare
`import iree_fusions.tools.compile_cli`.

    python bench/compile_fixed_cost.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODULE = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %a : tensor<4xf32>
  return %b : tensor<4xf32>
}
"""
FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=host"]


def tool(name: str) -> str:
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "tiny.mlir")
        with open(src, "w") as f:
            f.write(MODULE)
        out = os.path.join(tmp, "out.vmfb")
        cmds = {
            "iree-compile": [tool("iree-compile"), src, *FLAGS, "-o", out],
            "--fusions=none": [tool("iree-fusions-compile"), src, *FLAGS, "--fusions=none",
                               "-o", out],
            "--fusions=all": [tool("iree-fusions-compile"), src, *FLAGS, "--fusions=all",
                              "-o", out],
            "--fusions-list": [tool("iree-fusions-compile"), "--fusions-list"],
            "import only": [sys.executable, "-c", "import iree_fusions.tools.compile_cli"],
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.rounds):
            for name, cmd in cmds.items():
                start = time.perf_counter()
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)
    for name, t in times.items():
        print(f"{name:16s} {statistics.median(t):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
