"""An LLM decode step with a static KV cache: what serving runs once per generated token.

One Llama-style layer (RMSNorm, q/k/v projections, RoPE at the token's position, attention
over a fixed-size KV cache with a mask of the positions written so far, o projection, SwiGLU
MLP, residuals) on one new token per sequence. The cache is [B, S_max, H, Dh]; the new key and
value are written at `pos` with a one-hot select (`torch.where`), the form that compiles on
every IREE 3.13 target (some `index_put` / `index_copy` forms fail on llvm-cpu, NOTES.md), and
the step returns the output and both updated caches.

    model, args = build_decode_step(DecodeConfig(batch=4))
    # args: x [B, 1, d], pos (0-d int64), k_cache, v_cache [B, S_max, H, Dh]
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class DecodeConfig:
    batch: int = 4
    dim: int = 128
    heads: int = 4
    hidden: int = 256
    max_seq: int = 64  # the static cache length
    pos: int = 17  # the position written by the example
    seed: int = 0


def build_decode_step(cfg: DecodeConfig = DecodeConfig()):
    """(model, (x, pos, k_cache, v_cache))."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    head_dim = cfg.dim // cfg.heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(cfg.dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    class DecodeStep(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(cfg.seed)
            self.attn_norm, self.mlp_norm = RMSNorm(), RMSNorm()
            self.q = nn.Linear(cfg.dim, cfg.dim, bias=False)
            self.k = nn.Linear(cfg.dim, cfg.dim, bias=False)
            self.v = nn.Linear(cfg.dim, cfg.dim, bias=False)
            self.o = nn.Linear(cfg.dim, cfg.dim, bias=False)
            self.gate = nn.Linear(cfg.dim, cfg.hidden, bias=False)
            self.up = nn.Linear(cfg.dim, cfg.hidden, bias=False)
            self.down = nn.Linear(cfg.hidden, cfg.dim, bias=False)

        def rope(self, x, pos):  # x [B, 1, H, Dh]
            inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
            angle = pos.float() * inv  # [Dh/2]
            cos, sin = torch.cos(angle), torch.sin(angle)
            x1, x2 = x[..., ::2], x[..., 1::2]
            return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

        def forward(self, x, pos, k_cache, v_cache):
            b = x.shape[0]
            h = self.attn_norm(x)
            q = self.rope(self.q(h).view(b, 1, cfg.heads, head_dim), pos)
            k = self.rope(self.k(h).view(b, 1, cfg.heads, head_dim), pos)
            v = self.v(h).view(b, 1, cfg.heads, head_dim)
            slots = torch.arange(cfg.max_seq)
            write = (slots == pos).view(1, cfg.max_seq, 1, 1)
            k_cache = torch.where(write, k, k_cache)
            v_cache = torch.where(write, v, v_cache)
            scores = torch.einsum("bqhd,bshd->bhqs", q, k_cache) / math.sqrt(head_dim)
            scores = scores.masked_fill((slots > pos).view(1, 1, 1, cfg.max_seq),
                                        float("-inf"))
            attn = torch.einsum("bhqs,bshd->bqhd", torch.softmax(scores, -1), v_cache)
            x = x + self.o(attn.reshape(b, 1, cfg.dim))
            h = self.mlp_norm(x)
            x = x + self.down(F.silu(self.gate(h)) * self.up(h))
            return x, k_cache, v_cache

    gen = torch.Generator().manual_seed(cfg.seed + 1)
    cache = (cfg.batch, cfg.max_seq, cfg.heads, head_dim)
    args = (torch.randn(cfg.batch, 1, cfg.dim, generator=gen),
            torch.tensor(cfg.pos, dtype=torch.int64),
            torch.randn(*cache, generator=gen) * 0.5, torch.randn(*cache, generator=gen) * 0.5)
    return DecodeStep().eval(), args
