"""No pass fails on the IR users compile: every pass with --fusions-strict (a pass that
raises is an error, not a warning and a skipped pass) over catalog models in the forms users
deploy. The default run takes one model per family in three forms; `-m slow` takes every
catalog model in its static form and every form of each family's model. (The production
LLM form, sharktank's paged Llama, is test_production_llm.py.)"""

from __future__ import annotations

import pytest

from iree_fusions.harness import api
from iree_fusions.models.catalog import all_models, form_artifact, torch_available

SLOW = pytest.mark.slow
# One model per family of the catalog (towers, gathers and bags, factory ops, attention),
# in the forms it has: a dynamic batch for the batched models, a dynamic sequence for the
# token models (their batch is 1, which torch.export specializes), parameters, ONNX.
COMMON = ("static", "params", "onnx", "onnx-params")
FAMILY_FORMS = {"towers-silu-b8": ("dynamic-batch", *COMMON),
                "dlrm-b8": ("dynamic-batch", *COMMON),
                "llama-sdpa-s64": ("dynamic-seq", *COMMON),
                "bert-tiny-b1-s64": ("dynamic-seq", *COMMON)}
DEFAULT = {("dlrm-b8", "dynamic-batch"), ("llama-sdpa-s64", "dynamic-seq"),
           ("towers-silu-b8", "params")}


def _strict_flow(artifact, folder) -> None:
    path = artifact.write(str(folder))
    out = api.compile_file(path, fusions="all", compile_to="flow", keep_no_gain=True,
                           flags=[*artifact.flags, "--fusions-strict"])
    assert not [p.error for p in out.passes if p.error], out.stderr


def _params():
    for name, forms in FAMILY_FORMS.items():
        for form in forms:
            marks = () if (name, form) in DEFAULT else (SLOW,)
            yield pytest.param(name, form, marks=marks, id=f"{name}:{form}")


@pytest.mark.parametrize("name, form", list(_params()))
def test_every_pass_strict_on_a_form(name, form, tmp_path):
    if not torch_available():
        pytest.skip("the catalog's models are exported from PyTorch")
    if form.startswith("onnx"):
        pytest.importorskip("onnxscript")  # torch.onnx.export(dynamo=True) needs it
    (tmp_path / "export").mkdir()
    _strict_flow(form_artifact(all_models()[name], form, str(tmp_path / "export")), tmp_path)


@SLOW
@pytest.mark.parametrize("name", sorted(all_models()))
def test_every_pass_strict_on_every_catalog_model(name, tmp_path):
    model = all_models()[name]
    if model.needs_torch and not torch_available():
        pytest.skip("exported from PyTorch")
    _strict_flow(model.build(), tmp_path)
