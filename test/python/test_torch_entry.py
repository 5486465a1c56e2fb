"""PyTorch entry point (iree_fusions.compile_torch, iree-turbine's aot.export) and clean
output: torch.export's internal FutureWarning never reaches the user; other warnings do (the
bench's own stderr is checked in test_bundle.py, on its export of a PyTorch model)."""

import warnings

import numpy as np
import pytest

import iree_fusions
from iree_fusions.compiler.counting import count_flow_ir

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


class TwoTowers(torch.nn.Module):
    """Two Linear -> ReLU -> Linear towers on one input: batch-mlp-towers' pattern."""

    def __init__(self):
        super().__init__()
        self.towers = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
            for _ in range(2))

    def forward(self, x):
        return tuple(t(x) for t in self.towers)


def test_compile_torch_dynamic_shapes_runs_at_sizes_the_export_never_saw():
    torch.manual_seed(0)
    model = TwoTowers().eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    # On llvm-cpu the pass's rule declines dynamic rows (test_batch_mlp_towers); turned on.
    out = iree_fusions.compile_torch(model, (torch.randn(4, 16),),
                                     fusions="batch-mlp-towers{cpu-dynamic-rows=true}",
                                     dynamic_shapes=({0: batch},))
    assert any("group of 2 towers" in c for c in _changes(out)), _changes(out)
    stock = iree_fusions.compile_torch(model, (torch.randn(4, 16),), stock=True,
                                       dynamic_shapes=({0: batch},))
    for size in (3, 9):  # the export saw 4
        x = torch.randn(size, 16)
        got = iree_fusions.run(out.output, [x.numpy()])
        want = iree_fusions.run(stock.output, [x.numpy()])
        assert got[0].shape == (size, 4)
        # The batched contraction runs the same reduction per row as the tower's matmul.
        assert iree_fusions.compare_outputs(want, got).within(1e-6)
        with torch.no_grad():
            ref = [t.numpy() for t in model(x)]
        assert iree_fusions.compare_outputs(ref, got).within(1e-5)
