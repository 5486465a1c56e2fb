"""Multi-task MLP towers and a mixture-of-experts in PyTorch, exported at run time.

The model of issue 4: a multi-task prediction head whose N towers are identical MLPs
(`Linear -> activation` per layer) that all read one shared input `[B, 256]`, each returning
its own output; the issue's head is 6 towers x 4 layers (256->256->128->64->16) with SiLU.

Variants (`TowersConfig`): the batch, tower count, widths (depth = len(widths) - 1), the
activation (silu, relu, gelu, sigmoid, tanh, none), per-tower activations (towers that differ
in their activation, e.g. half SiLU and half ReLU), towers of different depths (equal on a
prefix), whether every tower has its own input, whether the outputs are returned as a tuple
or concatenated, and whether the weights are function arguments instead of parameters.

`MoeTokensConfig`: a transformer-style MoE block on tokens [B, T, d] (or [B*T, d]): E
two-layer experts on every token, top-k gates.

`MmoeConfig`: multi-gate mixture-of-experts (Ma et al., KDD 2018): E expert MLPs on one input,
their outputs `torch.stack`ed to `[B, E, H]`, one softmax gate per task mixing them, and one
small tower per task.

    model, args = build_towers(TowersConfig(batch=8, activation="relu"))
    mlir = export_to_mlir(model, args)            # torch dialect, --iree-input-type=torch

`MODELS` registers the benchmark models (`iree-fusions-bench towers-silu-b1`).
"""

from __future__ import annotations

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

ACTIVATIONS = ("silu", "relu", "gelu", "sigmoid", "tanh", "none")


@dataclass(frozen=True)
class TowersConfig:
    batch: int = 1
    n_towers: int = 6
    widths: tuple[int, ...] = (256, 256, 128, 64, 16)  # input width, then each layer's
    activation: str = "silu"
    # One activation per tower (overrides `activation`), e.g. ("silu", "relu", ...).
    tower_activations: tuple[str, ...] | None = None
    # One depth per tower (each <= len(widths) - 1): towers equal on a prefix of layers.
    tower_depths: tuple[int, ...] | None = None
    separate_inputs: bool = False  # one [B, widths[0]] input per tower
    concat_outputs: bool = False  # torch.cat of the towers' outputs instead of a tuple
    runtime_weights: bool = False  # weights and biases are inputs of forward()
    seed: int = 0
    dtype: str = "float32"  # or "bfloat16", "float16": weights and inputs (made in f32, cast)

    def activations(self) -> tuple[str, ...]:
        return self.tower_activations or (self.activation,) * self.n_towers

    def depths(self) -> tuple[int, ...]:
        return self.tower_depths or (len(self.widths) - 1,) * self.n_towers


def _activation(torch_nn, kind: str):
    table = {"silu": torch_nn.SiLU, "relu": torch_nn.ReLU, "gelu": torch_nn.GELU,
             "sigmoid": torch_nn.Sigmoid, "tanh": torch_nn.Tanh, "none": torch_nn.Identity}
    try:
        return table[kind]()
    except KeyError:
        raise ValueError(f"unknown activation '{kind}' (known: {', '.join(ACTIVATIONS)})") from None


def _mlp(torch_nn, widths: tuple[int, ...], activation: str):
    layers = []
    for i in range(len(widths) - 1):
        layers += [torch_nn.Linear(widths[i], widths[i + 1]), _activation(torch_nn, activation)]
    return torch_nn.Sequential(*layers)


def build_towers(cfg: TowersConfig):
    """(model, example_args) for a towers config."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    acts, depths = cfg.activations(), cfg.depths()
    if len(acts) != cfg.n_towers or len(depths) != cfg.n_towers:
        raise ValueError("tower_activations / tower_depths need one entry per tower")

    class Towers(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(cfg.seed)
            self.towers = nn.ModuleList(
                [_mlp(nn, cfg.widths[: d + 1], a) for a, d in zip(acts, depths)])

        def forward(self, *args):
            xs = args[: cfg.n_towers] if cfg.separate_inputs else (args[0],) * cfg.n_towers
            outs = [t(x) for t, x in zip(self.towers, xs)]
            return torch.cat(outs, 1) if cfg.concat_outputs else tuple(outs)

    class RuntimeWeightTowers(nn.Module):
        """The same towers with every weight and bias passed in (no parameters)."""

        def forward(self, *args):
            n_in = cfg.n_towers if cfg.separate_inputs else 1
            xs, params = args[:n_in], list(args[n_in:])
            xs = xs if cfg.separate_inputs else xs * cfg.n_towers
            outs = []
            for a, d, x in zip(acts, depths, xs):
                for _ in range(d):
                    w, b = params.pop(0), params.pop(0)
                    x = _functional_activation(F, a, F.linear(x, w, b))
                outs.append(x)
            return torch.cat(outs, 1) if cfg.concat_outputs else tuple(outs)

    gen = torch.Generator().manual_seed(cfg.seed + 1)
    n_in = cfg.n_towers if cfg.separate_inputs else 1
    args = [torch.randn(cfg.batch, cfg.widths[0], generator=gen) for _ in range(n_in)]
    if not cfg.runtime_weights:
        return cast(Towers(), args, cfg.dtype)
    reference = Towers()
    for tower in reference.towers:
        for layer in tower:
            if isinstance(layer, nn.Linear):
                args += [layer.weight.detach().clone(), layer.bias.detach().clone()]
    return cast(RuntimeWeightTowers(), args, cfg.dtype)


def cast(model, args: list, dtype: str):
    """(model, args) in `dtype` (float tensors only; float32 leaves both as they are)."""
    if dtype == "float32":
        return model, args
    return model.to(torch_dtype(dtype)), cast_args(args, dtype)


def cast_args(args: list, dtype: str) -> list:
    """`args` with their float tensors in `dtype` (float32: as they are)."""
    if dtype == "float32":
        return args
    dt = torch_dtype(dtype)
    return [a.to(dt) if a.is_floating_point() else a for a in args]


def _functional_activation(F, kind: str, x):
    if kind == "none":
        return x
    return {"silu": F.silu, "relu": F.relu, "gelu": F.gelu, "sigmoid": F.sigmoid,
            "tanh": F.tanh}[kind](x)


@dataclass(frozen=True)
class MmoeConfig:
    batch: int = 8
    in_dim: int = 256
    n_experts: int = 8
    expert_widths: tuple[int, ...] = (128, 64)  # each expert: in_dim -> 128 -> 64, ReLU
    n_tasks: int = 3  # gates and task towers
    tower_widths: tuple[int, ...] = (32, 1)  # each task tower: 64 -> 32 (ReLU) -> 1 (sigmoid)
    seed: int = 0
    dtype: str = "float32"


def build_mmoe(cfg: MmoeConfig):
    """(model, example_args): experts stacked with torch.stack, softmax gates, task towers."""
    import torch
    from torch import nn

    class Mmoe(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(cfg.seed)
            self.experts = nn.ModuleList(
                [_mlp(nn, (cfg.in_dim, *cfg.expert_widths), "relu")
                 for _ in range(cfg.n_experts)])
            self.gates = nn.ModuleList(
                [nn.Linear(cfg.in_dim, cfg.n_experts) for _ in range(cfg.n_tasks)])
            hidden = cfg.expert_widths[-1]
            self.towers = nn.ModuleList()
            for _ in range(cfg.n_tasks):
                widths = (hidden, *cfg.tower_widths)
                layers = []
                for i in range(len(widths) - 1):
                    layers.append(nn.Linear(widths[i], widths[i + 1]))
                    layers.append(nn.ReLU() if i < len(widths) - 2 else nn.Sigmoid())
                self.towers.append(nn.Sequential(*layers))

        def forward(self, x):
            experts = torch.stack([e(x) for e in self.experts], dim=1)  # [B, E, H]
            outs = []
            for gate, tower in zip(self.gates, self.towers):
                g = torch.softmax(gate(x), dim=-1)  # [B, E]
                mixed = torch.einsum("be,beh->bh", g, experts)
                outs.append(tower(mixed))
            return tuple(outs)

    gen = torch.Generator().manual_seed(cfg.seed + 1)
    return cast(Mmoe(), [torch.randn(cfg.batch, cfg.in_dim, generator=gen)], cfg.dtype)


@dataclass(frozen=True)
class MoeTokensConfig:
    """A mixture of experts on token-shaped activations, as in a transformer's MoE block:
    E experts (Linear -> SiLU -> Linear) applied to every token of [B, T, d], top-k softmax
    gates mixing them (dense: every expert runs on every token). `flat_tokens` runs the
    experts on [B*T, d] (reshaped first) instead of [B, T, d]."""

    batch: int = 4
    seq: int = 16
    dim: int = 64
    hidden: int = 128
    n_experts: int = 8
    top_k: int = 2
    flat_tokens: bool = False
    seed: int = 0
    dtype: str = "float32"


def build_moe_tokens(cfg: MoeTokensConfig):
    """(model, example_args): x [B, T, d] -> [B, T, d]."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class MoeTokens(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(cfg.seed)
            self.gate = nn.Linear(cfg.dim, cfg.n_experts)
            self.experts = nn.ModuleList(
                nn.Sequential(nn.Linear(cfg.dim, cfg.hidden), nn.SiLU(),
                              nn.Linear(cfg.hidden, cfg.dim)) for _ in range(cfg.n_experts))

        def forward(self, x):
            tokens = x.reshape(-1, x.shape[-1]) if cfg.flat_tokens else x
            weights, index = torch.topk(torch.softmax(self.gate(tokens), -1), cfg.top_k, -1)
            gates = (F.one_hot(index, cfg.n_experts).to(x.dtype)
                     * weights.unsqueeze(-1)).sum(-2)
            outs = torch.stack([e(tokens) for e in self.experts], -2)
            mixed = (gates.unsqueeze(-1) * outs).sum(-2)
            return mixed.reshape(x.shape) if cfg.flat_tokens else mixed

    gen = torch.Generator().manual_seed(cfg.seed + 1)
    x = torch.randn(cfg.batch, cfg.seq, cfg.dim, generator=gen)
    return cast(MoeTokens(), [x], cfg.dtype)


def _artifact(model, args, dtype: str = "float32") -> Artifact:
    reference = torch_outputs(model, args)
    return Artifact(
        source=export_to_mlir(model, args),
        inputs=[to_numpy(a) for a in args],
        flags=list(TORCH_INPUT_FLAGS),
        reference=reference,
        reference_atol=reference_atol(reference, dtype, 1e-5),
    )


def build_model(cfg: TowersConfig | MmoeConfig | MoeTokensConfig):
    """(model, example_args) for any config of this module."""
    if isinstance(cfg, MmoeConfig):
        return build_mmoe(cfg)
    if isinstance(cfg, MoeTokensConfig):
        return build_moe_tokens(cfg)
    return build_towers(cfg)


def build_artifact(cfg: TowersConfig | MmoeConfig | MoeTokensConfig) -> Artifact:
    model, args = build_model(cfg)
    return _artifact(model, args, cfg.dtype)


ISSUE = TowersConfig()  # 6 towers x 4 layers, 256->256->128->64->16, SiLU, shared input
MMOE = MmoeConfig()
# Shapes the pass was not tuned on.
UNSEEN = {
    "towers3x2-w512": TowersConfig(n_towers=3, widths=(512, 384, 32)),
    "towers8x5-w96": TowersConfig(n_towers=8, widths=(96, 96, 80, 64, 48, 8), activation="gelu"),
    "towers4-mixed-act": TowersConfig(n_towers=4, activation="silu",
                                      tower_activations=("silu", "relu", "silu", "relu")),
    "towers5-prefix": TowersConfig(n_towers=5, tower_depths=(4, 4, 2, 3, 4)),
    "towers6-concat": TowersConfig(concat_outputs=True),
    "towers2x3-tanh": TowersConfig(n_towers=2, widths=(200, 100, 50, 10), activation="tanh"),
}


def _model(name: str, cfg, text: str, default: bool = False) -> BenchModel:
    return BenchModel(name, text, lambda cfg=cfg: build_artifact(cfg),
                      fusions="batch-mlp-towers", needs_torch=True, default=default,
                      dtype=cfg.dtype, torch_model=lambda cfg=cfg: build_model(cfg),
                      dims=("batch",) if cfg.batch >= 2 else ())


MODELS: list[BenchModel] = [
    *[_model(f"towers-{a}-b{b}", replace(ISSUE, batch=b, activation=a),
             f"issue 4 head: 6 towers x 4 layers 256->256->128->64->16, {a}, shared input, B={b}",
             default=(a == "silu" and b == 1))
      for a in ACTIVATIONS for b in (1, 8, 64)],
    *[_model(f"towers-separate-b{b}", replace(ISSUE, batch=b, separate_inputs=True),
             f"6x4 SiLU towers, one input per tower, B={b}") for b in (1, 8, 64)],
    *[_model(f"towers-rtweights-b{b}", replace(ISSUE, batch=b, runtime_weights=True),
             f"6x4 SiLU towers, weights and biases as function arguments, B={b}")
      for b in (1, 64)],
    *[_model(f"towers-1layer-b{b}", replace(ISSUE, batch=b, widths=(256, 128)),
             f"6 single-layer towers 256->128 SiLU, shared input (min-layers threshold), B={b}")
      for b in (1, 8, 64)],
    *[_model(f"mmoe-b{b}", replace(MMOE, batch=b),
             f"MMoE: 8 experts 256->128->64 ReLU, torch.stack, 3 softmax gates, 3 towers; B={b}")
      for b in (1, 8, 64)],
    *[_model(f"moe-tokens{'-flat' if flat else ''}-b{b}",
             MoeTokensConfig(batch=b, flat_tokens=flat),
             f"MoE on tokens {'[B*T,d]' if flat else '[B,T,d]'}: 8 experts 64->128->64 SiLU, "
             f"top-2 gates, T=16, B={b}")
      for flat in (False, True) for b in (1, 4)],
    *[_model(f"{name}-b{b}", replace(cfg, batch=b), f"unseen: {name}, B={b}")
      for name, cfg in UNSEEN.items() for b in (1, 64)],
    # Half precision: the issue's head in bf16 / f16 (weights made in f32, then cast).
    *[_model(f"towers-silu-b{b}{DTYPE_SUFFIXES[d]}", replace(ISSUE, batch=b, dtype=d),
             f"issue 4 head (6x4 SiLU towers, shared input) in {d}, B={b}")
      for d in ("bfloat16", "float16") for b in (1, 8)],
]
