"""iree-fusions-bench and bundles: `--export DIR` adds each model's two builds to a bundle
(`harness/bundle.py` writes it) and says how to run it; `--from DIR` runs one with numpy and
iree.runtime only (`runtime/run.py`), its progress on the bench's bar."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..runtime.manifest import BundleError, load_manifest
from ..runtime.run import run_bundle
from .progress import Progress

if TYPE_CHECKING:  # the --from path imports neither the catalog nor iree.compiler
    from ..harness.bundle import BundleWriter
    from ..models.catalog import Artifact

PROG = "iree-fusions-bench"


def add_to_bundle(bundle: BundleWriter, name: str, artifact: Artifact, outs: dict,
                  source_path: str, counts: tuple, fusions: str, decisions: str | None,
                  changes: list[str], compiled_for: dict | None,
                  parameters: dict[str, str]) -> None:
    """--export: one model's two builds, inputs and reference outputs into the bundle, with
    what the manifest records of each build."""
    from ..harness.bundle import compile_flags

    def info(side: str, flow_counts) -> dict:
        return {"tool": "iree-compile" if side == "stock" else "iree-fusions-compile",
                "flags": compile_flags(outs[side].command, source_path),
                "dispatches": flow_counts.total_dispatches,
                "initializer_dispatches": flow_counts.initializer_dispatches,
                "bytes_between": flow_counts.known_bytes_between,
                "dispatches_per_function": flow_counts.dispatches}

    plugin = {**info("plugin", counts[1]), "fusions": fusions, "decisions": decisions,
              "changes": changes,  # and which passes made them (the runner's bound)
              "passes_changed": sorted({c["pass"] for r in outs["plugin"].reports
                                        for c in r.get("changes", [])})}
    bundle.add(name, inputs=artifact.inputs, stock_vmfb=outs["stock"].output,
               plugin_vmfb=outs["plugin"].output, stock=info("stock", counts[0]),
               plugin=plugin, function=artifact.function, reference=artifact.reference,
               reference_atol=artifact.reference_atol, compiled_for=compiled_for,
               parameters=parameters)


def run_from_bundle(args, finish: Callable[[list[dict], object, str], int]) -> int:
    """--from DIR: numpy and iree.runtime only; `finish(rows, args, title)` reports the rows."""
    progress = Progress(total=1)
    try:
        manifest = load_manifest(args.from_dir)
        device = args.device or manifest.get("device", "local-task")
        progress.total = len(args.models or manifest["models"])
        rows = run_bundle(
            args.from_dir, device=device, models=args.models, rounds=args.rounds,
            repetitions=args.repetitions, atol=args.atol, rtol=args.rtol,
            runtime_flags=args.runtime_flag, max_rounds=args.max_rounds, budget_s=args.budget,
            margin=args.margin, parameters=args.parameter_files,
            progress=_step_or_note(progress))
    except BundleError as e:
        progress.close()
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        progress.close()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    progress.close()
    return finish(rows, args, f"stock IREE vs iree-fusions: bundle "
                              f"{os.path.basename(os.path.abspath(args.from_dir))} on {device}")


def _step_or_note(progress: Progress):
    """The runner's progress lines, shown on the bar: "(i/n) model" starts an item."""
    def show(msg: str) -> None:
        if msg.startswith("warning:"):
            progress.message(f"{PROG}: {msg}")
        elif msg.startswith("(") and ") " in msg:
            progress.step(msg.split(") ", 1)[1])
        else:
            progress.note(msg)
    return show


def bundle_note(bundle: BundleWriter, args) -> None:
    """What --export wrote and how to run it (stderr)."""
    if not bundle.added:
        print(f"{PROG}: no model was exported; {bundle.folder} is as it was", file=sys.stderr)
        return
    size = bundle.size_bytes() / 2**20
    print(f"{PROG}: bundle written to {bundle.folder} ({size:.1f} MiB); run it with\n"
          f"  iree-fusions-bench --from {bundle.folder} --device {args.device}\n"
          f"or, where only numpy and iree-base-runtime are installed,\n"
          f"  python {os.path.join(bundle.folder, 'run_bundle.py')} --device {args.device}",
          file=sys.stderr)
    if args.device == "vulkan" and not args.target:
        print(f"{PROG}: note: compiled for Vulkan target rdna3, which runs only on AMD GPUs; "
              "for NVIDIA export with --target ampere", file=sys.stderr)
