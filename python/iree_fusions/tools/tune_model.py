"""What iree-fusions-tune measures: MODEL as its flags name it (a catalog model in `--form`, or
an .mlir/.mlirbc file), its entry and compile flags, the parameter files it reads
(`--parameters`), and the sizes its dynamic dims are measured at (`--size`, else a catalog
form's example, half and double it)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..compiler.files import UserError
from ..harness import sizes
from ..runtime.modules import parse_parameters


@dataclass
class Model:
    """What is tuned: the source file, its entry, its compile flags, its name in the file,
    the parameter files it reads, and (label, inputs) per size of its dynamic dims."""

    source: str
    function: str
    flags: list[str]
    name: str
    parameters: dict[str, str]
    points: list[tuple[str, list]]
    sizes: dict[str, list[int]]


def load_model(args) -> Model:
    """MODEL as the flags say: a catalog model in `--form`, or a file; its sizes bound."""
    from ..models.catalog import FormError, all_models, form_artifact
    from ..harness.numerics import entry_function

    try:
        user_parameters = parse_parameters(args.parameters)
    except ValueError as e:
        raise UserError(str(e)) from None
    models = all_models()
    if args.model in models:
        try:
            artifact = form_artifact(models[args.model], args.form, args.workdir)
        except FormError as e:
            raise UserError(str(e)) from None
        path = artifact.write(args.workdir)
        name = args.model if args.form == "static" else f"{args.model} --form {args.form}"
        return _with_sizes(args, path, artifact.source, artifact.function, artifact.flags,
                           name, {**artifact.parameters, **user_parameters},
                           artifact.inputs, artifact.dynamic_dims, artifact.ranges)
    if not os.path.exists(args.model):
        raise UserError(f"'{args.model}' is neither a file nor a catalog model "
                        "(iree-fusions-bench --list)")
    if args.form != "static":
        raise UserError(f"--form exports a catalog model; {args.model} is a file, tuned as it "
                        "is")
    with open(args.model, "rb") as f:
        data = f.read()
    function = args.function or entry_function(data)
    _check_parameters(args.model, data, user_parameters)
    return _with_sizes(args, args.model, data, function, [], args.label or os.path.basename(
        args.model), user_parameters, None, None, None)


def _with_sizes(args, path: str, data: bytes, function: str, flags: list[str], name: str,
                parameters: dict[str, str], example, names, ranges) -> Model:
    """The Model with its sizes: `--size`, else (a catalog form) the example's spread."""
    dims = sizes.signature_dims(data, function, names)
    chosen = sizes.parse_sizes(args.size)
    if not chosen and dims and example is not None:
        chosen = sizes.default_sizes(dims, example, ranges)
    dims, chosen = sizes.bind_sizes(dims, chosen, name)
    points = [(sizes.point_label(p), sizes.inputs_at(data, function, dims, p, example))
              for p in sizes.size_points(chosen)] if dims else \
        [("", list(example) if example is not None else
          sizes.inputs_at(data, function, [], {}, None))]
    return Model(path, function, flags, name, parameters, points, chosen)


_PARAMETER_SCOPE = re.compile(rb'parameter\.named<"([^"]*)"::')


def _check_parameters(model: str, data: bytes, given: dict[str, str]) -> None:
    """A text file that reads external parameters of a scope no `--parameters` gives is an
    error now, not a runtime failure after the compiles."""
    missing = sorted({m.decode() for m in _PARAMETER_SCOPE.findall(data)} - set(given))
    if missing:
        scope = missing[0]
        raise UserError(f"{model} reads external parameters of scope "
                        f"{', '.join(repr(m) for m in missing)}: give their file with "
                        f"--parameters={scope + '=' if scope else ''}FILE (.irpa, .gguf, "
                        ".safetensors)")
