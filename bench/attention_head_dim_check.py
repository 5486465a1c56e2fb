"""Stock IREE's fused attention vs its own decomposition pipeline vs the plugin, against
PyTorch (f32), on one sharktank-style SDPA (q, k, v [4, 4, S, D] f16, an f16 causal mask).

    python bench/attention_head_dim_check.py [S] [D] [dyn] [--cpu CPU]

Found 2026-11-28 on toy DeepSeek (MLA, head dim 192): IREE 3.13's fused op on llvm-cpu gives
max |d| 2.18 (max |ref| 3.26) at D = 192 for host (znver3) and x86-64 code, 0.0014 at D = 128;
the pipeline and the plugin (rewrite-attention) 0.0010 at D = 192. Needs torch."""

import argparse

import numpy as np
import torch

from iree_fusions.harness import api
from iree_fusions.models.llama import sharktank_sdpa_ir

ap = argparse.ArgumentParser()
ap.add_argument("seq", type=int, nargs="?", default=64)
ap.add_argument("dim", type=int, nargs="?", default=192)
ap.add_argument("dyn", nargs="?", default="")
ap.add_argument("--cpu", default="host")
args = ap.parse_args()
S, D = args.seq, args.dim
s = "?" if args.dyn == "dyn" else str(S)
text = sharktank_sdpa_ir(f"4,4,{s},{D}", f"4,1,{s},{s}")
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((4, 4, S, D)).astype(np.float16) for _ in range(3))
mask = np.triu(np.full((S, S), -np.inf, np.float32), 1).astype(np.float16)
masks = np.ascontiguousarray(np.broadcast_to(mask, (4, 1, S, S)))
ref = torch.nn.functional.scaled_dot_product_attention(
    *(torch.from_numpy(x).float() for x in (q, k, v)),
    attn_mask=torch.from_numpy(masks).float()).numpy()
flags = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         f"--iree-llvmcpu-target-cpu={args.cpu}"]
pipeline = ("--iree-preprocessing-pass-pipeline=builtin.module(util.func("
            "iree-linalg-ext-convert-attention-to-online-attention,"
            "iree-linalg-ext-decompose-attention))")
for name, kw in (("stock", dict(stock=True, flags=flags)),
                 ("pipeline", dict(stock=True, flags=flags + [pipeline])),
                 ("plugin", dict(fusions="rewrite-attention", flags=flags))):
    (out,) = api.run(api.compile_str(text, **kw).output, [q, k, v, masks], "main")
    err = np.nanmax(np.abs(np.asarray(out).astype(np.float32) - ref))
    print(f"{name:9s} max |d| vs PyTorch f32: {err:.4g} (max |ref| {np.abs(ref).max():.4g})")
