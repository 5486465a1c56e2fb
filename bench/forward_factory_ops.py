"""Benchmarks for forward-factory-ops on the Llama-style decoder layers (models/llama.py).

    python bench/forward_factory_ops.py --variant start_pos --seq 512 \
        --config stock=none --config plugin=forward-factory-ops \
        --config all='forward-factory-ops{ignore-cost=true}' --rounds 7

For each configuration (a --fusions selection; `none` is stock IREE) it prints the dispatches
in the main function, how many of them only build a factory tensor (every tensor they read is,
transitively, a tiny input / constant / global: the dispatches the pass must remove), the
bytes passed between dispatches, the largest error against PyTorch, and the median latency on
local-task, timing all configurations round-robin (one iree-benchmark-module run each per round)
so that machine noise hits them alike. Exports and stock compilations are cached under
/tmp/iree-fusions-ffo-cache.

    python bench/forward_factory_ops.py --forms [llama-start_pos zoo-gpt2 ...] \
        [--form static --form dynamic-seq]

checks both passes on the forms users compile (models/forms.py: static, dynamic batch /
sequence with and without shape facts, turbine parameters, ONNX, ONNX with parameters, ONNX
with a dynamic sequence): dispatches stock -> plugin per form, what changed, plugin vs stock
at the export's size and at a size a dynamic export never saw, plugin vs PyTorch; a markdown
table (bench/results/forward-factory-ops.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile

import numpy as np
from iree.compiler import ir

from iree_fusions.harness import api
from iree_fusions.compiler import ir_helpers as h
from iree_fusions.compiler.counting import count_flow_module
from iree_fusions.harness.timing import save_inputs, median_latency_ms

CACHE = os.environ.get("IREE_FUSIONS_FFO_CACHE", "/tmp/iree-fusions-ffo-cache")
LEAF_ELEMENTS = 4096  # constants / globals a generated tensor may be computed from
INPUT_ELEMENTS = 16  # function inputs that count as scalars (start_pos), not data
_LEAF_SOURCES = ("hal.tensor.import", "arith.constant", "util.global.load")
_THROUGH = ("flow.tensor.reshape", "flow.tensor.bitcast", "tensor.cast",
            "iree_tensor_ext.compute_barrier.start")


def _is_small_leaf(value: ir.Value) -> bool:
    size = h.static_tensor_bytes(value.type)
    t = value.type
    if size is None or not isinstance(t, ir.RankedTensorType):
        return False
    n = 1
    for d in t.shape:
        n *= d
    op = h.defining_op(value)
    while op is not None and op.name in _THROUGH:
        op = h.defining_op(op.operands[0])
    if op is not None and op.name in ("tensor.empty", "flow.tensor.empty"):
        return True  # no contents: a destination only
    if op is None or op.name == "hal.tensor.import":
        return n <= INPUT_ELEMENTS  # a scalar-like input (start_pos), not the model's data
    return n <= LEAF_ELEMENTS and op.name in _LEAF_SOURCES


def factory_only_dispatches(flow_ir: bytes) -> tuple[int, list[str]]:
    """Dispatches of the entry function whose tensor operands all come, transitively, from tiny
    inputs, constants, globals or other such dispatches: they only build generated tensors."""
    with ir.Context():
        module = ir.Module.parse(flow_ir)
        counts = count_flow_module(module.operation)
        entry = max(counts.dispatches, key=counts.dispatches.get)
        func = next(f for f in h.functions(module.operation)
                    if f.attributes["sym_name"].value == entry)
        factory: set = set()
        names = []
        for op in h.walk_ops(func, ("flow.dispatch",)):
            ok = True
            for v in op.operands:
                if not isinstance(v.type, ir.RankedTensorType):
                    continue
                src = h.defining_op(v)
                while src is not None and src.name in _THROUGH:
                    v = src.operands[0]
                    src = h.defining_op(v)
                if src is not None and src.name == "flow.dispatch" and src in factory:
                    continue
                if not _is_small_leaf(v):
                    ok = False
                    break
            if ok:
                factory.add(op)
                names.append(str(op.attributes["entry_points"][0]).split("::@")[-1])
        return len(names), names


def bench_ms(vmfb_path: str, input_flags: list[str], device: str, reps: int,
             clock: str) -> float:
    """Median of `reps` repetitions of one iree-benchmark-module run: real time, or the CPU
    time of the calling thread (with local-sync all work runs on it, so this is the work
    done, much less disturbed by other processes than wall time on a shared machine)."""
    if clock == "real":
        return median_latency_ms(vmfb_path, input_flags, device=device, repetitions=reps)
    exe = os.path.join(os.path.dirname(sys.executable), "iree-benchmark-module")
    cmd = [exe, f"--module={vmfb_path}", f"--device={device}", "--function=main", *input_flags,
           f"--benchmark_repetitions={reps}", "--benchmark_format=json",
           "--benchmark_report_aggregates_only=true"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    for b in json.loads(proc.stdout)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
            return b["cpu_time"] * scale
    raise RuntimeError(f"no median in the output of {' '.join(cmd)}")


def _key(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def build(variant: str, seq: int, overrides: dict):
    """The bench Artifact of one Llama variant, cached on disk."""
    from iree_fusions.models import llama

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"art-{variant}-{seq}-{_key(sorted(overrides.items()))}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    art = llama.build_artifact(variant, seq, **overrides)
    with open(path, "wb") as f:
        pickle.dump(art, f)
    return art


def compile_config(art, fusions: str, device: str, compile_to: str | None = None) -> bytes:
    """Compiles with `--fusions=<fusions>` (`none`: stock iree-compile); `FUSIONS;--flag;...`
    adds compiler flags (e.g. `none;--iree-opt-const-expr-hoisting=false`)."""
    fusions, *extra = fusions.split(";")
    stock = fusions == "none"
    key = _key(art.source[:4096], len(art.source), fusions, device, compile_to,
               hashlib.sha1(art.source).hexdigest(), extra)
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"out-{key}.bin")
    if stock and os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    with tempfile.NamedTemporaryFile(suffix=".mlirbc", delete=False) as f:
        f.write(art.source)
        src = f.name
    try:
        out = api.compile_file(src, device=device, flags=[*art.flags, *extra], stock=stock,
                               fusions=fusions, compile_to=compile_to).output
    finally:
        os.unlink(src)
    if stock:
        with open(path, "wb") as f:
            f.write(out)
    return out


def micro_ir(kind: str, seq: int, heads: int, dim: int = 64, consumers: int = 2) -> str:
    """Linalg IR where the generated tensor is most of the work, to measure its two costs.

    mask: positions = arange(S) + start; mask[i,j] = select(j <= pos[i], 0, -1e30) (S x S);
          each consumer adds it to its own [H,S,S] input.
    rope: angle[i,d] = pos[i] * exp(-d/8); cos and sin of it (S x D); each consumer computes
          x*cos + x*sin on its own [H,S,D] input.
    """
    big = f"tensor<{heads}x{seq}x{seq if kind == 'mask' else dim}xf32>"
    table = f"tensor<{seq}x{seq if kind == 'mask' else dim}xf32>"
    args = ["%start: tensor<i64>"] + [f"%x{c}: {big}" for c in range(consumers)]
    out = [f"util.func public @main({', '.join(args)}) -> ({', '.join([big] * consumers)}) {{",
           f"  %ep = tensor.empty() : tensor<{seq}xf32>",
           f"  %et = tensor.empty() : {table}",
           f"  %eb = tensor.empty() : {big}",
           "  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> "
           "(d0)>], iterator_types = [\"parallel\"]} ins(%start : tensor<i64>) outs(%ep : "
           f"tensor<{seq}xf32>) {{",
           "  ^bb0(%s: i64, %o: f32):",
           "    %i = linalg.index 0 : index",
           "    %ii = arith.index_cast %i : index to i64",
           "    %p = arith.addi %ii, %s : i64",
           "    %f = arith.sitofp %p : i64 to f32",
           "    linalg.yield %f : f32",
           f"  }} -> tensor<{seq}xf32>"]
    head = ("linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) "
            "-> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]} ins(%pos : "
            f"tensor<{seq}xf32>) outs(%et : {table}) {{")
    if kind == "mask":
        out += [f"  %t0 = {head}", "  ^bb0(%p: f32, %o: f32):",
                "    %j = linalg.index 1 : index", "    %jj = arith.index_cast %j : index to i64",
                "    %jf = arith.sitofp %jj : i64 to f32",
                "    %ok = arith.cmpf ole, %jf, %p : f32",
                "    %z = arith.constant 0.0 : f32", "    %n = arith.constant -1.0e+30 : f32",
                "    %m = arith.select %ok, %z, %n : f32", "    linalg.yield %m : f32",
                f"  }} -> {table}"]
        tables = ["%t0"]
    else:
        for name, fn in (("%t0", "math.cos"), ("%t1", "math.sin")):
            out += [f"  {name} = {head}", "  ^bb0(%p: f32, %o: f32):",
                    "    %j = linalg.index 1 : index",
                    "    %jj = arith.index_cast %j : index to i64",
                    "    %jf = arith.sitofp %jj : i64 to f32",
                    "    %c = arith.constant -0.125 : f32", "    %e = arith.mulf %jf, %c : f32",
                    "    %w = math.exp %e : f32", "    %a = arith.mulf %p, %w : f32",
                    f"    %r = {fn} %a : f32", "    linalg.yield %r : f32", f"  }} -> {table}"]
        tables = ["%t0", "%t1"]
    maps = ", ".join(["affine_map<(d0, d1, d2) -> (d0, d1, d2)>"]
                     + ["affine_map<(d0, d1, d2) -> (d1, d2)>"] * len(tables)
                     + ["affine_map<(d0, d1, d2) -> (d0, d1, d2)>"])
    for c in range(consumers):
        args_t = ", ".join([big] + [table] * len(tables))
        bb = ", ".join(["%x: f32"] + [f"%u{k}: f32" for k in range(len(tables))] + ["%o: f32"])
        body = (["    %y = arith.addf %x, %u0 : f32"] if kind == "mask" else
                ["    %a = arith.mulf %x, %u0 : f32", "    %b = arith.mulf %x, %u1 : f32",
                 "    %y = arith.addf %a, %b : f32"])
        out += [f"  %r{c} = linalg.generic {{indexing_maps = [{maps}], iterator_types = "
                f"[\"parallel\", \"parallel\", \"parallel\"]}} ins(%x{c}, "
                f"{', '.join(tables)} : {args_t}) outs(%eb : {big}) {{", f"  ^bb0({bb}):",
                *body, "    linalg.yield %y : f32", f"  }} -> {big}"]
    outs = ", ".join(f"%r{c}" for c in range(consumers))
    out += [f"  util.return {outs} : {', '.join([big] * consumers)}", "}"]
    return "\n".join(out)


FORMS_FUSIONS = "forward-factory-ops,forward-factory-dispatches"


def form_models():
    """The models of `--forms`: the Llama-style variants (B=2, S=64: torch.export specializes
    a batch of 1; other sizes B=3 / S=40) and zoo decoders with masks and rotary tables."""
    from iree_fusions.models import forms, llama, zoo

    every = (*forms.FORMS, "dynamic-seq-facts", "dynamic-batch-facts", "onnx-dynamic-seq")
    out = [forms.FormModel(
        f"llama-{v}", lambda b, s, v=v: llama.build_llama(v, s, batch=b), 2, 64, every,
        export_kwargs=lambda form, v=v: {} if "onnx" in form else {"keep_ops": llama.keep_ops(v)})
        for v in llama.VARIANTS]
    for name in ("gpt2", "gpt-neox", "llama"):
        arch = next(a for a in zoo.ARCHITECTURES if a.name == name)
        out.append(forms.FormModel(
            f"zoo-{name}", lambda b, s, arch=arch: zoo.build_positional(arch, b, s), 2,
            zoo.SEQ, (*forms.FORMS, "onnx-dynamic-seq"), other_seq=21,
            export_kwargs=lambda form, arch=arch: (
                {"dims": list(arch.seq_dims), "ranges": arch.seq_ranges()}
                if "dynamic-seq" in form else {})))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--forms", nargs="*", metavar="MODEL",
                   help="the forms table for these models of form_models() (none: all)")
    p.add_argument("--form", action="append", help="with --forms: only these forms")
    p.add_argument("--variant", default="start_pos")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--set", action="append", default=[], metavar="FIELD=INT",
                   help="LlamaConfig override, e.g. --set n_heads=4 --set head_dim=64")
    p.add_argument("--config", action="append", default=[], metavar="NAME=FUSIONS")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--device", default="local-task")
    p.add_argument("--clock", choices=("real", "cpu"), default="real",
                   help="real: wall time (local-task); cpu: CPU time of the calling thread "
                        "(use with --device local-sync on a loaded machine)")
    p.add_argument("--no-time", action="store_true")
    p.add_argument("--micro", choices=("mask", "rope"),
                   help="time a micro model (micro_ir) instead of a Llama variant")
    p.add_argument("--heads", type=int, default=8, help="micro: broadcast factor H")
    p.add_argument("--dim", type=int, default=64, help="micro rope: table width D")
    args = p.parse_args(argv)
    if args.forms is not None:
        from iree_fusions.models import forms

        models = [m for m in form_models() if not args.forms or m.name in args.forms]
        forms.run_table(models, FORMS_FUSIONS, args.form)
        return 0
    configs = [c.split("=", 1) for c in (args.config or ["stock=none",
                                                          "plugin=forward-factory-ops"])]
    overrides = {k: int(v) for k, v in (s.split("=", 1) for s in args.set)}
    if args.micro:
        from iree_fusions.models.catalog import Artifact
        from iree_fusions.harness.numerics import random_inputs

        text = micro_ir(args.micro, args.seq, args.heads, args.dim)
        art = Artifact(text.encode(), random_inputs(text, int_high=5), [], None)
        label = f"micro {args.micro} S={args.seq} H={args.heads} D={args.dim}"
    else:
        art = build(args.variant, args.seq, overrides)
        label = f"{args.variant} S={args.seq} {overrides or ''}".strip()
    vmfbs = {}
    rows = []
    for name, fusions in configs:
        flow = compile_config(art, fusions, args.device, "flow")
        vmfbs[name] = compile_config(art, fusions, args.device)
        with ir.Context():
            counts = count_flow_module(ir.Module.parse(flow).operation)
        entry = max(counts.dispatches, key=counts.dispatches.get)
        n_factory, _ = factory_only_dispatches(flow)
        out = api.run(vmfbs[name], art.inputs, device=args.device)
        if art.reference is None:  # micro models: against the first configuration
            art.reference = out
        err = max(float(np.abs(o - r).max()) for o, r in zip(out, art.reference))
        rows.append([name, counts.dispatches[entry], n_factory, counts.bytes_between[entry], err])
    times: dict[str, list[float]] = {name: [] for name, _ in configs}
    if not args.no_time:
        with tempfile.TemporaryDirectory() as tmp:
            flags = save_inputs(art.inputs, tmp)
            paths = {}
            for name, blob in vmfbs.items():
                paths[name] = os.path.join(tmp, f"{name}.vmfb")
                with open(paths[name], "wb") as f:
                    f.write(blob)
            names = [n for n, _ in configs]
            for r in range(args.rounds):
                order = names if r % 2 == 0 else names[::-1]
                for name in order:
                    times[name].append(bench_ms(paths[name], flags, args.device, args.reps,
                                                args.clock))
    first = configs[0][0]
    base = statistics.median(times[first]) if times[first] else None
    base_min = min(times[first]) if times[first] else None
    print(f"## {label} ({args.device}, {args.clock} time, {args.rounds} rounds x {args.reps} "
          f"reps)")
    print("| config | --fusions | dispatches | factory-only | bytes between | max err vs torch "
          "| median ms | ratio first/this (median) | min ms | ratio (min) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (name, fusions), row in zip(configs, rows):
        t = statistics.median(times[name]) if times[name] else None
        m = min(times[name]) if times[name] else None
        ratio = f"{base / t:.3f}" if t and base else "-"
        ratio_min = f"{base_min / m:.3f}" if m and base_min else "-"
        ms = f"{t:.3f}" if t else "-"
        mins = f"{m:.3f}" if m else "-"
        print(f"| {name} | `{fusions}` | {row[1]} | {row[2]} | {row[3]} | {row[4]:.2e} | {ms} "
              f"| {ratio} | {mins} | {ratio_min} |")
    for name, _ in configs:
        if times[name]:
            print(f"  {name} rounds: {[round(x, 3) for x in times[name]]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
