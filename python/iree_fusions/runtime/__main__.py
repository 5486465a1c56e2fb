"""The command line of a bundle: `python DIR/run_bundle.py [DIR] [--device cuda] [--json
rows.json]` (the bundle's launcher runs this), `python -m iree_fusions.runtime DIR`."""

from __future__ import annotations

import argparse
import os
import sys

from .manifest import MANIFEST, BundleError
from .modules import add_parameters_argument, parse_parameters
from .run import run_bundle
from .statistics import add_timing_arguments
from .table import report


def main(argv: list[str] | None = None) -> int:
    # In a bundle this package is the folder `runtime` beside manifest.json.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(
        prog="run_bundle.py", description="Run an iree-fusions bundle: stock vs plugin, "
        "numerics checked, latency ratio (needs only numpy and iree-base-runtime).")
    p.add_argument("folder", nargs="?",
                   default=here if os.path.exists(os.path.join(here, MANIFEST)) else None,
                   help="the bundle (default: the folder of this script)")
    p.add_argument("--device", help="runtime device (default: the one the bundle was "
                   "compiled for), e.g. local-task, local-sync, cuda, hip, vulkan")
    p.add_argument("--model", action="append", default=[], help="run only this model "
                   "(repeatable)")
    add_timing_arguments(p)
    p.add_argument("--atol", type=float, default=1e-5, help="stock vs plugin abs tolerance")
    p.add_argument("--rtol", type=float, default=1e-4, help="stock vs plugin rel tolerance")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag for both timings (repeatable)")
    add_parameters_argument(p)
    p.add_argument("--json", help="write the rows as JSON to this file (- for stdout); "
                   "`python -m iree_fusions.tools.plot FILE -o plot.png` draws them")
    args = p.parse_args(argv)
    if args.folder is None:
        p.error("no bundle folder given")
    try:
        parameters = parse_parameters(args.parameters)
    except ValueError as e:
        p.error(str(e))
    try:
        rows = run_bundle(args.folder, device=args.device, models=args.model,
                          rounds=args.rounds, repetitions=args.repetitions, atol=args.atol,
                          rtol=args.rtol, runtime_flags=args.runtime_flag,
                          max_rounds=args.max_rounds, budget_s=args.budget,
                          margin=args.margin, parameters=parameters)
    except BundleError as e:
        print(f"run_bundle.py: error: {e}", file=sys.stderr)
        return 2
    return report(rows, args.json)


if __name__ == "__main__":
    sys.exit(main())
