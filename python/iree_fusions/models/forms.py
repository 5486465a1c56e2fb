"""One PyTorch model in each form IREE users compile (NOTES.md, "The forms production IREE
users compile"), and a runner for the parameterized ones.

    from iree_fusions.models import forms
    ex = forms.export(model, args, "dynamic-seq", folder=tmp)   # tmp outlives compile and run
    out = api.compile_file(ex.write(tmp), flags=ex.flags)
    results = ex.run(out.output, ex.inputs)                     # parameters loaded if any

Forms (`FORMS`; each returns torch-dialect MLIR, an entry function, input flags and the
parameter files it needs at run time):

    static          torch.export + fx_importer, weights inlined (the catalog's form)
    dynamic-batch   the same with dim 0 of every tensor argument one `torch.export.Dim`
    dynamic-seq     the same with dim 1 of every tensor argument of rank >= 2 one `Dim`
    params          iree-turbine: externalize_module_parameters + aot.export (of the static
                    form's exported program), weights in an .irpa file read as
                    `#flow.parameter.named<"model"::...>`
    onnx            torch.onnx.export(dynamo=True) + iree-import-onnx, --iree-input-type=onnx,
                    entry `main_graph`
    onnx-params     the same imported with --externalize-params (an .irpa file)

and their combinations (`EXTRA_FORMS`): `dynamic-*-facts` imports the symbolic shapes
(`torch.bind_symbolic_shape` -> `util.assume.int` facts, as sharktank exports),
`params-dynamic-*` is turbine with dynamic dims, `onnx-dynamic-*` an ONNX export with dynamic
dims. Which dims are dynamic can be given per argument (`dims=`); their ranges by name
(`ranges=`). torch.export specializes sizes 0 and 1: an example whose dynamic dim is 1 is
refused (give one with size >= 2).

To check a pass on a form: `check(model, args, form, fusions)` compiles stock and with the
plugin (dispatch counts of `--compile-to=flow`, what changed, the reasons given) and compares
outputs at the export's size and, for a dynamic form, at `other_args`' sizes; `FormModel`
(a model buildable at any size with the same weights) and `run_table` print one markdown row
per model and form (the bench scripts' `--forms`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..harness.reports import pass_summaries
from .form_names import EXTRA_FORMS, FORMS
from .torch_export import TORCH_INPUT_FLAGS, export_to_mlir, quiet_torch_export, to_numpy

PARAMETER_SCOPE = "model"
ONNX_INPUT_FLAGS = ["--iree-input-type=onnx"]
# Default ranges of the dynamic dims (torch.export `Dim(min, max)`; the max becomes IREE's
# `util.assume.int` umax with shape facts).
DEFAULT_RANGES = {"batch": (2, 64), "seq": (2, 512)}
# Which dim of a tensor argument each kind of dynamic form makes dynamic, and the minimum rank.
_DYNAMIC_DIM = {"batch": (0, 1), "seq": (1, 2)}

# A dynamic dim per argument: {dim: name} (arguments that share a name share the size).
ArgDims = Mapping[int, str] | None


@dataclass(frozen=True)
class FormSpec:
    """A form name taken apart: the exporter, external weights, dynamic dims, shape facts."""

    exporter: str  # "torch", "turbine" or "onnx"
    params: bool
    dynamic: str | None  # "batch", "seq" or None
    facts: bool

    @staticmethod
    def parse(form: str) -> FormSpec:
        if form not in FORMS + EXTRA_FORMS:
            raise ValueError(f"unknown form '{form}' (known: {', '.join(FORMS + EXTRA_FORMS)})")
        dynamic = next((k for k in _DYNAMIC_DIM if f"dynamic-{k}" in form), None)
        exporter = ("onnx" if form.startswith("onnx") else
                    "turbine" if form.startswith("params") else "torch")
        return FormSpec(exporter, "params" in form, dynamic, form.endswith("-facts"))


@dataclass
class Exported:
    """A model exported in one form: the IR, how to compile it (`flags`), its entry function,
    its example inputs, and the parameter files it needs at run time (scope -> path)."""

    form: str
    source: bytes
    flags: list[str]
    function: str
    inputs: list[np.ndarray]
    parameters: dict[str, str] = field(default_factory=dict)
    dynamic_dims: list[dict[int, str]] = field(default_factory=list)  # per argument

    def write(self, folder: str, stem: str = "model") -> str:
        """Writes the IR into `folder` (.mlirbc / .mlir) and returns the path."""
        from ..harness.api import source_suffix

        path = os.path.join(folder, stem + source_suffix(self.source))
        with open(path, "wb") as f:
            f.write(self.source)
        return path

    def run(self, vmfb: bytes, inputs: Sequence[np.ndarray] | None = None,
            device: str = "local-task") -> list[np.ndarray]:
        """Runs the compiled module on `inputs` (default: the example inputs) with this form's
        parameter files."""
        return run_with_parameters(vmfb, self.inputs if inputs is None else inputs,
                                   self.function, self.parameters, device)

    def parameter_flags(self) -> list[str]:
        """`--parameters=scope=FILE` flags for iree-run-module / iree-benchmark-module."""
        return [f"--parameters={scope}={path}" for scope, path in self.parameters.items()]


def run_with_parameters(vmfb: bytes, inputs: Sequence[np.ndarray], function: str = "main",
                        parameters: Mapping[str, str] | None = None,
                        device: str = "local-task") -> list[np.ndarray]:
    """Loads a compiled module with its parameter files (scope -> .irpa/.gguf/.safetensors,
    as `iree-run-module --parameters=scope=FILE`) and calls `function` on `inputs`."""
    from ..harness.api import run

    return run(vmfb, inputs, function, device, dict(parameters or {}))


def export(model, args: Sequence, form: str, folder: str | None = None, *,
           dims: Sequence[ArgDims] | None = None,
           ranges: Mapping[str, tuple[int, int | None]] | None = None,
           keep_ops: Sequence = ()) -> Exported:
    """`model(*args)` exported in `form` (see FORMS / EXTRA_FORMS). Files a form needs
    (.onnx, .irpa) go to `folder`, which must outlive the compile and the run.

    dims: per argument, which dims are dynamic and their names (default for a dynamic form:
    dim 0 of every tensor argument as "batch", or dim 1 of every argument of rank >= 2 as
    "seq"). ranges: name -> (min, max) of a dynamic dim (DEFAULT_RANGES; max None: no bound).
    keep_ops: ATen ops kept out of the decompositions (not for ONNX).
    """
    spec = FormSpec.parse(form)
    args = tuple(args)
    if (spec.params or spec.exporter == "onnx") and folder is None:
        raise ValueError(f"form '{form}' writes files: give a folder")
    arg_dims = _arg_dims(args, spec.dynamic, dims)
    model = model.eval()
    dynamic_shapes = _dynamic_shapes(model, arg_dims, {**DEFAULT_RANGES, **(ranges or {})})
    inputs = [to_numpy(a) for a in args]
    if spec.exporter == "torch":
        source = export_to_mlir(model, args, keep_ops=keep_ops, dynamic_shapes=dynamic_shapes,
                                shape_facts=spec.facts)
        return Exported(form, source, list(TORCH_INPUT_FLAGS), "main", inputs, {}, arg_dims)
    if spec.exporter == "turbine":
        source, irpa = _turbine_export(model, args, folder, dynamic_shapes, keep_ops)
        return Exported(form, source, list(TORCH_INPUT_FLAGS), "main", inputs,
                        {PARAMETER_SCOPE: irpa}, arg_dims)
    if keep_ops:
        raise ValueError(f"keep_ops applies to the torch and turbine forms, not '{form}'")
    source, irpa = _onnx_export(model, args, folder, spec.params, dynamic_shapes)
    return Exported(form, source, list(ONNX_INPUT_FLAGS), "main_graph", inputs,
                    {PARAMETER_SCOPE: irpa} if irpa else {}, arg_dims)


def _arg_dims(args: tuple, dynamic: str | None, dims: Sequence[ArgDims] | None
              ) -> list[dict[int, str]]:
    """Per argument, its dynamic dims {dim: name}; checks that no example size is 0 or 1."""
    if dynamic is None:
        if dims is not None:
            raise ValueError("dims= needs a dynamic form")
        return [{} for _ in args]
    if dims is None:
        dim, min_rank = _DYNAMIC_DIM[dynamic]
        dims = [{dim: dynamic} if _rank(a) >= min_rank else None for a in args]
    if len(dims) != len(args):
        raise ValueError(f"dims= has {len(dims)} entries for {len(args)} arguments")
    out = [dict(d or {}) for d in dims]
    for i, (a, d) in enumerate(zip(args, out)):
        for k in d:
            if k >= _rank(a):
                raise ValueError(f"dim {k} of argument {i}: the argument has rank {_rank(a)}")
            if a.shape[k] < 2:
                raise ValueError(f"dim {k} of argument {i} is {a.shape[k]} in the example: "
                                 "torch.export specializes sizes 0 and 1; give an example "
                                 "with size >= 2")
    if not any(out):
        raise ValueError(f"no argument has a {dynamic} dim")
    return out


def _rank(a) -> int:
    return len(getattr(a, "shape", ()))


def _dynamic_shapes(model, arg_dims: list[dict[int, str]],
                    ranges: Mapping[str, tuple[int, int | None]]):
    """torch.export's `dynamic_shapes` (shaped like `model.forward`'s positional parameters:
    one entry per argument, or one tuple for `*args`) or None for a static form."""
    if not any(arg_dims):
        return None
    import inspect

    import torch

    made: dict[str, object] = {}

    def dim(name: str):
        if name not in made:
            lo, hi = ranges.get(name, (2, None))
            made[name] = torch.export.Dim(name, min=lo, max=hi) if hi else \
                torch.export.Dim(name, min=lo)
        return made[name]

    specs = tuple({k: dim(n) for k, n in d.items()} or None for d in arg_dims)
    kinds = [p.kind for p in inspect.signature(model.forward).parameters.values()]
    return (specs,) if kinds and kinds[0] == inspect.Parameter.VAR_POSITIONAL else specs


def _turbine_export(model, args: tuple, folder: str, dynamic_shapes,
                    keep_ops: Sequence = ()) -> tuple[bytes, str]:
    """iree-turbine's parameter export: (torch-dialect MLIR, .irpa). The program is made by
    torch.export with the static form's decompositions (the core ATen table) and handed to
    `aot.export`: the IR differs from the static form's only in the weights (turbine's own
    table leaves ops IREE 3.13 rejects, a 0-d bool literal in HF BERT's mask)."""
    import torch
    from iree.turbine import aot

    aot.externalize_module_parameters(model)
    with torch.no_grad(), quiet_torch_export():
        ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes, strict=False)
        table = torch.export.default_decompositions()
        for op in keep_ops:
            table.pop(op, None)
        ep = ep.run_decompositions(table)
        exported = aot.export(ep)
    irpa = os.path.join(folder, "params.irpa")
    aot.save_module_parameters(irpa, model)
    return str(exported.mlir_module).encode(), irpa


def _onnx_export(model, args: tuple, folder: str, externalize: bool, dynamic_shapes
                 ) -> tuple[bytes, str | None]:
    """torch.onnx.export(dynamo=True) + iree-import-onnx (`externalize`: weights in an .irpa,
    --externalize-params): (torch-dialect MLIR of @main_graph, .irpa path or None)."""
    import torch

    onnx_path = os.path.join(folder, "model.onnx")
    mlir_path = os.path.join(folder, "model.onnx.mlir")
    # "torchvision is not installed", onnxscript's constant folding "Evaluation failed".
    quiet = [logging.getLogger(n) for n in ("torch.onnx", "onnxscript")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, args, onnx_path, dynamo=True,
                              dynamic_shapes=dynamic_shapes)
    finally:
        for q, level in zip(quiet, levels):
            q.setLevel(level)
    tool = os.path.join(os.path.dirname(sys.executable), "iree-import-onnx")
    cmd = [tool if os.path.exists(tool) else "iree-import-onnx", onnx_path, "-o", mlir_path]
    irpa = None
    if externalize:
        irpa = os.path.join(folder, "params.irpa")
        cmd += ["--externalize-params", "--num-elements-threshold=32",
                f"--params-scope={PARAMETER_SCOPE}", f"--save-params-to={irpa}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"iree-import-onnx failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}\nreproduce with: {' '.join(cmd)}")
    with open(mlir_path, "rb") as f:
        return f.read(), irpa


# ---------------------------------------------------------------- one form checked


@dataclass
class FormCheck:
    """A model in one form compiled stock and with the plugin: dispatches (`--compile-to=flow`
    counts), what the passes changed and the reasons they gave, and per input size (the
    export's, then `other_args`'), the largest difference plugin vs stock and plugin vs
    PyTorch."""

    form: str
    stock_dispatches: int
    plugin_dispatches: int
    changes: list[str]
    skipped: list[str]
    errors: list[tuple[float, float]]  # per size: (|plugin - stock|, |plugin - torch|) max

    @property
    def removed(self) -> int:
        return self.stock_dispatches - self.plugin_dispatches

    @property
    def bit_identical(self) -> bool:
        return all(e[0] == 0.0 for e in self.errors)


def check(model, args: Sequence, form: str, fusions: str, *, other_args: Sequence | None = None,
          device: str = "local-task", flags: Sequence[str] = (), **export_kwargs) -> FormCheck:
    """Exports `model(*args)` in `form`, compiles it stock and with `--fusions=<fusions>`,
    counts dispatches and runs both on the export's inputs and, for a dynamic form, on
    `other_args` (sizes the export never saw; same weights)."""
    import tempfile

    from ..harness import api
    from ..compiler.counting import count_flow_ir
    from .torch_export import torch_outputs

    with tempfile.TemporaryDirectory(prefix="iree-fusions-form-") as tmp:
        ex = export(model, args, form, tmp, **export_kwargs)
        path = ex.write(tmp)
        all_flags = [*ex.flags, *flags]
        counts, vmfbs, reports = {}, {}, []
        for label, kw in (("stock", dict(stock=True)), ("plugin", dict(fusions=fusions))):
            flow = api.compile_file(path, device=device, flags=all_flags, compile_to="flow",
                                    **kw)
            counts[label] = count_flow_ir(flow.output).total_dispatches
            reports = flow.reports if label == "plugin" else reports
            vmfbs[label] = api.compile_file(path, device=device, flags=all_flags, **kw).output
        runs = [(ex.inputs, torch_outputs(model, args))]
        if other_args is not None and FormSpec.parse(form).dynamic:
            runs.append(([to_numpy(a) for a in other_args], torch_outputs(model, other_args)))
        errors = []
        for inputs, reference in runs:
            stock = ex.run(vmfbs["stock"], inputs, device)
            plugin = ex.run(vmfbs["plugin"], inputs, device)
            errors.append((api.compare_outputs(stock, plugin).max_abs,
                           api.compare_outputs(reference, plugin).max_abs))
    passes = pass_summaries(reports)
    changes = [c.what for p in passes for c in p.changes]
    skipped = [s.reason for p in passes for s in p.skipped]
    return FormCheck(form, counts["stock"], counts["plugin"], changes, skipped, errors)


# ---------------------------------------------------------------- a model across forms


@dataclass(frozen=True)
class FormModel:
    """A model to check across forms: `build(batch, seq)` gives (module, example args) with the
    same weights at any size (`seq` None: no sequence dim); dynamic forms also run at
    (`other_batch`, `other_seq`), sizes the export never saw. `export_kwargs(form)`: extra
    arguments of `export` (keep_ops, dims) for a form."""

    name: str
    build: Callable[[int, int | None], tuple]
    batch: int
    seq: int | None
    forms: tuple[str, ...]
    other_batch: int = 3
    other_seq: int = 40
    export_kwargs: Callable[[str], dict] | None = None

    def check(self, form: str, fusions: str, device: str = "local-task") -> FormCheck:
        spec = FormSpec.parse(form)
        model, args = self.build(self.batch, self.seq)
        other = None
        if spec.dynamic:
            _, other = self.build(self.other_batch if spec.dynamic == "batch" else self.batch,
                                  self.other_seq if spec.dynamic == "seq" else self.seq)
        kwargs = self.export_kwargs(form) if self.export_kwargs else {}
        return check(model, args, form, fusions, other_args=other, device=device, **kwargs)


TABLE_HEADER = ("| model | form | dispatches stock -> plugin | removed (static) | changes | "
                "plugin vs stock (export size / other size) | plugin vs torch | new reasons |\n"
                "|---|---|---|---|---|---|---|---|")


def table_row(name: str, c: FormCheck, static: FormCheck | None) -> str:
    """One markdown row; `static`: the same model's static form (for the removed count and
    the reasons this form adds)."""
    errs = " / ".join("0 (bit-identical)" if e[0] == 0 else f"{e[0]:.1e}" for e in c.errors)
    torch_err = max(e[1] for e in c.errors)
    base = static.removed if static is not None else c.removed
    flag = "" if c.removed >= base - 1 else " **(-{})**".format(base - c.removed)
    new = [r for r in dict.fromkeys(c.skipped) if static is None or r not in static.skipped]
    kinds: dict[str, int] = {}
    for what in c.changes:
        kinds[_change_kind(what)] = kinds.get(_change_kind(what), 0) + 1
    changes = ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none"
    return (f"| {name} | {c.form} | {c.stock_dispatches} -> {c.plugin_dispatches} | "
            f"{c.removed} ({base}){flag} | {changes} | {errs} | {torch_err:.1e} | "
            f"{'; '.join(_short_reason(r) for r in new[:2]) or '-'} |")


def _short_reason(reason: str, width: int = 160) -> str:
    """A reason cut to `width`, keeping what names the dynamic sizes when it has that."""
    at = reason.find("(dynamic sizes:")
    if at > 0 and len(reason) > width:
        head = reason[:reason.find("(")].rstrip()
        return f"{head} ... {reason[at:]}"[:width + 80]
    return reason[:width]


def _change_kind(what: str) -> str:
    for prefix, kind in (("reading", "interchange"), ("forwarded", "forward"),
                         ("compacted", "compact"), ("cloned", "clone")):
        if what.startswith(prefix):
            return kind
    return what.split(" ", 1)[0]


def run_table(models: Sequence[FormModel], fusions: str, forms: Sequence[str] | None = None,
              device: str = "local-task", out=None) -> list[tuple[str, FormCheck]]:
    """Checks every model in each of its forms (or `forms`), printing markdown rows as they
    finish (to `out`, default stdout); a form that fails to export or compile is a row that
    says so. Returns the checks."""
    out = out or sys.stdout
    print(TABLE_HEADER, file=out, flush=True)
    done = []
    for m in models:
        static = None
        for form in [f for f in m.forms if forms is None or f in forms]:
            try:
                c = m.check(form, fusions, device)
            except Exception as e:  # a form the exporter or stock IREE cannot take
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                print(f"| {m.name} | {form} | failed: {first[:200]} | | | | | |", file=out,
                      flush=True)
                continue
            static = c if form == "static" else static
            done.append((m.name, c))
            print(table_row(m.name, c, static), file=out, flush=True)
    return done
