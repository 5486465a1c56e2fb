"""How much batch-mlp-towers can win on a CPU at a given batch: layer by layer, the issue's 6
SiLU towers (256 -> 256 -> 128 -> 64 -> 16) as stock runs them (6 matmul dispatches, PyTorch's
[N,K] weights: transpose_b matmuls) against the same 6 matmuls on [K,N] weights (the layout
alone), and against the batched form the pass emits (1 batch_matmul dispatch on [6,K,N]
weights); bias and SiLU fused in all, weights as function arguments. Layer 1 (shared input)
also against one wide matmul [B,256]x[256,6*256], the "concatenate the weights" alternative.

    python bench/towers_kernel_bound.py --device local-sync --batch 64 --rounds 9
    taskset -c 0 python bench/towers_kernel_bound.py ...     # one core, as the campaign ran

Prints, per layer and form, the median ms (alternating rounds, iree-benchmark-module) and
stock form / form. Stock compiles only (no plugin): this measures IREE's kernels, not the pass.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from iree_fusions.harness.timing import compare_latency

WIDTHS = (256, 256, 128, 64, 16)
TOWERS = 6

SILU = """
  %{r} = linalg.generic {{indexing_maps = [{mo}, {mb}, {mo}], iterator_types = [{it}]}}
      ins(%{mm}, %{b} : {ot}, {bt}) outs(%{e} : {ot}) {{
  ^bb0(%acc: f32, %bias: f32, %unused: f32):
    %pre = arith.addf %acc, %bias : f32
    %neg = arith.negf %pre : f32
    %ex = math.exp %neg : f32
    %c1f = arith.constant 1.0 : f32
    %den = arith.addf %c1f, %ex : f32
    %act = arith.divf %pre, %den : f32
    linalg.yield %act : f32
  }} -> {ot}"""


def _layer(name: str, out_t: str, bias_t: str, contraction: str, rank: int) -> str:
    """One `%r<name> = contraction + bias + SiLU` block, of type `out_t`."""
    dims = ", ".join(f"d{i}" for i in range(rank))
    mo = f"affine_map<({dims}) -> ({dims})>"
    mb = f"affine_map<({dims}) -> ({'d0, ' if rank == 3 else ''}d{rank - 1})>"
    it = ", ".join(['"parallel"'] * rank)
    body = f"""
  %e{name} = tensor.empty() : {out_t}
  %f{name} = linalg.fill ins(%zero : f32) outs(%e{name} : {out_t}) -> {out_t}
  %mm{name} = {contraction} outs(%f{name} : {out_t}) -> {out_t}"""
    body += SILU.format(r=f"r{name}", mo=mo, mb=mb, it=it, mm=f"mm{name}", b=f"b{name}",
                        ot=out_t, bt=bias_t, e=f"e{name}")
    return body


TRANSPOSE_B = ("indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, "
               "affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]")


def separate(batch: int, k: int, n: int, weights_kn: bool = False) -> str:
    """6 independent matmul + bias + SiLU, 6 dispatches. Weights [N,K] as stock keeps
    PyTorch's Linear weights (a transpose_b matmul), or [K,N] as the pass stacks them."""
    args, body, outs = [], "", []
    w_t = f"tensor<{k}x{n}xf32>" if weights_kn else f"tensor<{n}x{k}xf32>"
    maps = "" if weights_kn else f" {TRANSPOSE_B}"
    for t in range(TOWERS):
        args += [f"%x{t}: tensor<{batch}x{k}xf32>", f"%w{t}: {w_t}", f"%b{t}: tensor<{n}xf32>"]
        out_t = f"tensor<{batch}x{n}xf32>"
        body += _layer(str(t), out_t, f"tensor<{n}xf32>",
                       f"linalg.matmul{maps} ins(%x{t}, %w{t} : tensor<{batch}x{k}xf32>, {w_t})",
                       2)
        outs.append((f"%r{t}", out_t))
    return _func(args, body, outs)


def batched(batch: int, k: int, n: int) -> str:
    """One [6,B,K]x[6,K,N] batch_matmul + bias + SiLU: the pass's single dispatch."""
    lhs, out_t = f"tensor<{TOWERS}x{batch}x{k}xf32>", f"tensor<{TOWERS}x{batch}x{n}xf32>"
    args = [f"%x: {lhs}", f"%w: tensor<{TOWERS}x{k}x{n}xf32>", f"%b0: tensor<{TOWERS}x{n}xf32>"]
    block = _layer("0", out_t, f"tensor<{TOWERS}x{n}xf32>",
                   f"linalg.batch_matmul ins(%x, %w : {lhs}, tensor<{TOWERS}x{k}x{n}xf32>)", 3)
    return _func(args, block, [("%r0", out_t)])


def concatenated(batch: int, k: int, n: int) -> str:
    """One [B,K]x[K,6N] matmul + bias + SiLU: shared input, weights side by side."""
    wide = TOWERS * n
    out_t = f"tensor<{batch}x{wide}xf32>"
    args = [f"%x: tensor<{batch}x{k}xf32>", f"%w: tensor<{k}x{wide}xf32>",
            f"%b0: tensor<{wide}xf32>"]
    block = _layer("0", out_t, f"tensor<{wide}xf32>",
                   f"linalg.matmul ins(%x, %w : tensor<{batch}x{k}xf32>, tensor<{k}x{wide}xf32>)",
                   2)
    return _func(args, block, [("%r0", out_t)])


def _func(args: list[str], body: str, outs: list[tuple[str, str]]) -> str:
    results = ", ".join(t for _, t in outs)
    return (f"func.func @main({', '.join(args)}) -> ({results}) {{\n"
            f"  %zero = arith.constant 0.0 : f32{body}\n"
            f"  return {', '.join(v for v, _ in outs)} : {results}\n}}\n")


def _inputs(text: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    head = text.split(") ->")[0]
    shapes = [[int(d) for d in m.split("x")] for m in re.findall(r"tensor<([0-9x]+)xf32>", head)]
    return [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]


def _compile(text: str, folder: str, name: str) -> bytes:
    src, out = os.path.join(folder, f"{name}.mlir"), os.path.join(folder, f"{name}.vmfb")
    with open(src, "w") as f:
        f.write(text)
    tool = os.path.join(os.path.dirname(sys.executable), "iree-compile")
    subprocess.run([tool, src, "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu",
                    "--iree-llvmcpu-target-cpu=host", "-o", out], check=True)
    with open(out, "rb") as f:
        return f.read()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="local-sync")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--repetitions", type=int, default=20)
    args = p.parse_args()
    print("| layer | form | dispatches | ms stock form | ms form | stock form / form |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="towers-bound-") as d:
        for i, (k, n) in enumerate(zip(WIDTHS, WIDTHS[1:])):
            stock_text = separate(args.batch, k, n)
            stock = _compile(stock_text, d, f"stock{i}")
            forms = [("6 matmuls, weights [K,N]", separate(args.batch, k, n, True), TOWERS),
                     ("batch_matmul (the pass)", batched(args.batch, k, n), 1)]
            if i == 0:
                forms.append(("one wide matmul", concatenated(args.batch, k, n), 1))
            for j, (form, text, count) in enumerate(forms):
                other = _compile(text, d, f"form{i}-{j}")
                pair = compare_latency(stock, other, _inputs(stock_text), device=args.device,
                                       rounds=args.rounds, repetitions=args.repetitions,
                                       plugin_inputs=_inputs(text))
                print(f"| {k}->{n} | {form} | {TOWERS} -> {count} | {pair.stock_ms:.4f} | "
                      f"{pair.plugin_ms:.4f} | {pair.ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
