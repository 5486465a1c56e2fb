"""models/forms.py: the forms users compile (form names, dynamic dims and their checks, the
exported signatures), and a parameterized module run with its .irpa (slow: iree-turbine and
the ONNX exporter)."""

from __future__ import annotations

import numpy as np
import pytest

from iree_fusions.models import forms

torch = pytest.importorskip("torch")


def _linear(batch: int = 2, seq: int = 6):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    return model, (torch.randn(batch, seq, 8, generator=torch.Generator().manual_seed(1)),)


def _signature(ex: forms.Exported) -> str:
    from iree.compiler import ir

    with ir.Context():
        return str(ir.Module.parse(ex.source))


def test_form_names_parse():
    for form in forms.FORMS + forms.EXTRA_FORMS:
        spec = forms.FormSpec.parse(form)
        assert spec.params == ("params" in form)
        assert spec.exporter == ("onnx" if form.startswith("onnx") else
                                 "turbine" if form.startswith("params") else "torch")
    assert forms.FormSpec.parse("dynamic-seq-facts") == forms.FormSpec("torch", False, "seq",
                                                                       True)
    with pytest.raises(ValueError, match="unknown form 'dynamic'"):
        forms.FormSpec.parse("dynamic")


def test_a_size_of_one_is_refused():
    model, args = _linear(batch=1)
    with pytest.raises(ValueError, match="dim 0 of argument 0 is 1 in the example"):
        forms.export(model, args, "dynamic-batch")


def test_dims_need_a_dynamic_form_and_a_real_dim():
    model, args = _linear()
    with pytest.raises(ValueError, match="dims= needs a dynamic form"):
        forms.export(model, args, "static", dims=[{0: "batch"}])
    with pytest.raises(ValueError, match="dim 3 of argument 0: the argument has rank 3"):
        forms.export(model, args, "dynamic-seq", dims=[{3: "seq"}])
    with pytest.raises(ValueError, match="writes files: give a folder"):
        forms.export(model, args, "onnx")


@pytest.mark.parametrize("form,shape", [("static", "[2,6,8]"), ("dynamic-batch", "[?,6,8]"),
                                        ("dynamic-seq", "[2,?,8]"),
                                        ("dynamic-seq-facts", "[2,?,8]")])
def test_exported_signature(form, shape):
    model, args = _linear()
    ex = forms.export(model, args, form)
    text = _signature(ex)
    assert f"!torch.vtensor<{shape},f32>" in text
    assert ("torch.bind_symbolic_shape" in text) == form.endswith("-facts")
    assert ex.function == "main" and ex.flags == ["--iree-input-type=torch"]
    assert ex.dynamic_dims == [{0: "batch"} if "batch" in form else {1: "seq"}
                               if "seq" in form else {}]


@pytest.mark.slow
@pytest.mark.parametrize("form", ["params", "onnx-params", "onnx-dynamic-seq"])
def test_parameters_and_onnx_run(form, tmp_path):
    from iree_fusions.harness import api
    from iree_fusions.models.torch_export import torch_outputs

    model, args = _linear()
    ex = forms.export(model, args, form, str(tmp_path))
    assert bool(ex.parameters) == ("params" in form)
    if ex.parameters:
        assert "parameter.named" in _signature(ex) or "util.global" in _signature(ex)
    vmfb = api.compile_file(ex.write(str(tmp_path)), flags=ex.flags, stock=True).output
    out = ex.run(vmfb)
    np.testing.assert_allclose(out[0], torch_outputs(model, args)[0], atol=1e-6)
    if "dynamic" in form:
        _, other = _linear(seq=9)
        out = ex.run(vmfb, [a.numpy() for a in other])
        np.testing.assert_allclose(out[0], torch_outputs(model, other)[0], atol=1e-6)
