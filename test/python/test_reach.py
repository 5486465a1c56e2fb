"""The reach suite (bench/reach.py): each form of a model removes as many dispatches as its
static form (at most one fewer) with outputs equal to stock, also at a size the dynamic export
never saw. The exports are slow (`-m slow`, one test per form and model); the rule, the
resampling of unseen inputs and the table are checked fast."""

import argparse
import importlib.util
import os
import sys

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEC = importlib.util.spec_from_file_location("bench_reach", os.path.join(ROOT, "bench",
                                                                          "reach.py"))
reach = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = reach  # dataclasses look their module up
SPEC.loader.exec_module(reach)


def _row(model, form, removed, skips=(), **kw):
    return {"model": model, "family": "f", "form": form, "ok": True, "removed": removed,
            "stock_dispatches": 10, "plugin_dispatches": 10 - removed, "passes": [],
            "skips": list(skips), "max_abs": 0.0, "ref_max_abs": 0.0, **kw}


def test_the_rule_allows_one_fewer_and_names_what_blocks():
    rows = [_row("m", "static", 8, ["p: shared reason"]),
            _row("m", "dynamic-batch", 7),
            _row("m", "params", 5, ["p: shared reason", "p: weight is a mutable global"])]
    reach.judge(rows)
    assert [r["keeps_up"] for r in rows] == [True, True, False]
    assert rows[2]["form_reasons"] == ["p: weight is a mutable global"]
    table = reach.markdown(rows).splitlines()
    assert "| params |" in table[2] and "mutable global" in table[2]  # worst row first


def test_unseen_inputs_resample_only_the_dynamic_dims():
    torch = pytest.importorskip("torch")
    ids = torch.randint(3, 50, (4, 16))
    mask = torch.ones(4, 16, dtype=torch.int64)
    x = torch.randn(4, 16, 8)
    pos = torch.tensor(3)
    out = reach.other_inputs([ids, mask, x, pos], [{0: "batch", 1: "seq"}, {0: "batch"},
                                                   {1: "seq"}, {}], {"batch": 3, "seq": 11})
    assert [tuple(t.shape) for t in out] == [(3, 11), (3, 16), (4, 11, 8), ()]
    assert int(out[0].min()) >= 3 and int(out[0].max()) <= int(ids.max())
    assert bool((out[1] == 1).all()) and out[3] is pos


def _small(name, build, forms, other):
    return reach.ReachModel(name, "test", build, forms, other)


def _small_models():
    return [
        _small("moe-tokens-small", reach._moe_tokens(batch=3, seq=6, dim=16, hidden=32,
                                                     n_experts=4),
               reach.TOKEN_FORMS, {"batch": 2, "seq": 5}),
        _small("towers-small", reach._towers(batch=3, n_towers=3, widths=(16, 16, 8)),
               reach.BATCH_FORMS, {"batch": 5}),
        _small("decode-small", reach._decode(batch=2, dim=32, heads=2, hidden=64, max_seq=16,
                                             pos=5), reach.BATCH_FORMS, {"batch": 3}),
    ]


CASES = [(m.name, f) for m in _small_models() for f in m.forms]
_STATIC: dict[str, dict] = {}


def _measure(name: str, form: str, tmp_path) -> dict:
    model = next(m for m in _small_models() if m.name == name)
    # A form keeps up when it does not block a pass; a pass's llvm-cpu cost rule for the form
    # (batch-mlp-towers on dynamic rows) is turned off, as in test_pass_forms.
    args = argparse.Namespace(fusions=reach.fusions_without_cpu_rules(form), device="local-task",
                              time=False, time_models=())
    return reach.measure(model, form, str(tmp_path), args)


@pytest.mark.slow
@pytest.mark.parametrize("name, form", CASES)
def test_every_form_keeps_up_with_the_static_form(name, form, tmp_path):
    pytest.importorskip("torch")
    if name not in _STATIC:
        (tmp_path / "static").mkdir()
        _STATIC[name] = _measure(name, "static", tmp_path / "static")
    row = _measure(name, form, tmp_path) if form != "static" else _STATIC[name]
    reach.judge([_STATIC[name], row])
    assert row["ok"], row
    assert row["removed"] >= _STATIC[name]["removed"] - 1, row.get("form_reasons")
    if form.startswith("dynamic"):
        assert "unseen_max_abs" in row and row["unseen_max_abs"] <= 1e-5
    assert np.isfinite(row["ref_max_abs"])
