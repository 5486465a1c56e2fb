"""One compiled module on a runtime device: numerics (comparing outputs, results copied to
host arrays), parameter files (`--parameters [SCOPE=]FILE`, the `io_parameters` module) and
loading / running a .vmfb."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence

from .archives import resolve_parameters


def compare_outputs(expected: Sequence, actual: Sequence) -> tuple[float, float, bool]:
    """(max abs error, max rel error, shapes and dtypes match) over all outputs.

    Equal values agree: equal infinities and NaN against NaN included; NaN on one side is an
    infinite error. Integers are compared exactly (never through float64, which cannot tell
    apart int64 values above 2**53)."""
    import numpy as np

    if len(expected) != len(actual):
        return float("inf"), float("inf"), False
    max_abs = max_rel = 0.0
    for e, a in zip(expected, actual):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype:
            return float("inf"), float("inf"), False
        if e.size == 0:
            continue
        if e.dtype.kind in "biu":
            err_abs, err_rel = _integer_errors(e, a)
        else:
            ef, af = e.astype(np.float64), a.astype(np.float64)
            same = (ef == af) | (np.isnan(ef) & np.isnan(af))
            if (~same & (np.isnan(ef) | np.isnan(af))).any():  # NaN on one side only
                return float("inf"), float("inf"), True
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.where(same, 0.0, np.abs(ef - af))
                rel = np.where(same, 0.0, diff / np.maximum(np.abs(ef), 1e-30))
            err_abs, err_rel = float(diff.max()), float(np.nan_to_num(rel, nan=np.inf).max())
        max_abs, max_rel = max(max_abs, err_abs), max(max_rel, err_rel)
    return max_abs, max_rel, True


# The unit roundoff of each float type the stated bound covers.
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24,
                 "float64": 2.0 ** -53}
STATED_BOUND = "stated: |d| <= 16 unit roundoffs of the largest |output| (attention decomposed)"


def within_stated_bound(expected: Sequence, actual: Sequence, atol: float) -> tuple[bool, str]:
    """Outputs of a model whose attention was decomposed (rewrite-attention) against stock's:
    the same NaN and infinity pattern, every finite float element within 16 unit roundoffs of
    its type times the output's largest finite |value| (or `atol`, if larger), others equal.
    (ok, what failed or the bound's name.)"""
    import numpy as np

    if len(expected) != len(actual):
        return False, "the number of outputs"
    ok = True
    for e, a in zip(expected, actual):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype:
            return False, "shapes"
        if e.dtype.name not in UNIT_ROUNDOFF:
            ok = ok and np.array_equal(e, a)
            continue
        if not (np.array_equal(np.isnan(e), np.isnan(a)) and
                np.array_equal(np.isinf(e), np.isinf(a))):
            return False, "NaN or infinity pattern"
        finite = np.isfinite(e)
        if finite.any():
            wide, got = e[finite].astype(np.float64), a[finite].astype(np.float64)
            limit = max(atol, 16 * UNIT_ROUNDOFF[e.dtype.name] * float(np.abs(wide).max()))
            ok = ok and float(np.abs(wide - got).max()) <= limit
    return ok, STATED_BOUND


def _integer_errors(e, a) -> tuple[float, float]:
    """Max abs / rel difference of two integer (or bool) arrays, computed exactly."""
    import numpy as np

    differ = np.flatnonzero(e.ravel() != a.ravel())
    if differ.size == 0:
        return 0.0, 0.0
    ev = e.ravel()[differ].astype(object)
    av = a.ravel()[differ].astype(object)
    diffs = [abs(int(x) - int(y)) for x, y in zip(ev, av)]
    rels = [d / max(abs(int(x)), 1) for d, x in zip(diffs, ev)]
    return float(max(diffs)), float(max(rels))


def host_arrays(result) -> list:
    """A function's result (None, one value or a tuple) as numpy arrays that own their memory.

    `to_host()` maps the result's device buffer: the array views memory the runtime releases
    with the call's context and hands out again to later allocations, so a result kept after
    the context is gone can change under the caller (two identical builds compared equal or
    not by chance). Each result is copied out while its buffer is alive."""
    import numpy as np

    if result is None:
        return []
    results = result if isinstance(result, (tuple, list)) else [result]
    return [np.array(r.to_host() if hasattr(r, "to_host") else r, copy=True) for r in results]


def parse_parameters(specs: Sequence[str]) -> dict[str, str]:
    """`--parameters` values as iree-run-module takes them (`scope=FILE` or `FILE`, the
    empty scope) -> {scope: file}; ValueError for an empty file or a scope given twice."""
    out: dict[str, str] = {}
    for spec in specs:
        scope, sep, path = spec.partition("=")
        scope, path = (scope, path) if sep else ("", spec)
        if not path:
            raise ValueError(f"--parameters={spec}: expected [SCOPE=]FILE")
        out.setdefault(scope, path)
        if out[scope] != path:
            raise ValueError(f"--parameters: scope '{scope}' given twice")
    return out


def add_parameters_argument(p: argparse.ArgumentParser) -> None:
    """`--parameters [SCOPE=]FILE`, as iree-run-module takes it (repeatable)."""
    p.add_argument("--parameters", action="append", default=[], metavar="[SCOPE=]FILE",
                   help="a parameter file (.irpa, .gguf, .safetensors) the modules read their "
                        "external weights from, as iree-run-module --parameters (repeatable; "
                        "for a bundle: replaces the file it holds for that scope)")


def parameters_module(instance, parameters):
    """The `io_parameters` module that serves a compiled module's external parameters:
    `parameters` maps a scope (the `"model"` of `#flow.parameter.named<"model"::"w">`) to a
    parameter file (.irpa, .gguf, .safetensors) or to {name: numpy array}."""
    import numpy as np
    import iree.runtime as rt

    providers = []
    for scope, source in parameters.items():
        index = rt.ParameterIndex()
        if isinstance(source, dict):
            for name, array in source.items():
                index.add_buffer(name, np.ascontiguousarray(array).tobytes())
        else:
            path = os.fspath(source)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"parameter file for scope '{scope}' not found: {path}")
            index.load(path)
        providers.append(index.create_provider(scope=scope))
    return rt.create_io_parameters_module(instance, *providers)


def load_vmfb(vmfb: bytes, device: str, parameters=None):
    """(context, module) of a compiled module loaded from memory on a runtime device, with
    its parameters (scope -> file or {name: array}; a plugin archive is checked against the
    module: `archives.resolve_parameters`)."""
    import iree.runtime as rt

    config = rt.Config(device)
    parameters = resolve_parameters(vmfb, parameters)
    vm_module = rt.VmModule.copy_buffer(config.vm_instance, vmfb)
    modules = [parameters_module(config.vm_instance, parameters)] if parameters else []
    context = rt.SystemContext(vm_modules=[*modules, vm_module], config=config)
    return context, context.modules[vm_module.name]


def parameter_flags(parameters: Mapping[str, str] | None) -> list[str]:
    """`--parameters=scope=FILE` flags (iree-run-module, iree-benchmark-module) for
    parameter files (scope -> path; the empty scope is written `--parameters=FILE`)."""
    return [f"--parameters={scope}={path}" if scope else f"--parameters={path}"
            for scope, path in (parameters or {}).items()]


def load_module(vmfb_path: str, device: str, parameters: Mapping[str, str] | None = None):
    """(context, module name): the .vmfb loaded on the device with its parameter files
    (scope -> path; a plugin archive checked against the module and put under its scope:
    `archives.resolve_parameters`), its initializers run."""
    import iree.runtime as rt

    config = rt.Config(device)
    with open(vmfb_path, "rb") as f:
        vmfb = f.read()
    parameters = resolve_parameters(vmfb, parameters, vmfb_path)
    vm_module = rt.VmModule.copy_buffer(config.vm_instance, vmfb)
    context = rt.SystemContext(config=config)
    if parameters:
        context.add_vm_module(parameters_module(config.vm_instance, parameters))
    context.add_vm_module(vm_module)
    return context, vm_module.name


def run_module(vmfb_path: str, inputs: Sequence, function: str = "main",
               device: str = "local-task", parameters: Mapping[str, str] | None = None
               ) -> list:
    """Loads a .vmfb on a runtime device (with its parameter files), calls `function` once;
    results as numpy arrays."""
    context, name = load_module(vmfb_path, device, parameters)
    return host_arrays(context.modules[name][function](*inputs))
