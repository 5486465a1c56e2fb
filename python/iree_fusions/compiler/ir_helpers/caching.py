"""Identity of binding objects, and facts of uniqued attributes and locations remembered
while a pass runs on one module."""

from __future__ import annotations

import contextvars
import ctypes

from iree.compiler import ir

# What was computed from uniqued attributes and types while a pass runs on one module (one
# context), keyed by (function, attribute) (`attribute_fact`); protocol.run_candidates opens
# it. The same few maps, iterator arrays and types recur in every layer.
ATTRIBUTE_TEXTS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "iree_fusions_attribute_texts", default=None)

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def capsule_address(capsule) -> int:
    """The address behind a binding object's `_CAPIPtr` capsule (an op, attribute or
    location): its identity while it lives."""
    return _capsule_pointer(capsule, _capsule_name(capsule))


def uniqued_cached(cache: contextvars.ContextVar[dict | None], obj, compute):
    """`compute(obj)` for a uniqued binding object (an attribute or a location: one object
    per address in a context), remembered in `cache` by address while the cache is open
    (a dict in the context variable, e.g. for one pass run); computed afresh otherwise."""
    found = cache.get()
    if found is None:
        return compute(obj)
    key = capsule_address(obj._CAPIPtr)
    value = found.get(key)
    if value is None:
        value = found[key] = compute(obj)
    return value


def attribute_fact(attr: ir.Attribute | ir.Type, compute):
    """`compute(attr)` for a uniqued attribute or type (maps, iterator types, tensor types:
    the same few in every layer), remembered while `ATTRIBUTE_TEXTS` is open (one pass run
    on one module), keyed by the function and the attribute (attributes and types hash and
    compare by their uniqued storage: no ctypes call); computed afresh otherwise. `compute`
    must be a module-level function."""
    found = ATTRIBUTE_TEXTS.get()
    if found is None:
        return compute(attr)
    key = (compute, attr)
    value = found.get(key)
    if value is None:
        value = found[key] = compute(attr)
    return value
