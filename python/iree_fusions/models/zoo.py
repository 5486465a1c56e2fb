"""A zoo of real architectures nobody tuned the passes for (random weights, small configs).

transformers models built from small configs (hidden 128, 2 layers, 4 heads, vocab 1000,
S = 32 tokens or 32x32 images), exported at run time with the catalog's recipe
(`torch_export.export_to_mlir`, eager attention), across families:

- encoders: BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA;
- decoders: GPT-2, GPT-NeoX, OPT, Llama, Mistral, Qwen2, Gemma, Phi;
- encoder-decoder: T5, BART, Whisper;
- vision: ViT, CLIP vision tower, ConvNeXt;

and multi-branch torch.nn models: a trunk with four task heads of different widths, a
two-tower recommender (embedding lookups + MLP per tower, dot product), a top-2 mixture of
eight one-layer experts routed through one_hot gates.

Each is a catalog model `zoo-<arch>-b<B>` for B = 1 and 4 (not in the default bench run):
`iree-fusions-bench zoo-llama-b1 --compile-only`; `ARCHITECTURES` lists them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass

from .catalog import Artifact, BenchModel
from .torch_export import TORCH_INPUT_FLAGS, export_to_mlir, torch_outputs

SEQ = 32
# transformers' attention implementation of the configs built now: "eager" (the zoo's models),
# or "sdpa" (`zoo-<arch>-sdpa-b<B>`: F.scaled_dot_product_attention with HF's masks; the
# catalog's export recipe, with the core-ATen decompositions, lowers it to matmuls and a
# softmax: an iree-turbine export keeps it as one op, which reaches rewrite-attention,
# bench/results/attention-forms.md).
ATTENTION = contextvars.ContextVar("iree_fusions_zoo_attention", default="eager")
MAX_POSITIONS = 128  # max_position_embeddings / n_positions of the token models' configs
HIDDEN, HEADS, LAYERS, FFN, VOCAB = 128, 4, 2, 256, 1000
IMAGE = 32


def _text_config(cls_name: str, **extra):
    import transformers

    common = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, intermediate_size=FFN,
                  max_position_embeddings=MAX_POSITIONS, attn_implementation=ATTENTION.get())
    common.update(extra)
    return getattr(transformers, cls_name)(**common)


def _ids(batch: int, seed: int = 0, seq: int = SEQ):
    import torch

    gen = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (batch, seq), generator=gen, dtype=torch.int64)


def _one_output(model, output: str = "last_hidden_state"):
    """The transformers model as a module whose forward returns one tensor."""
    import torch

    class OneOutput(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return getattr(self.model(*args), output)

    return OneOutput().eval()


def _encoder(config_cls: str, model_cls: str, **extra) -> Callable[..., tuple]:
    def build(batch: int, seq: int = SEQ):
        import transformers

        config = _text_config(config_cls, **extra)
        model = getattr(transformers, model_cls)(config).eval()
        return _one_output(model), (_ids(batch, seq=seq),)

    return build


def _distilbert(batch: int, seq: int = SEQ):
    import transformers

    config = transformers.DistilBertConfig(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS,
                                           n_heads=HEADS, hidden_dim=FFN,
                                           max_position_embeddings=128,
                                           attn_implementation=ATTENTION.get())
    return _one_output(transformers.DistilBertModel(config).eval()), (_ids(batch, seq=seq),)


def _gpt2(batch: int, seq: int = SEQ):
    import transformers

    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS,
                                     n_head=HEADS, n_positions=128, use_cache=False,
                                     attn_implementation=ATTENTION.get())
    return _one_output(transformers.GPT2Model(config).eval()), (_ids(batch, seq=seq),)


def _decoder(config_cls: str, model_cls: str, **extra) -> Callable[..., tuple]:
    def build(batch: int, seq: int = SEQ):
        import transformers

        config = _text_config(config_cls, use_cache=False, **extra)
        model = getattr(transformers, model_cls)(config).eval()
        return _one_output(model), (_ids(batch, seq=seq),)

    return build


def _t5(batch: int, seq: int = SEQ):
    import transformers

    config = transformers.T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS,
                                   d_ff=FFN, num_layers=LAYERS, num_heads=HEADS,
                                   use_cache=False, attn_implementation=ATTENTION.get())
    model = transformers.T5Model(config).eval()
    return _one_output(model), (_ids(batch, seq=seq), None,
                                _ids(batch, seed=1, seq=seq)[:, :seq // 2])


def _bart(batch: int, seq: int = SEQ):
    import transformers

    config = transformers.BartConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS,
                                     decoder_layers=LAYERS, encoder_attention_heads=HEADS,
                                     decoder_attention_heads=HEADS, encoder_ffn_dim=FFN,
                                     decoder_ffn_dim=FFN, max_position_embeddings=128,
                                     use_cache=False, attn_implementation=ATTENTION.get())
    model = transformers.BartModel(config).eval()
    return _one_output(model), (_ids(batch, seq=seq), None,
                                _ids(batch, seed=1, seq=seq)[:, :seq // 2])


def _whisper(batch: int):
    import torch
    import transformers

    config = transformers.WhisperConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS,
                                        decoder_layers=LAYERS, encoder_attention_heads=HEADS,
                                        decoder_attention_heads=HEADS, encoder_ffn_dim=FFN,
                                        decoder_ffn_dim=FFN, num_mel_bins=16,
                                        max_source_positions=SEQ, max_target_positions=64,
                                        pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                        decoder_start_token_id=1, use_cache=False,
                                        attn_implementation=ATTENTION.get())
    model = transformers.WhisperModel(config).eval()
    gen = torch.Generator().manual_seed(0)
    features = torch.randn(batch, 16, 2 * SEQ, generator=gen)
    return _one_output(model), (features, None, _ids(batch, seed=1)[:, :SEQ // 2])


def _pixels(batch: int):
    import torch

    return torch.randn(batch, 3, IMAGE, IMAGE, generator=torch.Generator().manual_seed(0))


def _vit(batch: int):
    import transformers

    config = transformers.ViTConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                                    num_attention_heads=HEADS, intermediate_size=FFN,
                                    image_size=IMAGE, patch_size=8,
                                    attn_implementation=ATTENTION.get())
    return _one_output(transformers.ViTModel(config, add_pooling_layer=False).eval()), \
        (_pixels(batch),)


def _clip_vision(batch: int):
    import transformers

    config = transformers.CLIPVisionConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                                           num_attention_heads=HEADS, intermediate_size=FFN,
                                           image_size=IMAGE, patch_size=8,
                                           attn_implementation=ATTENTION.get())
    model = transformers.CLIPVisionModel(config).eval()
    return _one_output(model, "pooler_output"), (_pixels(batch),)


def _convnext(batch: int):
    import transformers

    config = transformers.ConvNextConfig(num_channels=3, hidden_sizes=[32, 64],
                                         depths=[1, 1], num_stages=2, image_size=IMAGE)
    return _one_output(transformers.ConvNextModel(config).eval(), "pooler_output"), \
        (_pixels(batch),)


# ---------------------------------------------------------------- multi-branch torch.nn


def _multitask_heads(batch: int):
    """A shared trunk and four task heads 32/64/96/128 wide (two layers each)."""
    import torch
    from torch import nn

    class MultiTask(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(256, 256), nn.ReLU())
            self.heads = nn.ModuleList(
                nn.Sequential(nn.Linear(256, w), nn.ReLU(), nn.Linear(w, 1))
                for w in (32, 64, 96, 128))

        def forward(self, x):
            h = self.trunk(x)
            return tuple(head(h) for head in self.heads)

    torch.manual_seed(0)
    return MultiTask().eval(), (torch.randn(batch, 256),)


def _two_tower(batch: int):
    """User and item towers: 3 id features each (embedding tables 500x32), MLP 96->64->32."""
    import torch
    from torch import nn

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.tables = nn.ModuleList(nn.Embedding(500, 32) for _ in range(3))
            self.mlp = nn.Sequential(nn.Linear(96, 64), nn.ReLU(), nn.Linear(64, 32))

        def forward(self, ids):
            return self.mlp(torch.cat([t(ids[:, i]) for i, t in enumerate(self.tables)], 1))

    class TwoTower(nn.Module):
        def __init__(self):
            super().__init__()
            self.user, self.item = Tower(), Tower()

        def forward(self, user_ids, item_ids):
            return (self.user(user_ids) * self.item(item_ids)).sum(1)

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    ids = [torch.randint(0, 500, (batch, 3), generator=gen) for _ in range(2)]
    return TwoTower().eval(), tuple(ids)


def _moe_top2(batch: int):
    """Eight one-layer experts (128 -> 128, SiLU), top-2 routing through one_hot gates."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(128, 8)
            self.experts = nn.ModuleList(nn.Linear(128, 128) for _ in range(8))

        def forward(self, x):
            weights, index = torch.topk(torch.softmax(self.gate(x), -1), 2, dim=-1)
            gates = (F.one_hot(index, 8).to(x.dtype) * weights.unsqueeze(-1)).sum(1)
            outs = torch.stack([F.silu(e(x)) for e in self.experts], 1)
            return (gates.unsqueeze(-1) * outs).sum(1)

    torch.manual_seed(0)
    return MoE().eval(), (torch.randn(batch, 128),)


@dataclass(frozen=True)
class Architecture:
    name: str
    family: str  # encoder, decoder, encoder-decoder, vision, multi-branch
    # build(batch) -> (torch module, example args); token models also take `seq=` (tokens;
    # an encoder-decoder's decoder gets seq // 2)
    build: Callable[..., tuple]
    # The dynamic dims of a dynamic-sequence export, per non-None argument ({dim: name}, as
    # forms.export's `dims=`); None: no sequence dim (vision, fixed-length audio, torch.nn).
    seq_dims: tuple | None = None

    def takes_seq(self) -> bool:
        return self.seq_dims is not None

    def seq_ranges(self) -> dict[str, tuple[int, int]]:
        """The ranges of the dynamic-sequence dims (forms.export's `ranges=`): up to the
        configs' 128 positions; an encoder-decoder's decoder below the example's encoder
        length (T5's export guards `dec_seq != 32`)."""
        return {"seq": (2, MAX_POSITIONS), "dec_seq": (2, SEQ - 1)}

    def export_kwargs(self, form: str) -> dict:
        """forms.export keywords of `form`: a token model's dynamic-sequence dims and their
        ranges, as the architecture declares them ({} for the other forms)."""
        if "dynamic-seq" not in form or self.seq_dims is None:
            return {}
        return {"dims": list(self.seq_dims), "ranges": self.seq_ranges()}


_TOKENS = ({1: "seq"},)
_ENC_DEC = ({1: "seq"}, {1: "dec_seq"})
ARCHITECTURES: list[Architecture] = [
    Architecture("bert", "encoder", _encoder("BertConfig", "BertModel"), _TOKENS),
    Architecture("roberta", "encoder", _encoder("RobertaConfig", "RobertaModel",
                                                pad_token_id=1), _TOKENS),
    Architecture("distilbert", "encoder", _distilbert, _TOKENS),
    Architecture("albert", "encoder", _encoder("AlbertConfig", "AlbertModel",
                                               embedding_size=64), _TOKENS),
    Architecture("electra", "encoder", _encoder("ElectraConfig", "ElectraModel",
                                                embedding_size=64), _TOKENS),
    Architecture("gpt2", "decoder", _gpt2, _TOKENS),
    Architecture("gpt-neox", "decoder", _decoder("GPTNeoXConfig", "GPTNeoXModel"), _TOKENS),
    Architecture("opt", "decoder", _decoder("OPTConfig", "OPTModel", ffn_dim=FFN,
                                            word_embed_proj_dim=HIDDEN), _TOKENS),
    Architecture("llama", "decoder", _decoder("LlamaConfig", "LlamaModel"), _TOKENS),
    Architecture("mistral", "decoder", _decoder("MistralConfig", "MistralModel",
                                                num_key_value_heads=2), _TOKENS),
    Architecture("qwen2", "decoder", _decoder("Qwen2Config", "Qwen2Model",
                                              num_key_value_heads=2), _TOKENS),
    Architecture("gemma", "decoder", _decoder("GemmaConfig", "GemmaModel", head_dim=32,
                                              num_key_value_heads=1), _TOKENS),
    Architecture("phi", "decoder", _decoder("PhiConfig", "PhiModel"), _TOKENS),
    Architecture("t5", "encoder-decoder", _t5, _ENC_DEC),
    Architecture("bart", "encoder-decoder", _bart, _ENC_DEC),
    Architecture("whisper", "encoder-decoder", _whisper),
    Architecture("vit", "vision", _vit),
    Architecture("clip-vision", "vision", _clip_vision),
    Architecture("convnext", "vision", _convnext),
    Architecture("multitask-heads", "multi-branch", _multitask_heads),
    Architecture("two-tower", "multi-branch", _two_tower),
    Architecture("moe-top2", "multi-branch", _moe_top2),
]
BATCHES = (1, 4)


def build_positional(arch: Architecture, batch: int, seq: int | None = None) -> tuple:
    """(module, example args) of an architecture with the None arguments left out (the module
    passes None in their place); `seq`: the token count of a token model (default SEQ)."""
    import torch

    torch.manual_seed(0)
    model, args = arch.build(batch) if seq is None else arch.build(batch, seq=seq)
    return _positional(model, args), tuple(a for a in args if a is not None)


def zoo_artifact(arch: Architecture, batch: int) -> Artifact:
    kwargs_free, example = build_positional(arch, batch)
    return Artifact(export_to_mlir(kwargs_free, example), [a.numpy() for a in example],
                    list(TORCH_INPUT_FLAGS), torch_outputs(kwargs_free, example),
                    reference_atol=1e-4)


def _positional(model, args: tuple):
    """A module taking only the non-None args (None args stay None in the call)."""
    import torch

    if all(a is not None for a in args):
        return model
    slots = [a is not None for a in args]

    class Positional(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, *given):
            it = iter(given)
            return self.inner(*[next(it) if s else None for s in slots])

    return Positional().eval()


def with_attention(implementation: str, build: Callable[[], object]) -> Callable[[], object]:
    """`build`, run with the transformers configs' attention implementation set."""
    def call():
        token = ATTENTION.set(implementation)
        try:
            return build()
        finally:
            ATTENTION.reset(token)
    return call


# The architectures also built with attn_implementation="sdpa" (`zoo-<arch>-sdpa-b<B>`).
SDPA_ARCHITECTURES = ("bert", "vit", "gpt2", "gpt-neox", "llama", "t5")


def _bench_model(a: Architecture, b: int, attention: str = "eager") -> BenchModel:
    suffix = "" if attention == "eager" else f"-{attention}"
    return BenchModel(
        f"zoo-{a.name}{suffix}-b{b}", f"zoo ({a.family}): {a.name}{suffix}, B={b}",
        with_attention(attention, lambda: zoo_artifact(a, b)), needs_torch=True,
        default=False, torch_model=with_attention(attention, lambda: build_positional(a, b)),
        reference_atol=1e-4, export_kwargs=a.export_kwargs,
        dims=(*(("batch",) if b >= 2 else ()), *(("seq",) if a.takes_seq() else ())))


MODELS: list[BenchModel] = [_bench_model(a, b) for a in ARCHITECTURES for b in BATCHES] + [
    _bench_model(a, b, "sdpa") for a in ARCHITECTURES if a.name in SDPA_ARCHITECTURES
    for b in BATCHES]
