"""The sizes a program with dynamic dims is measured at, and its inputs at each.

    dims = signature_dims(source, "main", names=[{0: "batch"}])   # [DynamicDim(0, 0, "batch")]
    sizes = parse_sizes(["batch=1,8,64"])                          # {"batch": [1, 8, 64]}
    for point in size_points(sizes):                               # {"batch": 1}, ...
        inputs = inputs_at(source, "main", dims, point, example)

`iree-fusions-tune --size NAME=N,N,...` names the sizes; a catalog model's dims carry the
names of its export (`batch`, `seq`), a file's dims have none: one `--size` then stands for
all of them, or `argI.dimJ=...` names one. Without `--size` a catalog model is measured at
its example's size and a spread around it (`default_sizes`); a file has no example size, so
its dynamic dims need `--size` (`SizeError` says so in one line).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..compiler.files import UserError
from .numerics import DYNAMIC, function_arg_specs, random_inputs

SIZE_FLAG = "--size"
SPREAD = (0.5, 1.0, 2.0)  # the default sizes: the example's, half and double it


class SizeError(UserError):
    """Dynamic dims without sizes, or sizes that name no dynamic dim."""


@dataclass(frozen=True)
class DynamicDim:
    """Dim `dim` of argument `arg` is dynamic; `name` says which size it takes."""

    arg: int
    dim: int
    name: str


def positional_name(arg: int, dim: int) -> str:
    """The name a file's unnamed dynamic dim answers to (`arg0.dim1`)."""
    return f"arg{arg}.dim{dim}"


def parse_sizes(specs: Sequence[str]) -> dict[str, list[int]]:
    """`--size NAME=N,N,...` values (repeatable) -> {name: sizes}, in the order given."""
    out: dict[str, list[int]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        try:
            sizes = [int(v) for v in values.split(",") if v.strip()] if sep else []
        except ValueError:
            sizes = []
        if not name or not sizes or min(sizes) < 1:
            raise SizeError(f"{SIZE_FLAG} {spec}: expected NAME=N,N,... with sizes >= 1 "
                            "(e.g. --size batch=1,8,64)")
        if name in out:
            raise SizeError(f"{SIZE_FLAG}: '{name}' given twice")
        out[name] = list(dict.fromkeys(sizes))
    return out


def signature_dims(source: str | bytes, function: str,
                   names: Sequence[Mapping[int, str]] | None = None) -> list[DynamicDim]:
    """The dynamic dims of `function`'s arguments, named by `names` (per argument, dim ->
    name: an export's) where it names them, else `argI.dimJ`."""
    out = []
    for i, spec in enumerate(function_arg_specs(source, function)):
        known = names[i] if names is not None and i < len(names) else {}
        out += [DynamicDim(i, d, known.get(d) or positional_name(i, d))
                for d, size in enumerate(spec.shape) if size == DYNAMIC]
    return out


def bind_sizes(dims: Sequence[DynamicDim], sizes: Mapping[str, list[int]], model: str
               ) -> tuple[list[DynamicDim], dict[str, list[int]]]:
    """(dims, sizes) with the user's names bound: a file's unnamed dims all take the one
    name given, when one is given for them. Every dim must get sizes and every name a dim."""
    unnamed = [d for d in dims if d.name == positional_name(d.arg, d.dim)]
    free = [n for n in sizes if n not in {d.name for d in dims}]
    if unnamed and len(free) == 1 and not any(n.startswith("arg") for n in free):
        dims = [DynamicDim(d.arg, d.dim, free[0]) if d in unnamed else d for d in dims]
        free = []
    if free:
        hint = ("; a file's dims take the one name given, or argI.dimJ each"
                if unnamed else "")
        raise SizeError(f"{SIZE_FLAG} names {', '.join(free)}, which {model} does not have "
                        f"(its dynamic dims: {describe(dims) or 'none'}{hint})")
    missing = [d for d in dims if d.name not in sizes]
    if missing:
        name = "batch" if missing[0] in unnamed else missing[0].name
        raise SizeError(f"{model} has dynamic dims ({describe(dims)}) and no sizes to "
                        f"measure {describe(missing) if len(missing) < len(dims) else 'them'} "
                        f"at: give them with {SIZE_FLAG}, e.g. {SIZE_FLAG} {name}=1,8,64")
    return list(dims), dict(sizes)


def describe(dims: Sequence[DynamicDim]) -> str:
    """`batch: argument 0 dim 0, argument 1 dim 0` per name; unnamed dims by place alone."""
    by_name: dict[str, list[str]] = {}
    for d in dims:
        by_name.setdefault(d.name, []).append(f"argument {d.arg} dim {d.dim}")
    return "; ".join(", ".join(w) if n.startswith("arg") else f"{n}: {', '.join(w)}"
                     for n, w in by_name.items())


def example_sizes(dims: Sequence[DynamicDim], example: Sequence[np.ndarray]) -> dict[str, int]:
    """The size each named dim has in the example inputs."""
    return {d.name: int(example[d.arg].shape[d.dim]) for d in dims}


def default_sizes(dims: Sequence[DynamicDim], example: Sequence[np.ndarray],
                  ranges: Mapping[str, tuple[int, int | None]] | None = None
                  ) -> dict[str, list[int]]:
    """The example's size first, then half and double it, within `ranges` (name ->
    (min, max), the export's)."""
    out = {}
    for name, size in example_sizes(dims, example).items():
        lo, hi = (ranges or {}).get(name, (1, None))
        spread = [max(1, int(size * f)) for f in SPREAD]
        spread = [s for s in spread if s >= lo and (hi is None or s <= hi)]
        out[name] = list(dict.fromkeys([size, *spread]))
    return out


def size_points(sizes: Mapping[str, list[int]]) -> list[dict[str, int]]:
    """Every combination of the named sizes, the first size of each name first."""
    names = list(sizes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(sizes[n] for n in names))]


def point_label(point: Mapping[str, int]) -> str:
    """`batch=8` / `batch=8,seq=64` ('' for a static program)."""
    return ",".join(f"{n}={s}" for n, s in point.items())


def inputs_at(source: str | bytes, function: str, dims: Sequence[DynamicDim],
              point: Mapping[str, int], example: Sequence[np.ndarray] | None = None
              ) -> list[np.ndarray]:
    """Inputs with each dynamic dim at its size in `point`: the example's values repeated or
    cut along that dim (indices and masks stay valid), else random ones (numerics'
    `random_inputs`)."""
    sizes = {(d.arg, d.dim): point[d.name] for d in dims}
    if example is None:
        return random_inputs(source, function, sizes=sizes)
    out = []
    for i, x in enumerate(example):
        for (arg, dim), size in sizes.items():
            if arg == i and x.shape[dim] != size:
                x = np.take(x, np.arange(size) % x.shape[dim], axis=dim)
        out.append(np.ascontiguousarray(x))
    return out
