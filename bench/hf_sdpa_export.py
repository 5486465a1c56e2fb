"""HF transformers models with `attn_implementation="sdpa"`, exported by iree-turbine
(`aot.export`), random weights from small configs: the attention reaches IREE as
`iree_linalg_ext.attention` (unlike the catalog's `torch.export` + core-ATen decompositions,
which lower SDPA to matmuls).

    python bench/hf_sdpa_export.py vit > hf_vit.mlir     # 2 layers, hidden 256, 224x224
    python bench/hf_sdpa_export.py bert > hf_bert.mlir   # 2 layers, s128, a padding mask

(IREE 3.13 fails to compile the BERT export, stock as well: a scalar i1 `torch.vtensor.literal`
of HF's mask code; bench/results/attention-forms.md.)
"""

from __future__ import annotations

import sys


def export(kind: str) -> str:
    """The torch-dialect module of a 2-layer `kind` ("vit" or "bert") model."""
    import torch
    import transformers
    from iree.turbine import aot

    torch.manual_seed(0)
    if kind == "bert":
        cfg = transformers.BertConfig(
            vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=512, attn_implementation="sdpa")
        model = transformers.BertModel(cfg).eval()
        ids = torch.randint(3, 1000, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.int64)
        mask[0, 100:] = 0

        def forward(m, *a):
            return m(input_ids=a[0], attention_mask=a[1]).last_hidden_state
        args = (ids, mask)
    elif kind == "vit":
        cfg = transformers.ViTConfig(
            hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
            image_size=224, patch_size=16, attn_implementation="sdpa")
        model = transformers.ViTModel(cfg, add_pooling_layer=False).eval()

        def forward(m, *a):
            return m(pixel_values=a[0]).last_hidden_state
        args = (torch.randn(1, 3, 224, 224),)
    else:
        raise ValueError(f"unknown HF model '{kind}' (known: vit, bert)")

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, *a):
            return forward(self.m, *a)

    return str(aot.export(Wrapped(), args=args).mlir_module)


if __name__ == "__main__":
    sys.stdout.write(export(sys.argv[1] if len(sys.argv) > 1 else "vit"))
