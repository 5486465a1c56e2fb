"""Source locations: the `file:line:col` keys a location names, and how reports print ops
and values (`linalg.generic at file.mlir:12:5`)."""

from __future__ import annotations

import contextvars
import re

from iree.compiler import ir

from .caching import uniqued_cached

_LOCATION_KEY = re.compile(r'"([^"]*)":(\d+):(\d+)')


def location_keys(location: ir.Location | None) -> frozenset[str]:
    """The `file:line:col` positions a location names (a fused location names several;
    an unknown one none): what survives of an op in the ops IREE makes from it."""
    if location is None:
        return frozenset()
    return frozenset(f"{f}:{line}:{col}" for f, line, col in _LOCATION_KEY.findall(str(location)))


_FILE_LINE_COL = re.compile(r'"([^"]*)":(\d+):(\d+)')


def format_location(location: ir.Location) -> str:
    """`file.mlir:12:5`: the first file location in `loc(...)` (the callee of a callsite,
    the first of a fused location); other locations as printed."""
    return uniqued_cached(LOCATION_TEXTS, location, _format_location)


def file_line_col(location: ir.Location) -> tuple[str, int, int] | None:
    """(file, line, column) of the first file location in `loc(...)`, else None."""
    found = _FILE_LINE_COL.search(str(location))  # ~36 us for a torch call-site location
    return (found.group(1), int(found.group(2)), int(found.group(3))) if found else None


def _format_location(location: ir.Location) -> str:
    where = file_line_col(location)
    return f"{where[0]}:{where[1]}:{where[2]}" if where else str(location)


# Location texts while a pass runs on one module (one context): every layer's ops share a
# few source locations, and every round finds the blocked candidates again.
LOCATION_TEXTS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "iree_fusions_location_texts", default=None)


def op_location(op: ir.Operation | ir.OpView) -> str:
    """`linalg.generic at file.mlir:12:5`: how reports name the op a candidate is at."""
    operation = op.operation
    return f"{operation.name} at {format_location(operation.location)}"


def describe_value(value: ir.Value) -> str:
    """`the result of linalg.generic at f.mlir:3:7` / `block argument #1`: names a value
    cheaply (Value.get_name() prints the whole module to number SSA names: avoid it in
    loops)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return f"block argument #{ir.BlockArgument(value).arg_number}"
    return f"the result of {op_location(owner)}"

