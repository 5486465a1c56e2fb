"""No pass fails on the IR users compile: every pass with --fusions-strict (a pass that
raises is an error, not a warning and a skipped pass) over catalog models in the forms users
deploy. The default run takes one model per family in three forms; `-m slow` takes every
catalog model in its static form and every form of each family's model. (The production
LLM form, sharktank's paged Llama, is test_production_llm.py.)"""

from __future__ import annotations

import pytest

from iree_fusions.harness import api
from iree_fusions.models.catalog import all_models, form_artifact, torch_available
from iree_fusions.models.forms import FORMS

SLOW = pytest.mark.slow
# One model per family of the catalog (towers, gathers and bags, factory ops, attention).
FAMILY_MODELS = ["towers-silu-b8", "dlrm-b8", "llama-sdpa-s64", "bert-tiny-b1-s64"]
DEFAULT = {("dlrm-b8", "dynamic-batch"), ("llama-sdpa-s64", "dynamic-seq"),
           ("towers-silu-b8", "params")}


def _strict_flow(artifact, folder) -> None:
    path = artifact.write(str(folder))
    out = api.compile_file(path, fusions="all", compile_to="flow", keep_no_gain=True,
                           flags=[*artifact.flags, "--fusions-strict"])
    assert not [p.error for p in out.passes if p.error], out.stderr


def _params():
    for name in FAMILY_MODELS:
        for form in FORMS:
            marks = () if (name, form) in DEFAULT else (SLOW,)
            yield pytest.param(name, form, marks=marks, id=f"{name}:{form}")


@pytest.mark.parametrize("name, form", list(_params()))
def test_every_pass_strict_on_a_form(name, form, tmp_path):
    if not torch_available():
        pytest.skip("the catalog's models are exported from PyTorch")
    (tmp_path / "export").mkdir()
    try:
        artifact = form_artifact(all_models()[name], form, str(tmp_path / "export"))
    except (ValueError, NotImplementedError) as e:  # a form the model does not have
        pytest.skip(f"{name} has no {form} form: {e}")
    _strict_flow(artifact, tmp_path)


@SLOW
@pytest.mark.parametrize("name", sorted(all_models()))
def test_every_pass_strict_on_every_catalog_model(name, tmp_path):
    model = all_models()[name]
    if model.needs_torch and not torch_available():
        pytest.skip("exported from PyTorch")
    _strict_flow(model.build(), tmp_path)
