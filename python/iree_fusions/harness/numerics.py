"""The numerics harness: compile one module two ways, run both on a device, compare.

    check = compare_compilations("model.mlir", inputs, fusions="batch-gathers")
    assert check.agreement.within(1e-5)
    assert check.plugin_dispatches <= check.stock_dispatches

Stock = plain iree-compile; plugin = iree-fusions-compile --fusions=<fusions>. Used by the
tests of every pass and by iree-fusions-bench.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from iree.compiler import ir

from . import api
from ..compiler.counting import FlowCounts, count_flow_ir
from .reports import pass_summaries

if TYPE_CHECKING:
    from ..compiler.protocol.report import PassReport

_TORCH_TENSOR = re.compile(r"!torch\.vtensor<\[([^\]]*)\],(\w+)>")
_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "si8": np.int8, "si32": np.int32, "si64": np.int64, "ui8": np.uint8,
}


DYNAMIC = -1  # an ArgSpec dim whose size is chosen at run time


@dataclass
class ArgSpec:
    shape: tuple[int, ...]  # DYNAMIC for a dynamic dim
    dtype: type

    def concrete(self, dynamic_size: int | None, sizes: Mapping[int, int] | None = None
                 ) -> tuple[int, ...]:
        """The shape with dynamic dim i set to `sizes[i]`, else to `dynamic_size`."""
        shape = tuple((sizes or {}).get(i, d) if d == DYNAMIC else d
                      for i, d in enumerate(self.shape))
        if DYNAMIC in shape and dynamic_size is None:
            raise ValueError(f"argument of shape {self.shape} has dynamic dims (-1): give a "
                             "size for them (dynamic_size=) or the inputs")
        return tuple(dynamic_size if d == DYNAMIC else d for d in shape)


@dataclass
class NumericsCheck:
    stock: list[np.ndarray]
    plugin: list[np.ndarray]
    agreement: api.Agreement
    stock_counts: FlowCounts | None = None
    plugin_counts: FlowCounts | None = None
    reports: list[dict] = field(default_factory=list)

    @property
    def stock_dispatches(self) -> int:
        return self.stock_counts.total_dispatches

    @property
    def plugin_dispatches(self) -> int:
        return self.plugin_counts.total_dispatches

    def changes(self) -> list[str]:
        return [c.what for p in self.passes for c in p.changes]

    @property
    def passes(self) -> list[PassReport]:
        """The plugin compile's reports, typed (`iree_fusions.harness.reports`)."""
        return pass_summaries(self.reports)


def entry_function(source: str | bytes) -> str:
    """The function a model file is called through: `main` when there is one (torch
    exports), else the first public function (`main_graph` of an ONNX import)."""
    with ir.Context():
        module = ir.Module.parse(source)
        names = [op.attributes["sym_name"].value
                 for op in (o.operation for o in module.body.operations)
                 if "function_type" in op.attributes and (
                     "sym_visibility" not in op.attributes
                     or op.attributes["sym_visibility"].value == "public")]
    if not names:
        raise ValueError("the module has no public function")
    return "main" if "main" in names else names[0]


def function_arg_specs(source: str | bytes, function: str = "main") -> list[ArgSpec]:
    """Argument shapes/dtypes of a function in builtin-tensor or torch-dialect IR."""
    with ir.Context():
        module = ir.Module.parse(source)
        for op in module.body.operations:
            op = op.operation
            if "sym_name" in op.attributes and op.attributes["sym_name"].value == function:
                types = list(op.attributes["function_type"].value.inputs)
                return [_arg_spec(t) for t in types]
    raise ValueError(f"no function @{function} in the module")


def _arg_spec(t: ir.Type) -> ArgSpec:
    if isinstance(t, ir.RankedTensorType):
        return ArgSpec(tuple(DYNAMIC if ir.ShapedType.is_dynamic_size(d) else d
                             for d in t.shape), _DTYPES[str(t.element_type)])
    m = _TORCH_TENSOR.fullmatch(str(t))
    if m:
        dims = tuple(DYNAMIC if d.strip() == "?" else int(d)
                     for d in m.group(1).split(",") if d.strip())
        return ArgSpec(dims, _DTYPES[m.group(2)])
    raise ValueError(f"cannot make an input for argument type {t}")


def random_inputs(source: str | bytes, function: str = "main", seed: int = 0,
                  int_high: int = 8, dynamic_size: int | None = None,
                  sizes: Mapping[tuple[int, int], int] | None = None) -> list[np.ndarray]:
    """Random inputs matching a function's signature: floats ~ N(0,1), ints in [0, int_high);
    dynamic dim j of argument i of size `sizes[(i, j)]`, else `dynamic_size`."""
    rng = np.random.default_rng(seed)
    out = []
    for i, spec in enumerate(function_arg_specs(source, function)):
        shape = spec.concrete(dynamic_size, {d: n for (a, d), n in (sizes or {}).items()
                                             if a == i})
        if spec.dtype is np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        elif np.issubdtype(spec.dtype, np.integer):
            out.append(rng.integers(0, int_high, shape).astype(spec.dtype))
        else:
            out.append(rng.standard_normal(shape).astype(spec.dtype))
    return out


def _read_source(source: str | bytes | os.PathLike) -> tuple[str, bytes, bool]:
    """(path, content, is_temporary): a path is read; IR text goes to a temporary file."""
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and os.path.exists(source)
    ):
        path = os.fspath(source)
        with open(path, "rb") as f:
            return path, f.read(), False
    data = source.encode() if isinstance(source, str) else source
    fd, path = tempfile.mkstemp(suffix=".mlir", prefix="iree-fusions-src-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path, data, True


def compare_compilations(
    source: str | bytes | os.PathLike,
    inputs: Sequence[np.ndarray] | None = None,
    options: api.CompileOptions | None = None,
    *,
    function: str = "main",
    count: bool = True,
    parameters: api.Parameters | None = None,
    dynamic_size: int | None = None,
    **overrides,
) -> NumericsCheck:
    """Compiles `source` (a path or IR text) with stock IREE and with the plugin as `options`
    (a `CompileOptions`: device, flags, fusions, keep_no_gain, ...; keywords beside it
    override its fields: `compare_compilations(src, fusions="batch-gathers")`), runs both on
    the device. keep_no_gain=True: the plugin keeps changes that save no dispatch (a
    rewrite's mechanics checked on a small case that IREE would fuse as well without it).
    `count`: dispatch and byte counts of both (`stock_counts`, `plugin_counts`).
    `parameters`: the external weights both modules read (scope -> file or {name: array});
    `dynamic_size`: the size of dynamic dims in generated inputs."""
    opts = (options or api.CompileOptions()).with_(**overrides)
    path, data, is_temporary = _read_source(source)
    try:
        if inputs is None:
            inputs = random_inputs(data, function, dynamic_size=dynamic_size)
        # The plugin's compile counts its own flow-phase IR on the way (one compile, not
        # two); plain iree-compile cannot, so stock compiles to flow once more.
        jobs = {"stock": opts.with_(stock=True, flow_counts=False),
                "plugin": opts.with_(stock=False, flow_counts=count)}
        if count:
            jobs["stock_flow"] = opts.with_(stock=True, flow_counts=False, compile_to="flow")
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {k: pool.submit(api.compile_file, path, o) for k, o in jobs.items()}
            outs = {k: f.result() for k, f in futures.items()}
    finally:
        if is_temporary:
            os.unlink(path)
    device = opts.device
    # Each run in a process of its own (`api.run`), the plugin's first: an output element the
    # plugin's module never writes cannot hold stock's result.
    plugin = api.run(outs["plugin"].output, inputs, function, device, parameters)
    stock = api.run(outs["stock"].output, inputs, function, device, parameters)
    check = NumericsCheck(stock, plugin, api.compare_outputs(stock, plugin),
                          reports=outs["plugin"].reports)
    if count:
        check.stock_counts = count_flow_ir(outs["stock_flow"].output)
        check.plugin_counts = outs["plugin"].flow_counts
    return check
