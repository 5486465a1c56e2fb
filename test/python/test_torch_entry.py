"""PyTorch entry point (iree_fusions.compile_torch, iree-turbine's aot.export) and clean
output: torch.export's internal FutureWarning never reaches the user; other warnings do (the
bench's own stderr is checked in test_bundle.py, on its export of a PyTorch model)."""

import warnings

import numpy as np
import pytest

import iree_fusions
from iree_fusions.counting import count_flow_ir

torch = pytest.importorskip("torch")

PASS = "interchange-permuted-consumers"


class Projection(torch.nn.Module):
    """A query projection split into heads: the transpose after the matmul is what the
    interchange pass folds into the matmul's dispatch."""

    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(64, 64)

    def forward(self, x):
        return self.q(x).reshape(8, 4, 16).permute(1, 0, 2)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Projection().eval(), torch.randn(8, 64)


def _changes(out):
    return [c["what"] for r in out.reports for c in r.get("changes", [])]


def test_compile_torch_returns_the_module_and_the_report(model, tmp_path):
    m, x = model
    saved = tmp_path / "m.mlirbc"
    out = iree_fusions.compile_torch(m, (x,), fusions=PASS, save_mlir=str(saved))
    assert out.output[:8] and _changes(out)
    assert saved.stat().st_size > 0 and "--iree-input-type=torch" in out.command
    (got,) = iree_fusions.run(out.output, [x.numpy()])
    np.testing.assert_allclose(got, m(x).detach().numpy(), atol=1e-5)
    # fewer dispatches than stock, same source
    flows = [iree_fusions.compile_torch(m, x, compile_to="flow", **kw)
             for kw in (dict(stock=True), dict(fusions=PASS))]
    stock, plugin = (count_flow_ir(f.output).total_dispatches for f in flows)
    assert plugin < stock


def test_compile_torch_argument_errors(model):
    m, _ = model
    with pytest.raises(TypeError, match="example_args"):
        iree_fusions.compile_torch(m)


def test_export_hides_only_torchs_own_leafspec_warning(model):
    from iree_fusions.models.torch_export import export_to_mlir, quiet_torch_export

    m, x = model
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        export_to_mlir(m, (x,))
    assert not [w for w in seen if "LeafSpec" in str(w.message)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_torch_export():
            warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...",
                          FutureWarning)
            warnings.warn("a warning that matters", FutureWarning)
    assert [str(w.message) for w in seen] == ["a warning that matters"]


def test_turbine_aot_export_compiles_through_the_plugin(model):
    """iree-turbine 3.9.0 installs beside iree-base-compiler 3.13 (extra `turbine`)."""
    aot = pytest.importorskip("iree.turbine.aot")
    m, x = model
    exported = aot.export(m, x)
    out = iree_fusions.compile_torch(exported, fusions=PASS)
    assert _changes(out)
    (got,) = iree_fusions.run(out.output, [x.numpy()])
    np.testing.assert_allclose(got, m(x).detach().numpy(), atol=1e-5)
