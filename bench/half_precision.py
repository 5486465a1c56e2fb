"""The catalog's bf16 / f16 models through the plugin: dispatches, passes, numerics.

    python bench/half_precision.py [MODEL ...] [--out FILE.json] [--keep-no-gain]

Per model (default: every half model of the catalog, `catalog.half_models()`): stock IREE and
the plugin (`--fusions=all`) built for llvm-cpu, run on local-task with the same inputs and
compared (bit-identical, or the max abs difference); the same for each against PyTorch's
eager run of the half model; dispatch counts and bytes between dispatches from
`--compile-to=flow`; what each pass changed and the reasons it gave for what it left alone.
`test_half_precision.py` (slow) checks the same per model.

IREE 3.13 on llvm-cpu fails to compile some bf16 models, stock as well as with the plugin:
`iree-convert-bf16-arith-to-f32` retypes a bf16 `dense_resource` constant that was inlined
into a dispatch (a bias) to f32 without converting its data ("'arith.constant' op failed to
verify that all of {value, result} have same type"). `--flag` with BF16_WORKAROUND (no constant
inlined into dispatches) avoids it; the results file says which rows used it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models.catalog import half_models
from iree_fusions.harness.numerics import compare_compilations

# Keeps constants out of dispatches: avoids IREE 3.13's bf16 constant bug (module docstring).
BF16_WORKAROUND = "--iree-flow-inline-constants-max-byte-length=0"


def bit_identical(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
        for x, y in zip(a, b))


def max_ulps(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The largest difference between `a` and `b` in units in the last place of `a`'s type
    at `a`'s value."""
    worst = 0.0
    for x, y in zip(a, b):
        ulp = np.spacing(np.abs(x).astype(np.float32).astype(x.dtype)).astype(np.float64)
        diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
        worst = max(worst, float((diff / np.maximum(ulp, np.finfo(np.float64).tiny)).max()))
    return worst


def check_model(name: str, keep_no_gain: bool = False, extra_flags: Sequence[str] = ()
                ) -> dict:
    """Everything the half-precision table and test need about one model."""
    model = half_models()[name]
    t0 = time.perf_counter()
    art = model.build()
    art.flags = [*art.flags, *extra_flags]
    export_s = time.perf_counter() - t0
    try:
        check = compare_compilations(art.source, art.inputs, flags=art.flags, fusions="all",
                                     function=art.function, keep_no_gain=keep_no_gain)
    except api.CompilerToolError as e:
        return plugin_only(name, model.dtype, art, e, keep_no_gain)
    row: dict = {
        "model": name, "dtype": model.dtype, "export_s": round(export_s, 1),
        "dispatches": [check.stock_dispatches, check.plugin_dispatches],
        "bytes_between": [check.stock_counts.total_bytes_between,
                          check.plugin_counts.total_bytes_between],
        "bit_identical": bit_identical(check.stock, check.plugin),
        "max_abs": check.agreement.max_abs,
        "max_ulps": max_ulps(check.stock, check.plugin),
        "output_peak": max(float(np.abs(o.astype(np.float64)).max()) for o in check.stock),
        "changes": [], "skips": {},
    }
    for r in check.reports:
        row["changes"] += [f"{r['pass']}: {c['what']}" for c in r.get("changes", [])]
        reasons = Counter(s["reason"] for s in r.get("skipped", []))
        if reasons:
            row["skips"][r["pass"]] = [f"{n} x {reason}" for reason, n in reasons.items()]
    if art.reference is not None:
        row["reference_atol"] = art.reference_atol
        row["stock_vs_torch"] = api.compare_outputs(art.reference, check.stock).max_abs
        row["plugin_vs_torch"] = api.compare_outputs(art.reference, check.plugin).max_abs
    return row


def _first_error(e: api.CompilerToolError) -> str:
    lines = [line for line in e.stderr.splitlines() if "error:" in line]
    return (lines[0] if lines else e.stderr.strip().splitlines()[-1])[:300]


def plugin_only(name: str, dtype: str, art, error: api.CompilerToolError,
                keep_no_gain: bool) -> dict:
    """Where one of the four compiles failed: which one (stock or plugin), and the plugin
    build alone against PyTorch when only stock failed."""
    row: dict = {"model": name, "dtype": dtype, "changes": [], "skips": {}}
    with tempfile.TemporaryDirectory(prefix="iree-fusions-half-") as tmp:
        path = os.path.join(tmp, "model.mlir")
        with open(path, "wb") as f:
            f.write(art.source)
        for side, kw in (("stock", dict(stock=True)),
                         ("plugin", dict(fusions="all", keep_no_gain=keep_no_gain))):
            try:
                out = api.compile_file(path, flags=art.flags, **kw)
                flow = api.compile_file(path, flags=art.flags, compile_to="flow", **kw)
            except api.CompilerToolError as e:
                row[f"{side}_error"] = _first_error(e)
                continue
            row[f"{side}_dispatches"] = count_flow_ir(flow.output).total_dispatches
            if side == "plugin":
                got = api.run(out.output, art.inputs, art.function)
                row["plugin_vs_torch"] = api.compare_outputs(art.reference, got).max_abs
                row["reference_atol"] = art.reference_atol
                for r in out.reports:
                    row["changes"] += [f"{r['pass']}: {c['what']}"
                                       for c in r.get("changes", [])]
    return row


def table(rows: list[dict]) -> str:
    lines = ["| model | dispatches stock -> plugin | bytes between | passes that changed it | "
             "stock vs plugin | vs PyTorch (stock / plugin, atol) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        passes = sorted({c.split(":")[0] for c in r["changes"]}) or ["none"]
        if "dispatches" not in r:  # a compile failed
            fail = "; ".join(f"{side} compile fails: {r[side + '_error']}"
                             for side in ("stock", "plugin") if f"{side}_error" in r)
            ref = (f"- / {r['plugin_vs_torch']:.3g}, {r['reference_atol']:.3g}"
                   if "plugin_vs_torch" in r else "-")
            lines.append(f"| {r['model']} | {r.get('stock_dispatches', 'fails')} -> "
                         f"{r.get('plugin_dispatches', 'fails')} | - | {', '.join(passes)} | "
                         f"{fail} | {ref} |")
            continue
        numerics = ("bit-identical" if r["bit_identical"] else
                    f"max abs {r['max_abs']:.3g} ({r['max_ulps']:.3g} ulp)")
        ref = (f"{r['stock_vs_torch']:.3g} / {r['plugin_vs_torch']:.3g}, "
               f"{r['reference_atol']:.3g}" if "reference_atol" in r else "-")
        lines.append(f"| {r['model']} | {r['dispatches'][0]} -> {r['dispatches'][1]} | "
                     f"{r['bytes_between'][0]} -> {r['bytes_between'][1]} | "
                     f"{', '.join(passes)} | {numerics} | {ref} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="default: every half model of the catalog")
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--keep-no-gain", action="store_true",
                        help="keep changes that save neither dispatches nor bytes")
    parser.add_argument("--flag", action="append", default=[],
                        help="an extra iree-compile flag for both builds (repeatable), e.g. "
                        f"{BF16_WORKAROUND} (see the module docstring)")
    args = parser.parse_args(argv)
    names = args.models or list(half_models())
    rows = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        row = check_model(name, args.keep_no_gain, args.flag)
        rows.append(row)
        print(json.dumps(row, indent=1), file=sys.stderr, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
