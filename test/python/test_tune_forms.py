"""iree-fusions-tune on the forms users deploy (issue 34): dynamic dims measured at the sizes
`--size` names, parameter files (`--parameters`), ONNX imports; clear one-line errors for a
dynamic file without sizes, a parameter file not given, and a form a model does not have."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import tool
from iree_fusions.harness import sizes

# A tiny dynamic program: one elementwise op over a [?, 4] tensor.
DYNAMIC_MLIR = """
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = arith.addf %x, %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
"""


def _one_error_line(res: subprocess.CompletedProcess, prog: str) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode != 0 and len(lines) == 1, res.stderr
    assert lines[0].startswith(f"{prog}: error: ") and "Traceback" not in res.stderr
    return lines[0]


# ---------------------------------------------------------------- sizes, no compile


def test_size_flags_parse_and_refuse_what_is_not_a_size():
    assert sizes.parse_sizes(["batch=1,8,64", "seq=128"]) == {"batch": [1, 8, 64],
                                                              "seq": [128]}
    for bad in ("batch", "batch=", "batch=0", "batch=x", "=4"):
        with pytest.raises(sizes.SizeError, match="expected NAME=N,N"):
            sizes.parse_sizes([bad])
    with pytest.raises(sizes.SizeError, match="'batch' given twice"):
        sizes.parse_sizes(["batch=1", "batch=2"])


def test_a_files_dims_take_the_one_name_given():
    dims = sizes.signature_dims(DYNAMIC_MLIR, "main")
    assert dims == [sizes.DynamicDim(0, 0, "arg0.dim0")]
    bound, chosen = sizes.bind_sizes(dims, {"batch": [2, 8]}, "m.mlir")
    assert bound == [sizes.DynamicDim(0, 0, "batch")] and chosen == {"batch": [2, 8]}
    assert sizes.bind_sizes(dims, {"arg0.dim0": [3]}, "m.mlir")[0] == dims
    with pytest.raises(sizes.SizeError, match=r"--size names batch, seq, which m\.mlir does "
                       r"not have \(its dynamic dims: argument 0 dim 0; a file's dims take"):
        sizes.bind_sizes(dims, {"batch": [2], "seq": [3]}, "m.mlir")
    with pytest.raises(sizes.SizeError, match=r"m\.mlir has dynamic dims \(argument 0 dim 0\) "
                       r"and no sizes to measure them at: give them with --size, e.g. "
                       r"--size batch=1,8,64"):
        sizes.bind_sizes(dims, {}, "m.mlir")


def test_default_sizes_spread_around_the_example_within_the_range():
    dims = [sizes.DynamicDim(0, 1, "seq"), sizes.DynamicDim(1, 1, "seq")]
    example = [np.zeros((2, 128)), np.zeros((2, 128))]
    assert sizes.default_sizes(dims, example) == {"seq": [128, 64, 256]}
    assert sizes.default_sizes(dims, example, {"seq": (2, 128)}) == {"seq": [128, 64]}
    assert sizes.size_points({"batch": [8, 4], "seq": [16]}) == [
        {"batch": 8, "seq": 16}, {"batch": 4, "seq": 16}]
    assert sizes.point_label({"batch": 8, "seq": 16}) == "batch=8,seq=16"


def test_inputs_at_a_size_repeat_the_examples_values():
    ids = np.array([[3, 1, 4], [1, 5, 9]], dtype=np.int64)
    dims = [sizes.DynamicDim(0, 1, "seq")]
    (longer,) = sizes.inputs_at(b"", "main", dims, {"seq": 5}, [ids])
    np.testing.assert_array_equal(longer, [[3, 1, 4, 3, 1], [1, 5, 9, 1, 5]])
    (shorter,) = sizes.inputs_at(b"", "main", dims, {"seq": 2}, [ids])
    np.testing.assert_array_equal(shorter, ids[:, :2])
    (random,) = sizes.inputs_at(DYNAMIC_MLIR, "main", [sizes.DynamicDim(0, 0, "b")], {"b": 7})
    assert random.shape == (7, 4) and random.dtype == np.float32


# ---------------------------------------------------------------- the tools' errors


def test_a_dynamic_file_without_sizes_is_one_error_line(tmp_path):
    source = tmp_path / "m.mlir"
    source.write_text(DYNAMIC_MLIR)
    res = subprocess.run([tool("iree-fusions-tune"), str(source), "-o",
                          str(tmp_path / "d.json")], capture_output=True, text=True)
    line = _one_error_line(res, "iree-fusions-tune")
    assert "has dynamic dims (argument 0 dim 0)" in line and "--size batch=1,8,64" in line
    assert not (tmp_path / "d.json").exists()


def test_a_parameter_file_not_given_is_one_error_line(tmp_path):
    source = tmp_path / "p.mlir"
    source.write_text("""
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4xf32>
  %0 = arith.addf %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
""")
    res = subprocess.run([tool("iree-fusions-tune"), str(source), "-o",
                          str(tmp_path / "d.json")], capture_output=True, text=True)
    assert "give their file with --parameters=model=FILE" in _one_error_line(
        res, "iree-fusions-tune")


@pytest.mark.parametrize("prog", ["iree-fusions-tune", "iree-fusions-bench"])
def test_a_form_a_model_lacks_is_one_error_line(tmp_path, prog):
    """dlrm-b8 has no sequence dim: --form dynamic-seq does not apply to it."""
    out = ["-o", str(tmp_path / "d.json")] if prog == "iree-fusions-tune" else \
        ["--tune", "--tune-dir", str(tmp_path)]
    res = subprocess.run([tool(prog), "dlrm-b8", "--form", "dynamic-seq", *out],
                         capture_output=True, text=True)
    line = _one_error_line(res, prog)
    assert "dlrm-b8 has no sequence dim to make dynamic: --form dynamic-seq does not apply " \
        "(its forms: static, dynamic-batch, params, onnx, onnx-params)" in line


# ---------------------------------------------------------------- tuning each form


def _heads_model():
    """A projection split into two heads and transposed (the interchange pass rewrites it:
    one key), with example input [4, 6, 16]."""
    import torch

    class Heads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 16)

        def forward(self, x):
            b, s, _ = x.shape
            return self.proj(x).view(b, s, 2, 8).transpose(1, 2) * 0.5

    torch.manual_seed(0)
    return Heads().eval(), (torch.randn(4, 6, 16, generator=torch.Generator().manual_seed(1)),)


@pytest.mark.parametrize("form, extra", [
    ("dynamic-batch", ["--size", "batch=2,4"]),
    ("dynamic-seq", ["--size", "seq=3,6"]),
    ("params", []),
    ("onnx", []),
])
def test_tuning_a_form_writes_decisions_at_its_sizes(tmp_path, form, extra):
    """The form exported as a user would (forms.export), tuned from its file: dynamic dims
    at the --size sizes, the .irpa given as --parameters, the ONNX import with its input
    type. The decisions record the sizes, each key's times at each and the stock check at
    each."""
    pytest.importorskip("torch")
    from iree_fusions.models import forms
    from iree_fusions.tools import tune

    model, args = _heads_model()
    ex = forms.export(model, args, form, str(tmp_path))
    path = ex.write(str(tmp_path))
    out = tmp_path / "d.json"
    argv = [path, "-o", str(out), "--device", "local-sync", "--rounds", "1", "--max-rounds",
            "1", "--repetitions", "2", "--label", form,
            "--fusions=interchange-permuted-consumers",
            *ex.flags, *extra,
            *[f"--parameters={scope}={file}" for scope, file in ex.parameters.items()]]
    assert tune.main(argv) == 0
    data = json.loads(out.read_text())
    labels = [f"{n}={s}" for n, values in sizes.parse_sizes(extra[1:]).items() for s in values]
    assert data.get("sizes") == ({form: sizes.parse_sizes(extra[1:])} if extra else None)
    (key, entry), = data["decisions"].items()  # the projection's interchange
    assert key.startswith("interchange-permuted-consumers-") and entry["model"] == form
    if labels:
        assert list(entry["sizes"]) == labels and entry["size"] in labels
    else:
        assert "sizes" not in entry and entry["ms_with"] > 0
    # Against stock at each size until one reads slower (one round: noise may), then the
    # next step; or no timing where the tuned build is stock's program.
    checks = data["checks"][form]
    assert checks[0]["config"] == "tuned"
    assert checks[0].get("identical_to_stock") or checks[0].get("size") == (
        labels[0] if labels else None)
    assert {c.get("size") for c in checks} <= {*labels, None}
