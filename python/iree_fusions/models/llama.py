"""Llama-style decoder layers in PyTorch, exported at run time (weights are never stored).

Each layer: RMSNorm -> q/k/v projections -> RoPE (cos/sin of positions from `arange` times
inverse frequencies, also from `arange`) -> attention with a mask built by comparing index
vectors -> o projection -> residual -> RMSNorm -> SwiGLU MLP -> residual.

Variants (`VARIANTS`), which differ in how positions and the mask are made:

- ``const``: positions are `arange(S)`: every generated tensor is a compile-time constant.
- ``start_pos``: positions are `arange(S) + start_pos`, `start_pos` a 0-d int64 input; the
  causal mask compares query positions with key positions `arange(S)`.
- ``sdpa``: as ``start_pos``, attention through `F.scaled_dot_product_attention` with an
  explicit float mask expanded to [1, H, S, S]; exported with the op kept
  (`keep_ops(variant)`), so IREE sees `iree_linalg_ext.attention` and materializes the mask.
- ``alibi``: as ``start_pos`` plus an ALiBi-like per-head bias `-slope_h * (q - k)`.
- ``sliding``: as ``start_pos`` with a sliding-window causal mask (`q - window < k <= q`).

    model, args = build_llama("start_pos", seq_len=64)
    mlir = export_to_mlir(model, args, keep_ops=keep_ops("start_pos"))  # --iree-input-type=torch

`build_artifact(variant, ...)` gives a bench `Artifact` (IR, inputs, PyTorch reference);
`MODELS` registers the benchmark models (`iree-fusions-bench llama-start_pos-s512`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .catalog import Artifact, BenchModel
from .torch_export import (
    DTYPE_SUFFIXES,
    TORCH_INPUT_FLAGS,
    export_to_mlir,
    reference_atol,
    to_numpy,
    torch_dtype,
    torch_outputs,
)

VARIANTS = ("const", "start_pos", "sdpa", "alibi", "sliding")


@dataclass(frozen=True)
class LlamaConfig:
    seq_len: int = 512
    dim: int = 256
    n_heads: int = 8
    head_dim: int = 32
    hidden: int = 512  # SwiGLU hidden size
    n_layers: int = 2
    window: int = 64  # sliding variant
    rope_theta: float = 10000.0
    eps: float = 1e-5
    seed: int = 0
    # "bfloat16" / "float16": weights, activations, cos/sin and the mask in that type (cos/sin
    # are computed in f32 and cast, as Llama's reference code does; the mask uses the type's
    # most negative value).
    dtype: str = "float32"


def _torch_modules():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return x * torch.rsqrt(var + self.eps) * self.weight

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class Layer(nn.Module):
        def __init__(self, cfg: LlamaConfig, variant: str):
            super().__init__()
            self.cfg, self.variant = cfg, variant
            inner = cfg.n_heads * cfg.head_dim
            self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
            self.q = nn.Linear(cfg.dim, inner, bias=False)
            self.k = nn.Linear(cfg.dim, inner, bias=False)
            self.v = nn.Linear(cfg.dim, inner, bias=False)
            self.o = nn.Linear(inner, cfg.dim, bias=False)
            self.mlp_norm = RMSNorm(cfg.dim, cfg.eps)
            self.gate = nn.Linear(cfg.dim, cfg.hidden, bias=False)
            self.up = nn.Linear(cfg.dim, cfg.hidden, bias=False)
            self.down = nn.Linear(cfg.hidden, cfg.dim, bias=False)

        def forward(self, x, cos, sin, mask):
            cfg = self.cfg
            b, s, _ = x.shape
            h = self.attn_norm(x)
            q = self.q(h).view(b, s, cfg.n_heads, cfg.head_dim).transpose(1, 2)
            k = self.k(h).view(b, s, cfg.n_heads, cfg.head_dim).transpose(1, 2)
            v = self.v(h).view(b, s, cfg.n_heads, cfg.head_dim).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if self.variant == "sdpa":
                attn = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            else:
                scores = q @ k.transpose(-1, -2) / math.sqrt(cfg.head_dim)
                attn = torch.softmax(scores + mask, dim=-1) @ v
            attn = attn.transpose(1, 2).reshape(b, s, cfg.n_heads * cfg.head_dim)
            x = x + self.o(attn)
            h = self.mlp_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Llama(nn.Module):
        def __init__(self, cfg: LlamaConfig, variant: str):
            super().__init__()
            self.cfg, self.variant = cfg, variant
            self.layers = nn.ModuleList(Layer(cfg, variant) for _ in range(cfg.n_layers))

        def factory_tensors(self, s, start_pos):
            """cos, sin [S, head_dim] and the additive mask ([S,S] or [H,S,S]) for S = s
            tokens (the input's: a dynamic dim in a dynamic-sequence export)."""
            cfg = self.cfg
            keys = torch.arange(s)
            queries = keys if start_pos is None else keys + start_pos
            inv_freq = 1.0 / (cfg.rope_theta ** (
                torch.arange(0, cfg.head_dim, 2, dtype=torch.float32) / cfg.head_dim))
            freqs = queries.to(torch.float32)[:, None] * inv_freq[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            allowed = keys[None, :] <= queries[:, None]
            if self.variant == "sliding":
                allowed = allowed & (keys[None, :] > queries[:, None] - cfg.window)
            neg = torch.finfo(torch_dtype(cfg.dtype)).min
            mask = torch.where(allowed, 0.0, neg)
            if self.variant == "alibi":
                slopes = 2.0 ** (-8.0 * (torch.arange(cfg.n_heads, dtype=torch.float32) + 1)
                                 / cfg.n_heads)
                dist = (queries[:, None] - keys[None, :]).to(torch.float32)
                mask = mask[None] - slopes[:, None, None] * dist[None]
            elif self.variant == "sdpa":
                mask = mask[None, None].expand(1, cfg.n_heads, s, s)
            cos, sin = emb.cos(), emb.sin()
            if cfg.dtype != "float32":
                dt = torch_dtype(cfg.dtype)
                cos, sin, mask = cos.to(dt), sin.to(dt), mask.to(dt)
            return cos, sin, mask

        def forward(self, x, start_pos=None):
            cos, sin, mask = self.factory_tensors(x.shape[1], start_pos)
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            return x

    return Llama


def config_for(seq_len: int = 512, **overrides) -> LlamaConfig:
    return replace(LlamaConfig(seq_len=seq_len), **overrides)


def build_llama(variant: str, seq_len: int = 512, start_pos: int = 3, batch: int = 1,
                **overrides):
    """(torch module, example args) for one variant; overrides set LlamaConfig fields. The
    model takes any batch and sequence length (`seq_len` is the example's)."""
    import torch

    if variant not in VARIANTS:
        raise ValueError(f"unknown Llama variant '{variant}' (known: {', '.join(VARIANTS)})")
    cfg = config_for(seq_len, **overrides)
    torch.manual_seed(cfg.seed)
    model = _torch_modules()(cfg, variant).eval()
    with torch.no_grad():  # keep activations O(1) through the layers
        for name, p in model.named_parameters():
            if not name.endswith("norm.weight"):
                p.mul_(0.5)
    x = torch.randn(batch, cfg.seq_len, cfg.dim, generator=torch.Generator().manual_seed(1))
    if cfg.dtype != "float32":
        model, x = model.to(torch_dtype(cfg.dtype)), x.to(torch_dtype(cfg.dtype))
    if variant == "const":
        return model, (x,)
    return model, (x, torch.tensor(start_pos, dtype=torch.int64))


def keep_ops(variant: str) -> list:
    """ATen ops kept out of the decomposition table: `sdpa` keeps scaled_dot_product_attention,
    which IREE imports as iree_linalg_ext.attention (its mask is then a full [H,S,S] operand)."""
    import torch

    return [torch.ops.aten.scaled_dot_product_attention.default] if variant == "sdpa" else []


def build_artifact(variant: str, seq_len: int = 512, **overrides) -> Artifact:
    model, args = build_llama(variant, seq_len, **overrides)
    reference = torch_outputs(model, args)
    return Artifact(
        source=export_to_mlir(model, args, keep_ops=keep_ops(variant)),
        inputs=[to_numpy(a) for a in args],
        flags=list(TORCH_INPUT_FLAGS),
        reference=reference,
        reference_atol=reference_atol(reference, overrides.get("dtype", "float32"), 1e-4),
    )


def _model(variant: str, seq_len: int, default: bool, **overrides) -> BenchModel:
    extra = "".join(f"-{k}{v}" if k != "dtype" else DTYPE_SUFFIXES[v]
                    for k, v in overrides.items())
    return BenchModel(
        name=f"llama-{variant}-s{seq_len}{extra}",
        description=f"Llama-style decoder ({variant}), S={seq_len}"
        + "".join(f", {k}={v}" for k, v in overrides.items()),
        build=lambda: build_artifact(variant, seq_len, **overrides),
        fusions="forward-factory-ops,forward-factory-dispatches",
        needs_torch=True,
        default=default,
        dtype=overrides.get("dtype", "float32"),
        torch_model=lambda: build_llama(variant, seq_len, **overrides),
        reference_atol=1e-4,
        keep_ops=lambda: keep_ops(variant),
        dims=("seq",),  # one sequence (batch 1)
    )


MODELS: list[BenchModel] = [
    _model("start_pos", 64, default=True),
    *[_model(v, 512, default=False) for v in VARIANTS],
    *[_model(v, 64, default=False) for v in VARIANTS if v != "start_pos"],
    _model("start_pos", 128, default=False, n_heads=4, head_dim=64),
    # Half precision (`llama-start_pos-s64-bf16`).
    *[_model("start_pos", 64, default=False, dtype=d) for d in ("bfloat16", "float16")],
]


def sharktank_sdpa_ir(shape: str, mask_shape: str) -> str:
    """One `torch.aten.scaled_dot_product_attention` as sharktank's paged LLM export writes it
    (torch dialect, f16, an explicit f16 mask, scale none): q, k, v of `shape` ("4,4,?,192"),
    the mask of `mask_shape` ("4,1,?,?"); function @main(q, k, v, mask)."""
    t, m = f"!torch.vtensor<[{shape}],f16>", f"!torch.vtensor<[{mask_shape}],f16>"
    types = f"{t}, {t}, {t}, {m}, !torch.float, !torch.bool, !torch.none, !torch.bool -> {t}"
    return f"""
func.func @main(%q: {t}, %k: {t}, %v: {t}, %m: {m}) -> {t} {{
  %f0 = torch.constant.float 0.000000e+00
  %false = torch.constant.bool false
  %none = torch.constant.none
  %r = torch.aten.scaled_dot_product_attention %q, %k, %v, %m, %f0, %false, %none, %false
      : {types}
  return %r : {t}
}}"""
