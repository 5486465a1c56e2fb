"""rewrite-attention's head split, the refinement of dims it relies on (`heads._fits`): each
old dim made of consecutive new dims whose product is its size, a dim the copy reads made of
exactly one, a unit dim matched to a unit dim."""

from __future__ import annotations

import pytest

from iree_fusions.passes.rewrite_attention.heads import _fits


@pytest.mark.parametrize("old, read, new, want", [
    ([32, 64], [False, True], [4, 8, 64], [[0, 1], [2]]),
    ([4, 1, 64], [False, False, True], [4, 1, 64], [[0], [1], [2]]),  # a unit dim: one unit dim
    ([1, 1, 8], [False, False, True], [1, 1, 8], [[0], [1], [2]]),
    ([1, 8], [False, True], [1, 1, 8], None),  # a unit dim left over: not a refinement
    ([32, 64], [False, True], [4, 8, 32, 2], None),  # a read dim split in two
    ([32, 64], [False, True], [4, 4, 64], None),  # products that do not match
    ([32], [False], [4, 8, 2], None),  # sizes left over
])
def test_fits(old, read, new, want):
    assert _fits(old, read, new) == want
