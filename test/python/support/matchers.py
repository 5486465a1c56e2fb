"""What the table-driven tests of a matcher's checks share: a case parsed and verified, its op
found, and the matcher passing on it or declining with the check's reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from iree.compiler import ir

from iree_fusions.compiler.protocol import NoMatch


def parsed(text: str) -> ir.Module:
    """The case as a module (in the current context), checked by the verifier: a case the
    verifier refuses would test the verifier, not the matcher. Keep it in a variable while its
    ops are used (an op of a freed module is a dangling handle)."""
    module = ir.Module.parse(text)
    assert module.operation.verify()
    return module


def last_op(module: ir.Module, name: str, function: str | None = None) -> ir.Operation:
    """The last op named `name` in the body of the module's first function (or of the one
    whose symbol contains `function`)."""
    funcs = [op for op in module.body.operations
             if function is None or function in str(op.operation.attributes["sym_name"])]
    return [op.operation for op in funcs[0].regions[0].blocks[0].operations
            if op.operation.name == name][-1]


def matches_or_declines(match: Callable[[], Any], reason: str | None) -> Any:
    """`match()`'s result where `reason` is None; else the NoMatch it must raise, with exactly
    that reason."""
    if reason is None:
        return match()
    with pytest.raises(NoMatch) as failed:
        match()
    assert str(failed.value) == reason
    return None
