"""The catalog of benchmark models `iree-fusions-bench` knows by name.

A model is built lazily (PyTorch models are exported at run time, never stored in git) into
an Artifact: the IR to compile, inputs, extra compile flags and, when there is one, the
reference outputs (PyTorch's) that both compiled versions must match.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import bundled_mlir_models
from .form_names import EXTRA_FORMS, FORMS

# Modules under iree_fusions.models that define `MODELS: list[BenchModel]`.
MODEL_MODULES: list[str] = ["llama", "dlrm", "towers", "transformers", "zoo"]


@dataclass
class Artifact:
    source: bytes
    inputs: list[np.ndarray]
    flags: list[str] = field(default_factory=list)
    reference: list[np.ndarray] | None = None
    function: str = "main"
    reference_atol: float = 1e-5
    # The parameter files the compiled module reads at run time (scope -> .irpa / .gguf /
    # .safetensors path, as `iree-run-module --parameters=scope=FILE`); none when inline.
    parameters: dict[str, str] = field(default_factory=dict)
    # A dynamic form's dynamic dims, per argument {dim: name}, and the export's ranges of
    # them (name -> (min, max)); empty for a static program.
    dynamic_dims: list[dict[int, str]] = field(default_factory=list)
    ranges: dict[str, tuple[int, int | None]] = field(default_factory=dict)

    def write(self, folder: str, stem: str = "model") -> str:
        """Writes the IR into `folder` as `<stem>.mlirbc` (bytecode) or `<stem>.mlir` (text)
        and returns the path."""
        from ..harness.api import source_suffix

        path = os.path.join(folder, stem + source_suffix(self.source))
        with open(path, "wb") as f:
            f.write(self.source)
        return path


@dataclass
class BenchModel:
    name: str
    description: str
    build: Callable[[], Artifact]
    fusions: str = "all"  # the pass(es) the model shows (`iree-fusions-bench --fusions=model`)
    needs_torch: bool = False
    default: bool = True  # part of the no-argument bench run
    dtype: str = "float32"  # the model's float element type ("bfloat16", "float16")
    # The PyTorch module and example arguments the artifact is exported from, for the other
    # forms users compile (`form_artifact`); None for IR-only models (static form only).
    torch_model: Callable[[], tuple] | None = None
    reference_atol: float = 1e-5  # plugin vs PyTorch in float32 (half types: scaled)
    keep_ops: Callable[[], list] | None = None  # ATen ops kept out of the decompositions
    export_kwargs: Callable[[str], dict] | None = None  # form -> forms.export keywords
    # The dims its dynamic forms can make dynamic: "batch" (an example batch >= 2), "seq" (a
    # token model's sequence); dynamic-batch / dynamic-seq forms need theirs.
    dims: tuple[str, ...] = ("batch",)

    def forms(self) -> tuple[str, ...]:
        """The forms this model can be benchmarked in (`iree-fusions-bench --form`)."""
        from .forms import FormSpec

        if self.torch_model is None:
            return ("static",)
        return tuple(f for f in FORMS + EXTRA_FORMS
                     if FormSpec.parse(f).dynamic in (None, *self.dims))


def file_model(path: str, size_specs: list[str] | None = None) -> BenchModel:
    """A model given as an .mlir / .mlirbc file: its entry function (`main`, else the first
    public one) called on random inputs (floats ~ N(0, 1), integers in [0, 8)), dynamic dims
    at the first size of `size_specs` (`--size NAME=N,...`: harness/sizes.py); no
    reference. Its input type and external weights come from the command line (--flag,
    --parameters)."""
    def build() -> Artifact:
        from ..harness import sizes
        from ..harness.numerics import entry_function

        with open(path, "rb") as f:
            source = f.read()
        function = entry_function(source)
        dims, chosen = sizes.bind_sizes(sizes.signature_dims(source, function),
                                        sizes.parse_sizes(size_specs or []), path)
        first = {name: values[0] for name, values in chosen.items()}
        return Artifact(source, sizes.inputs_at(source, function, dims, first),
                        function=function)

    return BenchModel(path, f"file {path}", build, default=False)


class FormError(ValueError):
    """A model asked for in a form it cannot be exported in."""


def check_form(model: BenchModel, form: str) -> None:
    """FormError, in one line, when `model` cannot be exported in `form`."""
    if form == "static" or form in model.forms():
        return
    if model.torch_model is None:
        raise FormError(f"{model.name} is IR only: it has the static form alone "
                        f"(--form {form} needs a PyTorch model)")
    from .forms import FormSpec

    dim = FormSpec.parse(form).dynamic
    what = "sequence dim" if dim == "seq" else "batch dim of size >= 2"
    raise FormError(f"{model.name} has no {what} to make dynamic: --form {form} does not "
                    f"apply (its forms: "
                    f"{', '.join(f for f in model.forms() if f in FORMS)})")


def form_artifact(model: BenchModel, form: str, folder: str) -> Artifact:
    """`model` exported in `form` (models/forms.py: dynamic batch or sequence, iree-turbine
    parameters in an .irpa file, ONNX, ONNX with parameters); the static form is the
    catalog's own artifact. Files the form needs (.onnx, .irpa) go to `folder`, which must
    outlive the compile and the runs. Inputs are at the export's size; the reference is
    PyTorch's output on them."""
    if form == "static":
        return model.build()
    from .forms import DEFAULT_RANGES, FormSpec, export

    check_form(model, form)
    from .torch_export import reference_atol, torch_outputs

    torch_model, args = model.torch_model()
    extra = dict(model.export_kwargs(form)) if model.export_kwargs else {}
    if model.keep_ops and FormSpec.parse(form).exporter != "onnx":
        extra["keep_ops"] = model.keep_ops()
    exported = export(torch_model, args, form, folder, **extra)
    reference = torch_outputs(torch_model, args)
    return Artifact(exported.source, exported.inputs, exported.flags, reference,
                    exported.function, reference_atol(reference, model.dtype,
                                                      model.reference_atol),
                    dict(exported.parameters), [dict(d) for d in exported.dynamic_dims],
                    {**DEFAULT_RANGES, **extra.get("ranges", {})})


def half_models() -> dict[str, BenchModel]:
    """The catalog's bf16 / f16 models (named `<f32 model>-bf16` / `-f16`)."""
    return {n: m for n, m in all_models().items() if m.dtype != "float32"}


def _bundled_models() -> list[BenchModel]:
    from ..harness.numerics import random_inputs

    models = []
    for name, path in bundled_mlir_models().items():
        def build(path=path) -> Artifact:
            with open(path, "rb") as f:
                data = f.read()
            return Artifact(data, random_inputs(data))

        models.append(BenchModel(name, f"bundled {name}.mlir", build))
    return models


def all_models() -> dict[str, BenchModel]:
    models = {m.name: m for m in _bundled_models()}
    for module in MODEL_MODULES:
        mod = importlib.import_module(f"iree_fusions.models.{module}")
        for m in mod.MODELS:
            models[m.name] = m
    return models


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True
