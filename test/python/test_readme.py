"""The README's pass table is a map, not a second copy of the docs: one row per pass, in the
order `--fusions=all` runs them (the linalg passes at their hook, then the flow passes), each
row one short line whose figures live in the bench/results file it links."""

from __future__ import annotations

import pathlib
import re

from iree_fusions.compiler import registry
from iree_fusions.compiler.protocol import HOOK_PHASES

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_ROW = 250  # characters: one line of the table, link included


def _pass_rows() -> list[tuple[str, str]]:
    """(pass name, whole row) of the README's pass table, in order."""
    rows = []
    for line in (ROOT / "README.md").read_text().splitlines():
        match = re.match(r"\| `([a-z-]+)` \| (linalg|flow) \|", line)
        if match:
            rows.append((match.group(1), line))
    return rows


def test_the_pass_table_lists_every_pass_in_run_order():
    # The builtin table, not the registry: other tests register passes of their own.
    names = [entry.name for entry in registry.BUILTIN if entry.default]
    phase = {entry.name: entry.load().phase for entry in registry.BUILTIN}
    run_order = [name for hook in HOOK_PHASES for name in names if phase[name] == hook]
    assert sorted(run_order) == sorted(names), (run_order, names)
    listed = [name for name, _ in _pass_rows()]
    assert [name for name in listed if name in names] == run_order
    builtin = {entry.name for entry in registry.BUILTIN}  # not passes other tests register
    assert set(listed) == builtin, set(listed) ^ builtin


def test_each_row_is_one_short_line_with_its_figures_linked():
    """No measurement in a row (a ratio, a speed-up, a before -> after count, a time): those
    are kept true in one place, the linked results file, which must exist."""
    figure = re.compile(r"\d+(\.\d+)?x\b|\d+ -> \d+|\d+(\.\d+)? ?(ms|s|MiB|MB)\b")
    for name, row in _pass_rows():
        assert len(row) <= MAX_ROW, f"{name}: {len(row)} characters"
        assert not figure.search(row), f"{name}: {figure.search(row).group(0)}"
        for link in re.findall(r"\]\(([^)]+)\)", row):
            assert (ROOT / link).is_file(), f"{name}: {link}"
        if any(entry.name == name and entry.default for entry in registry.BUILTIN):
            assert "bench/results/" in row, f"{name}: no results file linked"
