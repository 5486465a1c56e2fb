"""Options that turn a step off or bound it: each pass, on a lit case it changes by default,
leaves the candidate with a reason naming the option (places no test reached before:
test/decline_coverage.py)."""

from __future__ import annotations

import pytest

from support import passes


# batch-gathers' lit cases are small: their RUN lines lower its size thresholds (so here too).
BASE = {"batch-gathers": "min-sliced-indices=0 min-pooled-indices=0"}


@pytest.mark.parametrize("pass_name, case, option, reason", [
    ("batch-gathers", "cross_table_offsets", "max-table-bytes=16",
     "stacking the tables would exceed max-table-bytes=16"),
    ("batch-gathers", "same_table_basic", "same-table=false",
     "lookups of one table are not merged (same-table=false)"),
    ("batch-gathers", "concat_writer", "min-concat-slots=99",
     "concat: 2 slot(s) from lookups, fewer than min-concat-slots=99"),
    ("rewrite-embedding-bags", "offsets_bags", "offsets-bags=false",
     "embedding_bags with run-time offsets are not rewritten (offsets-bags=false)"),
    ("batch-mlp-towers", "basic_two_towers", "min-layers=99",
     "group of 2 towers (depth 2, none, shared input): only 2 layer(s) batch "
     "(min-layers=99); left to IREE"),
])
def test_an_option_declines_with_its_name(pass_name, case, option, reason):
    text = passes.lit_cases(pass_name)[case]
    base = BASE.get(pass_name, "")
    _, reports = passes.run_pass(text, f"{pass_name}{{{base}}}")
    assert any(r.changes for r in reports), "the case changes by default"
    _, reports = passes.run_pass(text, f"{pass_name}{{{base} {option}}}")
    assert reason in [s.reason for r in reports for s in r.skipped]
