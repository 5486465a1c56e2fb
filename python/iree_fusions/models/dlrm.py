"""DLRM-style recommendation models in PyTorch, exported at run time (weights never stored).

The model of issue 5: 12 embedding tables of dim 64, 16 sparse features (four of them share
a table with another feature), one-id features (`F.embedding` on `[B]` ids) and 20-id bag
features (`F.embedding(ids[B,20]).sum(1)`, or `F.embedding_bag(ids, mode="sum")` in the
``bag`` variant), a dense bottom MLP, and the concat of the MLP output with every feature:

    out[B, 64 + 16*64] = cat([mlp(dense), emb_0(ids_0), ..., emb_15(ids_15)], 1)

Variants (`DlrmConfig`): the batch, the table set (counts, rows, per-table dims), which
features share a table, bag lengths, the bag lowering, whether the MLP is there (the sparse
part alone), and whether the ids come as one packed `[B, F]` tensor instead of one input per
feature, and the Criteo layout (raw dense features concatenated beside the embeddings, then a
top MLP). `MODELS` registers the benchmark models (`iree-fusions-bench dlrm-b8`).

    model, args = build_dlrm(DlrmConfig(batch=8))
    mlir = export_to_mlir(model, args)           # torch dialect, --iree-input-type=torch

`build_form(cfg, form, folder)` gives the same model in each form users compile (`FORMS`:
static, dynamic batch with and without shape facts, iree-turbine parameters, ONNX, ONNX with
externalized parameters; exported by models/forms.py); run one with
`api.run(vmfb, inputs, function, parameters=...)`.
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
    torch_outputs,
)
from .towers import cast, cast_args

# The issue's model: 12 tables (rows vary, dim 64) and 16 features as (table, bag length);
# bag length 1 is a one-id feature on `[B]` ids. Features 12-15 reuse tables 0, 3, 2 and 7
# (table 2 by two bags, table 0 by a one-id feature and a bag).
ISSUE_TABLE_ROWS = (1000, 2000, 500, 1500, 800, 1200, 600, 900, 1100, 700, 400, 1300)
ISSUE_FEATURES = (
    (0, 1), (1, 1), (2, 20), (3, 1), (4, 20), (5, 1), (6, 1), (7, 20),
    (8, 1), (9, 20), (10, 1), (11, 1), (0, 20), (3, 1), (2, 20), (7, 1),
)


@dataclass(frozen=True)
class DlrmConfig:
    batch: int = 8
    table_rows: tuple[int, ...] = ISSUE_TABLE_ROWS
    table_dims: tuple[int, ...] | int = 64  # one dim for all tables, or one per table
    features: tuple[tuple[int, int], ...] = ISSUE_FEATURES  # (table, bag length)
    bag_op: str = "sum"  # "sum": F.embedding(...).sum(1); "mean": .mean(1);
    # "embedding_bag": F.embedding_bag(mode="sum") on [B, L] ids; "offsets": what
    # nn.EmbeddingBag(mode="sum") does with (flat ids, offsets): bags of variable length
    # (>= 1, L on average), the ids of all bags in one [B * L] tensor
    dense_in: int = 13
    mlp: tuple[int, ...] = (256, 128, 64)  # bottom MLP widths (empty: sparse part alone)
    packed_ids: bool = False  # one [B, F] int64 input (one-id features only)
    concat: bool = True  # False: each feature (and the MLP output) is its own result
    # The Criteo layout (Wide&Deep / DeepFM / DCN): the raw dense features (after the bottom
    # MLP if there is one) concatenated beside the embeddings, then a top MLP on the concat.
    raw_dense: bool = False  # the dense input goes into the concat as it is (needs mlp=())
    top_mlp: tuple[int, ...] = ()  # top MLP widths on the concat (ReLU between layers)
    seed: int = 0
    dtype: str = "float32"  # or "bfloat16", "float16": tables, MLP and dense input (ids: int64)

    def dims(self) -> tuple[int, ...]:
        if isinstance(self.table_dims, int):
            return (self.table_dims,) * len(self.table_rows)
        return self.table_dims


def build_dlrm(cfg: DlrmConfig):
    """(model, example_args) for a config; ids are uniform over each table's rows."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    if cfg.packed_ids and any(n != 1 for _, n in cfg.features):
        raise ValueError("packed ids are for one-id features only")
    if cfg.raw_dense and cfg.mlp:
        raise ValueError("raw_dense concatenates the dense input itself: give mlp=()")
    if cfg.top_mlp and not cfg.concat:
        raise ValueError("a top MLP reads the concat: give concat=True")

    class Dlrm(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(cfg.seed)
            self.tables = nn.ParameterList(
                [nn.Parameter(torch.randn(r, d)) for r, d in zip(cfg.table_rows, cfg.dims())])
            layers: list = []
            width = cfg.dense_in
            for w in cfg.mlp:
                layers += [nn.Linear(width, w), nn.ReLU()]
                width = w
            self.mlp = nn.Sequential(*layers) if layers else None
            top: list = []
            width = (width if cfg.mlp or cfg.raw_dense else 0) + sum(
                cfg.dims()[t] for t, _ in cfg.features)
            for i, w in enumerate(cfg.top_mlp):
                top += [nn.Linear(width, w)] + ([nn.ReLU()] if i + 1 < len(cfg.top_mlp) else [])
                width = w
            self.top = nn.Sequential(*top) if top else None

        def lookup(self, f: int, ids, offsets=None):
            table, bag = cfg.features[f]
            weight = self.tables[table]
            if bag == 1:
                return F.embedding(ids, weight)
            if cfg.bag_op == "offsets":  # nn.EmbeddingBag.forward's call
                return F.embedding_bag(ids, weight, offsets, mode="sum")
            if cfg.bag_op == "embedding_bag":
                return F.embedding_bag(ids, weight, mode="sum")
            if cfg.bag_op == "mean":
                return F.embedding(ids, weight).mean(1)
            return F.embedding(ids, weight).sum(1)

        def forward(self, *args):
            outs = []
            if self.mlp is not None or cfg.raw_dense:
                outs.append(args[0] if cfg.raw_dense else self.mlp(args[0]))
                args = args[1:]
            if cfg.packed_ids:
                args = [args[0][:, f] for f in range(len(cfg.features))]
            args = list(args)
            for f, (_, bag) in enumerate(cfg.features):
                with_offsets = cfg.bag_op == "offsets" and bag > 1
                outs.append(self.lookup(f, *[args.pop(0) for _ in range(1 + with_offsets)]))
            if not cfg.concat:
                return tuple(outs)
            cat = torch.cat(outs, 1)
            return self.top(cat) if self.top is not None else cat

    model, _ = cast(Dlrm(), [], cfg.dtype)
    return model, example_args(cfg)


def example_args(cfg: DlrmConfig) -> list:
    """The example inputs of a config, without building its model (their own generator,
    seeded `cfg.seed + 1`), in its dtype: the dense input, then per feature its ids (and
    offsets)."""
    import torch

    gen = torch.Generator().manual_seed(cfg.seed + 1)
    args = []
    if cfg.mlp or cfg.raw_dense:
        args.append(torch.randn(cfg.batch, cfg.dense_in, generator=gen))
    ids = []
    for table, bag in cfg.features:
        if cfg.bag_op == "offsets" and bag > 1:
            lengths = bag_lengths(cfg.batch, bag, gen)
            ids.append(torch.randint(0, cfg.table_rows[table], (sum(lengths),), generator=gen))
            ids.append(torch.tensor([0] + lengths[:-1]).cumsum(0))  # offsets
            continue
        shape = (cfg.batch,) if bag == 1 else (cfg.batch, bag)
        ids.append(torch.randint(0, cfg.table_rows[table], shape, generator=gen))
    if cfg.packed_ids:
        ids = [torch.stack(ids, 1)]
    return cast_args(args + ids, cfg.dtype)


def bag_lengths(batch: int, mean: int, gen) -> list[int]:
    """Variable bag lengths, each >= 1, summing to batch * mean (a data loader's ragged bags:
    the total is the static shape the model is exported with)."""
    import torch

    extra = batch * (mean - 1)
    cuts = sorted(torch.randint(0, extra + 1, (batch - 1,), generator=gen).tolist())
    return [1 + hi - lo for lo, hi in zip([0, *cuts], [*cuts, extra])]


def build_artifact(cfg: DlrmConfig) -> Artifact:
    model, args = build_dlrm(cfg)
    reference = torch_outputs(model, args)
    return Artifact(
        source=export_to_mlir(model, args),
        inputs=[to_numpy(a) for a in args],
        flags=list(TORCH_INPUT_FLAGS),
        reference=reference,
        reference_atol=reference_atol(reference, cfg.dtype, 1e-4),
    )


# ---------------------------------------------------------------- the forms users compile

# The forms a DLRM is compiled in (models/forms.py; NOTES.md, "The forms production IREE
# users compile"): static inline (the catalog's), the batch a torch.export `Dim` without and
# with shape facts (without, every argument's batch is its own dynamic value; with, IREE ties
# them to one util.assume.int value), iree-turbine parameters (.irpa), ONNX, and ONNX with
# externalized parameters.
FORMS = ("static", "dynamic-batch", "dynamic-batch-facts", "params", "onnx", "onnx-params")


@dataclass
class FormArtifact:
    """A model in one form: the artifact to compile (its inputs and PyTorch reference at the
    export's batch), the parameter files it needs at run time (scope -> .irpa path) and,
    for a dynamic form, inputs and reference at a batch the export never saw."""

    form: str
    artifact: Artifact
    parameters: dict[str, str]
    other_inputs: list | None = None
    other_reference: list | None = None


def build_form(cfg: DlrmConfig, form: str, folder: str, other_batch: int = 5) -> FormArtifact:
    """The model of `cfg` exported in `form` (FORMS; models/forms.py does the export); files
    (.onnx, .irpa) go to `folder`, which must outlive the compile and the run. A dynamic form
    also gets inputs and the PyTorch reference at `other_batch` (same weights, other ids)."""
    from . import forms

    if form not in FORMS:
        raise ValueError(f"unknown form '{form}' (known: {', '.join(FORMS)})")
    model, args = build_dlrm(cfg)
    reference = torch_outputs(model, args)
    ex = forms.export(model, args, form, folder)
    art = Artifact(source=ex.source, inputs=ex.inputs, flags=ex.flags, reference=reference,
                   function=ex.function,
                   reference_atol=reference_atol(reference, cfg.dtype, 1e-4))
    out = FormArtifact(form, art, ex.parameters)
    if form.startswith("dynamic"):
        other_model, other_args = build_dlrm(replace(cfg, batch=other_batch))
        out.other_inputs = [to_numpy(a) for a in other_args]
        out.other_reference = torch_outputs(other_model, other_args)
    return out


ISSUE = DlrmConfig()
# The sparse part alone: the issue's 16 features and the concat, no MLP.
SPARSE = replace(ISSUE, mlp=())
# The hand-written check of NOTES.md: 16 one-id lookups of 1000x64 tables into a concat.
LOOKUPS16 = DlrmConfig(table_rows=(1000,) * 16, features=tuple((t, 1) for t in range(16)),
                       mlp=())
# Layouts the pass was not tuned on.
CRITEO26 = DlrmConfig(  # 26 tables of dim 32 (Criteo-like counts), two shared, 4 bags of 8
    table_rows=tuple(200 + 137 * i for i in range(24)), table_dims=32,
    features=tuple((i % 24, 8 if i % 7 == 3 else 1) for i in range(26)), mlp=(128, 32))
MIXED_DIMS = DlrmConfig(  # dims 16/32/64 interleaved: lookups of different dims never merge
    table_rows=(300, 500, 700, 900, 1100, 1300),
    table_dims=(16, 32, 64, 16, 32, 64),
    features=((0, 1), (1, 1), (2, 1), (3, 10), (4, 1), (5, 1), (0, 1), (2, 10)),
    mlp=(64, 16))
# The Criteo layout (Wide&Deep / DeepFM / DCN): 13 raw dense features concatenated with
# eight 16-wide one-id embeddings ([B, 13 + 8 * 16]), then a top MLP: slots of two widths.
CRITEO = DlrmConfig(table_rows=(1000, 2000, 500, 1500, 800, 1200, 600, 900), table_dims=16,
                    features=tuple((t, 1) for t in range(8)), mlp=(), raw_dense=True,
                    top_mlp=(64, 32, 1))
PACKED = DlrmConfig(  # one [B, 10] id tensor, sliced per feature
    table_rows=(800, 600, 400, 1000, 1200, 700, 900, 500), table_dims=32,
    features=tuple((t % 8, 1) for t in range(10)), mlp=(), packed_ids=True)


CONFIGS: dict[str, DlrmConfig] = {}  # each MODELS entry's configuration, by name


def _model(name: str, cfg: DlrmConfig, text: str, default: bool = False) -> BenchModel:
    CONFIGS[name] = cfg
    return BenchModel(name, text, lambda cfg=cfg: build_artifact(cfg),
                      fusions="rewrite-embedding-bags,batch-gathers", needs_torch=True,
                      default=default,
                      dtype=cfg.dtype, torch_model=lambda cfg=cfg: build_dlrm(cfg),
                      reference_atol=1e-4, dims=("batch",) if cfg.batch >= 2 else ())


MODELS: list[BenchModel] = [
    *[_model(f"dlrm-b{b}", replace(ISSUE, batch=b),
             f"DLRM (issue 5): 12 tables x 64, 16 features, bags of 20, MLP, concat; B={b}")
      for b in (1, 8, 64)],
    *[_model(f"dlrm-bag-b{b}", replace(ISSUE, batch=b, bag_op="embedding_bag"),
             f"DLRM with F.embedding_bag(mode=sum) for the bags; B={b}")
      for b in (1, 8, 64)],
    _model("dlrm-sparse-b8", SPARSE, "DLRM sparse part alone (16 features + concat), B=8",
           default=True),
    _model("dlrm-sparse-b64", replace(SPARSE, batch=64), "DLRM sparse part alone, B=64"),
    _model("dlrm-lookups16-b8", LOOKUPS16, "16 one-id lookups (1000x64 tables) + concat, B=8"),
    _model("dlrm-criteo26-b32", replace(CRITEO26, batch=32),
           "unseen: 26 features on 24 tables of dim 32, bags of 8, small MLP, B=32"),
    _model("dlrm-mixed-dims-b8", MIXED_DIMS,
           "unseen: tables of dims 16/32/64 interleaved in the concat, B=8"),
    _model("criteo-b8", CRITEO, "Criteo layout (Wide&Deep / DeepFM / DCN): 13 raw dense "
           "features concatenated with 8 one-id 16-wide embeddings, top MLP 141-64-32-1, B=8"),
    _model("dlrm-packed-b16", replace(PACKED, batch=16),
           "unseen: one packed [B,10] id tensor, tables of dim 32, B=16"),
    _model("dlrm-mean-b8", replace(ISSUE, bag_op="mean"),
           "unseen: the issue's model with mean bags (F.embedding(...).mean(1)), B=8"),
    *[_model(f"dlrm-offsets-b{b}", replace(ISSUE, batch=b, bag_op="offsets"),
             "DLRM with nn.EmbeddingBag(mode=sum) on (flat ids, offsets): bags of variable "
             f"length (20 on average); B={b}")
      for b in (1, 8, 64)],
    # Half precision: the issue's model with bf16 / f16 tables, MLP and dense input.
    *[_model(f"dlrm-b8{DTYPE_SUFFIXES[d]}", replace(ISSUE, dtype=d),
             f"DLRM (issue 5) in {d}: tables, MLP and dense input; B=8")
      for d in ("bfloat16", "float16")],
]
